//! What a turn hears before it ends. An agent that streams WORKING with a new message for
//! minutes, or completes artifacts one by one, would otherwise tell the parent nothing
//! until the turn's last state: each such change is committed (so sent) as the turn reads
//! it, an artifact as a note of the state so far that carries it. Changes closer than
//! [`COALESCE`] are told as one, the newest; the turn applies its own last state (a
//! question, a final state, or where the window left it) as before.

use std::time::Duration;

use tokio::time::Instant;
use tracing::warn;

use super::{Outcome, apply_open};
use crate::outbox::Teller;
use crate::row::{Row, RowStore};
use standin_wire::TaskState;

use crate::state::{MAX_ID_BYTES, RemoteOut};

/// Changes read closer together than this after a told one are told as one, the newest.
pub const COALESCE: Duration = Duration::from_millis(250);

pub(crate) struct Progress<'a, S> {
    teller: &'a Teller<'a, S>,
    task_id: &'a str,
    /// The newest state the parent was told.
    told: Option<RemoteOut>,
    /// The row as the turn read it or the last told change wrote it: each apply's row
    /// seen, so a change costs its write and no read (a write another made meanwhile
    /// fails the write's condition, and the store reads again).
    seen: Row,
    told_at: Option<Instant>,
    /// A change read within [`COALESCE`] of the last told one, told when due.
    held: Option<(RemoteOut, Option<String>)>,
}

impl<'a, S: RowStore> Progress<'a, S> {
    pub(crate) fn new(teller: &'a Teller<'a, S>, task_id: &'a str, row: &Row) -> Self {
        Self {
            teller,
            task_id,
            told: row.last.clone(),
            seen: row.clone(),
            told_at: None,
            held: None,
        }
    }

    pub(crate) fn seen(&self) -> &Row {
        &self.seen
    }

    /// The row as the write that gave it the agent's task left it.
    pub(crate) fn took_remote(&mut self, row: Row) {
        self.seen = row;
    }

    /// A state read mid-turn: a WORKING message the parent has not heard is told now, or
    /// held until [`Self::due`] when the last was told under [`COALESCE`] ago.
    pub(crate) async fn heard(&mut self, out: &RemoteOut, context: Option<&str>) {
        let news = out.state == TaskState::Working
            && !out.text.is_empty()
            && !out.remote_task_id.is_empty()
            && self.told.as_ref().is_none_or(|told| out.differs_from(told));
        if news {
            self.hold(out, context).await;
        }
    }

    /// An artifact completed mid-turn, `now` the state the turn has read so far: while
    /// the agent works, a note of that state is told to carry it (written only if an
    /// artifact is due on it). Before the agent works (SUBMITTED) the next state carries
    /// it; at a question or an end, their note does.
    pub(crate) async fn artifact_completed(
        &mut self,
        now: Option<&RemoteOut>,
        context: Option<&str>,
    ) {
        let working =
            |o: &&RemoteOut| o.state == TaskState::Working && !o.remote_task_id.is_empty();
        if let Some(out) = now.filter(working) {
            let mut out = out.clone();
            out.artifacts_are_news = true;
            self.hold(&out, context).await;
        }
    }

    async fn hold(&mut self, out: &RemoteOut, context: Option<&str>) {
        self.held = Some((out.clone(), context.map(str::to_owned)));
        if self.due().is_some_and(|due| due <= Instant::now()) {
            self.tell_held().await;
        }
    }

    /// When the held change is to be told, if one is held.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.held.as_ref()?;
        Some(self.told_at.map_or_else(Instant::now, |at| at + COALESCE))
    }

    pub(crate) async fn tell_held(&mut self) {
        let Some((out, context)) = self.held.take() else {
            return;
        };
        // The agent's task, once the row has it.
        let remote = match &self.seen.remote_task_id {
            Some(remote) => remote.clone(),
            None => {
                if out.remote_task_id.len() > MAX_ID_BYTES
                    || context.as_ref().is_some_and(|c| c.len() > MAX_ID_BYTES)
                {
                    return; // the turn's end names the fault
                }
                let rows = self.teller.rows();
                let set = rows.set_remote(self.task_id, &out.remote_task_id, context.as_deref());
                match set.await {
                    Ok(row) => self.took_remote(row),
                    Err(err) => {
                        warn!(task_id = %self.task_id, error = %err, "progress not told: the row did not take the task");
                        return;
                    }
                }
                out.remote_task_id.clone()
            }
        };
        let out = out.about(&remote);
        match apply_open(self.teller, self.task_id, Some(&self.seen), &out).await {
            Ok(Outcome::Changed(row)) => {
                self.seen = *row;
                self.told = Some(out);
                self.told_at = Some(Instant::now());
            }
            // The row had it already; nothing was sent, so nothing to space the next by.
            Ok(Outcome::Unchanged) => self.told = Some(out),
            Ok(Outcome::AlreadyFinal) => {}
            // The turn's end applies its last state; a progress note is not worth a retry.
            Err(err) => warn!(task_id = %self.task_id, error = %err, "progress not told"),
        }
    }
}
