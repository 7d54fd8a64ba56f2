//! Artifacts collected by the client: from the SDKs' captured streams, and from answers
//! too large to hold, whose content reaches the sink in chunks.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::replay::*;
use crate::a2a::client::{AgentClient, Timeouts, http_client};
use crate::model::{Artifact, Content, ContentKind, Spilled, Update};
use crate::port::{Agent, ContentSink};

/// One spill as the sink saw it: id, kind, digest so far, size, and how it closed.
type Seen = (String, ContentKind, Sha256, usize, Option<bool>);

/// What reached the sink, spill by spill, and the largest chunk handed over at once.
#[derive(Default)]
pub(super) struct Sink {
    spills: Mutex<Vec<Seen>>,
    largest_chunk: Mutex<usize>,
}

impl ContentSink for Sink {
    fn take(&self, spilled: Spilled) -> BoxFuture<'_, ()> {
        let mut spills = self.spills.lock().unwrap();
        match spilled {
            Spilled::Opened { spill, kind } => spills.push((spill, kind, Sha256::new(), 0, None)),
            Spilled::Bytes { spill, bytes } => {
                let mut largest = self.largest_chunk.lock().unwrap();
                *largest = (*largest).max(bytes.len());
                let open = spills.iter_mut().find(|s| s.0 == spill).unwrap();
                open.2.update(&bytes);
                open.3 += bytes.len();
            }
            Spilled::Closed { spill, valid } => {
                spills.iter_mut().find(|s| s.0 == spill).unwrap().4 = Some(valid);
            }
        }
        Box::pin(async {})
    }
}

impl Sink {
    /// Kind, size, SHA-256 and validity of the spill a part names.
    pub(super) fn stored(&self, spill: &str) -> (ContentKind, usize, Vec<u8>, Option<bool>) {
        let spills = self.spills.lock().unwrap();
        let s = spills
            .iter()
            .find(|s| s.0 == spill)
            .expect("the spill reached the sink");
        (s.1, s.3, s.2.clone().finalize().to_vec(), s.4)
    }
}

fn quick() -> Timeouts {
    Timeouts {
        call: Duration::from_secs(20),
        stream_idle: Duration::from_secs(20),
    }
}

async fn collecting(card: Reply, replies: Vec<Reply>) -> (ReplayServer, AgentClient, Arc<Sink>) {
    let mut all = vec![card];
    all.extend(replies);
    let server = ReplayServer::start(all).await;
    let sink = Arc::new(Sink::default());
    let client = AgentClient::connect(http_client().unwrap(), &server.base, None, quick())
        .await
        .expect("card accepted")
        .with_artifacts(Some(sink.clone() as Arc<dyn ContentSink>));
    (server, client, sink)
}

fn card_one_point_zero() -> Reply {
    captured("a_jsonrpc_main/01_get_agent_card.json")
}

fn card_zero_point_three() -> Reply {
    captured_03("b_strands_jsonrpc/01_agent_card.json", |card| {
        card["url"] = json!("/")
    })
}

async fn updates(client: &AgentClient) -> Vec<Update> {
    client
        .send_streaming(&crate::model::Turn::new("go", None))
        .await
        .expect("a stream")
        .map(|u| u.expect("an update"))
        .collect()
        .await
}

fn artifacts(updates: &[Update]) -> Vec<(&Artifact, bool, bool)> {
    updates
        .iter()
        .filter_map(|u| match u {
            Update::Artifact(a) => Some((&a.artifact, a.append, a.last_chunk)),
            _ => None,
        })
        .collect()
}

fn sse(events: &[Value]) -> Reply {
    let mut body = Vec::new();
    for e in events {
        body.extend_from_slice(format!("data: {e}\r\n\r\n").as_bytes());
    }
    Reply::Sse {
        body,
        piece: 4096,
        hold_open: false,
    }
}

