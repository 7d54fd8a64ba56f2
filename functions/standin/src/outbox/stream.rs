//! The notify function's event: a DynamoDB Streams batch of the notes table's inserts
//! (`aws_lambda_events`' event and its batch response), read as notes and delivered.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

pub use aws_lambda_events::dynamodb::Event;
use aws_lambda_events::dynamodb::EventRecord;
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use serde_dynamo::AttributeValue;

use super::at_once::AT_ONCE_LIMIT;
use super::deliver::{Fanout, Outlets, deliver};
use super::{NoteBus, ParentCallback, ParentNote, ParentQueue, SentMarks};
use crate::row::dynamo::attr;

/// Time kept back from the function's deadline to answer with what was sent.
pub const NOTIFY_MARGIN: Duration = Duration::from_secs(3);

/// How far past `stop_at` the sent marks may still be written: to a second before the
/// deadline. An invocation that outlives its deadline answers nothing, and the event
/// source sends the batch again (halved on AWS, whole on LocalStack).
const MARKS_PAST_STOP: Duration = Duration::from_secs(2);

/// The instant `margin` before the invocation's deadline (epoch milliseconds).
pub fn stop_before(deadline_ms: u64, margin: Duration) -> tokio::time::Instant {
    let left = Duration::from_millis(deadline_ms.saturating_sub(crate::clock::now_ms()));
    tokio::time::Instant::now() + left.saturating_sub(margin)
}

fn text<'a>(record: &'a EventRecord, name: &str) -> Option<&'a str> {
    match record.change.new_image.get(name) {
        Some(AttributeValue::S(value)) => Some(value),
        _ => None,
    }
}

/// The stand-ins whose notes the batch holds, once each, in order: the invocation's
/// log lines name them all, since one send carries many.
pub fn task_ids(event: &Event) -> Vec<&str> {
    let mut ids: Vec<&str> = vec![];
    for record in &event.records {
        if let Some(id) = text(record, attr::TASK_ID).filter(|id| !ids.contains(id)) {
            ids.push(id);
        }
    }
    ids
}

/// Delivers the batch's notes in order, passing over those a step sent at once and
/// marking those it sends; the answer names the first record not taken, so the event
/// source retries from there.
pub async fn notify<Q: ParentQueue, B: NoteBus, C: ParentCallback, M: SentMarks>(
    outlets: Outlets<'_, Q, B, C>,
    marks: &M,
    event: &Event,
    stop_at: tokio::time::Instant,
) -> DynamoDbEventResponse {
    // Only inserts are notes; the TTL's removals are not.
    let inserts = event.records.iter().filter(|r| r.event_name == "INSERT");
    let mut notes = Vec::new();
    let mut records = Vec::new();
    let mut tokens = HashMap::new();
    let mut webhooked = HashSet::new();
    for record in inserts {
        let note = text(record, attr::NOTE_BODY)
            .and_then(|body| serde_json::from_str::<ParentNote>(body).ok());
        let Some(note) = note else {
            // Not a note this function wrote: holding the shard for it would hold every
            // stand-in's notes behind it. Said loudly; the note log keeps what there is.
            tracing::error!(
                sequence_number = record.change.sequence_number.as_deref().unwrap_or_default(),
                "a notes-table record that is not a note; skipped"
            );
            continue;
        };
        if let Some(token) = text(record, attr::PARENT_TASK_TOKEN) {
            tokens.insert((note.task_id.clone(), note.seq), token.to_owned());
        }
        if let Some(AttributeValue::Bool(true)) = record.change.new_image.get(attr::WEBHOOKED) {
            webhooked.insert(note.task_id.clone());
        }
        notes.push(note);
        records.push(record);
    }
    let Some((notes, records)) = unsent(marks, notes, records, stop_at).await else {
        // Out of time before knowing what the steps sent: the batch comes again.
        let first = event.records.iter().find(|r| r.event_name == "INSERT");
        return retry_from(first.and_then(|r| r.change.sequence_number.clone()));
    };
    let fanout = Fanout {
        outlets,
        tokens: &tokens,
        webhooked: &webhooked,
    };
    let earliest_unsent = deliver(&fanout, &notes, stop_at).await;
    let taken = &notes[..earliest_unsent.unwrap_or(notes.len())];
    mark(marks, taken, stop_at + MARKS_PAST_STOP).await;
    match earliest_unsent {
        Some(i) => retry_from(records[i].change.sequence_number.clone()),
        None => DynamoDbEventResponse::default(),
    }
}

