//! The frameworks' own A2A servers, as captured (`tests/data/frameworks/`, its INDEX.md):
//! Pydantic AI's FastA2A, LangGraph's API server and Mastra. Each bends the protocol in
//! a way the spec never names; each test is the rule the client reads it by.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::replay::*;
use crate::a2a::client::{AgentClient, Timeouts, http_client};
use crate::model::{Content, Sent, Spilled, Status, Turn, Update};
use crate::port::{Agent, ContentSink};
use standin_wire::TaskState;

fn capture(rel: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/frameworks")
        .join(rel);
    serde_json::from_str(&std::fs::read_to_string(path).expect("capture exists"))
        .expect("capture is JSON")
}

/// A capture's answer as its server sent it: a JSON body, a bare HTTP error, or an SSE
/// stream of its events. The card's own address becomes the replay server's.
fn replayed(rel: &str) -> Reply {
    let response = capture(rel)["response"].clone();
    if let Some(events) = response.as_array() {
        let mut body = Vec::new();
        for event in events {
            body.extend_from_slice(format!("data: {}\r\n\r\n", event["data"]).as_bytes());
        }
        return Reply::Sse {
            body,
            piece: 29,
            hold_open: false,
        };
    }
    if let (Some(status), Some(text)) = (response["status"].as_u64(), response["text"].as_str()) {
        return Reply::Json {
            status: status as u16,
            content_type: response["content-type"]
                .as_str()
                .unwrap_or("text/plain")
                .into(),
            body: text.as_bytes().to_vec(),
        };
    }
    let body = rebased(&response.to_string());
    Reply::Json {
        status: 200,
        content_type: "application/json".into(),
        body: body.into_bytes(),
    }
}

/// Each framework's capture ran on a loopback port of its own (274xx).
fn rebased(text: &str) -> String {
    let mut out = text.to_owned();
    for port in 27400..27500 {
        out = out.replace(&format!("http://127.0.0.1:{port}"), CAPTURED_BASE);
    }
    out
}

/// Collects artifacts, as the stand-in does; keeps nothing.
struct Sink;

