//! Parents besides the queue, on LocalStack: a Step Functions parent that starts a
//! stand-in itself and waits on its task token (the example in `examples/`), one that
//! passes its token through `POST /standins`, and an EventBridge rule that routes one
//! kind of note to a queue.
//!
//! The agents' personas are borrowed from other test binaries of its lane of `make test`
//! (a lane runs its binaries one after another): the personas document is an environment variable, held under
//! Lambda's 4 KB for all of them.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{COMPLETED, INPUT_REQUIRED, SOON, states};
use standin_integration::stack::{Stack, unique};
use standin_wire::{ParentNote, TaskState};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);
const PARENT_ASL: &str = include_str!("../../examples/parent.asl.json");

/// The example parent, as `examples/parent.yaml` deploys it, next to the test stack.
async fn parent_machine(stack: &Stack, definition: &str, name: &str) -> String {
    let sfn = aws_sdk_sfn::Client::new(&stack.config);
    sfn.create_state_machine()
        .name(unique(name))
        .definition(definition.replace("${StandInStateMachineArn}", stack.out("StateMachineArn")))
        .role_arn("arn:aws:iam::000000000000:role/parent")
        .send()
        .await
        .expect("parent state machine created")
        .state_machine_arn()
        .to_owned()
}

/// A new queue's URL.
async fn queue(sqs: &aws_sdk_sqs::Client, name: &str) -> String {
    sqs.create_queue()
        .queue_name(unique(name))
        .send()
        .await
        .expect("queue created")
        .queue_url()
        .expect("a queue URL")
        .to_owned()
}

/// A new queue that a new rule on the default bus routes `pattern`'s events to: its URL.
async fn routed_queue(stack: &Stack, name: &str, pattern: Value) -> String {
    let sqs = aws_sdk_sqs::Client::new(&stack.config);
    let url = queue(&sqs, name).await;
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    let events = aws_sdk_eventbridge::Client::new(&stack.config);
    let rule = unique(name);
    events
        .put_rule()
        .name(&rule)
        .event_pattern(pattern.to_string())
        .send()
        .await
        .expect("rule put");
    events
        .put_targets()
        .rule(&rule)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id(name)
                .arn(arn)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("target put");
    url
}

/// Runs the parent to its end: its status, output and error.
async fn run_parent(
    stack: &Stack,
    machine: &str,
    input: Value,
) -> (String, Option<Value>, Option<String>, Option<String>) {
    let sfn = aws_sdk_sfn::Client::new(&stack.config);
    let arn = sfn
        .start_execution()
        .state_machine_arn(machine)
        .input(input.to_string())
        .send()
        .await
        .expect("parent started")
        .execution_arn()
        .to_owned();
    let deadline = Instant::now() + SOON * 2;
    loop {
        let d = sfn
            .describe_execution()
            .execution_arn(&arn)
            .send()
            .await
            .expect("described");
        let status = d.status().as_str().to_owned();
        if status != "RUNNING" {
            return (
                status,
                d.output()
                    .map(|o| serde_json::from_str(o).expect("JSON output")),
                d.error().map(str::to_owned),
                d.cause().map(str::to_owned),
            );
        }
        assert!(Instant::now() < deadline, "parent {arn} still running");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn a_step_functions_parent_gets_the_final_note_of_the_stand_in_it_started() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27116, Behaviour::default()).await;
    agent.script_turn(&[(COMPLETED, "Widget built")]);
    let parent = parent_machine(&stack, PARENT_ASL, "parent").await;
    let id = unique("sfn-parent");
    let (status, output, error, cause) = run_parent(
        &stack,
        &parent,
        json!({"task_id": id, "agent": "restart", "message": "Please build me a widget"}),
    )
    .await;
    assert_eq!(status, "SUCCEEDED", "{error:?} {cause:?}");
    let note: ParentNote =
        serde_json::from_value(output.unwrap()["final_note"].clone()).expect("a parent note");
    assert_eq!(
        (
            note.task_id.as_str(),
            note.state,
            note.text.as_str(),
            note.is_final
        ),
        (id.as_str(), TaskState::Completed, "Widget built", true)
    );
    // The same note reached the queue: one end, told everywhere.
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(states(&notes), [(1, COMPLETED.into(), true)]);
    // The stand-in is an ordinary one: the control API knows it by the parent's id.
    assert_eq!(stack.row_status(&id).await["closed"], true);
}

/// Runs the example parent on a stand-in that cannot go well: the parent fails with
/// `StandIn.Failed` and a cause that says why.
async fn parent_fails(id: &str, agent: &str, why: &str) {
    let stack = Stack::load(&STACK).await;
    let parent = parent_machine(&stack, PARENT_ASL, "parent-fails").await;
    let (status, _, error, cause) = run_parent(
        &stack,
        &parent,
        json!({"task_id": id, "agent": agent, "message": "Please build me a widget"}),
    )
    .await;
    assert_eq!(status, "FAILED");
    assert_eq!(error.as_deref(), Some("StandIn.Failed"));
    assert!(
        cause.as_deref().unwrap_or_default().contains(why),
        "{cause:?}"
    );
}

#[tokio::test]
async fn a_stand_in_that_fails_fails_its_parent_with_the_reason() {
    // Nothing listens where the agent "nowhere" should be.
    let id = unique("sfn-nowhere");
    parent_fails(&id, "nowhere", "agent unavailable").await;
    // The queue has the same end; no agent ever named a task.
    let stack = Stack::load(&STACK).await;
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(states(&notes), [(1, "TASK_STATE_FAILED".into(), true)]);
    assert_eq!(notes[0]["remote_task_id"], Value::Null);
}

