//! The outbox's delivery: notes go to the parent queue in the order they were written.
//! A note the queue refuses stops the batch there, so the ones after it wait (order
//! before speed); the event source retries from the refused note until the queue takes
//! it. The queue deduplicates by `task_id:seq`, so a note delivered twice is seen once.

use tracing::warn;

use crate::ports::{ParentNote, ParentQueue};

/// Sends the notes in order; returns the index of the first one the queue refused (it
/// and everything after it must be retried), or None when all were taken.
pub async fn deliver<Q: ParentQueue>(queue: &Q, notes: &[ParentNote]) -> Option<usize> {
    for (i, note) in notes.iter().enumerate() {
        if let Err(err) = queue.send(note).await {
            warn!(task_id = %note.task_id, seq = note.seq, error = %err, "note not delivered yet; it will be retried in order");
            return Some(i);
        }
    }
    None
}
