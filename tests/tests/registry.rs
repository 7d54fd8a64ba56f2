//! The agent registry on the stack: an agent put through the control API takes stand-ins
//! without a redeploy, both one started through the API (its entry kept on the row) and
//! one a parent starts in Step Functions itself (the turn reads the registry); a running
//! stand-in keeps the entry it started with through an edit; a removed agent takes no
//! new stand-in; the stack's own agents are not the API's to change.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{COMPLETED, SOON, reply, start_as, wait_final, wait_heard};
use standin_integration::stack::{Stack, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_put_at_run_time_takes_stand_ins_and_each_keeps_the_entry_it_started_with() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27140, Behaviour::default()).await;
    agent.script_turn(&[("TASK_STATE_INPUT_REQUIRED", "Which size?")]);
    agent.script_turn(&[("TASK_STATE_COMPLETED", "Built, small")]);
    let id = unique("reg");
    let path = format!("/agents/{id}");
    let (status, body) = stack
        .control(
            "PUT",
            &path,
            Some(json!({"url": "http://127.0.0.1:27140", "follow_interval": 1})),
        )
        .await;
    assert_eq!(
        (status, body["source"].as_str()),
        (200, Some("registry")),
        "{body}"
    );

    let task = unique("reg-api");
    start_as(&stack, &id, &task).await;
    wait_heard(&stack, &task, 1).await;
    // The agent moves (to where nothing listens): the running stand-in keeps its entry.
    let (status, body) = stack
        .control("PUT", &path, Some(json!({"url": "http://127.0.0.1:27199"})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(reply(&stack, &task, "small").await, 202);
    let notes = wait_final(&stack, &task).await;
    let last = notes.last().unwrap();
    assert_eq!(
        (last["state"].as_str(), last["text"].as_str()),
        (Some(COMPLETED), Some("Built, small")),
        "{notes:#?}"
    );

    // A parent that starts the state machine itself: the turn reads the registry, and
    // finds the agent where it is now.
    let sfn = aws_sdk_sfn::Client::new(&stack.config);
    let direct = unique("reg-sfn");
    sfn.start_execution()
        .state_machine_arn(stack.out("StateMachineArn"))
        .name(&direct)
        .input(json!({"task_id": direct, "agent": id, "message": "Build it"}).to_string())
        .send()
        .await
        .expect("started");
    let notes = wait_final(&stack, &direct).await;
    let last = notes.last().unwrap();
    assert_eq!(last["state"], "TASK_STATE_FAILED", "{notes:#?}");
    assert!(
        last["text"].as_str().unwrap().contains("agent unavailable"),
        "the edited entry's URL was tried: {notes:#?}"
    );

    // Removed: no new stand-in may name it (once every function's cache has lapsed).
    let (status, body) = stack.control("DELETE", &path, None).await;
    assert_eq!(
        (status, body["removed"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    let deadline = Instant::now() + SOON;
    loop {
        let (status, body) = stack
            .control(
                "POST",
                "/standins",
                Some(json!({"agent": id, "message": "again", "task_id": unique("reg-gone")})),
            )
            .await;
        if status == 400 {
            assert!(
                body["error"].as_str().unwrap().contains("unknown agent"),
                "{body}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "still started: {status} {body}");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let (status, _) = stack.control("GET", &path, None).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_names_a_bad_field_and_leaves_the_stacks_agents_alone() {
    let stack = Stack::load(&STACK).await;
    let (status, body) = stack
        .control("PUT", "/agents/reg-bad", Some(json!({"url": "ftp://h"})))
        .await;
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("url")),
        "{body}"
    );
    let (status, _) = stack.control("GET", "/agents/reg-bad", None).await;
    assert_eq!(status, 404, "nothing was stored");
    let (status, body) = stack
        .control(
            "PUT",
            "/agents/push",
            Some(json!({"url": "http://127.0.0.1:1"})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = stack.control("GET", "/agents/push", None).await;
    assert_eq!(
        (status, body["source"].as_str()),
        (200, Some("stack")),
        "{body}"
    );
    assert_eq!(body["agent"]["url"], "http://127.0.0.1:27101");
    let (status, body) = stack.control("GET", "/agents", None).await;
    assert_eq!(status, 200);
    let sources: Vec<&str> = body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["agent"]["id"].as_str().unwrap().starts_with("soak-"))
        .map(|a| a["source"].as_str().unwrap())
        .collect();
    assert!(
        !sources.is_empty() && sources.iter().all(|s| *s == "registry"),
        "the soak's personas were put through the registry at deploy: {body}"
    );
}