fn rpc(id: &str, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[tokio::test]
async fn the_sdks_streamed_artifact_is_collected() {
    let (_s, client, _sink) = collecting(
        card_one_point_zero(),
        vec![captured(
            "b_jsonrpc_streaming/03_send_streaming_message_follow_up.json",
        )],
    )
    .await;
    let updates = updates(&client).await;
    let got = artifacts(&updates);
    assert_eq!(got.len(), 1, "{updates:?}");
    let (artifact, append, last) = got[0];
    assert_eq!(artifact.name.as_deref(), Some("widget"));
    assert_eq!(
        artifact.parts[0].content,
        Content::Text("widget(colour=green)".into())
    );
    assert_eq!((append, last), (false, true));
}

#[tokio::test]
async fn strands_answer_artifact_is_collected_in_zero_point_three() {
    let (_s, client, _sink) = collecting(
        card_zero_point_three(),
        vec![captured_03(
            "b_strands_jsonrpc/02_message_stream.json",
            |_| {},
        )],
    )
    .await;
    let updates = updates(&client).await;
    let texts: Vec<String> = artifacts(&updates)
        .iter()
        .flat_map(|(a, _, _)| a.parts.iter())
        .filter_map(|p| match &p.content {
            Content::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Answer to 'What is the answer?': 42.")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn without_a_sink_artifacts_are_skimmed_away_as_before() {
    let server = ReplayServer::start(vec![
        card_one_point_zero(),
        captured("b_jsonrpc_streaming/03_send_streaming_message_follow_up.json"),
    ])
    .await;
    let client = AgentClient::connect(http_client().unwrap(), &server.base, None, quick())
        .await
        .unwrap();
    let updates = updates(&client).await;
    assert!(artifacts(&updates).is_empty());
    assert!(updates.iter().any(|u| matches!(u, Update::Other)));
}

#[tokio::test]
async fn a_twenty_megabyte_file_reaches_the_sink_in_chunks_byte_for_byte() {
    let bytes: Vec<u8> = (0..20 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let task = json!({"id": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [
            {"artifactId": "report", "name": "report.md", "metadata": {"pages": 3},
             "parts": [{"text": "# Report", "mediaType": "text/markdown"}]},
            {"artifactId": "blob", "parts": [
                {"raw": encoded, "mediaType": "application/octet-stream", "filename": "blob.bin"},
                {"url": "https://files.example/x.pdf", "mediaType": "application/pdf"},
                {"data": {"rows": 3, "text": "not a part's text"}}]}],
        "history": [{"role": "ROLE_USER", "parts": [{"text": "go"}]}]});
    drop(encoded);
    let (_s, client, sink) =
        collecting(card_one_point_zero(), vec![json_reply(200, rpc("g", task))]).await;
    let status = client
        .get("t1")
        .await
        .expect("the task, its artifacts collected");
    assert_eq!(status.state, standin_wire::TaskState::Completed);
    let [report, blob] = &status.artifacts.clone().unwrap_or_default()[..] else {
        panic!("{:?}", status.artifacts);
    };
    assert_eq!(report.metadata.as_deref(), Some(r#"{"pages":3}"#));
    assert_eq!(report.parts[0].content, Content::Text("# Report".into()));
    assert_eq!(report.parts[0].media_type.as_deref(), Some("text/markdown"));
    let Content::Stored { spill, kind } = &blob.parts[0].content else {
        panic!("{:?}", blob.parts[0]);
    };
    assert_eq!(*kind, ContentKind::File);
    assert_eq!(blob.parts[0].filename.as_deref(), Some("blob.bin"));
    let (kind, size, sha, valid) = sink.stored(spill);
    assert_eq!(
        (kind, size, valid),
        (ContentKind::File, bytes.len(), Some(true))
    );
    assert_eq!(sha, Sha256::digest(&bytes).to_vec());
    let largest = *sink.largest_chunk.lock().unwrap();
    assert!(
        largest <= 128 * 1024,
        "handed on in chunks, not whole: {largest}"
    );
    assert_eq!(
        blob.parts[1].content,
        Content::Url("https://files.example/x.pdf".into())
    );
    assert_eq!(
        blob.parts[2].content,
        Content::Data(r#"{"rows":3,"text":"not a part's text"}"#.into())
    );
}

#[tokio::test]
async fn chunks_of_a_streamed_artifact_arrive_in_order_with_append_and_last_chunk() {
    let long = "chunk text ".repeat(1000);
    let update = |text: &str, append: bool, last: bool| {
        rpc(
            "s",
            json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": append,
                "lastChunk": last, "artifact": {"artifactId": "a", "parts": [{"text": text}]}}}),
        )
    };
    let (_s, client, sink) = collecting(
        card_one_point_zero(),
        vec![sse(&[
            rpc("s", json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}})),
            update("one ", false, false),
            update(&long, true, false),
            update("three", true, true),
            rpc("s", json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}})),
        ])],
    )
    .await;
    let updates = updates(&client).await;
    let got = artifacts(&updates);
    let flags: Vec<(bool, bool)> = got.iter().map(|(_, a, l)| (*a, *l)).collect();
    assert_eq!(flags, [(false, false), (true, false), (true, true)]);
    assert_eq!(got[0].0.parts[0].content, Content::Text("one ".into()));
    let Content::Stored { spill, .. } = &got[1].0.parts[0].content else {
        panic!("a long chunk is stored");
    };
    assert_eq!(sink.stored(spill).1, long.len());
    assert!(matches!(updates.last(), Some(Update::Status(s)) if s.state.is_terminal()));
}

