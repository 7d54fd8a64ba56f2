//! A note leaves with the step that writes it (stages 3 and 4 of `tell`): once a write
//! committed it and every note before it reached the parent (the row's `sent_through` is
//! the one before), the step sends it to every outlet and marks it sent, rather than wait
//! for the notes table's stream to hand it to notify. The outbox stays the safety net: a
//! note not sent at once (an outlet down, a note ahead still on its way, the step cut
//! short) is the stream's, which delivers in order and passes over marked notes. Between a
//! send and its mark the stream may send the note again; the queue deduplicates it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tracing::warn;

use super::deliver::{Fanout, Outlets, count, passed_over};
use super::tell::SendsAtOnce;
use super::{NoteBus, ParentCallback, ParentNote, ParentQueue, QueueError, SentMarks};
use crate::metrics::Metric;
use crate::row::Row;

/// How long a step waits for its note's outlets before it leaves the note to the
/// outbox: longer than a healthy send (tens of milliseconds), short enough that an
/// outage slows a step by no more than this.
pub const AT_ONCE_LIMIT: Duration = Duration::from_secs(2);

pub struct AtOnce<'a, M, Q, B, C> {
    marks: &'a M,
    /// None: the function has no outlets configured, and the outbox sends every note.
    outlets: Option<Outlets<'a, Q, B, C>>,
}

impl<'a, M: SentMarks, Q: ParentQueue, B: NoteBus, C: ParentCallback> AtOnce<'a, M, Q, B, C> {
    pub fn new(marks: &'a M, outlets: Option<Outlets<'a, Q, B, C>>) -> Self {
        Self { marks, outlets }
    }

    /// Sends the note just written by a write that left `row`, when nothing of the
    /// stand-in is still on its way ahead of it; true when it is marked sent.
    async fn send_now(&self, row: &Row, note: &ParentNote) -> bool {
        let Some(outlets) = &self.outlets else {
            return false;
        };
        if row.sent_through + 1 != note.seq {
            // A note ahead has not been marked: only the outbox knows the order.
            return false;
        }
        let mut tokens = HashMap::new();
        if note.is_final
            && let Some(token) = &row.parent_task_token
        {
            tokens.insert((note.task_id.clone(), note.seq), token.clone());
        }
        let webhooked: HashSet<String> = (!row.webhooks.is_empty())
            .then(|| note.task_id.clone())
            .into_iter()
            .collect();
        let fanout = Fanout {
            outlets: *outlets,
            tokens: &tokens,
            webhooked: &webhooked,
        };
        let sent = tokio::time::timeout(AT_ONCE_LIMIT, fanout.send(note)).await;
        let why_late = || format!("no answer within {AT_ONCE_LIMIT:?}");
        match sent.unwrap_or_else(|_| Err(QueueError::Unavailable(why_late()))) {
            Ok(()) => count(Metric::NotesSent, note),
            Err(QueueError::Refused(why)) => passed_over(note, &why),
            Err(QueueError::Unavailable(why)) => {
                warn!(task_id = %note.task_id, seq = note.seq, error = %why,
                    "note not sent at once; the outbox delivers it");
                return false;
            }
        }
        match self.marks.mark_sent(&note.task_id, note.seq).await {
            Ok(()) => true,
            Err(err) => {
                // Unmarked, the outbox sends it again: the queue sees it once.
                warn!(task_id = %note.task_id, seq = note.seq, error = %err,
                    "note sent but not marked; the outbox sends it again");
                false
            }
        }
    }
}

impl<M: SentMarks, Q: ParentQueue, B: NoteBus, C: ParentCallback> SendsAtOnce
    for AtOnce<'_, M, Q, B, C>
{
    fn send<'a>(&'a self, row: &'a Row, note: &'a ParentNote) -> BoxFuture<'a, bool> {
        Box::pin(self.send_now(row, note))
    }
}
