//! The notify function's event (a DynamoDB Streams batch of notes) and its delivery.

use std::collections::HashMap;
use std::time::Duration;

use lambda_runtime::Error;
use serde::Deserialize;
use serde_json::{Value, json};

use super::deps::NotifyDeps;
use crate::adapters::dynamo::attr;
use crate::domain::notify::Fanout;

/// The part of a DynamoDB Streams event the notify function reads.
#[derive(Debug, Deserialize)]
pub struct NoteStream {
    #[serde(rename = "Records", default)]
    records: Vec<NoteRecord>,
}

#[derive(Debug, Deserialize)]
struct NoteRecord {
    #[serde(rename = "eventName", default)]
    event_name: String,
    dynamodb: NoteRecordData,
}

#[derive(Debug, Deserialize)]
struct NoteRecordData {
    #[serde(rename = "SequenceNumber")]
    sequence_number: String,
    #[serde(rename = "NewImage", default)]
    new_image: Option<Value>,
}

impl NoteStream {
    /// The stand-ins whose notes the batch holds, once each, in order: the invocation's
    /// log lines name them all (`task_ids`), since one send carries many.
    pub(super) fn task_ids(&self) -> String {
        let mut ids: Vec<&str> = vec![];
        for record in &self.records {
            let id = record
                .dynamodb
                .new_image
                .as_ref()
                .and_then(|image| image[attr::TASK_ID]["S"].as_str());
            if let Some(id) = id.filter(|id| !ids.contains(id)) {
                ids.push(id);
            }
        }
        ids.join(",")
    }
}

/// Time kept back from the function's deadline to answer with what was sent.
pub(super) const NOTIFY_MARGIN: Duration = Duration::from_secs(3);

/// The instant `margin` before the invocation's deadline (epoch milliseconds).
pub(super) fn stop_before(deadline_ms: u64, margin: Duration) -> tokio::time::Instant {
    let left = Duration::from_millis(deadline_ms.saturating_sub(crate::clock::now_ms()));
    tokio::time::Instant::now() + left.saturating_sub(margin)
}

pub(super) async fn notify(
    deps: &'static NotifyDeps,
    stream: NoteStream,
    stop_at: tokio::time::Instant,
) -> Result<Value, Error> {
    // Only inserts are notes; the TTL's removals are not.
    let inserts: Vec<&NoteRecord> = stream
        .records
        .iter()
        .filter(|r| r.event_name == "INSERT")
        .collect();
    let mut notes = Vec::with_capacity(inserts.len());
    let mut records = Vec::with_capacity(inserts.len());
    let mut tokens = HashMap::new();
    for record in &inserts {
        let image = record.dynamodb.new_image.as_ref();
        let note = image
            .and_then(|image| image[attr::NOTE_BODY]["S"].as_str())
            .and_then(|body| serde_json::from_str::<crate::ports::ParentNote>(body).ok());
        match note {
            Some(note) => {
                if let Some(token) =
                    image.and_then(|image| image[attr::PARENT_TASK_TOKEN]["S"].as_str())
                {
                    tokens.insert((note.task_id.clone(), note.seq), token.to_owned());
                }
                notes.push(note);
                records.push(*record);
            }
            // Not a note this function wrote: holding the shard for it would hold every
            // stand-in's notes behind it. Said loudly; the note log keeps what there is.
            None => tracing::error!(
                sequence_number = %record.dynamodb.sequence_number,
                "a notes-table record that is not a note; skipped"
            ),
        }
    }
    let outlets = Fanout {
        queue: &deps.queue,
        bus: deps.bus.as_ref(),
        callback: &deps.callback,
        tokens: &tokens,
    };
    let failures = match crate::domain::notify::deliver(&outlets, &notes, stop_at).await {
        None => vec![],
        Some(i) => vec![json!({"itemIdentifier": records[i].dynamodb.sequence_number})],
    };
    Ok(json!({ "batchItemFailures": failures }))
}
