//! Where notes go: the parent queue, the note bus, a Step Functions parent's task token.

use std::future::Future;

pub use standin_wire::ParentNote;

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

impl QueueError {
    /// `Refused` when no retry can cure it (`for_good`), else `Unavailable`.
    pub fn refused_if(for_good: bool, why: String) -> Self {
        if for_good {
            Self::Refused(why)
        } else {
            Self::Unavailable(why)
        }
    }
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
