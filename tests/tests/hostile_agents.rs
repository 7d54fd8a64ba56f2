//! Agents that are huge, misplaced, non-streaming or hostile, end to end on LocalStack:
//! every read is bounded, the stand-in connects only where it was told, an agent that
//! cannot stream is still heard, and no text can outgrow the execution's state. Each
//! stand-in ends or carries on as documented, with a final note, and no function dies.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use serde_json::{Value, json};
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{
    CANCELED, COMPLETED, FAILED, INPUT_REQUIRED, SOON, WORKING, assert_ended_at_deadline,
    assert_no_step_died, reply, sdk_agent, start, start_on_entry, states, wait_final, wait_parked,
};
use standin_integration::stack::Stack;

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);
/// The stand-in ended with exactly one note, FAILED, whose text holds `cause`.
async fn failed_with(stack: &Stack, id: &str, cause: &str) -> Value {
    let notes = stack.wait_notes(id, 1, SOON).await;
    stack.wait_execution(id, "SUCCEEDED", SOON).await;
    assert_eq!(states(&notes), [(1, FAILED.into(), true)], "{notes:#?}");
    let text = notes[0]["text"].as_str().unwrap();
    assert!(text.contains(cause), "{text}");
    notes[0].clone()
}

async fn artifact_scenario(persona: &str, port: u16, watch: &str) {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(port, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = start(&stack, persona).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, watch).await;
    let remote = agent.task_ids().pop().unwrap();
    // 10 MB in one artifact: streamed to subscribers, pushed (refused: 413), and inline in
    // every GetTask from now on. The stand-in never needs it.
    agent
        .add_artifact(&remote, "huge.txt", &"a".repeat(10 * 1024 * 1024))
        .await;
    agent
        .change(&remote, WORKING, "Still building", false)
        .await;
    stack.wait_notes(&id, 2, SOON).await;
    agent.change(&remote, COMPLETED, "Done", false).await;
    let notes = stack.wait_notes(&id, 3, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, COMPLETED.into(), true)
        ]
    );
    assert_no_step_died(&stack, &id).await;
}

#[tokio::test]
async fn a_ten_megabyte_artifact_is_read_through_by_get_task() {
    artifact_scenario("artifact", 27125, "push").await;
}

#[tokio::test]
async fn a_ten_megabyte_artifact_is_read_through_by_a_follow() {
    artifact_scenario("artifact-follow", 27134, "follow").await;
}

#[tokio::test]
async fn a_ten_megabyte_card_is_refused_and_the_parent_is_told() {
    let stack = Stack::load(&STACK).await;
    let _agent = TestAgent::start(
        27126,
        Behaviour {
            card_padding: 10 * 1024 * 1024,
            ..Behaviour::default()
        },
    )
    .await;
    let id = start(&stack, "bigcard").await;
    failed_with(
        &stack,
        &id,
        "the card from the agent is over the 262144-byte limit",
    )
    .await;
}

#[tokio::test]
async fn an_endless_stream_line_ends_the_turn_not_the_function() {
    let stack = Stack::load(&STACK).await;
    let _agent = TestAgent::start(
        27127,
        Behaviour {
            endless_stream: true,
            ..Behaviour::default()
        },
    )
    .await;
    let id = start(&stack, "endless").await;
    // The stream's byte limit ends it (256 MiB arrive well within the 10 s turn window).
    failed_with(
        &stack,
        &id,
        "a stream from the agent is over the 268435456-byte limit",
    )
    .await;
    assert_no_step_died(&stack, &id).await;
}

