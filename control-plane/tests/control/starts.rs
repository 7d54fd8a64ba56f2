//! Starts: the row and the execution, a deadline, bad starts, a start repeated or retried.

use super::*;

#[tokio::test]
async fn a_start_creates_the_row_and_the_execution_with_the_first_turn() {
    let w = World::new();
    let answer = w
        .start(json!({"agent": "writer", "message": "Write it", "task_id": "job-1"}))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["task_id"], "job-1");
    assert_eq!(answer.body["execution_arn"], w.executions.arn_of("job-1"));
    let row = w.store.snapshot("job-1").expect("the row");
    assert_eq!((row.agent.as_str(), row.closed), ("writer", false));
    assert!(row.created_at.is_some());
    let input: Value = serde_json::from_str(&w.executions.input_of("job-1").unwrap()).unwrap();
    assert_eq!(input["message"], "Write it");
    assert_eq!(input["agent"], "writer");
}

/// A start may ask for a deadline, at most the stack's; past it, or not a whole number of
/// seconds, it is refused naming the field and nothing starts.
#[tokio::test]
async fn a_start_asks_a_deadline_within_the_stacks() {
    let w = World::new();
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "due", "deadline_secs": 90}))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let input: Value = serde_json::from_str(&w.executions.input_of("due").unwrap()).unwrap();
    assert_eq!(input["deadline_secs"], 90);
    let most = standin::steps::next::MAX_STANDIN_SECS;
    for bad in [json!(most + 1), json!(0), json!("90")] {
        let answer = w
            .start(
                json!({"agent": "writer", "message": "m", "task_id": "late", "deadline_secs": bad}),
            )
            .await;
        assert_eq!(answer.status, 400, "{bad}: {}", answer.body);
        assert!(
            error(&answer).starts_with("deadline_secs: "),
            "{}",
            answer.body
        );
    }
    assert!(w.executions.input_of("late").is_none(), "nothing started");
}

#[tokio::test]
async fn a_start_without_an_id_gets_one() {
    let w = World::new();
    let answer = w
        .start(json!({"agent": "writer", "message": "Write it"}))
        .await;
    assert_eq!(answer.status, 200);
    let id = answer.body["task_id"].as_str().unwrap();
    assert!(id.starts_with("si-") && id.len() == 27, "{id}");
    assert!(w.store.snapshot(id).is_some());
}

#[tokio::test]
async fn every_bad_start_is_a_400_saying_what_to_fix() {
    let w = World::new();
    let long = "x".repeat(32 * 1024 + 1);
    let cases = [
        (json!({"message": "m"}), "agent: is required"),
        (
            json!({"agent": 7, "message": "m"}),
            "agent: must be a string, got 7",
        ),
        (json!({"agent": "writer"}), "message: is required"),
        (
            json!({"agent": "writer", "message": ""}),
            "message: must not be empty",
        ),
        (
            json!({"agent": "writer", "message": long}),
            "message: must be at most 32768 bytes, got 32769",
        ),
        (
            json!({"agent": "writer", "message": "m", "task_id": "a__1"}),
            r#"task_id: must be 1-64 characters of [A-Za-z0-9_-], without "__" (kept for rolled executions)"#,
        ),
        (
            json!({"agent": "writer", "message": "m", "task_id": "a b"}),
            r#"task_id: must be 1-64 characters of [A-Za-z0-9_-], without "__" (kept for rolled executions)"#,
        ),
        // Not a string: refused, where it used to be ignored (and an id made up).
        (
            json!({"agent": "writer", "message": "m", "task_id": 42}),
            r#"task_id: must be 1-64 characters of [A-Za-z0-9_-], without "__" (kept for rolled executions)"#,
        ),
        // Whoever may start stand-ins must not have the stack answer any task token.
        (
            json!({"agent": "writer", "message": "m", "parent_task_token": "tok-123"}),
            standin_wire::NO_TOKEN_HERE,
        ),
    ];
    for (body, expected) in cases {
        let answer = w.start(body.clone()).await;
        assert_eq!((answer.status, error(&answer)), (400, expected), "{body}");
    }
    let unknown = w.start(json!({"agent": "painter", "message": "m"})).await;
    assert_eq!(unknown.status, 400);
    assert_eq!(error(&unknown), r#"unknown agent "painter""#);
    assert_eq!(unknown.body["agents"], json!(["writer", "critic"]));
    // The agent is checked first: whatever else is wrong, the known ones are named.
    let unknown = w
        .start(json!({"agent": "painter", "task_id": "a__1"}))
        .await;
    assert_eq!(error(&unknown), r#"unknown agent "painter""#);
    assert_eq!(w.executions.started(), 0, "nothing started");
}

#[tokio::test]
async fn starting_the_same_stand_in_twice_answers_the_same_execution() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "Write it", "task_id": "twice"});
    let first = w.start(body.clone()).await;
    let second = w.start(body).await;
    assert_eq!((first.status, second.status), (200, 200));
    assert_eq!(first.body, second.body);
    assert_eq!(w.executions.started(), 1);
}

#[tokio::test]
async fn a_start_for_another_agent_or_an_ended_stand_in_is_a_409() {
    let w = World::new();
    w.start(json!({"agent": "writer", "message": "m", "task_id": "taken"}))
        .await;
    let other = w
        .start(json!({"agent": "critic", "message": "m", "task_id": "taken"}))
        .await;
    assert_eq!(
        (other.status, error(&other)),
        (409, "stand-in taken exists for another agent")
    );
    w.store.close("taken", None).await.unwrap();
    let again = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "taken"}))
        .await;
    assert_eq!(again.status, 409);
    assert!(
        error(&again).contains("has ended; its notes stay readable"),
        "{}",
        again.body
    );
}

