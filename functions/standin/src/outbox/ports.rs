//! Where notes go: the parent queue, the note bus, a Step Functions parent's task token.

use std::future::Future;

use std::collections::HashMap;

use crate::row::{Row, StoreError};
use crate::state::RemoteOut;

pub use standin_wire::ParentNote;

/// The note that tells the parent the row moved to `out`, under number `seq`.
pub fn note_of(row: &Row, out: &RemoteOut, seq: u64) -> ParentNote {
    ParentNote {
        task_id: row.task_id.clone(),
        remote_task_id: Some(out.remote_task_id.clone()).filter(|id| !id.is_empty()),
        agent: row.agent.clone(),
        state: out.state,
        text: out.text.clone(),
        is_final: out.is_final,
        seq,
        at: crate::clock::now_rfc3339(),
        artifacts: out.artifacts.clone(),
        artifacts_omitted: out.artifacts_omitted,
        parts: out.parts.clone(),
    }
}

/// Why an outlet did not take a note.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    /// Worth sending again: a throttle, an outage, an answer that never came.
    #[error("parent queue unavailable: {0}")]
    Unavailable(String),
    /// Refused for good (the sender's fault, in SQS's words): the same note gets the same
    /// answer however often it is sent, so it is passed over (logged, counted, kept in
    /// the note log) rather than hold every note behind it.
    #[error("the note is refused for good: {0}")]
    Refused(String),
}

/// Where the outbox delivers notes (the notify function is its only caller).
pub trait ParentQueue: Send + Sync {
    fn send(&self, note: &ParentNote) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Sends one note each of distinct stand-ins (so no order among them); one answer
    /// per note, in the same order. A queue that can carry many in one call does.
    fn send_each(
        &self,
        notes: &[&ParentNote],
    ) -> impl Future<Output = Vec<Result<(), QueueError>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(notes.len());
            for note in notes {
                answers.push(self.send(note).await);
            }
            answers
        }
    }
}

/// An event bus every note is also put on, for parents that route notes with rules.
pub trait NoteBus: Send + Sync {
    /// One answer per note, in the same order.
    fn put_each(
        &self,
        notes: &[&ParentNote],
    ) -> impl Future<Output = Vec<Result<(), QueueError>>> + Send;
}

/// Why a Step Functions parent could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// The parent's task is over (timed out, its execution stopped) or the token is not
    /// one: nobody waits for the answer, so it is not tried again.
    #[error("the parent's task no longer waits: {0}")]
    Gone(String),
    /// Step Functions refuses the answer for good (not a token, a bad output, a key or
    /// permission missing): the parent never hears the end.
    #[error("Step Functions refused the answer: {0}")]
    Refused(String),
    #[error("Step Functions unavailable: {0}")]
    Unavailable(String),
}

/// A Step Functions parent waiting on its task token for the stand-in's end.
pub trait ParentCallback: Send + Sync {
    fn succeed(
        &self,
        token: &str,
        output: &str,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send;
    fn fail(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send;
}

/// How far each stand-in's notes have reached the parent: every note up to a stand-in's
/// mark was taken (or refused for good). A step sends its note at once only when the one
/// before it is marked, and the outbox passes over marked notes, so the two paths keep
/// a stand-in's notes in order and send each once (the queue's deduplication covers
/// the moment between a send and its mark).
pub trait SentMarks: Send + Sync {
    /// The marks of these stand-ins; one without a mark (or without a row) is absent.
    fn sent_through(
        &self,
        task_ids: &[&str],
    ) -> impl Future<Output = Result<HashMap<String, u64>, StoreError>> + Send;
    /// Notes up to `seq` reached the parent. A mark never goes back; marking a row that
    /// is gone does nothing.
    fn mark_sent(
        &self,
        task_id: &str,
        seq: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