#[tokio::test]
async fn a_card_pointing_at_another_origin_is_refused() {
    let stack = Stack::load(&STACK).await;
    let victim = TestAgent::start(27129, Behaviour::default()).await;
    let _agent = TestAgent::start(
        27128,
        Behaviour {
            interface_url: Some(victim.url.clone() + "/"),
            ..Behaviour::default()
        },
    )
    .await;
    let id = start(&stack, "elsewhere").await;
    failed_with(&stack, &id, "allowed_origins").await;
    assert!(
        victim.calls().is_empty(),
        "nothing reached the other origin: {:?}",
        victim.calls()
    );
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_and_the_token_stays_home() {
    let stack = Stack::load(&STACK).await;
    let victim = TestAgent::start(27135, Behaviour::default()).await;
    // The registration (which carries the push token) is answered with a 307 elsewhere.
    let agent = TestAgent::start(
        27130,
        Behaviour {
            redirect: Some((
                vec!["CreateTaskPushNotificationConfig".into()],
                victim.url.clone() + "/",
            )),
            ..Behaviour::default()
        },
    )
    .await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = start(&stack, "redirect").await;
    stack.wait_notes(&id, 1, SOON).await;
    // Registration failed (a 307 is an error, not a way elsewhere): the stand-in follows.
    wait_parked(&stack, &id, "follow").await;
    assert!(
        victim.calls().is_empty(),
        "the token went nowhere else: {:?}",
        victim.calls()
    );
    let remote = agent.task_ids().pop().unwrap();
    agent.change(&remote, COMPLETED, "Done", false).await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(states(&notes)[1], (2, COMPLETED.into(), true));
}

#[tokio::test]
async fn an_agent_that_cannot_stream_is_heard_by_push() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(
        27131,
        Behaviour {
            streaming: false,
            ..Behaviour::default()
        },
    )
    .await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = start(&stack, "unary").await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    agent.change(&remote, WORKING, "Thinking", false).await;
    stack.wait_notes(&id, 2, SOON).await;
    wait_parked(&stack, &id, "push").await;
    agent.script_turn(&[(COMPLETED, "A blue widget")]);
    assert_eq!(reply(&stack, &id, "blue").await, 202);
    let notes = stack.wait_notes(&id, 3, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, COMPLETED.into(), true)
        ]
    );
    assert_eq!(
        agent.count("SendStreamingMessage") + agent.count("SubscribeToTask"),
        0
    );
    assert_eq!(agent.count("SendMessage"), 2);
}

#[tokio::test]
async fn following_an_agent_that_cannot_stream_is_a_configuration_error_at_start() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(
        27132,
        Behaviour {
            streaming: false,
            ..Behaviour::default()
        },
    )
    .await;
    let id = start(&stack, "unary-follow").await;
    failed_with(&stack, &id, "configuration").await;
    assert!(
        agent.calls().is_empty(),
        "nothing was sent: {:?}",
        agent.calls()
    );
}