#[tokio::test]
async fn an_id_whose_execution_outlived_its_row_is_refused_and_closed() {
    let w = World::new();
    // An earlier stand-in of this id ran and ended; its row expired since.
    w.executions.add("old", "SUCCEEDED");
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "old"}))
        .await;
    assert_eq!(answer.status, 409, "{}", answer.body);
    assert!(error(&answer).contains("was used by an earlier stand-in that has ended"));
    assert!(
        w.store.snapshot("old").unwrap().closed,
        "the id answers ended from now on"
    );
}

#[tokio::test]
async fn a_start_step_functions_cannot_answer_about_is_a_503_and_closes_nothing() {
    let w = World::new();
    w.executions.add("busy", "RUNNING");
    w.executions
        .fail_status(Some(ExecutionError::Backend("throttled".into())));
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "busy"}))
        .await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(!w.store.snapshot("busy").unwrap().closed);
}

#[tokio::test]
async fn a_start_retried_after_a_503_for_an_ended_id_is_refused_not_answered_200() {
    let w = World::new();
    w.executions.add("again", "SUCCEEDED");
    w.executions
        .fail_status(Some(ExecutionError::Backend("throttled".into())));
    let body = json!({"agent": "writer", "message": "m", "task_id": "again"});
    assert_eq!(w.start(body.clone()).await.status, 503);
    w.executions.fail_status(None);
    let retry = w.start(body).await;
    assert_eq!(retry.status, 409, "{}", retry.body);
    assert!(
        w.store.snapshot("again").unwrap().closed,
        "nothing runs: the id has ended"
    );
}

#[tokio::test]
async fn starting_a_rolled_stand_in_again_answers_its_running_execution() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "rolled"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    // It rolled: the first execution succeeded, its successor runs.
    w.executions.add("rolled", "SUCCEEDED");
    w.executions.add("rolled__1", "RUNNING");
    w.store.roll("rolled", 1, 1, "lease-1", None).await.unwrap();
    let again = w.start(body).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        again.body["execution_arn"],
        w.executions.arn_of("rolled__1")
    );
}

/// Issue 24, 2: one DescribeExecution that fails (a throttle) must not make the older
/// generation's SUCCEEDED the answer, and a start repeated then must not close the row
/// of the generation still running.
#[tokio::test]
async fn a_repeated_start_that_cannot_see_the_newest_generation_closes_nothing() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "rolling"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    w.executions.add("rolling", "SUCCEEDED");
    w.executions.add("rolling__1", "RUNNING");
    w.store
        .roll("rolling", 1, 1, "lease-1", None)
        .await
        .unwrap();
    w.executions.fail_status_of("rolling__1");
    let again = w.start(body).await;
    assert_eq!(again.status, 503, "unknown is not ended: {}", again.body);
    assert!(
        !w.store.snapshot("rolling").unwrap().closed,
        "the live generation's row stays open"
    );
    let status = w.call(Call::Status { task_id: "rolling" }).await;
    assert_eq!(
        status.body["execution_arn"],
        w.executions.arn_of("rolling__1"),
        "the generation it could not ask about, not the older one"
    );
    assert_eq!(status.body["execution_status"], Value::Null);
}

/// A foreign execution named like the next generation (anyone allowed StartExecution
/// may make one) is not taken for the newest: the row says which generation is live, so
/// a repeated start answers the running one and closes nothing.
#[tokio::test]
async fn a_squatted_successor_name_is_not_the_newest_generation() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "squatted"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    w.executions.add("squatted__1", "FAILED");
    let again = w.start(body).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["execution_arn"], w.executions.arn_of("squatted"));
    assert!(!w.store.snapshot("squatted").unwrap().closed);
}

#[tokio::test]
async fn a_repeated_start_closes_only_behind_a_terminal_newest_generation() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "redrive"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    w.executions.add("redrive", "PENDING_REDRIVE");
    let again = w.start(body.clone()).await;
    assert_eq!(again.status, 503, "not terminal, not ended: {}", again.body);
    assert!(!w.store.snapshot("redrive").unwrap().closed);
    w.executions.add("redrive", "ABORTED");
    let ended = w.start(body).await;
    assert_eq!(ended.status, 409, "{}", ended.body);
    assert!(w.store.snapshot("redrive").unwrap().closed);
}

#[tokio::test]
async fn a_failure_on_our_side_is_a_503_to_retry() {
    let w = World::new();
    w.executions.fail_start(Some(ExecutionError::Backend(
        "Step Functions is down".into(),
    )));
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "down"}))
        .await;
    assert_eq!(
        (answer.status, error(&answer)),
        (503, "Step Functions did not answer; try again")
    );
}

#[tokio::test]
async fn a_start_keeps_the_parents_context_and_refuses_one_that_is_not_an_id() {
    let w = World::new();
    let started = w
        .start(
            json!({"agent": "writer", "message": "hi", "task_id": "ctx", "context_id": "chat-7"}),
        )
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let status = w.call(Call::Status { task_id: "ctx" }).await;
    assert_eq!(status.body["context_id"], "chat-7", "{}", status.body);
    let refused = w
        .start(json!({"agent": "writer", "message": "hi", "context_id": "has spaces"}))
        .await;
    assert_eq!(refused.status, 400);
    assert!(
        error(&refused).starts_with("context_id:"),
        "{}",
        error(&refused)
    );
}
