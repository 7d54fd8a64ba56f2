//! The gRPC binding against a loopback HTTP/2 server that frames its answers as gRPC
//! does (`grpc_replay`): the calls as a2a.proto's methods, answers read as the other
//! bindings read theirs, errors by their reason or code, and the same bounds, timeouts
//! and credentials; over h2c and over TLS.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Url;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::client_auth::Rotating;
use super::grpc_replay::{Answer, GrpcReplay};
use crate::a2a::binding::Binding;
use crate::a2a::binding::grpc_test_support::{decode, encode};
use crate::a2a::card::ResolvedAgent;
use crate::a2a::client::{AgentClient, Timeouts};
use crate::a2a::dialect::Dialect;
use crate::auth::Scheme;
use crate::error::RemoteError;
use crate::model::{Turn, Update};
use crate::port::Agent;
use crate::tls::Roots;
use standin_wire::TaskState as State;

const TASK: &str = "3f36680c-e0a2-4b2e-9d5e-2f1a7b6b3c10";

fn agent(endpoint: &str) -> ResolvedAgent {
    ResolvedAgent {
        endpoint: Url::parse(endpoint).unwrap(),
        binding: Binding::Grpc,
        dialect: Dialect::V1,
        tenant: None,
        streaming: true,
        push_notifications: true,
        extensions: Vec::new(),
    }
}

fn quick() -> Timeouts {
    Timeouts {
        call: Duration::from_secs(5),
        stream_idle: Duration::from_secs(1),
    }
}

/// A client of the server over h2c, as the connector builds one for an `http` interface.
fn client_of(server: &GrpcReplay) -> AgentClient {
    let h2c = Roots::built_in().agent_h2c_client().unwrap();
    let endpoint = format!("http://{}/", server.address);
    AgentClient::new(h2c, agent(&endpoint), HeaderMap::new(), quick()).unwrap()
}