#[tokio::test]
async fn a_parent_that_names_its_stand_in_against_the_rules_hears_why() {
    // `__` is kept for rolled executions: Step Functions takes the name, the stand-in not.
    let id = format!("{}__7", unique("sfn-bad"));
    parent_fails(&id, "restart", "task_id: must be").await;
}

#[tokio::test]
async fn a_token_given_to_post_standins_is_refused() {
    // Whoever may call the control API must not have the stack's role complete or fail
    // an arbitrary task of the account: only a parent allowed StartExecution on the
    // stand-in machine hands the stand-in a token.
    let stack = Stack::load(&STACK).await;
    let id = unique("sfn-api");
    let body = json!({
        "agent": "outbox",
        "message": "Please build me a widget",
        "task_id": id,
        "parent_task_token": "AQB8-someone-elses-task",
    });
    let (status, answer) = stack.control("POST", "/standins", Some(body)).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"], standin_wire::NO_TOKEN_HERE);
    let (status, _) = stack.control("GET", &format!("/standins/{id}"), None).await;
    assert_eq!(status, 404, "no stand-in was started");
}

#[tokio::test]
async fn a_rule_on_the_bus_routes_the_questions_to_a_queue() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27125, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which colour?")]);
    let id = unique("bus");
    let sqs = aws_sdk_sqs::Client::new(&stack.config);
    let questions = routed_queue(
        &stack,
        "questions",
        json!({
            "source": ["standin"],
            "detail-type": [INPUT_REQUIRED],
            "detail": {"task_id": [id]}
        }),
    )
    .await;
    standin_integration::e2e::start_as(&stack, "artifact", &id).await;
    let deadline = Instant::now() + SOON;
    let event: Value = loop {
        let got = sqs
            .receive_message()
            .queue_url(&questions)
            .wait_time_seconds(5)
            .send()
            .await
            .unwrap();
        if let Some(m) = got.messages().first() {
            // Taken off the queue, so a slow reply below cannot see it again once
            // its visibility timeout lapses.
            sqs.delete_message()
                .queue_url(&questions)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .expect("question deleted");
            break serde_json::from_str(m.body().unwrap()).unwrap();
        }
        assert!(Instant::now() < deadline, "no question routed");
    };
    assert_eq!(
        (event["source"].as_str(), event["detail-type"].as_str()),
        (Some("standin"), Some(INPUT_REQUIRED))
    );
    let note: ParentNote =
        serde_json::from_value(event["detail"].clone()).expect("the note as detail");
    assert_eq!(
        (note.task_id.as_str(), note.seq, note.text.as_str()),
        (id.as_str(), 1, "Which colour?")
    );
    // The rule takes questions only: the completion goes to the queue, not here.
    agent.script_turn(&[(COMPLETED, "Blue it is")]);
    standin_integration::e2e::reply(&stack, &id, "blue").await;
    stack.wait_notes(&id, 2, SOON).await;
    let more = sqs
        .receive_message()
        .queue_url(&questions)
        .wait_time_seconds(3)
        .send()
        .await
        .unwrap();
    assert!(
        more.messages().is_empty(),
        "only questions are routed: {:?}",
        more.messages()
    );
}

/// Ten final notes of 40 KB each, as the outbox catches up after an outage: EventBridge
/// refuses a call over 256 KiB whole (LocalStack made to, as AWS does), so they go in
/// calls of at most 256 KiB, and every one reaches a rule on the bus. (They were sent in
/// one call, refused, logged and taken for sent: none arrived.)
#[tokio::test]
async fn ten_large_notes_caught_up_at_once_all_reach_the_bus() {
    use standin::outbox::NoteBus;
    let stack = Stack::load(&STACK).await;
    let id = unique("large");
    let sqs = aws_sdk_sqs::Client::new(&stack.config);
    let routed = routed_queue(
        &stack,
        "large",
        json!({"source": ["standin"], "detail": {"agent": [id]}}),
    )
    .await;
    let events = aws_sdk_eventbridge::Client::new(&stack.config);
    let notes: Vec<ParentNote> = (1..=10)
        .map(|n| ParentNote {
            task_id: format!("{id}-{n}"),
            remote_task_id: Some(format!("remote-{n}")),
            agent: id.clone(),
            state: TaskState::Completed,
            text: "x".repeat(40_000),
            is_final: true,
            seq: 1,
            at: "2026-12-04T08:00:00Z".into(),
            changed_at: None,
            watch: None,
            artifacts: vec![],
            artifacts_omitted: 0,
            parts: vec![],
            trace_id: None,
        })
        .collect();
    let bus = standin::outbox::events::EventBridgeBus::new(events.clone(), "default");
    let answers = bus.put_each(&notes.iter().collect::<Vec<_>>()).await;
    assert_eq!(answers, vec![Ok(()); 10]);
    let mut heard = std::collections::BTreeSet::new();
    let deadline = Instant::now() + SOON;
    while heard.len() < 10 && Instant::now() < deadline {
        let got = sqs
            .receive_message()
            .queue_url(&routed)
            .max_number_of_messages(10)
            .wait_time_seconds(2)
            .send()
            .await
            .unwrap();
        for m in got.messages() {
            let event: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            heard.insert(event["detail"]["task_id"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(heard.len(), 10, "every note reached the rule: {heard:?}");
}
