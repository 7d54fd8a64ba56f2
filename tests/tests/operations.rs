//! Operations, as an operator sees them on LocalStack: every log line a function writes
//! names its stand-in (`task_id`), and the metrics are Embedded Metric Format lines that
//! CloudWatch turns into the `StandIn` namespace: pushes accepted and refused by reason,
//! notes sent, heard latency by watch, follow windows by ending, stand-ins ended by cause.
//!
//! The test agents' personas are borrowed from other test binaries (they run one after
//! another): the functions' environment has no room for more.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{
    COMPLETED, INPUT_REQUIRED, SOON, WORKING, start_as, wait_final, wait_parked,
};
use standin_integration::stack::{Stack, now_ms, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);

/// Every JSON line of every function's log group written since `since`.
async fn lines_since(stack: &Stack, since: u64) -> Vec<(String, Value)> {
    // CloudWatch Logs on LocalStack shows a line a moment after it is written.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stack
        .log_events(&stack.function_logs(), Some(since), None, None)
        .await
        .expect("the functions' logs")
        .into_iter()
        .filter_map(|(group, line)| {
            let json = serde_json::from_str::<Value>(line.trim()).ok()?;
            json.is_object().then_some((group, json))
        })
        .collect()
}

/// The EMF lines of one metric for one stand-in: (its dimension's value, its value).
fn metric(lines: &[(String, Value)], name: &str, task_id: &str) -> Vec<(Option<String>, f64)> {
    lines
        .iter()
        .filter(|(_, l)| l["task_id"] == task_id && l.get(name).is_some())
        .map(|(_, l)| {
            let declared = &l["_aws"]["CloudWatchMetrics"][0];
            assert_eq!(declared["Namespace"], "StandIn", "{l}");
            assert_eq!(declared["Metrics"][0]["Name"], name, "{l}");
            assert_eq!(l["Stack"], *STACK, "{l}");
            let dimensions: Vec<&str> = declared["Dimensions"][0]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap())
                .collect();
            assert_eq!(dimensions[0], "Stack", "{l}");
            let own = dimensions
                .get(1)
                .map(|d| l[*d].as_str().unwrap().to_owned());
            (own, l[name].as_f64().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn every_log_line_names_its_stand_in_and_the_metrics_are_emf() {
    let stack = Stack::load(&STACK).await;
    let since = now_ms();

    // By push: a question, a forged push (refused), then the completion (accepted).
    let agent = TestAgent::start(27118, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let pushed = unique("outbox");
    start_as(&stack, "outbox", &pushed).await;
    stack.wait_notes(&pushed, 1, SOON).await;
    wait_parked(&stack, &pushed, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    let config = agent.configs(&remote).pop().unwrap();
    let forged = reqwest::Client::new()
        .post(&config.url)
        .header("x-a2a-notification-token", "not-the-token")
        .header("content-type", "application/json")
        .body(
            agent
                .status_update(&remote, COMPLETED, "forged")
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    agent
        .change(&remote, COMPLETED, "Your widget is ready", false)
        .await;
    wait_final(&stack, &pushed).await;

    // By follow: one change heard from the stream, then the end.
    let follower = TestAgent::start(27115, Behaviour::default()).await;
    follower.script_turn(&[(INPUT_REQUIRED, "Which size?")]);
    let followed = unique("follow-reply");
    start_as(&stack, "follow-reply", &followed).await;
    stack.wait_notes(&followed, 1, SOON).await;
    wait_parked(&stack, &followed, "follow").await;
    let remote = follower.task_ids().pop().unwrap();
    follower.change(&remote, WORKING, "Measuring", false).await;
    stack.wait_notes(&followed, 2, SOON).await;
    follower
        .change(&remote, COMPLETED, "Large it is", false)
        .await;
    wait_final(&stack, &followed).await;
    stack.wait_execution(&pushed, "SUCCEEDED", SOON).await;
    stack.wait_execution(&followed, "SUCCEEDED", SOON).await;

    // A follower's lines reach the log when its invocation ends (LocalStack ships an
    // invocation's output at its end): up to a follower window after the stand-in's.
    let deadline = Instant::now() + Duration::from_secs(90);
    let lines = loop {
        let lines = lines_since(&stack, since).await;
        let follower_told = lines.iter().any(|(group, l)| {
            group.contains("FollowFunction")
                && (l["task_id"] == followed.as_str()
                    || l["task_ids"]
                        .as_str()
                        .is_some_and(|ids| ids.split(',').any(|i| i == followed)))
        });
        if follower_told || Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    // Every line of every function names a stand-in, except the two that are about many:
    // the notify function's batch lines (`task_ids`) and a list of stand-ins.
    let mut named = 0;
    for (group, line) in &lines {
        let about_one = line["task_id"].as_str().is_some_and(|id| !id.is_empty());
        assert!(
            about_one || line.get("task_ids").is_some(),
            "a line without task_id in {group}: {line}"
        );
        named += usize::from(about_one);
    }
    let watchers = [
        (&pushed, ["ParkFunction", "PushFunction"]),
        (&followed, ["FollowFunction", "FollowFunction"]),
    ];
    for (id, watched_by) in watchers {
        let own: Vec<&String> = lines
            .iter()
            .filter(|(_, l)| {
                l["task_id"] == id.as_str()
                    || l["task_ids"]
                        .as_str()
                        .is_some_and(|ids| ids.split(',').any(|i| i == id))
            })
            .map(|(group, _)| group)
            .collect();
        for function in [
            "TurnFunction",
            "RegisterFunction",
            "WakeFunction",
            "EndFunction",
            "ControlFunction",
            "NotifyFunction",
            watched_by[0],
            watched_by[1],
        ] {
            assert!(
                own.iter().any(|g| g.contains(function)),
                "{id}: no line of {function} names it"
            );
        }
    }
    assert!(named > 10, "the functions logged: {named} lines");

    assert_eq!(
        metric(&lines, "PushesRefused", &pushed),
        [(Some("bad_token".to_owned()), 1.0)],
        "the forged push, by its reason"
    );
    assert!(!metric(&lines, "PushesAccepted", &pushed).is_empty());
    for id in [&pushed, &followed] {
        let sent = metric(&lines, "NotesSent", id);
        assert!(
            sent.len() >= 2 && sent.iter().all(|(d, v)| d.is_none() && *v == 1.0),
            "{id}: {sent:?}"
        );
        assert_eq!(
            metric(&lines, "StandInsEnded", id),
            [(Some("completed".to_owned()), 1.0)],
            "{id}: one end, by its cause"
        );
    }
    // How long after the agent's change (its status timestamp) each watch heard it.
    for (id, watch) in [(&pushed, "push"), (&followed, "follow")] {
        let heard = metric(&lines, "HeardLatency", id);
        assert!(!heard.is_empty(), "{id}: no heard latency");
        for (by, ms) in heard {
            assert_eq!(by.as_deref(), Some(watch), "{id}");
            assert!((0.0..60_000.0).contains(&ms), "{id}: heard after {ms} ms");
        }
    }
    let windows = metric(&lines, "FollowWindows", &followed);
    assert!(
        windows
            .iter()
            .any(|(ending, _)| ending.as_deref() == Some("changed")),
        "a window that heard the change: {windows:?}"
    );
    assert!(
        metric(&lines, "FollowWindows", &pushed).is_empty(),
        "a push stand-in never follows"
    );
}

#[tokio::test]
async fn a_parent_answer_step_functions_refuses_is_counted_for_its_alarm() {
    let stack = Stack::load(&STACK).await;
    let since = now_ms();
    let agent = TestAgent::start(27116, Behaviour::default()).await;
    agent.script_turn(&[(COMPLETED, "Widget built")]);
    // A "parent" that started the stand-in itself with a token Step Functions never
    // issued: the end's SendTaskSuccess is refused for good.
    let id = unique("lost-parent");
    aws_sdk_sfn::Client::new(&stack.config)
        .start_execution()
        .state_machine_arn(stack.out("StateMachineArn"))
        .name(&id)
        .input(
            json!({
                "task_id": id,
                "agent": "restart",
                "message": "Please build me a widget",
                "parent_task_token": "not-a-task-token-step-functions-issued",
            })
            .to_string(),
        )
        .send()
        .await
        .expect("started");
    wait_final(&stack, &id).await;
    let deadline = Instant::now() + SOON;
    loop {
        let lines = lines_since(&stack, since).await;
        let refused = metric(&lines, "ParentCallbacksRefused", &id);
        if !refused.is_empty() {
            assert_eq!(refused, [(None, 1.0)]);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no ParentCallbacksRefused line for {id}"
        );
    }
}
