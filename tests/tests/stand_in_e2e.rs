//! The stand-in end to end on LocalStack: control API → Step Functions → Lambda →
//! DynamoDB / SQS, against the project's scriptable A2A agent on loopback. Each test uses
//! its own agent persona (port) from `tests/agents.json`, deployed with the stack.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{
    CANCELED, COMPLETED, INPUT_REQUIRED, SOON, WORKING, start_as, states, wait_parked,
};
use standin_integration::stack::{Stack, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);
async fn reply(stack: &Stack, id: &str, text: &str) {
    assert_eq!(standin_integration::e2e::reply(stack, id, text).await, 202);
}

#[tokio::test]
async fn push_watch_hears_changes_replies_turn_and_completion_deletes_the_config() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27101, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour should the widget be?")]);
    let id = unique("push");
    start_as(&stack, "push", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    assert_eq!(
        agent.configs(&remote).len(),
        1,
        "one push config, under our id"
    );
    let config = agent.configs(&remote).pop().unwrap();

    agent
        .change(&remote, WORKING, "Building a blue widget", false)
        .await;
    stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(agent.pushes_sent().last().map(|p| p.1), Some(204));
    wait_parked(&stack, &id, "push").await;
    // The push-heard change costs three state entries after the park: the wake drains,
    // fetches, applies and decides in one invocation; one Choice routes to the next park.
    // (An idle re-check, 30 s after the park at first, may add TimedOut, Wake, Route, Park.)
    let entered = stack.states_entered(&id).await;
    assert_eq!(
        entered[..7],
        [
            "Bind", "Route", "Turn", "Route", "Register", "Route", "Park"
        ],
        "bound, first turn, registration (with its reconciling GetTask), park: {entered:?}"
    );
    let wakes: Vec<&[String]> = entered
        .iter()
        .enumerate()
        .filter(|(_, name)| *name == "Wake")
        .map(|(i, _)| &entered[i..(i + 3).min(entered.len())])
        .collect();
    assert!(!wakes.is_empty(), "the push woke the stand-in: {entered:?}");
    for wake in wakes {
        assert_eq!(wake, ["Wake", "Route", "Park"], "{entered:?}");
    }

    // Duplicate and stale pushes: each is only a doorbell; GetTask still says WORKING.
    let duplicate = agent.status_update(&remote, WORKING, "Building a blue widget");
    let stale = agent.status_update(&remote, INPUT_REQUIRED, "What colour should the widget be?");
    for body in [&duplicate, &duplicate, &stale] {
        agent.push(&remote, body).await;
    }
    assert!(
        agent.pushes_sent().iter().rev().take(3).all(|p| p.1 == 204),
        "{:?}",
        agent.pushes_sent()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        stack.notes(&id).len(),
        2,
        "no note for a duplicate or stale push"
    );
    wait_parked(&stack, &id, "push").await;

    agent.script_turn(&[(WORKING, "on it"), (COMPLETED, "Your blue widget is ready")]);
    reply(&stack, &id, "blue").await;
    let notes = stack.wait_notes(&id, 4, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            // The reply's turn: its progress as the turn read it, then its end.
            (3, WORKING.into(), false),
            (4, COMPLETED.into(), true)
        ],
        "every change once, in order"
    );
    assert_eq!(notes[2]["text"], "on it");
    assert_eq!(notes[3]["text"], "Your blue widget is ready");
    assert_eq!(agent.deletes(), [format!("{remote}/standin-{id}")]);
    let row = stack.row_status(&id).await;
    assert_eq!(row["closed"], true);
    assert_eq!(row["parked"], false);
    // A push after the end, with the real token, is refused and changes nothing.
    let late = push_with(&config, &agent.status_update(&remote, COMPLETED, "again")).await;
    assert_eq!(late, 401, "a push after the end is refused");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(stack.notes(&id).len(), 4, "nothing after the final note");
    // The ended stand-in's id cannot start a new one.
    let (status, body) = stack
        .control(
            "POST",
            "/standins",
            Some(json!({"agent": "push", "message": "again", "task_id": id})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
}

/// POSTs a push body to a config's URL with its token, as the agent would; the status.
async fn push_with(config: &standin_integration::agent::PushConfig, body: &Value) -> u16 {
    reqwest::Client::new()
        .post(&config.url)
        .header("x-a2a-notification-token", &config.token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_push_that_runs_ahead_of_get_task_is_found_by_the_rechecks() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27107, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which size?")]);
    let id = unique("recheck");
    start_as(&stack, "recheck", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    let gets_before = agent.count("GetTask");
    // The push says CANCELED; GetTask still says INPUT_REQUIRED for a while (a push that runs ahead of GetTask).
    agent
        .change(&remote, CANCELED, "stopped by the agent", true)
        .await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    agent.catch_up(&remote);
    let notes = stack.wait_notes(&id, 2, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(states(&notes)[1], (2, CANCELED.into(), true));
    let fetches = agent.count("GetTask") - gets_before;
    assert!(
        (2..=4).contains(&fetches),
        "the push fetch plus rechecks, at most four: {fetches}"
    );
}

async fn follow_scenario(persona: &str, port: u16, behaviour: Behaviour, pause_between: Duration) {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(port, behaviour).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique(persona);
    start_as(&stack, persona, &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "follow").await;
    let remote = agent.task_ids().pop().unwrap();
    tokio::time::sleep(pause_between).await;
    agent.change(&remote, WORKING, "Building", false).await;
    stack.wait_notes(&id, 2, SOON).await;
    tokio::time::sleep(pause_between).await;
    // The refusing agent fails its task in the end; the others complete it.
    let last = if persona == "refuse" {
        "TASK_STATE_FAILED"
    } else {
        COMPLETED
    };
    agent.change(&remote, last, "Done", false).await;
    let notes = stack.wait_notes(&id, 3, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, last.into(), true)
        ]
    );
    assert!(agent.count("SubscribeToTask") >= 1);
    assert_eq!(
        agent.count("CreateTaskPushNotificationConfig"),
        usize::from(persona == "refuse")
    );
}

#[tokio::test]
async fn follow_when_the_card_has_no_push() {
    follow_scenario(
        "nopush",
        27102,
        Behaviour {
            push_capable: false,
            ..Behaviour::default()
        },
        Duration::from_secs(1),
    )
    .await;
}

#[tokio::test]
async fn follow_when_configured_and_dropped_streams_are_resubscribed() {
    let behaviour = Behaviour {
        drop_subscriptions_after: Some(Duration::from_secs(2)),
        ..Behaviour::default()
    };
    follow_scenario("follow", 27103, behaviour, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn follow_when_push_registration_is_refused() {
    follow_scenario(
        "refuse",
        27105,
        Behaviour {
            refuse_push_registration: true,
            ..Behaviour::default()
        },
        Duration::from_secs(1),
    )
    .await;
}

#[tokio::test]
async fn off_hears_nothing_between_turns_but_replies_wake_it() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27104, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique("off");
    start_as(&stack, "off", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "off").await;
    let remote = agent.task_ids().pop().unwrap();
    agent
        .change(&remote, WORKING, "working quietly", false)
        .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(stack.notes(&id).len(), 1, "off: no watch, no note");
    assert_eq!(agent.count("GetTask") + agent.count("SubscribeToTask"), 0);
    agent.script_turn(&[(COMPLETED, "Done")]);
    reply(&stack, &id, "red").await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(states(&notes)[1], (2, COMPLETED.into(), true));
}

/// Cancel while parked: the end closes first, cancels the remote task, deletes the push
/// config (a failing delete does not stop it), sends one final note; later pushes are 401.
async fn cancel_scenario(persona: &str, port: u16, watch: &str, behaviour: Behaviour) -> TestAgent {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(port, behaviour).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique(persona);
    start_as(&stack, persona, &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, watch).await;
    let remote = agent.task_ids().pop().unwrap();
    let config = agent.configs(&remote).pop();
    assert_eq!(config.is_some(), watch == "push");
    let (status, body) = stack
        .control(
            "POST",
            &format!("/standins/{id}/cancel"),
            Some(json!({"reason": "no longer needed"})),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(
        agent.deletes_answered(),
        0,
        "the final note comes first, before the agent is asked to delete or cancel"
    );
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, CANCELED.into(), true)
        ]
    );
    assert_eq!(notes[1]["text"], "no longer needed");
    assert_eq!(
        agent.count("CancelTask"),
        1,
        "the remote task is cancelled too"
    );
    assert_eq!(stack.row_status(&id).await["closed"], true);
    let (status, _) = stack
        .control(
            "POST",
            &format!("/standins/{id}/reply"),
            Some(json!({"text": "too late"})),
        )
        .await;
    assert_eq!(status, 409, "a reply to an ended stand-in is refused");
    if let Some(config) = &config {
        // The agent's own CANCELED push (sent with the real token) is refused.
        let own = push_with(config, &agent.status_update(&remote, CANCELED, "")).await;
        assert_eq!(own, 401, "the cancel's own CANCELED push is refused");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        stack.notes(&id).len(),
        2,
        "the cancel's own CANCELED push changes nothing"
    );
    agent
}

#[tokio::test]
async fn cancel_while_parked_on_push_with_a_failing_delete() {
    // Each delete takes 8 s and fails: the parent must hear the end before any of that.
    let behaviour = Behaviour {
        fail_deletes: true,
        slow_deletes: Some(Duration::from_secs(8)),
        ..Behaviour::default()
    };
    let agent = cancel_scenario("cancel", 27108, "push", behaviour).await;
    assert_eq!(
        agent.deletes().len(),
        2,
        "two attempts, then the end goes on"
    );
    let remote = agent.task_ids().pop().unwrap();
    let config = agent
        .configs(&remote)
        .pop()
        .expect("the failed delete left the config");
    // The agent still holds the config and pushes: refused.
    let late = push_with(&config, &agent.status_update(&remote, WORKING, "late")).await;
    assert_eq!(late, 401);
}

#[tokio::test]
async fn cancel_while_following() {
    let agent = cancel_scenario("cancel-follow", 27112, "follow", Behaviour::default()).await;
    assert!(agent.deletes().is_empty(), "no push config to delete");
}

#[tokio::test]
async fn cancel_while_off() {
    let agent = cancel_scenario("cancel-off", 27113, "off", Behaviour::default()).await;
    assert!(agent.deletes().is_empty());
}

#[tokio::test]
async fn starting_twice_is_idempotent_and_an_unreachable_agent_fails_the_stand_in() {
    let stack = Stack::load(&STACK).await;
    let id = unique("nowhere");
    let body = json!({"agent": "nowhere", "message": "anyone there?", "task_id": id});
    let (s1, first) = stack.control("POST", "/standins", Some(body.clone())).await;
    let (s2, second) = stack.control("POST", "/standins", Some(body)).await;
    assert_eq!((s1, s2), (200, 200), "{first} {second}");
    assert_eq!(first["execution_arn"], second["execution_arn"]);
    let notes = stack.wait_notes(&id, 1, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(states(&notes), [(1, "TASK_STATE_FAILED".into(), true)]);
    assert!(
        notes[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("agent unavailable"),
        "{}",
        notes[0]
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(stack.notes(&id).len(), 1, "one stand-in, one final note");
}

/// A decision the state machine does not route (a step newer than the deployed
/// definition, or a misspelt one) ends the stand-in as failed and says which, instead of
/// ending it quietly. The decision is handed to a fresh execution as its input, the way a
/// step would return it.
#[tokio::test]
async fn an_unknown_step_ends_the_stand_in_as_failed_naming_the_step() {
    let stack = Stack::load(&STACK).await;
    let id = unique("unknown-step");
    let store = standin::row::dynamo::DynamoRowStore::new(
        aws_sdk_dynamodb::Client::new(&stack.config),
        stack.out("TableName").to_owned(),
        stack.out("NotesTableName").to_owned(),
    );
    standin::row::StandIns::create(&store, &standin::row::Row::new(&id, "nowhere"))
        .await
        .unwrap();
    aws_sdk_sfn::Client::new(&stack.config)
        .start_execution()
        .state_machine_arn(stack.out("StateMachineArn"))
        .name(&id)
        .input(
            json!({"task_id": id, "agent": "nowhere", "next": {"step": "fly", "park": 3}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    let notes = stack.wait_notes(&id, 1, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(states(&notes), [(1, "TASK_STATE_FAILED".into(), true)]);
    let text = notes[0]["text"].as_str().unwrap();
    assert!(
        text.contains("does not know") && text.contains(r#""step":"fly""#),
        "the note names the step: {text}"
    );
    assert_eq!(
        stack.states_entered(&id).await,
        ["Bind", "Route", "UnknownStep", "End", "Done"]
    );
}

/// A step that can never succeed is not retried: a registration for a stand-in with no
/// row fails `StandIn.Permanent` once, and the stand-in ends at once (before, the kind
/// was lost and Register retried it for eight minutes).
#[tokio::test]
async fn a_permanent_step_error_is_not_retried() {
    let stack = Stack::load(&STACK).await;
    let id = unique("no-row");
    aws_sdk_sfn::Client::new(&stack.config)
        .start_execution()
        .state_machine_arn(stack.out("StateMachineArn"))
        .name(&id)
        .input(json!({"task_id": id, "agent": "nowhere", "next": {"step": "register"}}).to_string())
        .send()
        .await
        .unwrap();
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    let failures: Vec<(String, String)> = stack
        .history(&id)
        .await
        .unwrap()
        .iter()
        .filter_map(|e| e.task_failed_event_details())
        .map(|d| {
            (
                d.error().unwrap_or_default().to_owned(),
                d.cause().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(failures.len(), 1, "one attempt, no retry: {failures:?}");
    assert_eq!(failures[0].0, "StandIn.Permanent", "{failures:?}");
    assert!(
        failures[0].1.contains(&id),
        "the cause names the stand-in: {failures:?}"
    );
    assert_eq!(
        stack.states_entered(&id).await,
        ["Bind", "Route", "Register", "StepFailed", "End", "Done"]
    );
}

#[tokio::test]
async fn control_api_errors_are_clear() {
    let stack = Stack::load(&STACK).await;
    let (status, body) = stack
        .control(
            "POST",
            "/standins",
            Some(json!({"agent": "nobody", "message": "hi"})),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("unknown agent"),
        "{body}"
    );
    let (status, _) = stack
        .control("POST", "/standins", Some(json!({"agent": "push"})))
        .await;
    assert_eq!(status, 400);
    let (status, _) = stack
        .control(
            "POST",
            "/standins",
            Some(json!({"agent": "push", "message": "x", "task_id": "a/b"})),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = stack.control("GET", "/standins/never-started", None).await;
    assert_eq!(status, 404);
    let (status, _) = stack
        .control(
            "POST",
            "/standins/never-started/reply",
            Some(json!({"text": "x"})),
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_long_lived_follow_rolls_into_a_successor_without_losing_a_change() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27106, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "step 0")]);
    let id = unique("roll");
    start_as(&stack, "roll", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    let remote = agent.task_ids().pop().unwrap();
    // The stack's history bound is 8 cycles: ten changes force at least one roll.
    for i in 1..=10 {
        wait_parked(&stack, &id, "follow").await;
        let state = if i % 2 == 0 { INPUT_REQUIRED } else { WORKING };
        agent
            .change(&remote, state, &format!("step {i}"), false)
            .await;
        stack.wait_notes(&id, i + 1, SOON).await;
    }
    agent.change(&remote, COMPLETED, "done", false).await;
    let notes = stack.wait_notes(&id, 12, SOON).await;
    let seqs: Vec<u64> = notes.iter().map(|n| n["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=12).collect::<Vec<_>>(),
        "every change once, in order, across the roll"
    );
    assert_eq!(
        stack.execution_status(&id).await.as_deref(),
        Some("SUCCEEDED"),
        "the first execution rolled and ended"
    );
    assert!(
        stack.execution_status(&format!("{id}__1")).await.is_some(),
        "a successor execution exists"
    );
    let status = stack.row_status(&id).await;
    let newest = status["execution_arn"].as_str().unwrap();
    assert!(
        newest.contains(&format!(":{id}__")),
        "status names the newest execution, not the first: {newest}"
    );
    assert!(status["execution_status"].is_string(), "{status}");
}

fn sha256_hex(s: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every run of 43 base64url characters in `text` whose SHA-256 is one of `digests`.
/// Every window of every run is hashed (a token may sit inside a longer word), so the
/// hash is aws-lc's, whose C core keeps a debug build's scan of every log to seconds
/// (sha2's debug build took minutes), and the digests are compared as bytes.
fn leaked_tokens(text: &str, digests: &[String]) -> Vec<String> {
    use aws_lc_rs::digest::{SHA256, digest};
    let wanted: std::collections::HashSet<Vec<u8>> = digests
        .iter()
        .map(|d| hex::decode(d).unwrap_or_else(|_| panic!("a digest that is not hex: {d}")))
        .collect();
    let bytes = text.as_bytes();
    let is_b64 = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let mut found = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        if !is_b64(bytes[start]) {
            start += 1;
            continue;
        }
        let mut end = start;
        while end < bytes.len() && is_b64(bytes[end]) {
            end += 1;
        }
        for i in start..end.saturating_sub(42) {
            if wanted.contains(digest(&SHA256, &bytes[i..i + 43]).as_ref()) {
                found.push(text[i..i + 43].to_owned());
            }
        }
        start = end;
    }
    found
}

/// The scan finds a token alone, inside a longer word and at a word's end, and nothing
/// in a word of a megabyte (every one of its windows hashed).
#[test]
fn the_token_scan_finds_a_token_wherever_it_sits_in_a_word() {
    let token = "Zq3_aB-9xYwVuTsRqPoNmLkJiHgFeDcBa0123456789";
    assert_eq!(token.len(), 43);
    let digests = [sha256_hex(token)];
    for text in [
        format!("token {token} end"),
        format!("{{\"x\":\"prefix{token}\"}}"),
        format!("{token}suffix"),
    ] {
        assert_eq!(leaked_tokens(&text, &digests), [token], "{text}");
    }
    let words = "standin_turn_invocation-task_id_si-0bb4a7_".repeat(25_000);
    let started = std::time::Instant::now();
    assert!(leaked_tokens(&words, &digests).is_empty());
    eprintln!("a megabyte-long word scanned in {:?}", started.elapsed());
}

#[tokio::test]
async fn the_push_token_appears_nowhere_but_as_its_digest() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27109, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique("scan");
    start_as(&stack, "scan", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    let token = agent.configs(&remote).pop().unwrap().token;
    assert_eq!(token.len(), 43);
    // A careless agent echoes the token in its status text: it must be scrubbed.
    agent
        .change(
            &remote,
            WORKING,
            &format!("my webhook token is {token} ok"),
            false,
        )
        .await;
    // And in an artifact, as text and as a file's bytes: blanked before it is stored.
    agent
        .artifact_update(
            &remote,
            json!({"artifactId": "echo", "parts": [
                {"text": format!("the token: {token}.")},
                {"raw": base64::engine::general_purpose::STANDARD.encode(format!("{token}\n"))}]}),
            false,
            true,
        )
        .await;
    agent.script_turn(&[(COMPLETED, &format!("done; token={token}"))]);
    stack.wait_notes(&id, 2, SOON).await;
    reply(&stack, &id, "blue").await;
    let notes = stack.wait_notes(&id, 3, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;

    // The tables, every page: the digest is there, the token is not.
    let db = aws_sdk_dynamodb::Client::new(&stack.config);
    let mut rows = Vec::new();
    let mut pages = db
        .scan()
        .table_name(stack.out("TableName"))
        .into_paginator()
        .items()
        .send();
    while let Some(item) = pages.next().await {
        rows.push(item.unwrap());
    }
    let table = format!("{rows:?}");
    assert!(
        table.contains(&sha256_hex(&token)),
        "the row keeps the token's SHA-256"
    );
    let digests: Vec<String> = rows
        .iter()
        .filter_map(|i| {
            i.get("watch")?
                .as_m()
                .ok()?
                .get("token_digest")?
                .as_s()
                .ok()
                .cloned()
        })
        .collect();
    assert!(!digests.is_empty());
    let notes_table = stack.table_text("NotesTableName").await.unwrap();
    let turns_table = stack.table_text("TurnsTableName").await.unwrap();
    assert!(
        notes_table.contains(&id),
        "the outbox holds this stand-in's notes"
    );

    // Every execution's whole history, with its data; every function's logs.
    let history = stack.history_text(|_| true).await.unwrap();
    let log_text = stack.log_text(&stack.function_logs(), None).await.unwrap();
    assert!(!log_text.is_empty() && !history.is_empty());
    let queue_text = notes
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let bucket = stack.bucket_text().await.unwrap();
    assert!(
        bucket.contains("the token: ****"),
        "the echoing artifact was stored, blanked"
    );
    let last = notes.last().unwrap();
    let echo = &last["artifacts"][0];
    assert_eq!(
        (
            echo["parts"][0]["flag"].as_str(),
            echo["parts"][1]["flag"].as_str()
        ),
        (Some("redacted"), Some("redacted")),
        "{last}"
    );
    for (name, text) in [
        ("table", &table),
        ("note log", &notes_table),
        ("turns table", &turns_table),
        ("execution history", &history),
        ("logs", &log_text),
        ("parent notes", &queue_text),
        ("artifacts bucket", &bucket),
    ] {
        assert!(
            !text.contains(&token),
            "the push token leaked into the {name}"
        );
        assert_eq!(
            leaked_tokens(text, &digests),
            Vec::<String>::new(),
            "a push token (any stand-in's) leaked into the {name}"
        );
    }
    assert!(
        queue_text.contains("[redacted]"),
        "the echoed token was scrubbed, not dropped silently: {queue_text}"
    );
}

/// Interop with the official a2a-sdk (1.3.0) server over JSON-RPC: its agent asks, then
/// works 15 s after the reply; the turn window (10 s) ends the turn at WORKING, so the
/// completion is heard by the watch (its push, or SubscribeToTask).
async fn sdk_scenario(persona: &str, watch: &str) {
    let stack = Stack::load(&STACK).await;
    let id = unique(persona);
    start_as(&stack, persona, &id).await;
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(
        (notes[0]["state"].as_str(), notes[0]["text"].as_str()),
        (
            Some(INPUT_REQUIRED),
            Some("What colour should the widget be?")
        )
    );
    wait_parked(&stack, &id, watch).await;
    reply(&stack, &id, "teal").await;
    let notes = stack.wait_notes(&id, 3, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, COMPLETED.into(), true)
        ],
        "{notes:#?}"
    );
    assert_eq!(notes[1]["text"], "Building a teal widget...");
    assert_eq!(notes[2]["text"], "Your teal widget is ready.");
    // The SDK's artifact, streamed in two chunks: joined, whole, on the final note.
    let widget = &notes[2]["artifacts"][0];
    assert_eq!(
        (
            widget["artifact_id"].as_str(),
            widget["name"].as_str(),
            widget["complete"].as_bool()
        ),
        (Some("widget"), Some("widget.txt"), Some(true)),
        "{}",
        notes[2]
    );
    let texts: Vec<&str> = widget["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(texts, ["widget(colour=teal)", " size=large"]);
}

#[tokio::test]
async fn interop_push_with_the_official_sdk_server() {
    sdk_scenario("sdk-push", "push").await;
}

#[tokio::test]
async fn interop_follow_with_the_official_sdk_server() {
    sdk_scenario("sdk-follow", "follow").await;
}

#[tokio::test]
async fn a_reply_while_following_stops_the_follow_within_one_heartbeat() {
    let stack = Stack::load(&STACK).await;
    // The reply's own events reach the old subscription too: the old follow must not
    // apply them (its park was woken), and it stops at its next heartbeat check.
    let agent = TestAgent::start(27115, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique("follow-reply");
    start_as(&stack, "follow-reply", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    let deadline = std::time::Instant::now() + SOON;
    while agent.open_subscriptions() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the follow never subscribed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The reply's turn passes through WORKING, which the turn tells as it reads it: an
    // old follow that could still apply would tell that WORKING again after the question.
    agent.script_turn(&[(WORKING, "Sizing it"), (INPUT_REQUIRED, "Which size?")]);
    reply(&stack, &id, "blue").await;
    stack.wait_notes(&id, 3, SOON).await;
    let replied = std::time::Instant::now();
    // The follow heartbeats every 10 s: the old subscription closes within that (plus
    // slack), while the next park's follow opens its own.
    loop {
        let subscribed = agent.count("SubscribeToTask");
        if subscribed >= 2 && agent.open_subscriptions() == 1 {
            break;
        }
        assert!(
            replied.elapsed() < Duration::from_secs(20),
            "old follow still open: {} open, {subscribed} subscribed",
            agent.open_subscriptions()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        states(&stack.notes(&id)),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, INPUT_REQUIRED.into(), false)
        ],
        "the reply's turn told once, by the turn"
    );
    let (status, _) = stack
        .control("POST", &format!("/standins/{id}/cancel"), Some(json!({})))
        .await;
    assert_eq!(status, 202);
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
}

#[tokio::test]
async fn a_new_push_during_the_rechecks_restarts_them() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27116, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which size?")]);
    let id = unique("restart");
    start_as(&stack, "restart", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    let before = agent.count("GetTask");
    // A push claims CANCELED; GetTask keeps saying INPUT_REQUIRED. One push alone costs at
    // most 4 GetTask calls (fetch, then 1 s, 2 s, 4 s); a second push during the waits
    // starts the sequence again.
    agent.change(&remote, CANCELED, "", true).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let claim = agent.status_update(&remote, CANCELED, "");
    agent.push(&remote, &claim).await;
    tokio::time::sleep(Duration::from_secs(14)).await;
    let fetches = agent.count("GetTask") - before;
    assert!(
        (5..=7).contains(&fetches),
        "a restart gives 5 to 7 fetches, a single sequence at most 4: {fetches}"
    );
    assert_eq!(
        stack.notes(&id).len(),
        1,
        "nothing was applied from the pushes"
    );
    // GetTask catches up; the next push is then confirmed at once and ends the stand-in.
    agent.catch_up(&remote);
    agent.push(&remote, &claim).await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(states(&notes)[1], (2, CANCELED.into(), true));
}

#[tokio::test]
async fn the_list_route_pages_through_every_stand_in_and_shows_no_secret() {
    let stack = Stack::load(&STACK).await;
    // More rows than one page (50) holds, written straight into the table: the route's
    // paging is under test, not starting executions.
    let dynamo = aws_sdk_dynamodb::Client::new(&stack.config);
    let prefix = unique("listed");
    let ids: Vec<String> = (0..60).map(|i| format!("{prefix}-{i:02}")).collect();
    for id in &ids {
        let mut row = standin::row::Row::new(id, "push");
        row.park_token = Some(format!("park-token-{id}"));
        row.watch = Some(standin::row::Watch {
            mode: standin::row::WatchMode::Push,
            config_id: Some("cfg".into()),
            token_digest: Some(standin::push::token::PushToken::generate().digest()),
        });
        dynamo
            .put_item()
            .table_name(stack.out("TableName"))
            .set_item(Some(serde_dynamo::to_item(&row).unwrap()))
            .send()
            .await
            .unwrap();
    }
    let (mut seen, mut after, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let path = after
            .as_ref()
            .map_or("/standins".to_owned(), |a| format!("/standins?after={a}"));
        let (status, body) = stack.control("GET", &path, None).await;
        assert_eq!(status, 200, "{body}");
        let text = body.to_string();
        assert!(
            !text.contains("park-token-") && !text.contains("token_digest"),
            "{text}"
        );
        for row in body["standins"].as_array().unwrap() {
            let id = row["task_id"].as_str().unwrap().to_owned();
            if id.starts_with(&prefix) {
                assert_eq!(row["watch"], "push");
                seen.push(id);
            }
        }
        pages += 1;
        match body["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ids, "every stand-in once, across {pages} pages");
    assert!(pages >= 2);
}
