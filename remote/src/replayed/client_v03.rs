//! The A2A client against exchanges captured from real 0.3 servers: a2a-sdk 0.3.26
//! (JSON-RPC, push) and Strands Agents' `A2AServer` (`tests/data/a2a-0.3/`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::replay::*;
use crate::a2a::binding::Binding;
use crate::a2a::client::{AgentClient, Timeouts, http_client};
use crate::a2a::dialect::Dialect;
use crate::a2a::types::{Message, SendMessageResult, TaskPushNotificationConfig, WireState};
use crate::error::RemoteError;
use crate::model::{Status, Update};
use crate::port::Agent;

const SDK: &str = "a_sdk03_jsonrpc";
const TASK: &str = "6ea38bab-bdb9-4c9e-ba4e-e22cf0e5620e";
const CONTEXT: &str = "a6f5acf7-2f13-4f71-bfb7-28f84dd73b49";

fn quick() -> Timeouts {
    Timeouts {
        call: Duration::from_secs(5),
        stream_idle: Duration::from_secs(5),
    }
}

/// The captured card, its `url` pointed at the replay server (it named the capture's).
fn card(rel: &str) -> Reply {
    captured_03(rel, |card| card["url"] = json!("/"))
}

async fn client(dir: &str, replies: Vec<Reply>) -> (ReplayServer, AgentClient) {
    let mut all = vec![card(&format!("{dir}/01_agent_card.json"))];
    all.extend(replies);
    let server = ReplayServer::start(all).await;
    let client = AgentClient::connect(http_client().unwrap(), &server.base, None, quick())
        .await
        .expect("card accepted");
    (server, client)
}

fn turn(text: &str, follow_up: bool) -> crate::model::Turn {
    crate::model::Turn::new(
        text,
        follow_up.then(|| crate::model::FollowUp {
            task_id: TASK.into(),
            context_id: CONTEXT.into(),
        }),
    )
}

async fn statuses(agent: &AgentClient, turn: &crate::model::Turn) -> Vec<Status> {
    agent
        .send_streaming(turn)
        .await
        .expect("a stream")
        .filter_map(|u| async move {
            match u.expect("an update") {
                Update::Status(s) => Some(s),
                _ => None,
            }
        })
        .collect()
        .await
}

#[tokio::test]
async fn a_zero_point_three_card_is_talked_to_in_zero_point_three() {
    let (server, client) = client(SDK, vec![]).await;
    let agent = client.agent();
    assert_eq!(
        (agent.dialect, agent.binding),
        (Dialect::V03, Binding::JsonRpc)
    );
    assert!(agent.streaming && agent.push_notifications);
    assert_eq!(server.requests()[0].target, "/.well-known/agent-card.json");
}

#[tokio::test]
async fn the_older_card_path_is_read_when_the_current_one_is_not_found() {
    let server = ReplayServer::start(vec![
        json_reply(404, json!({"detail": "Not Found"})),
        captured_03(&format!("{SDK}/01b_old_card_path.json"), |c| {
            c["url"] = json!("/")
        }),
    ])
    .await;
    let client = AgentClient::connect(http_client().unwrap(), &server.base, None, quick())
        .await
        .expect("the old path's card");
    assert_eq!(client.agent().dialect, Dialect::V03);
    let targets: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(
        targets,
        ["/.well-known/agent-card.json", "/.well-known/agent.json"]
    );
}