fn task(state: &str, text: &str) -> Value {
    json!({"id": TASK, "contextId": "c-1", "status": {"state": state,
        "message": {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": text}]}}})
}

#[tokio::test]
async fn a_call_is_the_services_method_and_its_task_reads_as_over_json() {
    let server = GrpcReplay::start(vec![Answer::Messages(
        "lf.a2a.v1.Task",
        vec![task("TASK_STATE_INPUT_REQUIRED", "Which colour?")],
    )])
    .await;
    let status = client_of(&server).get(TASK).await.unwrap();
    assert_eq!(
        (status.state, status.text.as_deref()),
        (State::InputRequired, Some("Which colour?"))
    );
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/lf.a2a.v1.A2AService/GetTask");
    assert_eq!(
        decode("lf.a2a.v1.GetTaskRequest", &seen.message),
        json!({"id": TASK, "historyLength": 0})
    );
    let header = |name: &str| seen.headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(header("content-type"), Some("application/grpc"));
    assert_eq!(header("a2a-version"), Some("1.0"));
    assert!(header("grpc-timeout").is_some(), "the deadline travels");
}

#[tokio::test]
async fn a_stream_reads_each_message_in_order_and_ends_at_the_trailers() {
    let working = json!({"statusUpdate": {"taskId": TASK, "contextId": "c-1",
        "status": {"state": "TASK_STATE_WORKING"}}});
    let done = json!({"statusUpdate": {"taskId": TASK, "contextId": "c-1",
        "status": {"state": "TASK_STATE_COMPLETED",
            "message": {"messageId": "m-2", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}}}});
    let server = GrpcReplay::start(vec![Answer::Messages(
        "lf.a2a.v1.StreamResponse",
        vec![
            json!({"task": task("TASK_STATE_SUBMITTED", "")}),
            working,
            done,
        ],
    )])
    .await;
    let updates: Vec<_> = client_of(&server)
        .send_streaming(&Turn::new("make a widget", None))
        .await
        .unwrap()
        .collect()
        .await;
    let states: Vec<State> = updates
        .iter()
        .map(|u| match u.as_ref().unwrap() {
            Update::Status(status) => status.state,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(states, [State::Submitted, State::Working, State::Completed]);
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/lf.a2a.v1.A2AService/SendStreamingMessage");
    assert!(
        seen.headers.get("grpc-timeout").is_none(),
        "a server would end the stream at the call's deadline"
    );
    let sent = decode("lf.a2a.v1.SendMessageRequest", &seen.message);
    assert_eq!(sent["message"]["parts"][0]["text"], "make a widget");
}

fn error_info(code: i32, reason: &str) -> Vec<u8> {
    encode(
        "google.rpc.Status",
        &json!({"code": code, "message": "said the agent", "details": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason, "domain": "a2a-protocol.org"}]}),
    )
}

#[tokio::test]
async fn an_error_reads_by_its_reason_then_by_its_code() {
    let server = GrpcReplay::start(vec![
        Answer::Status {
            code: 5,
            message: "no such task",
            details: Some(error_info(5, "TASK_NOT_FOUND")),
        },
        Answer::Status {
            code: 9,
            message: "done already",
            details: Some(error_info(9, "UNSUPPORTED_OPERATION")),
        },
        Answer::Status {
            code: 12,
            message: "no subscribe here",
            details: None,
        },
        Answer::Status {
            code: 14,
            message: "busy",
            details: None,
        },
    ])
    .await;
    let client = client_of(&server);
    let not_found = client.get(TASK).await.unwrap_err();
    assert_eq!(not_found, RemoteError::TaskNotFound("no such task".into()));
    let terminal = client.subscribe(TASK).await.err().unwrap();
    assert!(terminal.is_terminal_task(), "{terminal}");
    let unimplemented = client.subscribe(TASK).await.err().unwrap();
    assert!(unimplemented.refuses_subscribe(), "{unimplemented}");
    assert!(!unimplemented.is_retryable());
    let unavailable = client.get(TASK).await.unwrap_err();
    assert!(unavailable.is_retryable(), "{unavailable}");
    assert_eq!(
        unavailable.to_string(),
        "gRPC status 14: busy",
        "the code and the agent's words, bounded"
    );
}

#[tokio::test]
async fn the_bounds_of_the_other_bindings_hold() {
    let huge_text = "x".repeat(2 * 1024 * 1024);
    let mut with_history = task("TASK_STATE_WORKING", "");
    with_history["history"] = json!([{"messageId": "h", "role": "ROLE_USER",
        "parts": [{"text": huge_text.clone()}]}]);
    let server = GrpcReplay::start(vec![
        // Past the message bound: refused before it is read.
        Answer::Raw {
            frames: vec![vec![0u8; 9 * 1024 * 1024]],
            hold_open: false,
        },
        // Under it, but more than an answer may keep once skimmed.
        Answer::Messages(
            "lf.a2a.v1.Task",
            vec![task("TASK_STATE_WORKING", &huge_text)],
        ),
        // History is skimmed off, as over JSON.
        Answer::Messages("lf.a2a.v1.Task", vec![with_history]),
        // A stream that goes silent after one message.
        Answer::Raw {
            frames: vec![encode(
                "lf.a2a.v1.StreamResponse",
                &json!({"task": task("TASK_STATE_WORKING", "on it")}),
            )],
            hold_open: true,
        },
    ])
    .await;
    let client = client_of(&server);
    let over = client.get(TASK).await.unwrap_err();
    assert_eq!(
        over,
        RemoteError::TooLarge {
            what: "a gRPC message",
            limit: 4 * 1024 * 1024
        }
    );
    let kept = client.get(TASK).await.unwrap_err();
    assert!(
        matches!(
            kept,
            RemoteError::TooLarge {
                what: "an answer",
                ..
            }
        ),
        "{kept}"
    );
    let skimmed = client.get(TASK).await.unwrap();
    assert_eq!(skimmed.state, State::Working);
    let mut stream = client.subscribe(TASK).await.unwrap();
    assert!(stream.next().await.unwrap().is_ok());
    // gRPC says nothing between changes: silence for the idle time ends the stream as a
    // server's closing it does (the stand-in then asks again), never waits for ever.
    let quiet = std::time::Instant::now();
    assert!(stream.next().await.is_none());
    assert!(
        quiet.elapsed() >= Duration::from_millis(900),
        "{:?}",
        quiet.elapsed()
    );
}

/// A streamed file of 3 MiB, under the message bound but over what an event may keep:
/// its bytes go to the sink as they do over SSE. An error in the trailers after it ends
/// the stream with that error.
#[tokio::test]
async fn a_large_artifact_is_stored_as_it_is_read_and_a_trailing_error_ends_the_stream() {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let file = vec![7u8; 3 * 1024 * 1024];
    let raw = base64::engine::general_purpose::STANDARD.encode(&file);
    let update = json!({"artifactUpdate": {"taskId": TASK, "contextId": "c-1",
        "artifact": {"artifactId": "a-1", "name": "big.bin",
            "parts": [{"raw": raw, "mediaType": "application/octet-stream"}]},
        "lastChunk": true}});
    let server = GrpcReplay::start(vec![Answer::Failing {
        frames: vec![encode("lf.a2a.v1.StreamResponse", &update)],
        code: 13,
        message: "the model fell over",
    }])
    .await;
    let sink = std::sync::Arc::new(super::client_artifacts::Sink::default());
    let client = client_of(&server).with_artifacts(Some(
        sink.clone() as std::sync::Arc<dyn crate::port::ContentSink>
    ));
    let mut stream = client.subscribe(TASK).await.unwrap();
    let Update::Artifact(update) = stream.next().await.unwrap().unwrap() else {
        panic!("an artifact update")
    };
    let crate::model::Content::Stored { spill, .. } = &update.artifact.parts[0].content else {
        panic!("stored: {update:?}")
    };
    let (kind, size, digest, valid) = sink.stored(spill);
    assert_eq!(
        (kind, size, digest, valid),
        (
            crate::model::ContentKind::File,
            file.len(),
            Sha256::digest(&file).to_vec(),
            Some(true)
        )
    );
    let failed = stream.next().await.unwrap().unwrap_err();
    assert_eq!(
        failed,
        RemoteError::Grpc {
            code: 13,
            message: "the model fell over".into()
        }
    );
    assert!(failed.is_retryable());
    assert!(stream.next().await.is_none());
}

/// gRPC's UNAUTHENTICATED, as an agent refuses a call.
const UNAUTHENTICATED: Answer = Answer::Status {
    code: 16,
    message: "who are you",
    details: None,
};

/// A refusal of the credentials: what a call answers once read afresh and refused again.
const BEARER_REFUSED: RemoteError = RemoteError::Unauthorized {
    status: 401,
    scheme: Some(Scheme::Bearer),
};

#[tokio::test]
async fn credentials_go_on_each_call_and_a_refusal_reads_them_afresh_once() {
    let server = GrpcReplay::start(vec![
        UNAUTHENTICATED,
        Answer::Messages("lf.a2a.v1.Task", vec![task("TASK_STATE_WORKING", "")]),
        UNAUTHENTICATED,
    ])
    .await;
    let client = client_of(&server).with_credentials(Some(Rotating::new(1)));
    assert_eq!(client.get(TASK).await.unwrap().state, State::Working);
    assert_eq!(client.get(TASK).await.unwrap_err(), BEARER_REFUSED);
    let sent: Vec<_> = server
        .seen()
        .iter()
        .map(|s| s.headers["authorization"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(sent, ["Bearer v0", "Bearer v1", "Bearer v1"]);
}

#[tokio::test]
async fn over_tls_the_agent_client_agrees_on_http2_and_speaks_grpc() {
    let server = GrpcReplay::start_tls(vec![Answer::Messages(
        "lf.a2a.v1.Task",
        vec![task("TASK_STATE_COMPLETED", "done")],
    )])
    .await;
    let ca = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/tls/ca.pem"
    ));
    let http = Roots::with_file(ca).unwrap().agent_http_client().unwrap();
    let endpoint = format!("https://{}/", server.address);
    let client = AgentClient::new(http, agent(&endpoint), HeaderMap::new(), quick()).unwrap();
    let status = client.get(TASK).await.unwrap();
    assert_eq!(
        (status.state, status.text.as_deref()),
        (State::Completed, Some("done"))
    );
}

/// A proxy in front answers in HTTP's words: its 401 is the credentials' refusal (read
/// afresh once), its 502 page an HTTP error to retry, an HTML 200 no gRPC answer;
/// NOT_FOUND with no reason is the task's. None is misread as frames.
#[tokio::test]
async fn a_proxys_http_answers_are_its_errors_and_not_found_is_the_tasks() {
    let server = GrpcReplay::start(vec![
        Answer::Http {
            status: 401,
            content_type: "application/json",
            body: r#"{"message":"Unauthorized"}"#,
        },
        Answer::Http {
            status: 401,
            content_type: "application/json",
            body: r#"{"message":"Unauthorized"}"#,
        },
        Answer::Http {
            status: 502,
            content_type: "text/html",
            body: "<html>Bad Gateway</html>",
        },
        Answer::Http {
            status: 200,
            content_type: "text/html",
            body: "<html>hello</html>",
        },
        Answer::Status {
            code: 5,
            message: "gone",
            details: None,
        },
    ])
    .await;
    let client = client_of(&server).with_credentials(Some(Rotating::new(1)));
    assert_eq!(client.get(TASK).await.unwrap_err(), BEARER_REFUSED);
    assert_eq!(server.seen().len(), 2, "read afresh and sent once more");
    let bad_gateway = client.get(TASK).await.unwrap_err();
    assert_eq!(bad_gateway, RemoteError::Http { status: 502 });
    assert!(bad_gateway.is_retryable());
    let not_grpc = client.get(TASK).await.unwrap_err();
    assert!(
        matches!(&not_grpc, RemoteError::InvalidResponse(m) if m.contains("not application/grpc")),
        "{not_grpc}"
    );
    let gone = client.get(TASK).await.unwrap_err();
    assert_eq!(gone, RemoteError::TaskNotFound("gone".into()));
}

/// A long message arriving slowly is not silence: the idle time counts from the last
/// bytes, not the last whole message. A task's long history is cut before it is decoded.
#[tokio::test]
async fn a_slow_message_is_not_silence_and_a_long_history_is_cut_before_decoding() {
    let mut task = task("TASK_STATE_WORKING", "on it");
    let history: Vec<Value> = (0..40_000)
        .map(|_| json!({"messageId": "h", "role": "ROLE_USER", "parts": [{"text": "x"}]}))
        .collect();
    task["history"] = json!(history);
    let server = GrpcReplay::start(vec![Answer::Trickle {
        message: encode("lf.a2a.v1.StreamResponse", &json!({ "task": task })),
        pieces: 4,
        gap: Duration::from_millis(400),
    }])
    .await;
    let client = client_of(&server);
    let mut stream = client.subscribe(TASK).await.unwrap();
    let Update::Status(status) = stream.next().await.unwrap().unwrap() else {
        panic!("the task")
    };
    assert_eq!(
        (status.state, status.text.as_deref()),
        (State::Working, Some("on it"))
    );
}

/// What else the stand-in calls: a push config set and deleted (the answer `Empty`), the
/// interface's tenant on each request; a key that would go in the query is refused
/// before anything is sent.
#[tokio::test]
async fn push_configs_and_tenants_travel_and_a_query_key_is_refused() {
    let config = json!({"id": "cfg-1", "taskId": TASK, "url": "https://push.example/p"});
    let server = GrpcReplay::start(vec![
        Answer::Messages("lf.a2a.v1.TaskPushNotificationConfig", vec![config]),
        Answer::Messages("google.protobuf.Empty", vec![json!({})]),
    ])
    .await;
    let mut tenanted = agent(&format!("http://{}/", server.address));
    tenanted.tenant = Some("acme".into());
    let h2c = Roots::built_in().agent_h2c_client().unwrap();
    let client = AgentClient::new(h2c, tenanted, HeaderMap::new(), quick()).unwrap();
    let push = crate::model::PushRequest {
        remote_task_id: TASK.into(),
        config_id: "cfg-1".into(),
        url: "https://push.example/p".into(),
        token: "push-token".into(),
    };
    assert_eq!(
        client.register_push(&push).await.unwrap().as_deref(),
        Some("cfg-1")
    );
    client.delete_push(TASK, "cfg-1").await.unwrap();
    let seen = server.seen();
    let created = decode("lf.a2a.v1.TaskPushNotificationConfig", &seen[0].message);
    assert_eq!(
        (
            created["tenant"].as_str(),
            created["taskId"].as_str(),
            created["url"].as_str()
        ),
        (Some("acme"), Some(TASK), Some("https://push.example/p"))
    );
    let deleted = decode(
        "lf.a2a.v1.DeleteTaskPushNotificationConfigRequest",
        &seen[1].message,
    );
    assert_eq!(
        deleted,
        json!({"tenant": "acme", "taskId": TASK, "id": "cfg-1"})
    );

    let in_query = client_of(&server).with_credentials(Some(std::sync::Arc::new(QueryKey)));
    let refused = in_query.get(TASK).await.unwrap_err();
    assert!(
        matches!(&refused, RemoteError::AuthNotConfigured(m) if m.contains("query")),
        "{refused}"
    );
    assert_eq!(server.seen().len(), 2, "nothing was sent");
}

/// An API key that goes in the URL's query.
struct QueryKey;

impl crate::auth::Credentials for QueryKey {
    fn scheme(&self) -> Scheme {
        Scheme::ApiKey
    }
    fn authorize<'a>(
        &'a self,
        request: &'a mut reqwest::Request,
    ) -> futures_util::future::BoxFuture<'a, Result<(), RemoteError>> {
        request.url_mut().set_query(Some("key=secret"));
        Box::pin(async { Ok(()) })
    }
    fn renew(&self) -> futures_util::future::BoxFuture<'_, bool> {
        Box::pin(async { false })
    }
}

/// An agent's status details that are not base64 are dropped before tonic reads them (it
/// would panic): the status is still the agent's error, in the headers or the trailers.
#[tokio::test]
async fn status_details_that_do_not_read_are_an_error_never_a_panic() {
    let working = json!({"task": task("TASK_STATE_WORKING", "on it")});
    let server = GrpcReplay::start(vec![
        Answer::BadDetails {
            code: 14,
            frames: None,
        },
        Answer::BadDetails {
            code: 13,
            frames: Some(vec![encode("lf.a2a.v1.StreamResponse", &working)]),
        },
    ])
    .await;
    let client = client_of(&server);
    let unavailable = client.get(TASK).await.unwrap_err();
    assert!(
        matches!(unavailable, RemoteError::Grpc { code: 14, .. }),
        "{unavailable}"
    );
    let mut stream = client.subscribe(TASK).await.unwrap();
    assert!(stream.next().await.unwrap().is_ok());
    let internal = stream.next().await.unwrap().unwrap_err();
    assert!(
        matches!(internal, RemoteError::Grpc { code: 13, .. }),
        "{internal}"
    );
}

/// Silence before a stream's first message is a timeout, as over SSE (a turn parks on
/// it rather than judge the message refused), whether the headers came or not.
#[tokio::test]
async fn silence_before_the_first_message_is_a_timeout_headers_or_not() {
    let server = GrpcReplay::start(vec![
        Answer::Raw {
            frames: Vec::new(),
            hold_open: true,
        },
        Answer::Late(Duration::from_secs(5)),
    ])
    .await;
    let h2c = Roots::built_in().agent_h2c_client().unwrap();
    let endpoint = format!("http://{}/", server.address);
    let timeouts = Timeouts {
        call: Duration::from_secs(1),
        stream_idle: Duration::from_secs(1),
    };
    let client = AgentClient::new(h2c, agent(&endpoint), HeaderMap::new(), timeouts).unwrap();
    let silence = RemoteError::Timeout {
        operation: "stream read",
        seconds: 1,
    };
    for _ in 0..2 {
        let mut stream = client.subscribe(TASK).await.unwrap();
        assert_eq!(stream.next().await.unwrap().unwrap_err(), silence);
        assert!(stream.next().await.is_none());
    }
}
