//! The account's concurrency as AWS applies it: a step throttled for longer than seconds.
//! LocalStack throttles a function whose reserved concurrency is 0 as Lambda does
//! (TooManyRequestsException, the function never runs), so the throttle is injected
//! through Lambda's own API. Its own test binary: while the turn function is throttled,
//! nothing else runs. (LocalStack's CloudFormation does not apply a function's
//! `ReservedConcurrentExecutions` or a stage's method settings, so the reservations and
//! the push stage's limits are checked on the template, in
//! `functions/standin/tests/contract.rs`.)

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{COMPLETED, start_as, states, wait_final};
use standin_integration::stack::{Stack, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);

/// The physical name of one of the stack's resources.
async fn physical(stack: &Stack, logical: &str) -> String {
    aws_sdk_cloudformation::Client::new(&stack.config)
        .describe_stack_resource()
        .stack_name(STACK.as_str())
        .logical_resource_id(logical)
        .send()
        .await
        .expect("the stack's resource")
        .stack_resource_detail()
        .and_then(|d| d.physical_resource_id())
        .expect("a physical id")
        .to_owned()
}

#[tokio::test]
async fn a_turn_throttled_for_longer_than_seconds_runs_when_concurrency_frees() {
    let stack = Stack::load(&STACK).await;
    let lambda = aws_sdk_lambda::Client::new(&stack.config);
    let turn = physical(&stack, "TurnFunction").await;
    let agent = TestAgent::start(27118, Behaviour::default()).await;
    agent.script_turn(&[(COMPLETED, "Built while you waited")]);
    let id = unique("throttled");
    // The account's concurrency is spent: every invocation of the turn is refused.
    lambda
        .put_function_concurrency()
        .function_name(&turn)
        .reserved_concurrent_executions(0)
        .send()
        .await
        .expect("turn throttled");
    let throttled = tokio::spawn({
        let id = id.clone();
        async move {
            let stack = Stack::load(&STACK).await;
            start_as(&stack, "outbox", &id).await;
            // Longer than the seconds a turn used to be retried for.
            tokio::time::sleep(Duration::from_secs(20)).await;
            stack.execution_status(&id).await
        }
    })
    .await;
    lambda
        .delete_function_concurrency()
        .function_name(&turn)
        .send()
        .await
        .expect("turn unthrottled");
    let status = throttled.expect("the throttled start");
    assert_eq!(status.as_deref(), Some("RUNNING"), "still waiting to turn");
    let throttles = stack
        .history(&id)
        .await
        .expect("the execution's history")
        .iter()
        .filter_map(|e| e.task_failed_event_details())
        .filter(|failed| failed.error() == Some("Lambda.TooManyRequestsException"))
        .count();
    assert!(
        throttles >= 2,
        "the turn was throttled, and retried: {throttles}"
    );
    // The next retry comes within its backoff (at most a minute), then the turn runs.
    stack
        .wait_execution(&id, "SUCCEEDED", Duration::from_secs(120))
        .await;
    let notes = wait_final(&stack, &id).await;
    assert_eq!(states(&notes), [(1, COMPLETED.into(), true)]);
    assert_eq!(notes[0]["text"], json!("Built while you waited"));
}
