//! The note bus on EventBridge: each note one event, `source` "standin", the note's
//! state as its `detail-type`, the note as its `detail`, so a parent routes notes with
//! plain rules (questions to a person, completions to a workflow).

use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_eventbridge::types::PutEventsRequestEntry;

use super::{NoteBus, ParentNote, QueueError};

/// Every note's `source`.
pub const SOURCE: &str = "standin";
/// PutEvents takes at most ten entries a call.
const PUT_BATCH: usize = 10;

#[derive(Clone)]
pub struct EventBridgeBus {
    client: Client,
    bus: String,
}

impl EventBridgeBus {
    pub fn new(client: Client, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }

    fn entry(&self, note: &ParentNote) -> Result<PutEventsRequestEntry, QueueError> {
        let detail = serde_json::to_string(note)
            .map_err(|e| QueueError::Unavailable(format!("encode the note: {e}")))?;
        Ok(PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(note.state.as_str())
            .detail(detail)
            .build())
    }

    async fn put_batch(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        let mut answers: Vec<Result<(), QueueError>> = Vec::with_capacity(notes.len());
        let mut entries = Vec::with_capacity(notes.len());
        let mut slots = Vec::with_capacity(notes.len());
        for note in notes {
            match self.entry(note) {
                Ok(entry) => {
                    slots.push(answers.len());
                    entries.push(entry);
                    answers.push(Ok(()));
                }
                Err(err) => answers.push(Err(err)),
            }
        }
        if entries.is_empty() {
            return answers;
        }
        match self
            .client
            .put_events()
            .set_entries(Some(entries))
            .send()
            .await
        {
            // One result per entry, in order; an entry with an error code was not put.
            Ok(out) => {
                for (&slot, result) in slots.iter().zip(out.entries()) {
                    let Some(code) = result.error_code() else {
                        continue;
                    };
                    let why = format!(
                        "EventBridge refused the note: {code} {}",
                        result.error_message().unwrap_or_default()
                    );
                    if passing(code) {
                        answers[slot] = Err(QueueError::Unavailable(why));
                    } else {
                        tracing::error!(error = %why, "note not put on the bus; it will not be tried again");
                    }
                }
            }
            Err(err) => {
                let why = format!("EventBridge unavailable: {}", DisplayErrorContext(&err));
                if err.code().is_some_and(|code| !passing(code)) {
                    // A bus that is not there, or one we may not put on: a deployment's
                    // mistake, said loudly, rather than a day of notes held behind it.
                    tracing::error!(error = %why, "notes not put on the bus; they will not be tried again");
                    return answers;
                }
                for &slot in &slots {
                    answers[slot] = Err(QueueError::Unavailable(why.clone()));
                }
            }
        }
        answers
    }
}

/// An error that passes: throttling, or EventBridge failing inside. Anything else (a
/// missing bus, a permission, a malformed event) will be refused again.
fn passing(code: &str) -> bool {
    matches!(
        code,
        "ThrottlingException" | "InternalFailure" | "InternalException" | "ServiceUnavailable"
    )
}

impl NoteBus for EventBridgeBus {
    async fn put_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        let mut answers = Vec::with_capacity(notes.len());
        for batch in notes.chunks(PUT_BATCH) {
            answers.extend(self.put_batch(batch).await);
        }
        answers
    }
}