impl ContentSink for Sink {
    fn take(&self, _spilled: Spilled) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

async fn serving(framework: &str, replies: &[&str]) -> (ReplayServer, AgentClient) {
    let mut all = vec![replayed(&format!("{framework}/01-card.json"))];
    all.extend(
        replies
            .iter()
            .map(|r| replayed(&format!("{framework}/{r}"))),
    );
    let server = ReplayServer::start(all).await;
    let timeouts = Timeouts {
        call: Duration::from_secs(20),
        stream_idle: Duration::from_secs(20),
    };
    let client = AgentClient::connect(http_client().unwrap(), &server.base, None, timeouts)
        .await
        .expect("card accepted")
        .with_artifacts(Some(Arc::new(Sink) as Arc<dyn ContentSink>));
    (server, client)
}

async fn streamed(client: &AgentClient) -> Vec<Update> {
    client
        .send_streaming(&Turn::new("Build me a widget", None))
        .await
        .expect("a stream")
        .map(|u| u.expect("an update"))
        .collect()
        .await
}

fn statuses(updates: &[Update]) -> Vec<&Status> {
    updates
        .iter()
        .filter_map(|u| match u {
            Update::Status(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// The task a turn sent without a stream answered with.
async fn sent(client: &AgentClient, text: &str) -> Status {
    match client.send(&Turn::new(text, None)).await.unwrap() {
        Sent::Task(status) => status,
        Sent::Answer(text) => panic!("a task, not a direct answer: {text}"),
    }
}

/// A status's state and text, to compare at once.
fn said(status: &Status) -> (TaskState, Option<&str>) {
    (status.state, status.text.as_deref())
}

/// Whether the status carries one part, a data part holding `needle`.
fn asks_with_data(status: &Status, needle: &str) -> bool {
    matches!(&status.parts[..], [p] if matches!(&p.content, Content::Data(d) if d.contains(needle)))
}

/// Pydantic AI completes with no status message: the answer is only in its artifact,
/// streamed as chunks (the first already says `append`) and then whole.
#[tokio::test]
async fn pydantic_ai_s_answer_is_read_from_its_artifact() {
    let (_s, client) = serving("pydantic", &["09-stream.json"]).await;
    let updates = streamed(&client).await;
    let last = *statuses(&updates).last().unwrap();
    assert_eq!(last.state, TaskState::Completed);
    assert_eq!(
        last.text.as_deref(),
        Some("Looking into it. Drafting the answer. Answer to 'What is the answer?': 42.")
    );
    let (_s, client) = serving("pydantic", &["08-get.json"]).await;
    let task = client.get("t").await.unwrap();
    assert_eq!(
        (task.state, task.text.as_deref()),
        (
            TaskState::Completed,
            Some("Looking into it. Drafting the answer. Answer to 'What is the answer?': 42.")
        )
    );
}

/// A resubscription gives only the chunks before the end: appended as they come.
#[tokio::test]
async fn chunks_appended_with_no_whole_artifact_still_make_the_answer() {
    let mut events = capture("pydantic/11-resubscribe.json")["response"]
        .as_array()
        .unwrap()
        .clone();
    // Leave out the whole artifact the framework sends last, so only chunks remain.
    events.retain(|e| e["data"]["result"]["artifactUpdate"]["append"] != false);
    let mut body = Vec::new();
    for event in &events {
        body.extend_from_slice(format!("data: {}\r\n\r\n", event["data"]).as_bytes());
    }
    let server = ReplayServer::start(vec![
        replayed("pydantic/01-card.json"),
        Reply::Sse {
            body,
            piece: 31,
            hold_open: false,
        },
    ])
    .await;
    let client = AgentClient::connect(
        http_client().unwrap(),
        &server.base,
        None,
        Timeouts {
            call: Duration::from_secs(20),
            stream_idle: Duration::from_secs(20),
        },
    )
    .await
    .unwrap()
    .with_artifacts(Some(Arc::new(Sink) as Arc<dyn ContentSink>));
    let updates: Vec<Update> = client
        .subscribe("t")
        .await
        .unwrap()
        .map(|u| u.unwrap())
        .collect()
        .await;
    let last = *statuses(&updates).last().unwrap();
    assert_eq!(
        (last.state, last.text.as_deref()),
        (
            TaskState::Completed,
            Some("Looking into it. Drafting the answer. Answer to 'What is the answer?': 42.")
        )
    );
}

/// LangGraph answers a 1.0 stream with a 1.0 task first, then 0.3's flat `kind`-tagged
/// events carrying 1.0's state names; its question has no status message, only an
/// `Interrupt` artifact holding a data part.
#[tokio::test]
async fn langgraph_s_mixed_stream_and_its_question_through_an_artifact() {
    let (_s, client) = serving("langgraph", &["05-stream.json"]).await;
    let updates = streamed(&client).await;
    let states: Vec<_> = statuses(&updates)
        .iter()
        .map(|s| (s.state, s.text.clone()))
        .collect();
    assert_eq!(
        states,
        [
            (TaskState::Submitted, None),
            (TaskState::Working, Some("Which colour?".into())),
            (TaskState::Working, Some("Which colour?".into())),
            (TaskState::InputRequired, None),
        ],
        "{updates:#?}"
    );
    let question = *statuses(&updates).last().unwrap();
    let data: Vec<_> = question.parts.iter().map(|p| p.content.clone()).collect();
    assert_eq!(
        data,
        [Content::Data(
            r#"{"id":"fcc3d06aa85d47d7404f5ccf2c38c843","value":"Which colour?"}"#.into()
        )]
    );
    assert!(
        updates.iter().any(
            |u| matches!(u, Update::Artifact(a) if a.artifact.name.as_deref() == Some("Interrupt"))
        ),
        "the kinded artifact update is read as one: {updates:#?}"
    );
}

#[tokio::test]
async fn langgraph_s_answer_after_the_reply_is_its_artifact() {
    let (_s, client) = serving("langgraph", &["06-stream-reply.json"]).await;
    let updates = streamed(&client).await;
    let last = *statuses(&updates).last().unwrap();
    assert_eq!(said(last), (TaskState::Completed, Some("blue widget done")));
    // Sent without a stream, the same: the task completes with the answer only in an
    // artifact, and the question before it only in an `Interrupt` artifact's data.
    let (_s, client) = serving("langgraph", &["02-send.json", "04-send-reply.json"]).await;
    let asked = sent(&client, "Build me a widget").await;
    assert_eq!(said(&asked), (TaskState::InputRequired, None));
    assert!(asks_with_data(&asked, "Which colour?"), "{asked:?}");
    let done = sent(&client, "blue").await;
    assert_eq!(
        said(&done),
        (TaskState::Completed, Some("blue widget done"))
    );
}

/// Mastra streams WORKING ("Generating response...") and completes with no status
/// message; the answer is its artifact, in appended chunks.
#[tokio::test]
async fn mastra_s_answer_is_its_artifact_not_its_first_progress() {
    let (_s, client) = serving("mastra", &["06-stream-reply.json"]).await;
    let updates = streamed(&client).await;
    let heard: Vec<_> = statuses(&updates).into_iter().map(said).collect();
    assert_eq!(
        heard,
        [
            (TaskState::Working, Some("Generating response...")),
            (TaskState::Completed, Some("blue widget done")),
        ]
    );
    let (_s, client) = serving("mastra", &["04-send-reply.json"]).await;
    let done = sent(&client, "blue").await;
    assert_eq!(
        said(&done),
        (TaskState::Completed, Some("blue widget done"))
    );
}

/// A status message of its own always wins over an artifact, and progress never borrows
/// an artifact's words.
#[tokio::test]
async fn a_status_message_wins_and_progress_borrows_nothing() {
    let (_s, client) = serving("mastra", &["02-send.json"]).await;
    let asked = sent(&client, "Build me a widget").await;
    assert_eq!(
        said(&asked),
        (TaskState::InputRequired, Some("Which colour?"))
    );
    assert!(asks_with_data(&asked, "resumeSchema"), "{asked:?}");
    let (_s, client) = serving("pydantic", &["09-stream.json"]).await;
    let updates = streamed(&client).await;
    assert!(
        statuses(&updates)
            .iter()
            .filter(|s| s.state == TaskState::Working)
            .all(|s| s.text.is_none()),
        "{updates:#?}"
    );
}
