//! The stand-in's three promises to the parent, end to end on LocalStack, under the
//! faults that broke them: every change once, in order, with `seq` 1..n (SQS refusing
//! sends for a while); no stand-in left hanging (park invokes delivered late, twice or
//! never; a terminal push that never arrives); the truth at the end (a reply or a cancel
//! racing a remote completion, applied or not yet heard). Faults are injected between the functions and LocalStack
//! (the fault proxy) and in Lambda's delivery of invocations (the local executor), never
//! in the product's code.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{
    COMPLETED, INPUT_REQUIRED, SOON, WORKING, reply, start_as, states, wait_final, wait_heard,
    wait_parked,
};
use standin_integration::stack::{Stack, faults, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`): another name runs
/// these tests against another deployment, such as an older build.
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);
/// Starts a stand-in on `persona` whose first turn asks a question; waits until it is
/// parked on `watch`; returns the agent, the stand-in's id and the remote task's id.
async fn parked(
    stack: &Stack,
    persona: &str,
    port: u16,
    watch: &str,
) -> (TestAgent, String, String) {
    let agent = TestAgent::start(port, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique(persona);
    start_as(stack, persona, &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(stack, &id, watch).await;
    let remote = agent.task_ids().pop().unwrap();
    (agent, id, remote)
}

/// Adds agent `name` at `port` through the registry, as an operator would: the agents
/// document is at its size limit, and every port of it is some test's.
async fn registered(stack: &Stack, name: &str, port: u16) {
    let entry = json!({"url": format!("http://127.0.0.1:{port}"), "follow_interval": 1});
    let (status, body) = stack
        .control("PUT", &format!("/agents/{name}"), Some(entry))
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn sqs_refusing_sends_for_a_while_loses_no_note_and_reorders_none() {
    let stack = Stack::load(&STACK).await;
    let (agent, id, remote) = parked(&stack, "outbox", 27118, "push").await;
    // For 30 s SQS refuses (500, past the SDK's own retries) this stand-in's note 2 only:
    // notes 3 and 4 are written meanwhile and SQS would take them, but they must wait
    // behind note 2 and arrive after it, in order.
    let rule = unique("sqs-down");
    faults::refuse(&rule, "AmazonSQS.*", &[&id, r#"\"seq\":2,"#], 500, 30).await;
    // Each change is heard before the next is made: changes close together may be
    // coalesced (GetTask tells only the newest), and this test is about the outbox.
    agent
        .change(&remote, WORKING, "Cutting the parts", false)
        .await;
    wait_heard(&stack, &id, 2).await;
    agent
        .change(&remote, WORKING, "Painting it blue", false)
        .await;
    wait_heard(&stack, &id, 3).await;
    agent
        .change(&remote, COMPLETED, "Your widget is ready", false)
        .await;
    wait_heard(&stack, &id, 4).await;
    assert_eq!(
        stack.notes(&id).len(),
        1,
        "nothing reaches the parent while SQS refuses"
    );
    assert!(faults::refused(&rule).await > 0, "the fault was exercised");

    let notes = stack.wait_notes(&id, 4, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, WORKING.into(), false),
            (4, COMPLETED.into(), true),
        ],
        "every change once, in order, after the outage"
    );
    assert_eq!(notes[2]["text"], "Painting it blue");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stack.notes(&id).len(), 4, "no note twice");

    // The note log: all of it, and the part after a number, as the parent catches up.
    let log = stack.note_log(&id, 0).await;
    assert_eq!(states(&log), states(&notes));
    assert_eq!(states(&stack.note_log(&id, 2).await), states(&notes[2..]));
}

/// A backlog the notify function cannot send within one invocation (SQS answers every
/// call a second late): 100 notes written at once, one stand-in's 34 among 22 others'
/// three each. Sent one by one, a batch outlived its 30 s timeout on every retry and
/// nothing after its first 28 notes ever arrived; now each round carries every
/// stand-in's next note and an invocation hands back what it could not send in time.
#[tokio::test]
async fn a_backlog_larger_than_one_invocation_can_send_arrives_whole_in_order_once() {
    let stack = Stack::load(&STACK).await;
    let run = unique("backlog");
    let rule = unique("sqs-slow");
    faults::add(json!({"id": rule, "target": "AmazonSQS.*", "match": [&run],
        "action": "delay", "ms": 1000, "seconds": 240}))
    .await;
    let long = format!("{run}-long");
    let short: Vec<String> = (0..22).map(|i| format!("{run}-s{i}")).collect();
    let mut writes = vec![];
    for seq in 1..=34 {
        writes.push((long.clone(), seq));
        if seq <= 3 {
            writes.extend(short.iter().map(|s| (s.clone(), seq)));
        }
    }
    assert_eq!(
        writes.len(),
        100,
        "one transaction, so one batch from the stream"
    );
    let dynamo = aws_sdk_dynamodb::Client::new(&stack.config);
    let mut transaction = dynamo.transact_write_items();
    for (task_id, seq) in &writes {
        let note = json!({"task_id": task_id, "remote_task_id": "r", "agent": "a",
            "state": WORKING, "text": format!("step {seq}"), "final": false, "seq": seq,
            "at": "2026-12-01T00:00:00.000Z"});
        let put = aws_sdk_dynamodb::types::Put::builder()
            .table_name(stack.out("NotesTableName"))
            .item("task_id", AttributeValue::S(task_id.clone()))
            .item("seq", AttributeValue::N(seq.to_string()))
            .item("body", AttributeValue::S(note.to_string()))
            .build()
            .unwrap();
        transaction = transaction.transact_items(
            aws_sdk_dynamodb::types::TransactWriteItem::builder()
                .put(put)
                .build(),
        );
    }
    transaction.send().await.expect("notes written");

    let within = Duration::from_secs(150);
    stack.wait_notes(&long, 34, within).await;
    for short in &short {
        stack.wait_notes(short, 3, within).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seqs = |task_id: &str| -> Vec<u64> {
        let notes = stack.notes(task_id);
        notes.iter().map(|n| n["seq"].as_u64().unwrap()).collect()
    };
    assert_eq!(
        seqs(&long),
        (1..=34).collect::<Vec<_>>(),
        "the long backlog in order, once"
    );
    for short in &short {
        assert_eq!(seqs(short), [1, 2, 3], "{short}: in order, once");
    }
    assert!(
        faults::refused(&rule).await > 0,
        "the slow answers were exercised"
    );
}

/// A recheck park (1 s) whose invoke arrives 14 s late, after the stand-in has moved on
/// to its idle park: it must not replace the live park's token.
#[tokio::test]
async fn a_park_invoke_delivered_late_or_twice_leaves_no_stand_in_hanging() {
    let stack = Stack::load(&STACK).await;
    let (agent, id, remote) = parked(&stack, "late-park", 27119, "push").await;
    // The push claims WORKING while GetTask still says INPUT_REQUIRED: the stand-in
    // rechecks after 1 s, 2 s, 4 s. The first recheck park's invoke is 14 s late; the
    // next one is delivered twice.
    faults::invoke(&unique("late"), "ParkFunction", &id, "delay", 14, 1);
    agent.change(&remote, WORKING, "Building", true).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    faults::invoke(&unique("twice"), "ParkFunction", &id, "twice", 0, 1);
    // The rechecks end in about 8 s; the late invoke lands at about 14 s, on the idle park.
    tokio::time::sleep(Duration::from_secs(15)).await;
    wait_parked(&stack, &id, "push").await;
    agent.catch_up(&remote);
    agent.script_turn(&[(COMPLETED, "Blue it is")]);
    // The parent's reply must ring the live park at once: with a dead token stored, it
    // would wait for the idle re-check (30 s at first, growing to 90 s on the test stack).
    let replied = std::time::Instant::now();
    assert_eq!(reply(&stack, &id, "blue").await, 202);
    wait_final(&stack, &id).await;
    assert!(
        replied.elapsed() < Duration::from_secs(8),
        "the reply rang the live park, not a dead token: {:?}",
        replied.elapsed()
    );
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    let notes = stack.notes(&id);
    let seqs: Vec<u64> = notes.iter().map(|n| n["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=notes.len() as u64).collect::<Vec<_>>());
    assert_eq!(notes.last().unwrap()["state"], COMPLETED);
    assert_eq!(notes.last().unwrap()["text"], "Blue it is");
}

#[tokio::test]
async fn a_park_invoke_never_delivered_is_replaced_when_the_park_times_out() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27120, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique("lost-park");
    // The stand-in's first park is never delivered: no token is stored, nothing can ring.
    faults::invoke(&unique("drop"), "ParkFunction", &id, "drop", 0, 1);
    let (status, body) = stack
        .control(
            "POST",
            "/standins",
            Some(
                json!({"agent": "lost-park", "message": "Please build me a widget", "task_id": id}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    stack.wait_notes(&id, 1, SOON).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        stack.row_status(&id).await["parked"],
        false,
        "no park token was stored"
    );
    agent.script_turn(&[(COMPLETED, "Red it is")]);
    assert_eq!(reply(&stack, &id, "red").await, 202);
    // The park's timeout (the backstop's first idle re-check, 30 s) ends it; the wake finds
    // the reply waiting on the row.
    let notes = stack.wait_notes(&id, 2, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, COMPLETED.into(), true)
        ]
    );
}

#[tokio::test]
async fn a_terminal_push_that_never_arrives_is_heard_by_the_recheck() {
    let stack = Stack::load(&STACK).await;
    let (agent, id, remote) = parked(&stack, "lost-push", 27121, "push").await;
    agent.change_and_lose_the_push(&remote, COMPLETED, "Done, though nobody was told");
    let notes = stack.wait_notes(&id, 2, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, COMPLETED.into(), true)
        ]
    );
    assert_eq!(notes[1]["text"], "Done, though nobody was told");
}

#[tokio::test]
async fn a_reply_racing_a_remote_completion_reports_the_completion() {
    let stack = Stack::load(&STACK).await;
    let (agent, id, remote) = parked(&stack, "reply-race", 27122, "push").await;
    // The agent finishes on its own, its push lost; the parent's reply is already on its
    // way. The reply's turn gets -32004 (the task is terminal): GetTask tells the truth.
    agent.change_and_lose_the_push(&remote, COMPLETED, "Finished without you");
    assert_eq!(reply(&stack, &id, "blue").await, 202);
    let notes = stack.wait_notes(&id, 2, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, COMPLETED.into(), true)
        ]
    );
    assert_eq!(notes[1]["text"], "Finished without you");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(stack.notes(&id).len(), 2, "one final note");
}

#[tokio::test]
async fn a_cancel_after_a_completion_was_applied_reports_the_completion_once() {
    let stack = Stack::load(&STACK).await;
    let (agent, id, remote) = parked(&stack, "cancel-race", 27123, "follow").await;
    // The wake after the follow's report runs 4 s late, so the parent's cancel lands
    // between the follow applying the completion and the stand-in acting on it.
    faults::invoke(&unique("slow-wake"), "WakeFunction", &id, "delay", 4, 1);
    agent.change(&remote, COMPLETED, "All done", false).await;
    let deadline = std::time::Instant::now() + SOON;
    while stack.row_status(&id).await["state"] != COMPLETED {
        assert!(
            std::time::Instant::now() < deadline,
            "the follow never applied it"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = stack
        .control(
            "POST",
            &format!("/standins/{id}/cancel"),
            Some(json!({"reason": "late"})),
        )
        .await;
    assert_eq!(
        status, 409,
        "the completion already ended the stand-in: {body}"
    );
    let notes = stack.wait_notes(&id, 2, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        states(&stack.notes(&id)),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, COMPLETED.into(), true)
        ],
        "the completion once, under its own number: {notes:#?}"
    );
    assert_eq!(
        agent.count("CancelTask"),
        0,
        "a finished task is not cancelled"
    );
}

#[tokio::test]
async fn a_row_store_hiccup_during_registration_is_retried_not_fatal() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27124, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique("hiccup");
    // Registration's write of the watch fails for 8 s, past the SDK's own retries.
    let rule = unique("ddb-down");
    faults::refuse(
        &rule,
        "DynamoDB_20120810.UpdateItem",
        &[&id, "config_id"],
        500,
        8,
    )
    .await;
    start_as(&stack, "hiccup", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "push").await;
    assert!(faults::refused(&rule).await > 0, "the fault was exercised");
    let remote = agent.task_ids().pop().unwrap();
    agent.change(&remote, COMPLETED, "Done", false).await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, COMPLETED.into(), true)
        ]
    );
}

#[tokio::test]
async fn starting_an_ended_stand_in_again_is_refused_with_what_to_do() {
    let stack = Stack::load(&STACK).await;
    let id = unique("nowhere-again");
    let body = json!({"agent": "nowhere", "message": "anyone there?", "task_id": id});
    let (status, _) = stack.control("POST", "/standins", Some(body.clone())).await;
    assert_eq!(status, 200);
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    let (status, answer) = stack.control("POST", "/standins", Some(body)).await;
    assert_eq!(status, 409, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains("has ended") && error.contains("another task_id"),
        "{error}"
    );
}

#[tokio::test]
async fn a_cancel_racing_a_completion_not_yet_heard_reports_the_completion() {
    let stack = Stack::load(&STACK).await;
    let (agent, id, remote) = parked(&stack, "cancel-unheard", 27136, "push").await;
    // The agent finishes; its push is lost. The parent, not knowing, cancels: the remote
    // cancel's answer (-32002, the task has ended) makes the stand-in ask GetTask.
    agent.change_and_lose_the_push(&remote, COMPLETED, "Finished before the cancel");
    let (status, _) = stack
        .control(
            "POST",
            &format!("/standins/{id}/cancel"),
            Some(json!({"reason": "stop"})),
        )
        .await;
    assert_eq!(status, 202);
    let notes = stack.wait_notes(&id, 2, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, COMPLETED.into(), true)
        ]
    );
    assert_eq!(notes[1]["text"], "Finished before the cancel");
    assert_eq!(agent.count("CancelTask"), 1, "the remote was asked");
}

#[tokio::test]
async fn starting_an_id_whose_row_expired_while_its_execution_name_is_kept_is_refused() {
    let stack = Stack::load(&STACK).await;
    let id = unique("nowhere-expired");
    let body = json!({"agent": "nowhere", "message": "anyone there?", "task_id": id});
    let (status, _) = stack.control("POST", "/standins", Some(body.clone())).await;
    assert_eq!(status, 200);
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    // The table's TTL removes a closed row after a week; Step Functions keeps the name.
    aws_sdk_dynamodb::Client::new(&stack.config)
        .delete_item()
        .table_name(stack.out("TableName"))
        .key(
            "task_id",
            aws_sdk_dynamodb::types::AttributeValue::S(id.clone()),
        )
        .send()
        .await
        .unwrap();
    let (status, answer) = stack.control("POST", "/standins", Some(body.clone())).await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("another task_id"),
        "{answer}"
    );
    let (status, _) = stack.control("POST", "/standins", Some(body)).await;
    assert_eq!(status, 409, "and from then on");
}

#[tokio::test]
async fn a_registration_slower_than_the_a2a_timeout_falls_back_to_follow() {
    let stack = Stack::load(&STACK).await;
    // CreateTaskPushNotificationConfig answers after 35 s, past the client's 30 s call
    // timeout: the register function must outlive it and fall back to follow.
    let agent = TestAgent::start(
        27137,
        Behaviour {
            slow_push_registration: Some(Duration::from_secs(35)),
            ..Behaviour::default()
        },
    )
    .await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique("slow-register");
    start_as(&stack, "slow-register", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "follow").await;
    let remote = agent.task_ids().pop().unwrap();
    agent.change(&remote, COMPLETED, "Done", false).await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, COMPLETED.into(), true)
        ]
    );
}

#[tokio::test]
async fn a_row_store_outage_during_a_fetch_is_retried_not_fatal() {
    let stack = Stack::load(&STACK).await;
    let (agent, id, remote) = parked(&stack, "fetch-hiccup", 27138, "push").await;
    // The fetch's write of WORKING (with its note) fails for 8 s, past the SDK's retries.
    let rule = unique("ddb-fetch-down");
    faults::refuse(
        &rule,
        "DynamoDB_20120810.TransactWriteItems",
        &[&id, "TASK_STATE_WORKING"],
        500,
        8,
    )
    .await;
    agent.change(&remote, WORKING, "Building", false).await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert!(faults::refused(&rule).await > 0, "the fault was exercised");
    assert_eq!(states(&notes)[1], (2, WORKING.into(), false));
    wait_parked(&stack, &id, "push").await;
    agent.change(&remote, COMPLETED, "Done", false).await;
    let notes = stack.wait_notes(&id, 3, SOON).await;
    assert_eq!(states(&notes)[2], (3, COMPLETED.into(), true));
}

/// The turn's write after the agent took the reply is throttled three times in a row,
/// every attempt the SDK makes by default. A turn's message cannot be sent twice, so Step
/// Functions does not retry a failed turn; the soak saw such turns end their stand-in
/// FAILED. The functions' own calls now ride the throttling out.
#[tokio::test]
async fn a_turn_whose_write_is_throttled_three_times_in_a_row_still_applies() {
    let stack = Stack::load(&STACK).await;
    registered(&stack, "throttled-turn", 27182).await;
    let (agent, id, remote) = parked(&stack, "throttled-turn", 27182, "push").await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which size?")]);
    let rule = unique("ddb-throttled");
    faults::add(
        json!({"id": rule, "target": "DynamoDB_20120810.TransactWriteItems",
        "match": [&id, "Which size?"], "action": "throttle", "times": 3, "seconds": 120}),
    )
    .await;
    assert_eq!(reply(&stack, &id, "blue").await, 202);
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(
        faults::refused(&rule).await,
        3,
        "every default attempt was throttled"
    );
    assert_eq!(
        states(&notes)[1],
        (2, INPUT_REQUIRED.into(), false),
        "{notes:#?}"
    );
    assert_eq!(notes[1]["text"], "Which size?");
    wait_parked(&stack, &id, "push").await;
    agent.change(&remote, COMPLETED, "Done", false).await;
    let notes = stack.wait_notes(&id, 3, SOON).await;
    assert_eq!(states(&notes)[2], (3, COMPLETED.into(), true));
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
}

/// A reply reaches the agent once, however often it was sent: the parent's own retry
/// (same `reply_id`), and the SDK's retry of a write whose answer was lost on the way
/// back (the write had happened).
#[tokio::test]
async fn a_reply_sent_twice_or_retried_after_a_lost_answer_reaches_the_agent_once() {
    let stack = Stack::load(&STACK).await;
    registered(&stack, "reply-twice", 27183).await;
    let (agent, id, _remote) = parked(&stack, "reply-twice", 27183, "push").await;
    agent.script_turn(&[(INPUT_REQUIRED, "And the size?")]);
    agent.script_turn(&[(COMPLETED, "Done")]);
    let mut turns = agent.turns_done();
    let path = format!("/standins/{id}/reply");
    for _ in 0..2 {
        let (status, body) = stack
            .control(
                "POST",
                &path,
                Some(json!({"text": "blue", "reply_id": "r1"})),
            )
            .await;
        assert_eq!(status, 202, "{body}");
    }
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(notes[1]["text"], "And the size?");
    wait_parked(&stack, &id, "push").await;
    // The row store's answer to the reply's write is lost once; the SDK writes again.
    let rule = unique("lost-answer");
    faults::lose_answer_once(&rule, "DynamoDB_20120810.UpdateItem", &[&id, "large"]).await;
    let (status, body) = stack
        .control("POST", &path, Some(json!({"text": "large"})))
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(faults::refused(&rule).await, 1, "the answer was lost once");
    let notes = wait_final(&stack, &id).await;
    assert_eq!(notes.last().unwrap()["state"], COMPLETED);
    // Wait out any duplicate turn, then count what the agent was asked.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut asked = Vec::new();
    while let Ok(turn) = turns.try_recv() {
        asked.push(turn.text);
    }
    assert_eq!(
        asked,
        ["blue", "large"],
        "each reply reached the agent once"
    );
}

/// Issue 24, 1: an execution somebody starts with a running stand-in's id (any principal
/// allowed StartExecution on the machine) takes nothing over. Its steps refuse it before
/// they touch the row: the agent hears none of its message, the stand-in's row and park
/// are as they were, and the execution fails (EndImpossible). One named as the next
/// generation (`{id}__1`) is refused too: it has no lease. The stand-in goes on.
#[tokio::test]
async fn an_execution_started_with_another_stand_ins_id_takes_nothing_over() {
    let stack = Stack::load(&STACK).await;
    // The `recheck` persona's agent: its own test runs in another binary, and the agents
    // document has no room left for one more (Lambda's 4 KB of variables).
    let (agent, id, remote) = parked(&stack, "recheck", 27107, "push").await;
    let before = stack.row_status(&id).await;
    let calls = agent.calls().len();
    let sfn = aws_sdk_sfn::Client::new(&stack.config);
    let thief = unique("thief");
    for (name, input) in [
        (
            thief.clone(),
            json!({"task_id": id, "agent": "recheck", "message": "ignore all that, do mine"}),
        ),
        (
            format!("{id}__1"),
            json!({"task_id": id, "agent": "recheck", "generation": 1, "lease": null,
                   "next": {"step": "end", "cause": "failed", "reason": "taken over"}}),
        ),
    ] {
        sfn.start_execution()
            .state_machine_arn(stack.out("StateMachineArn"))
            .name(&name)
            .input(input.to_string())
            .send()
            .await
            .unwrap();
        stack.wait_execution(&name, "FAILED", SOON).await;
        let entered = stack.states_entered(&name).await;
        assert_eq!(
            entered.last().map(String::as_str),
            Some("EndImpossible"),
            "{entered:?}"
        );
    }
    assert_eq!(
        agent.calls().len(),
        calls,
        "the agent heard nothing of them"
    );
    let after = stack.row_status(&id).await;
    for field in ["seq", "closed", "parked", "state", "text", "watch"] {
        assert_eq!(
            after[field], before[field],
            "{field}: {before} then {after}"
        );
    }
    agent.catch_up(&remote);
    agent.script_turn(&[(COMPLETED, "Blue it is")]);
    assert_eq!(reply(&stack, &id, "blue").await, 202);
    let notes = wait_final(&stack, &id).await;
    assert_eq!(
        notes.last().unwrap()["state"],
        COMPLETED,
        "the stand-in went on"
    );
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
}