#[tokio::test]
async fn a_two_turn_conversation_reads_like_one_point_zero() {
    let (server, client) = client(
        SDK,
        vec![
            captured_03(&format!("{SDK}/02_message_stream_first_turn.json"), |_| {}),
            captured_03(&format!("{SDK}/06_message_stream_follow_up.json"), |_| {}),
            captured_03(&format!("{SDK}/07_tasks_get_completed.json"), |_| {}),
        ],
    )
    .await;
    // A stream that begins with a status update, not a task.
    let first = statuses(&client, &turn("Build me a widget", false)).await;
    let last = first.last().expect("states");
    assert_eq!(
        (last.task_id.as_str(), last.state, last.text.as_deref()),
        (
            TASK,
            standin_wire::TaskState::InputRequired,
            Some("Which colour should the widget be?")
        )
    );
    assert_eq!(last.context_id.as_deref(), Some(CONTEXT));
    let second = statuses(&client, &turn("blue", true)).await;
    assert_eq!(
        second.last().map(|s| s.state),
        Some(standin_wire::TaskState::Completed)
    );
    let done = client.get(TASK).await.expect("the task");
    assert_eq!(done.state, standin_wire::TaskState::Completed);
    let requests = server.requests();
    let sent = requests[1].json();
    let captured = captured_request_03(&format!("{SDK}/02_message_stream_first_turn.json"));
    assert_eq!(sent["method"], captured["method"]);
    assert_eq!(sent["params"]["message"]["kind"], "message");
    assert_eq!(sent["params"]["message"]["role"], "user");
    assert_eq!(
        sent["params"]["message"]["parts"],
        json!([{"kind": "text", "text": "Build me a widget"}])
    );
    assert_eq!(requests[1].header("a2a-version"), Some("0.3"));
    let follow_up = &requests[2].json()["params"]["message"];
    assert_eq!(
        (
            follow_up["taskId"].as_str(),
            follow_up["contextId"].as_str()
        ),
        (Some(TASK), Some(CONTEXT))
    );
    assert_eq!(requests[3].json()["method"], "tasks/get");
}

#[tokio::test]
async fn a_unary_turn_says_blocking_false_and_reads_the_kinded_task() {
    let (server, client) = client(
        SDK,
        vec![captured_03(
            &format!("{SDK}/12_message_send_first_turn.json"),
            |_| {},
        )],
    )
    .await;
    let user = Message::from_turn(&turn("Build me another widget", false));
    let SendMessageResult::Task(task) = client.send_message(&user, true).await.expect("sent")
    else {
        panic!("a task")
    };
    assert_eq!(task.status.state, WireState::InputRequired);
    let params = server.requests()[1].json()["params"].clone();
    assert_eq!(params["configuration"], json!({"blocking": false}));
}

#[tokio::test]
async fn push_is_registered_and_deleted_in_zero_point_three_terms() {
    let (server, client) = client(
        SDK,
        vec![
            captured_03(&format!("{SDK}/04_push_config_set.json"), |_| {}),
            captured_03(&format!("{SDK}/11_push_config_delete.json"), |_| {}),
        ],
    )
    .await;
    let config = TaskPushNotificationConfig {
        id: Some("standin-1".into()),
        task_id: TASK.into(),
        url: "http://127.0.0.1:27488/a2a/push/t-1".into(),
        token: Some("tok-0123456789".into()),
        authentication: Some(crate::a2a::types::AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: Some("tok-0123456789".into()),
        }),
    };
    let created = client.create_push_config(&config).await.expect("set");
    assert_eq!(
        (created.id.as_deref(), created.task_id.as_str()),
        (Some("standin-1"), TASK)
    );
    assert_eq!(created.token, None, "the echoed token is not kept");
    // The SDK answers a delete with neither result nor error.
    client
        .delete_push_config(TASK, "standin-1")
        .await
        .expect("deleted");
    let requests = server.requests();
    let captured = captured_request_03(&format!("{SDK}/04_push_config_set.json"));
    assert_eq!(requests[1].json()["params"], captured["params"]);
    let captured = captured_request_03(&format!("{SDK}/11_push_config_delete.json"));
    assert_eq!(requests[2].json()["params"], captured["params"]);
}