/// The official a2a-sdk server with streaming switched off: SendMessage blocks past the
/// turn window (its work takes 15 s), so the turn asks GetTask and push hears the rest.
#[tokio::test]
async fn interop_with_the_official_sdk_server_without_streaming() {
    let stack = Stack::load(&STACK).await;
    let id = start(&stack, "sdk-unary").await;
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(notes[0]["state"], INPUT_REQUIRED, "{notes:#?}");
    wait_parked(&stack, &id, "push").await;
    assert_eq!(reply(&stack, &id, "teal").await, 202);
    let notes = wait_final(&stack, &id).await;
    let last = notes.last().unwrap();
    assert_eq!(
        (last["state"].as_str(), last["text"].as_str()),
        (Some(COMPLETED), Some("Your teal widget is ready."))
    );
    let seqs: Vec<u64> = notes.iter().map(|n| n["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=notes.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn oversized_texts_are_refused_or_bounded_and_every_stand_in_still_ends_with_a_note() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27133, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = start(&stack, "oversized").await;
    stack.wait_notes(&id, 1, SOON).await;
    let huge = "r".repeat(300 * 1024);
    let (status, body) = stack
        .control(
            "POST",
            &format!("/standins/{id}/reply"),
            Some(json!({"text": huge})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("must be at most 32768 bytes"),
        "{body}"
    );
    let (status, body) = stack
        .control(
            "POST",
            &format!("/standins/{id}/cancel"),
            Some(json!({"reason": huge})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = stack
        .control(
            "POST",
            &format!("/standins/{id}/cancel"),
            Some(json!({"reason": "enough"})),
        )
        .await;
    assert_eq!(status, 202);
    let notes = stack.wait_notes(&id, 2, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(states(&notes)[1], (2, CANCELED.into(), true));

    // A first turn answered with a 300 KB error message: the reason is bounded before it
    // enters the execution's state, and the parent is told.
    agent.set_behaviour(|b| b.turn_error = Some(format!("boom {}", "e".repeat(300 * 1024))));
    let id = start(&stack, "oversized").await;
    let note = failed_with(&stack, &id, "boom").await;
    assert!(
        note["text"].as_str().unwrap().len() <= 4096 + 32,
        "{}",
        note["text"].as_str().unwrap().len()
    );
}

/// Every stand-in ends: one whose agent works on and on ends at the deadline its start
/// asked for. The remote task is cancelled, and the parent's final note says why.
#[tokio::test]
async fn a_stand_in_at_its_deadline_cancels_the_remote_task_and_tells_the_parent() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27176, Behaviour::default()).await;
    agent.script_turn(&[(WORKING, "Working on it, for a long while.")]);
    let entry = json!({"url": agent.url});
    let (_, id) = start_on_entry(&stack, "deadline", entry, json!({"deadline_secs": 8})).await;
    assert_ended_at_deadline(&stack, &id, &agent).await;
    let remote = agent.task_ids().pop().unwrap();
    assert_eq!(agent.state(&remote).as_deref(), Some(CANCELED));
    assert_no_step_died(&stack, &id).await;
}

/// Every stand-in ends: the official SDK's agent process dies for good while its task
/// works; polled, the stand-in keeps its last state until the agent has been unreachable
/// for the entry's `max_unreachable`, then ends FAILED naming the agent and the cause.
#[tokio::test]
async fn a_stand_in_whose_agent_died_ends_failed_after_its_max_unreachable() {
    let stack = Stack::load(&STACK).await;
    let port = 27177;
    let mut sdk_agent = sdk_agent(port, &["--work-seconds", "600"]).await;
    let entry = json!({"url": format!("http://127.0.0.1:{port}"), "updates": "poll",
                       "max_unreachable": 5});
    let (agent_id, id) = start_on_entry(&stack, "gone", entry, json!({})).await;
    wait_parked(&stack, &id, "poll").await;
    sdk_agent.kill().await.expect("our own agent process stops");
    let notes = wait_final(&stack, &id).await;
    let last = notes.last().unwrap();
    assert_eq!(last["state"], FAILED, "{notes:#?}");
    let text = last["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("{agent_id:?}")),
        "names the agent: {text}"
    );
    assert!(text.contains("unreachable"), "says why: {text}");
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_no_step_died(&stack, &id).await;
}

/// The first note of a stand-in started on `entry`.
async fn first_note(stack: &Stack, name: &str, entry: Value) -> (String, Value) {
    let (agent_id, id) = start_on_entry(stack, name, entry, json!({"deadline_secs": 30})).await;
    let notes = stack.wait_notes(&id, 1, SOON).await;
    (agent_id, notes[0].clone())
}

/// The first note of a stand-in whose agent's card was refused: FAILED, naming the agent
/// and saying `why`.
fn assert_refused((agent, note): (String, Value), why: &str) {
    let text = note["text"].as_str().unwrap_or_default();
    assert_eq!(note["state"], FAILED, "{note:#}");
    assert!(text.contains(&agent) && text.contains(why), "{text}");
}

/// An entry that pins its agent's card keys (`card_signing`) gets only a card one of
/// them signed, the official SDK's signer signing it: the card changed after signing,
/// or not signed at all, ends the first turn FAILED naming the agent and the reason.
/// Unpinned, a signed card is read, checked against the keys its signature names, and
/// the result logged.
#[tokio::test]
async fn a_card_whose_keys_are_pinned_must_verify_and_a_tampered_one_is_refused() {
    let stack = Stack::load(&STACK).await;
    let dir = std::env::temp_dir().join(standin_integration::stack::unique("card-keys"));
    std::fs::create_dir_all(&dir).unwrap();
    let (genuine_keys, tampered_keys) = (dir.join("genuine.json"), dir.join("tampered.json"));
    let _genuine = sdk_agent(27188, &["--sign-card", genuine_keys.to_str().unwrap()]).await;
    let _tampered = sdk_agent(
        27189,
        &[
            "--sign-card",
            tampered_keys.to_str().unwrap(),
            "--tamper-card",
        ],
    )
    .await;
    let pinned = |path: &std::path::Path| {
        let jwks: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        json!({"keys": jwks["keys"]})
    };
    let genuine = "http://127.0.0.1:27188";
    let entry = json!({"url": genuine, "card_signing": pinned(&genuine_keys)});
    let (_, note) = first_note(&stack, "signed", entry).await;
    assert_eq!(
        note["state"], INPUT_REQUIRED,
        "the signed card is read: {note:#}"
    );
    let entry = json!({"url": "http://127.0.0.1:27189", "card_signing": pinned(&tampered_keys)});
    assert_refused(
        first_note(&stack, "tampered", entry).await,
        "does not match the card",
    );
    // The interop peer's card is not signed at all.
    let entry = json!({"url": "http://127.0.0.1:27110", "card_signing": pinned(&genuine_keys)});
    assert_refused(first_note(&stack, "unsigned", entry).await, "is not signed");
    // Unpinned: read, and its signature checked against the key set it names (jku).
    let (agent, note) = first_note(&stack, "unpinned", json!({"url": genuine})).await;
    assert_eq!(note["state"], INPUT_REQUIRED, "{note:#}");
    let deadline = std::time::Instant::now() + SOON;
    loop {
        let logs = stack.log_text(&stack.function_logs(), None).await.unwrap();
        let logged = logs.lines().any(|line| {
            line.contains(&agent)
                && line.contains("card signature verified against the keys it names")
        });
        if logged {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no log line says the card verified"
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    std::fs::remove_dir_all(&dir).ok();
}