#[tokio::test]
async fn a_zero_point_three_file_part_is_collected_in_either_form() {
    let bytes = vec![7u8; 10_000];
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let task = json!({"kind": "task", "id": "t1", "contextId": "c1",
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "f", "parts": [
            {"kind": "file", "file": {"bytes": encoded, "mimeType": "image/png", "name": "a.png"}},
            {"kind": "file", "file": {"uri": "https://f/b.png", "mimeType": "image/png"}},
            {"kind": "data", "data": {"k": "v"}}]}]});
    let (_s, client, sink) = collecting(
        card_zero_point_three(),
        vec![json_reply(200, rpc("g", task))],
    )
    .await;
    let status = client.get("t1").await.expect("a task");
    let artifacts = status.artifacts.unwrap_or_default();
    let parts = &artifacts[0].parts;
    let Content::Stored { spill, kind } = &parts[0].content else {
        panic!("{parts:?}");
    };
    assert_eq!(*kind, ContentKind::File);
    assert_eq!(
        (parts[0].media_type.as_deref(), parts[0].filename.as_deref()),
        (Some("image/png"), Some("a.png"))
    );
    assert_eq!(sink.stored(spill).2, Sha256::digest(&bytes).to_vec());
    assert_eq!(parts[1].content, Content::Url("https://f/b.png".into()));
    assert_eq!(parts[2].content, Content::Data(r#"{"k":"v"}"#.into()));
}

/// A cancel answers with the task, its artifacts included: a stand-in the parent
/// cancels may learn of them only there, so the answer's artifacts reach the model as
/// GetTask's do.
#[tokio::test]
async fn a_cancel_s_answer_carries_the_task_s_artifacts() {
    let task = json!({"id": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_CANCELED"},
        "artifacts": [{"artifactId": "transcript", "parts": [{"text": "every word so far"}]}]});
    let (_s, client, _sink) =
        collecting(card_one_point_zero(), vec![json_reply(200, rpc("c", task))]).await;
    let status = client.cancel("t1").await.expect("a task");
    let artifacts = status.artifacts.expect("the task's artifacts");
    assert_eq!(artifacts[0].id, "transcript");
    assert_eq!(
        artifacts[0].parts[0].content,
        Content::Text("every word so far".into())
    );
}
