//! The A2A client against replayed exchanges captured from the official a2a-sdk 1.3.0.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::err_expect)] // tests fail loudly by design

use std::time::Duration;

use super::replay::*;
use crate::a2a::binding::Binding;
use crate::a2a::client::{AgentClient, EventStream, Timeouts, http_client};
use crate::a2a::types::{
    Message, SendMessageResult, StreamResponse, TaskPushNotificationConfig, WireState,
};
use crate::error::RemoteError;
use crate::model::{Status, Update};
use futures_util::StreamExt;
use serde_json::{Value, json};

/// Where a turn's stream stopped, as the stand-in reads it.
#[derive(Debug)]
struct Stop {
    remote_task_id: String,
    state: standin_wire::TaskState,
    is_final: bool,
}

/// Reads a turn's events to an interrupted or final state, as the turn step does.
#[derive(Default)]
struct TurnReader {
    last: Option<Stop>,
    context_id: Option<String>,
}

impl TurnReader {
    fn new() -> Self {
        Self::default()
    }

    fn read(&mut self, event: &StreamResponse) -> bool {
        if let Update::Status(Status {
            task_id,
            context_id,
            state,
            ..
        }) = crate::a2a::map::update(event)
        {
            if context_id.is_some() {
                self.context_id = context_id;
            }
            self.last = Some(Stop {
                remote_task_id: task_id,
                state,
                is_final: state.is_terminal(),
            });
        }
        self.last
            .as_ref()
            .is_some_and(|l| l.is_final || l.state.is_interrupted())
    }

    fn last(&self) -> Option<&Stop> {
        self.last.as_ref()
    }

    fn context_id(&self) -> Option<&str> {
        self.context_id.as_deref()
    }

    fn finish(self) -> Option<Stop> {
        self.last
    }
}

const TASK: &str = "8396b73a-66c5-45be-b11c-6c803d66dd2d";
const CONTEXT: &str = "1627ebd5-fe7d-406e-9e71-8c45ceb2e44f";
const REST_TASK: &str = "c67e1585-88b1-498e-84d5-1c0b2fd48532";

fn quick() -> Timeouts {
    Timeouts {
        call: Duration::from_secs(5),
        stream_idle: Duration::from_secs(5),
    }
}

fn card_reply() -> Reply {
    captured("a_jsonrpc_main/01_get_agent_card.json")
}

fn card_with(edit: impl FnOnce(&mut Value)) -> Reply {
    let mut card = fixture("a_jsonrpc_main/01_get_agent_card.json")["response"]["body"].clone();
    edit(&mut card);
    json_reply(200, card)
}

async fn client(replies: Vec<Reply>, participant: Option<&str>) -> (ReplayServer, AgentClient) {
    let mut all = vec![card_reply()];
    all.extend(replies);
    let server = ReplayServer::start(all).await;
    let client = AgentClient::connect(
        http_client().expect("client"),
        &server.base,
        participant,
        quick(),
    )
    .await
    .expect("card accepted");
    (server, client)
}

fn user(text: &str, task: Option<(&str, &str)>) -> Message {
    Message::from_turn(&crate::model::Turn::new(
        text,
        task.map(|(task_id, context_id)| crate::model::FollowUp {
            task_id: task_id.to_owned(),
            context_id: context_id.to_owned(),
        }),
    ))
}

async fn collect(stream: EventStream) -> Vec<Result<StreamResponse, RemoteError>> {
    stream.collect().await
}

#[tokio::test]
async fn card_is_fetched_validated_and_its_first_interface_chosen() {
    let (server, client) = client(vec![], None).await;
    let agent = client.agent();
    assert_eq!(agent.binding, Binding::JsonRpc);
    assert_eq!(agent.endpoint.as_str(), format!("{}/", server.base));
    assert!(agent.push_notifications && agent.streaming);
    assert!(agent.extensions.is_empty());
    let card_request = &server.requests()[0];
    assert_eq!(
        (card_request.method.as_str(), card_request.target.as_str()),
        ("GET", "/.well-known/agent-card.json")
    );
}