#[tokio::test]
async fn refusals_of_zero_point_three_are_the_same_typed_errors() {
    let (_server, client) = client(
        SDK,
        vec![
            captured_03(
                &format!("{SDK}/13_resubscribe_input_required_2s.json"),
                |_| {},
            ),
            captured_03(&format!("{SDK}/10_tasks_get_unknown.json"), |_| {}),
            captured_03(&format!("{SDK}/14_cancel_input_required.json"), |_| {}),
        ],
    )
    .await;
    // a2a-sdk 0.3 answers a resubscribe to an input-required task "not found".
    let mut stream = client.subscribe(TASK).await.expect("the stream opens");
    let first = stream.next().await.expect("an item");
    assert!(
        matches!(first, Err(RemoteError::TaskNotFound(_))),
        "{first:?}"
    );
    let unknown = client.get("no-such-task").await;
    assert!(
        matches!(unknown, Err(RemoteError::TaskNotFound(_))),
        "{unknown:?}"
    );
    let cancelled = client
        .cancel("ea61726e-a3c5-4934-a2c2-8cd03476d02d")
        .await
        .expect("cancelled");
    assert_eq!(cancelled.state, standin_wire::TaskState::Canceled);
}

#[tokio::test]
async fn strands_answers_in_an_artifact_and_completes_without_a_message() {
    let (_server, client) = client(
        "b_strands_jsonrpc",
        vec![captured_03(
            "b_strands_jsonrpc/02_message_stream.json",
            |_| {},
        )],
    )
    .await;
    assert!(!client.can_push(), "its card says nothing of push");
    let updates: Vec<Update> = client
        .send_streaming(&turn("What is the answer?", false))
        .await
        .expect("a stream")
        .map(|u| u.expect("an update"))
        .collect()
        .await;
    let texts: Vec<Option<&str>> = updates
        .iter()
        .filter_map(|u| match u {
            Update::Status(s) => Some(s.text.as_deref()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts.last(),
        Some(&None),
        "the final status carries no message"
    );
    assert!(
        texts.contains(&Some("Answer to 'What is the answer?': 42.")),
        "{texts:?}"
    );
    match updates.last() {
        Some(Update::Status(s)) => assert_eq!(s.state, standin_wire::TaskState::Completed),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_zero_point_three_push_body_is_a_whole_task_and_reads_as_its_claim() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/a2a-0.3/a_sdk03_jsonrpc/push_bodies_received.json");
    let bodies: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let claims: Vec<_> = bodies
        .iter()
        .map(|b| crate::push::read_push(b["body"].to_string().as_bytes()).expect("a claim"))
        .collect();
    assert!(claims.iter().all(|c| c.remote_task_id == TASK));
    assert_eq!(
        claims.first().and_then(|c| c.claimed),
        Some(standin_wire::TaskState::Working)
    );
    assert_eq!(
        claims.last().and_then(|c| c.claimed),
        Some(standin_wire::TaskState::Completed)
    );
}

/// 0.3's HTTP+JSON binding as a2a-sdk 0.3.26 serves it (`c_sdk03_rest/`, captured by
/// `capture_rest.py`): `/v1/...` paths, the protobuf's JSON, multi-line SSE data.
const REST: &str = "c_sdk03_rest";

#[tokio::test]
async fn the_http_json_binding_of_zero_point_three_converses_like_one_point_zero() {
    let (server, client) = client(
        REST,
        vec![
            captured_03(&format!("{REST}/02_message_stream_first_turn.json"), |_| {}),
            captured_03(&format!("{REST}/03_tasks_get_input_required.json"), |_| {}),
            captured_03(&format!("{REST}/05_message_stream_follow_up.json"), |_| {}),
            captured_03(&format!("{REST}/06_tasks_get_completed.json"), |_| {}),
            captured_03(&format!("{REST}/07_push_config_delete.json"), |_| {}),
            captured_03(&format!("{REST}/08_tasks_get_unknown.json"), |_| {}),
        ],
    )
    .await;
    assert_eq!(
        (client.agent().dialect, client.agent().binding),
        (Dialect::V03, Binding::HttpJson)
    );
    let first = statuses(&client, &turn("Build me a widget", false)).await;
    let asked = first.last().expect("states");
    assert_eq!(
        (asked.state, asked.text.as_deref()),
        (
            standin_wire::TaskState::InputRequired,
            Some("Which colour should the widget be?")
        )
    );
    let task_id = asked.task_id.clone();
    let got = client.get(&task_id).await.expect("the task");
    assert_eq!(got.state, standin_wire::TaskState::InputRequired);
    let follow_up = crate::model::Turn::new(
        "blue",
        Some(crate::model::FollowUp {
            task_id: task_id.clone(),
            context_id: asked.context_id.clone().expect("a context"),
        }),
    );
    let second = statuses(&client, &follow_up).await;
    let done = second.last().expect("states");
    assert_eq!(
        (done.state, done.text.as_deref()),
        (
            standin_wire::TaskState::Completed,
            Some("Your blue widget is ready.")
        )
    );
    assert_eq!(
        client.get(&task_id).await.expect("the task").state,
        standin_wire::TaskState::Completed
    );
    // The SDK serves no DELETE for a push config: a refusal, not a crash.
    let deleted = client.delete_push_config(&task_id, "standin-1").await;
    assert!(
        matches!(deleted, Err(RemoteError::Http { status: 405 })),
        "{deleted:?}"
    );
    let unknown = client.get("no-such-task").await;
    assert!(
        matches!(unknown, Err(RemoteError::TaskNotFound(_))),
        "{unknown:?}"
    );
    let requests = server.requests();
    let targets: Vec<(String, String)> = requests
        .iter()
        .map(|r| (r.method.clone(), r.target.clone()))
        .collect();
    assert_eq!(targets[1], ("POST".into(), "/v1/message:stream".into()));
    assert_eq!(
        targets[2],
        ("GET".into(), format!("/v1/tasks/{task_id}?historyLength=0"))
    );
    assert_eq!(targets[5].0, "DELETE");
    let sent = requests[1].json();
    assert_eq!(sent["request"]["role"], "ROLE_USER");
    assert_eq!(
        sent["request"]["content"],
        json!([{"text": "Build me a widget"}])
    );
    let captured = captured_request_03(&format!("{REST}/02_message_stream_first_turn.json"));
    assert_eq!(sent["request"]["content"], captured["request"]["content"]);
    assert_eq!(requests[3].json()["request"]["taskId"], task_id.as_str());
}

#[tokio::test]
async fn the_http_json_binding_sets_push_and_cancels_in_its_own_terms() {
    let (server, client) = client(
        REST,
        vec![
            captured_03(&format!("{REST}/04_push_config_set.json"), |_| {}),
            captured_03(&format!("{REST}/10_cancel_input_required.json"), |_| {}),
        ],
    )
    .await;
    let config = TaskPushNotificationConfig {
        id: Some("standin-1".into()),
        task_id: "t-1".into(),
        url: "http://127.0.0.1:1/push".into(),
        token: Some("tok-0123456789".into()),
        authentication: Some(crate::a2a::types::AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: Some("tok-0123456789".into()),
        }),
    };
    let created = client.create_push_config(&config).await.expect("set");
    assert_eq!(created.id.as_deref(), Some("standin-1"));
    let cancelled = client.cancel("t-2").await.expect("cancelled");
    assert_eq!(
        cancelled.state,
        standin_wire::TaskState::Canceled,
        "TASK_STATE_CANCELLED read"
    );
    let requests = server.requests();
    let body = requests[1].json();
    assert_eq!(body["parent"], "tasks/t-1");
    assert_eq!(body["configId"], "standin-1");
    assert_eq!(
        body["config"]["pushNotificationConfig"]["authentication"]["schemes"],
        json!(["Bearer"])
    );
    assert_eq!(requests[2].target, "/v1/tasks/t-2:cancel");
}