/// The answer that has the event source retry the batch from record `sequence_number`.
fn retry_from(sequence_number: Option<String>) -> DynamoDbEventResponse {
    let mut failure = DynamoDbBatchItemFailure::default();
    failure.item_identifier = sequence_number;
    let mut response = DynamoDbEventResponse::default();
    response.batch_item_failures.push(failure);
    response
}

/// How long after a note was written its step may still be sending it at once: the
/// step's limit, and its mark's write.
pub const AT_ONCE_GRACE: Duration = Duration::from_millis(AT_ONCE_LIMIT.as_millis() as u64 + 1_000);

/// How often the marks are read again while a step may still be sending.
const MARKS_REREAD: Duration = Duration::from_millis(100);

/// The notes (and their records) no step has marked sent. A note next of its stand-in and
/// younger than `AT_ONCE_GRACE` may be on its way from its step: the marks are read again
/// until it is marked or that time is up, so the outbox does not send it twice (the queue
/// would drop the copy; the bus and a parent's token would not). Marks that cannot be read
/// count as the last read, or none: those notes are sent, and the queue sees each once.
/// None when `stop_at` comes first: there is no time left to send anything.
async fn unsent<'r, M: SentMarks>(
    marks: &M,
    notes: Vec<ParentNote>,
    records: Vec<&'r EventRecord>,
    stop_at: tokio::time::Instant,
) -> Option<(Vec<ParentNote>, Vec<&'r EventRecord>)> {
    if notes.is_empty() {
        return Some((notes, records));
    }
    let mut ids: Vec<&str> = notes.iter().map(|n| n.task_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut last_read: Option<HashMap<String, u64>> = None;
    let sent = loop {
        let sent = match tokio::time::timeout_at(stop_at, marks.sent_through(&ids)).await {
            Ok(Ok(sent)) => sent,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "sent marks not read; the notes not known sent are sent");
                break last_read.unwrap_or_default();
            }
            Err(_) => {
                tracing::warn!("sent marks not read in time; the batch is handed back whole");
                return None;
            }
        };
        let now = crate::clock::now_ms();
        let in_flight = notes.iter().any(|note| {
            let next = sent.get(&note.task_id).copied().unwrap_or(0) + 1 == note.seq;
            let young = crate::clock::parse_rfc3339_ms(&note.at)
                .is_some_and(|at| now < at + AT_ONCE_GRACE.as_millis() as u64);
            next && young
        });
        if !in_flight {
            break sent;
        }
        if tokio::time::Instant::now() + MARKS_REREAD >= stop_at {
            tracing::warn!("steps still sending at the stop; the batch is handed back whole");
            return None;
        }
        last_read = Some(sent);
        tokio::time::sleep(MARKS_REREAD).await;
    };
    let before = notes.len();
    let (notes, records): (Vec<_>, Vec<_>) = notes
        .into_iter()
        .zip(records)
        .filter(|(note, _)| sent.get(&note.task_id).is_none_or(|&s| note.seq > s))
        .unzip();
    tracing::info!(
        passed_over = before - notes.len(),
        to_send = notes.len(),
        "notes their steps sent at once are passed over"
    );
    Some((notes, records))
}

/// Marks each stand-in's notes sent as far as `taken` goes (each taken in order, those
/// before by earlier batches), so a step's next note can leave at once. A mark not written
/// (by `stop_at`, or at all) only keeps the next note on the outbox's path.
async fn mark<M: SentMarks>(marks: &M, taken: &[ParentNote], stop_at: tokio::time::Instant) {
    let mut highest: HashMap<&str, u64> = HashMap::new();
    for note in taken {
        let seq = highest.entry(&note.task_id).or_default();
        *seq = (*seq).max(note.seq);
    }
    let marking = highest.into_iter().map(|(task_id, seq)| async move {
        if let Err(err) = marks.mark_sent(task_id, seq).await {
            tracing::warn!(task_id, seq, error = %err, "notes sent but not marked");
        }
    });
    let all = futures_util::future::join_all(marking);
    if tokio::time::timeout_at(stop_at, all).await.is_err() {
        tracing::warn!(
            "notes sent, not all marked in time; their stand-ins' next notes go by the outbox"
        );
    }
}