#[tokio::test]
async fn unusable_cards_are_refused_with_a_reason() {
    let cases: Vec<(Reply, &str)> = vec![
        (
            card_with(|c| c["supportedInterfaces"] = json!([])),
            "supportedInterfaces is empty",
        ),
        (
            card_with(
                |c| c["supportedInterfaces"] = json!([{"url": "http://x/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]),
            ),
            "protocolVersion 1.0",
        ),
        (
            card_with(
                |c| c["supportedInterfaces"] = json!([{"url": "http://x/", "protocolBinding": "KAFKA", "protocolVersion": "1.0"}]),
            ),
            "binding",
        ),
        (json_reply(404, json!({"detail": "Not Found"})), "HTTP 404"),
        (
            Reply::Json {
                status: 200,
                content_type: "text/html".into(),
                body: b"<html>".to_vec(),
            },
            "not an agent card",
        ),
    ];
    for (reply, expected) in cases {
        let server = ReplayServer::start(vec![reply]).await;
        let err = AgentClient::connect(http_client().expect("client"), &server.base, None, quick())
            .await
            .err()
            .expect("refused");
        assert!(
            matches!(&err, RemoteError::Card(m) if m.contains(expected)),
            "{err} should mention {expected}"
        );
    }
}

#[tokio::test]
async fn first_turn_sends_a_1_0_message_with_the_headers() {
    let (server, client) = client(
        vec![captured("a_jsonrpc_main/02_send_message_first_turn.json")],
        Some("orchestrator-7"),
    )
    .await;
    let result = client
        .send_message(&user("Please build me a widget", None), false)
        .await
        .expect("sent");
    let SendMessageResult::Task(task) = result else {
        panic!("expected a task")
    };
    assert_eq!(
        (task.id.as_str(), task.status.state),
        (TASK, WireState::InputRequired)
    );
    let sent = &server.requests()[1];
    assert_eq!(sent.header("a2a-version"), Some("1.0"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("x-participant-id"), Some("orchestrator-7"));
    assert_eq!(
        sent.header("a2a-extensions"),
        None,
        "the card advertises none"
    );
    let body = sent.json();
    let captured = captured_request("a_jsonrpc_main/02_send_message_first_turn.json");
    assert_eq!(body["method"], captured["method"]);
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["id"].is_string(), "string ids");
    assert_eq!(body["params"]["message"]["role"], "ROLE_USER");
    assert_eq!(
        body["params"]["message"]["parts"],
        json!([{"text": "Please build me a widget"}]),
        "no 0.3 kind"
    );
}

#[tokio::test]
async fn follow_ups_carry_task_and_context_ids() {
    let (server, client) = client(
        vec![captured(
            "a_jsonrpc_main/09_send_message_follow_up_return_immediately.json",
        )],
        None,
    )
    .await;
    let result = client
        .send_message(&user("blue", Some((TASK, CONTEXT))), true)
        .await
        .expect("sent");
    assert!(matches!(result, SendMessageResult::Task(t) if t.status.state == WireState::Working));
    let params = server.requests()[1].json()["params"].clone();
    assert_eq!(params["message"]["taskId"], TASK);
    assert_eq!(params["message"]["contextId"], CONTEXT);
    assert_eq!(params["message"]["role"], "ROLE_USER");
    assert_eq!(
        params["message"]["messageId"].as_str().map(str::len),
        Some(32),
        "a fresh random id"
    );
    assert_eq!(params["configuration"]["returnImmediately"], true);
}

/// `A2A-Extensions` names only what the operator named for the agent (the stand-in
/// implements none itself), whatever the card advertises; the stand-in's trace goes on
/// every call.
#[tokio::test]
async fn extensions_header_lists_only_what_the_operator_names_and_the_trace_goes_on_every_call() {
    let card = card_with(|c| {
        c["capabilities"]["extensions"] =
            json!([{"uri": "https://ext.example/a"}, {"uri": "https://ext.example/b"}])
    });
    for (named, header) in [
        (vec![], None),
        (
            vec!["https://ext.example/a".to_owned()],
            Some("https://ext.example/a"),
        ),
    ] {
        let server = ReplayServer::start(vec![
            card.clone(),
            captured("a_jsonrpc_main/03_get_task_input_required.json"),
        ])
        .await;
        let reach = crate::connector::Reach {
            agent: "agent",
            url: &server.base,
            card_url: None,
            allowed_origins: &[],
            participant: None,
            headers: &[
                ("x-tenant-key".to_owned(), "k1".to_owned()),
                ("traceparent".to_owned(), OTHER_TRACE.to_owned()),
            ],
            session: Some(("x-session", "s-0123456789012345678901234567890123")),
            traceparent: Some(TRACE),
            extensions: &named,
            allow_private: true,
            credentials: None,
            card_signing: None,
            preferred_binding: None,
        };
        let roots = crate::tls::Roots::built_in();
        let client = crate::connector::Connector::new(roots, http_client().expect("client"))
            .connect("agent", reach)
            .await
            .expect("card");
        client.get_task(TASK).await.expect("task");
        let requests = server.requests();
        assert_eq!(requests[1].header("a2a-extensions"), header);
        for request in &requests {
            assert_eq!(
                request.header("x-tenant-key"),
                Some("k1"),
                "on the card's fetch too"
            );
            assert_eq!(
                request.header("x-session"),
                Some("s-0123456789012345678901234567890123")
            );
            assert_eq!(
                request.header("traceparent"),
                Some(TRACE),
                "the stand-in's trace, over the entry's header of that name"
            );
        }
    }
}

const TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER_TRACE: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

#[tokio::test]
async fn get_task_reads_the_status_and_asks_for_no_history() {
    let (server, client) = client(
        vec![captured("a_jsonrpc_main/03_get_task_input_required.json")],
        None,
    )
    .await;
    let task = client.get_task(TASK).await.expect("task");
    assert_eq!(task.status.state, WireState::InputRequired);
    assert_eq!(
        task.status.message.as_ref().map(Message::text).as_deref(),
        Some("What colour should the widget be?")
    );
    let body = server.requests()[1].json();
    assert_eq!(
        (body["method"].as_str(), &body["params"]),
        (Some("GetTask"), &json!({"id": TASK, "historyLength": 0}))
    );
}

#[tokio::test]
async fn push_config_is_created_under_our_id_and_deleted() {
    let (server, client) = client(
        vec![
            captured("a_jsonrpc_main/05_create_push_config_token_only.json"),
            captured("a_jsonrpc_main/16_delete_push_config.json"),
            captured("a_jsonrpc_main/17_delete_push_config_unknown_id.json"),
        ],
        None,
    )
    .await;
    let config = TaskPushNotificationConfig {
        id: Some("cfg-1".into()),
        task_id: TASK.into(),
        url: "http://127.0.0.1:41242/webhook/a1".into(),
        token: Some("tok-a1-secret".into()),
        authentication: None,
    };
    let created = client.create_push_config(&config).await.expect("created");
    assert_eq!(created.id.as_deref(), Some("cfg-1"));
    assert!(
        !format!("{created:?}").contains("tok-a1-secret"),
        "Debug never shows the token"
    );
    client
        .delete_push_config(TASK, "cfg-1")
        .await
        .expect("deleted");
    client
        .delete_push_config(TASK, "no-such-config")
        .await
        .expect("unknown ids delete fine");
    let requests = server.requests();
    let create = requests[1].json();
    assert_eq!(create["method"], "CreateTaskPushNotificationConfig");
    assert_eq!(
        create["params"],
        captured_request("a_jsonrpc_main/05_create_push_config_token_only.json")["params"]
    );
    assert_eq!(
        requests[2].json()["params"],
        json!({"taskId": TASK, "id": "cfg-1"})
    );
}

#[tokio::test]
async fn a_push_registration_through_the_port_sends_the_token_both_ways() {
    use crate::model::PushRequest;
    use crate::port::Agent;
    let (server, client) = client(
        vec![captured(
            "a_jsonrpc_main/05_create_push_config_token_only.json",
        )],
        None,
    )
    .await;
    let push = PushRequest {
        remote_task_id: TASK.into(),
        config_id: "cfg-1".into(),
        url: "http://127.0.0.1:41242/webhook/a1".into(),
        token: "tok-a1-secret".into(),
    };
    assert!(
        !format!("{push:?}").contains("tok-a1-secret"),
        "Debug never shows the token"
    );
    let kept_as = client.register_push(&push).await.expect("registered");
    assert_eq!(kept_as.as_deref(), Some("cfg-1"));
    let params = server.requests()[1].json()["params"].clone();
    assert_eq!(params["id"], "cfg-1");
    assert_eq!(params["taskId"], TASK);
    assert_eq!(params["url"], "http://127.0.0.1:41242/webhook/a1");
    assert_eq!(params["token"], "tok-a1-secret");
    // The spec's own mechanism too, for senders that ignore `token` (JS SDK).
    assert_eq!(
        params["authentication"],
        json!({"scheme": "Bearer", "credentials": "tok-a1-secret"})
    );
}

#[tokio::test]
async fn json_rpc_errors_map_to_typed_errors() {
    let (_server, client) = client(
        vec![
            captured("a_jsonrpc_main/20_get_task_unknown_error.json"),
            captured("a_jsonrpc_main/22_no_a2a_version_header_error.json"),
            captured("a_jsonrpc_main/14_cancel_terminal_task_error.json"),
            captured("a_jsonrpc_main/15_send_message_to_terminal_task_error.json"),
            json_reply(200, json!({"error": {"code": -32003, "message": "Push notifications not supported"}, "id": "x", "jsonrpc": "2.0"})),
            json_reply(200, json!({"error": {"code": -32601, "message": "Method not found"}, "id": "x", "jsonrpc": "2.0"})),
        ],
        None,
    )
    .await;
    let unknown = client
        .get_task("does-not-exist")
        .await
        .err()
        .expect("error");
    assert!(
        matches!(unknown, RemoteError::TaskNotFound(_)) && !unknown.is_retryable(),
        "{unknown}"
    );
    let version = client.get_task(TASK).await.err().expect("error");
    assert!(
        matches!(version, RemoteError::VersionNotSupported(_)),
        "{version}"
    );
    let cancel = client.cancel_task(TASK).await.err().expect("error");
    assert!(
        matches!(cancel, RemoteError::TaskNotCancelable(_)),
        "{cancel}"
    );
    let terminal = client
        .send_message(&user("more", Some((TASK, CONTEXT))), false)
        .await
        .err()
        .expect("error");
    assert!(
        matches!(terminal, RemoteError::UnsupportedOperation(_)),
        "{terminal}"
    );
    let config = TaskPushNotificationConfig {
        id: Some("c".into()),
        task_id: TASK.into(),
        url: "http://h/".into(),
        ..Default::default()
    };
    let push = client
        .create_push_config(&config)
        .await
        .err()
        .expect("error");
    assert!(matches!(push, RemoteError::PushNotSupported(_)), "{push}");
    let other = client.get_task(TASK).await.err().expect("error");
    assert_eq!(
        other,
        RemoteError::Rpc {
            code: -32601,
            message: "Method not found".into()
        }
    );
}

#[tokio::test]
async fn transport_failures_are_retryable() {
    let (_server, client) = client(
        vec![Reply::Json {
            status: 503,
            content_type: "text/plain".into(),
            body: b"busy".to_vec(),
        }],
        None,
    )
    .await;
    let err = client.get_task(TASK).await.err().expect("error");
    assert_eq!(err, RemoteError::Http { status: 503 });
    assert!(err.is_retryable());
    // Nobody listens on this port any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let err = AgentClient::connect(http_client().expect("client"), &dead, None, quick())
        .await
        .err()
        .expect("error");
    assert!(err.is_retryable(), "{err}");
}

#[tokio::test]
async fn every_call_has_a_timeout() {
    let server = ReplayServer::start(vec![card_reply(), Reply::Silence, Reply::Silence]).await;
    let short = Timeouts {
        call: Duration::from_millis(300),
        stream_idle: Duration::from_millis(300),
    };
    let client = AgentClient::connect(http_client().expect("client"), &server.base, None, short)
        .await
        .expect("card");
    let err = client.get_task(TASK).await.err().expect("timeout");
    assert!(
        matches!(
            err,
            RemoteError::Timeout {
                operation: "GetTask",
                ..
            }
        ) && err.is_retryable(),
        "{err}"
    );
    let err = client.subscribe_to_task(TASK).await.err().expect("timeout");
    assert!(
        matches!(
            err,
            RemoteError::Timeout {
                operation: "SubscribeToTask",
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_silent_open_stream_times_out_between_events() {
    let body = b"data: {\"result\":{\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}},\"id\":\"1\",\"jsonrpc\":\"2.0\"}\r\n\r\n".to_vec();
    let server = ReplayServer::start(vec![
        card_reply(),
        Reply::Sse {
            body,
            piece: 4096,
            hold_open: true,
        },
    ])
    .await;
    let short = Timeouts {
        call: Duration::from_secs(5),
        stream_idle: Duration::from_millis(300),
    };
    let client = AgentClient::connect(http_client().expect("client"), &server.base, None, short)
        .await
        .expect("card");
    let events = collect(client.subscribe_to_task("t").await.expect("stream")).await;
    assert_eq!(events.len(), 2);
    assert!(events[0].is_ok());
    assert!(matches!(events[1], Err(RemoteError::Timeout { .. })));
}

mod rest;
mod streams;
