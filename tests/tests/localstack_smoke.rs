//! The local AWS path, end to end through the real services of a running LocalStack
//! (started and deployed by `scripts/test`): API Gateway → Rust Lambda → DynamoDB
//! conditional update, SQS FIFO deduplication, a Step Functions `.waitForTaskToken` park
//! ended by SendTaskSuccess, a `TimeoutSeconds` caught as `States.Timeout`, and the
//! functions' logs in CloudWatch Logs.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use aws_sdk_sfn::types::ExecutionStatus;
use serde_json::{Value, json};
use standin_integration::stack::{Stack, unique};

/// The smoke stack's API: `POST {path}` with a JSON body.
async fn post(stack: &Stack, path: &str, body: Value) -> (u16, Value) {
    let response = stack
        .http
        .post(stack.api_url("ApiId", path))
        .json(&body)
        .send()
        .await
        .expect("API reachable");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn smoke_stack() -> Stack {
    Stack::load(&std::env::var("STANDIN_SMOKE_STACK").unwrap_or_else(|_| "standin-smoke".into()))
        .await
}

#[tokio::test]
async fn api_route_with_a_path_parameter_and_a_conditional_update() {
    let stack = smoke_stack().await;
    let id = unique("item");
    let (s1, b1) = post(&stack, &format!("/items/{id}"), json!({"op": "bump"})).await;
    let (s2, b2) = post(&stack, &format!("/items/{id}"), json!({"op": "bump"})).await;
    assert_eq!((s1, s2), (200, 200), "{b1} {b2}");
    assert_eq!(
        (b1["id"].as_str(), b1["n"].as_u64(), b2["n"].as_u64()),
        (Some(id.as_str()), Some(1), Some(2))
    );
    assert_eq!(
        post(&stack, &format!("/items/{id}"), json!({"op": "close"}))
            .await
            .0,
        200
    );
    let (status, body) = post(&stack, &format!("/items/{id}"), json!({"op": "bump"})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("closed")),
        "the condition refused the write"
    );
    let (status, _) = post(&stack, &format!("/items/{id}"), json!({"op": "explode"})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn fifo_queue_keeps_order_and_drops_duplicates() {
    let stack = smoke_stack().await;
    let id = unique("group");
    for seq in [1, 1, 2, 3, 2] {
        let (status, body) = post(&stack, &format!("/notes/{id}"), json!({"seq": seq})).await;
        assert_eq!(status, 200, "{body}");
    }
    let sqs = aws_sdk_sqs::Client::new(&stack.config);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < 3 && Instant::now() < deadline {
        let got = sqs
            .receive_message()
            .queue_url(stack.out("QueueUrl"))
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        for m in got.messages() {
            let body: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            if body["id"] == id.as_str() {
                seen.push(body["seq"].as_u64().unwrap());
            }
            sqs.delete_message()
                .queue_url(stack.out("QueueUrl"))
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .expect("delete");
        }
    }
    assert_eq!(seen, [1, 2, 3], "in order, each once");
}

async fn run_to_end(stack: &Stack, input: Value, ring: Option<&str>) -> (ExecutionStatus, Value) {
    let sfn = aws_sdk_sfn::Client::new(&stack.config);
    let started = sfn
        .start_execution()
        .state_machine_arn(stack.out("StateMachineArn"))
        .name(unique("exec"))
        .input(input.to_string())
        .send()
        .await
        .expect("started");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut rung = false;
    loop {
        let d = sfn
            .describe_execution()
            .execution_arn(started.execution_arn())
            .send()
            .await
            .expect("describe");
        if *d.status() != ExecutionStatus::Running {
            let output = d
                .output()
                .map(|o| serde_json::from_str(o).unwrap())
                .unwrap_or(Value::Null);
            return (d.status().clone(), output);
        }
        assert!(
            Instant::now() < deadline,
            "execution still running after 60 s"
        );
        if let (Some(id), false) = (ring, rung) {
            // The park step stores the token first; ring once it is there.
            let (status, _) = post(stack, &format!("/ring/{id}"), json!({})).await;
            rung = status == 200;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn a_wait_for_task_token_park_is_ended_by_send_task_success() {
    let stack = smoke_stack().await;
    let id = unique("park");
    let (status, output) = run_to_end(&stack, json!({"id": id, "timeout": 60}), Some(&id)).await;
    assert_eq!(status, ExecutionStatus::Succeeded, "{output}");
    assert_eq!(output["rung"], json!({"rung": id}));
    assert!(output.get("timedOut").is_none());
}

#[tokio::test]
async fn a_park_timeout_is_caught_as_states_timeout() {
    let stack = smoke_stack().await;
    let started = Instant::now();
    let (status, output) =
        run_to_end(&stack, json!({"id": unique("late"), "timeout": 2}), None).await;
    assert_eq!(status, ExecutionStatus::Succeeded, "{output}");
    assert_eq!(output["timedOut"], true);
    assert_eq!(output["error"]["Error"], "States.Timeout");
    assert!(started.elapsed() >= Duration::from_secs(2));
}

#[tokio::test]
async fn function_logs_reach_cloudwatch() {
    let stack = smoke_stack().await;
    let id = unique("logged");
    assert_eq!(
        post(&stack, &format!("/items/{id}"), json!({"op": "bump"}))
            .await
            .0,
        200
    );
    let logs = aws_sdk_cloudwatchlogs::Client::new(&stack.config);
    let group = format!("/aws/lambda/{}", stack.out("ApiFunctionName"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let events = logs.filter_log_events().log_group_name(&group).send().await;
        let messages: Vec<String> = events
            .map(|e| {
                e.events()
                    .iter()
                    .filter_map(|x| x.message().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if messages.iter().any(|m| m.contains("START RequestId"))
            && messages.iter().any(|m| m.contains("REPORT RequestId"))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no START/REPORT lines in {group}: {messages:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn wait_for_item(stack: &Stack, id: &str) -> Option<String> {
    let db = aws_sdk_dynamodb::Client::new(&stack.config);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let got = db
            .get_item()
            .table_name(stack.out("TableName"))
            .key(
                "id",
                aws_sdk_dynamodb::types::AttributeValue::S(id.to_owned()),
            )
            .consistent_read(true)
            .send()
            .await
            .expect("get item");
        if let Some(via) = got
            .item()
            .and_then(|i| i.get("via"))
            .and_then(|v| v.as_s().ok())
        {
            return Some(via.clone());
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    None
}

#[tokio::test]
async fn an_sqs_event_source_mapping_feeds_a_function() {
    let stack = smoke_stack().await;
    let id = unique("job");
    let sqs = aws_sdk_sqs::Client::new(&stack.config);
    sqs.send_message()
        .queue_url(stack.out("JobsQueueUrl"))
        .message_body(json!({"id": id}).to_string())
        .send()
        .await
        .expect("sent");
    assert_eq!(wait_for_item(&stack, &id).await.as_deref(), Some("sqs"));
}

#[tokio::test]
async fn an_asynchronous_invoke_runs_the_function() {
    let stack = smoke_stack().await;
    let id = unique("async");
    let lambda = aws_sdk_lambda::Client::new(&stack.config);
    let answer = lambda
        .invoke()
        .function_name(stack.out("ConsumerFunctionName"))
        .invocation_type(aws_sdk_lambda::types::InvocationType::Event)
        .payload(aws_sdk_lambda::primitives::Blob::new(
            json!({"id": id}).to_string(),
        ))
        .send()
        .await
        .expect("invoked");
    assert_eq!(answer.status_code(), 202, "accepted, not run inline");
    assert_eq!(wait_for_item(&stack, &id).await.as_deref(), Some("async"));
}
