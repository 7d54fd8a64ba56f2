//! A note's journey, in one place and in order. Every step that tells the parent
//! something calls [`Teller::tell`] (a change) or [`Teller::tell_end`] (the final note):
//!
//! 1. **fold the artifacts**: what the agent's answers held is folded into the stand-in's
//!    manifest, and the note takes those completed since the last one (all, on a final
//!    note);
//! 2. **commit**: the change and its note in one conditional write (`Notes::apply`,
//!    `Notes::close`), the note under the next number;
//! 3. **send at once**: when every note before it has reached the parent, the note goes
//!    to every outlet now (`at_once`), else the notes table's stream delivers it in order;
//! 4. **mark sent**, so the stream passes over it;
//! 5. **mark the artifacts told**, so the next note does not carry them again.
//!
//! Each stage after the commit may fail without losing anything: an unsent note is the
//! stream's, an unmarked one is sent again and deduplicated by `task_id:seq`, artifacts
//! not marked told ride on the next note too.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::row::{Applied, Closed, Guard, Row, RowStore, StoreError, Watch};
use crate::state::RemoteOut;
use standin_wire::{ArtifactView, ParentNote};

/// The artifacts a note carries: where stage 1 and stage 5 happen (the stand-in's
/// artifacts desk, for this invocation).
pub trait NoteArtifacts: Send + Sync {
    /// The artifacts the next note carries, folded from what the calls saw; an error
    /// when they could not be recorded now (their store unavailable) and may be later.
    fn due(&self, is_final: bool) -> BoxFuture<'_, Result<Due, ArtifactsUnrecorded>>;
    /// The note that carried `due` was written.
    fn told(&self, due: Due) -> BoxFuture<'_, ()>;
    /// The stand-in's watch is now `watch` (a push token given is never kept or told).
    fn watching(&self, watch: &Watch);
    /// Starts reading what the next note needs now: a wake's note waits for the agent's
    /// answer, and the read overlaps it.
    fn read_ahead(&self);
    /// What the calls saw but no note carried is kept for the next note.
    fn keep(&self) -> BoxFuture<'_, ()>;
}

/// The artifacts could not be recorded now (their store unavailable); a later try,
/// which asks the agent again, may.
#[derive(Debug, thiserror::Error)]
#[error("the artifacts could not be recorded: {0}")]
pub struct ArtifactsUnrecorded(pub String);

/// What a note carries of the artifacts.
#[derive(Debug, Default)]
pub struct Due {
    pub views: Vec<ArtifactView>,
    /// Due but past the note's room (the API lists them).
    pub omitted: u32,
    /// Which versions the note tells, to mark once it is written.
    pub versions: Vec<(String, u64)>,
}

/// Stages 3 and 4: the note sent to every outlet now, and marked sent.
pub trait SendsAtOnce: Send + Sync {
    /// `row` is the row as the write that committed `note` left it; true when the note
    /// is now marked sent (passed to the outlets, or passed over for good).
    fn send<'a>(&'a self, row: &'a Row, note: &'a ParentNote) -> BoxFuture<'a, bool>;
}

/// One invocation's teller: the row store, and, where the function has them, the
/// stand-in's artifacts and the outlets a note is sent to at once.
pub struct Teller<'a, S> {
    rows: &'a S,
    artifacts: Option<Arc<dyn NoteArtifacts + 'a>>,
    at_once: Option<Box<dyn SendsAtOnce + 'a>>,
}

impl<'a, S: RowStore> Teller<'a, S> {
    /// Notes committed only: the stream sends them, and no artifacts are kept.
    pub fn new(rows: &'a S) -> Self {
        Self {
            rows,
            artifacts: None,
            at_once: None,
        }
    }

    pub fn with_artifacts(mut self, artifacts: Option<Arc<dyn NoteArtifacts + 'a>>) -> Self {
        self.artifacts = artifacts;
        self
    }

    pub fn sending_at_once(mut self, at_once: impl SendsAtOnce + 'a) -> Self {
        self.at_once = Some(Box::new(at_once));
        self
    }

    /// The row store, for everything that tells nobody.
    pub fn rows(&self) -> &'a S {
        self.rows
    }

    /// Tells a change of stand-in `task_id` under `guard`; `seen` is the row as the
    /// caller last read or wrote it, when it has one (a read less). Unchanged when the
    /// row has that (state, text) already and no artifact is due.
    pub async fn tell(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        let (out, due) = self.fold(out, false).await?;
        let mut applied = self.rows.apply(task_id, seen, &out, guard).await?;
        if let Applied::Changed { note, row } = &mut applied {
            self.send(row, note).await;
            self.mark_told(due).await;
        }
        Ok(applied)
    }

    /// Closes stand-in `task_id`, with its final note when given one (written once: a
    /// row whose final state is told already changes no more).
    pub async fn tell_end(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> Result<Closed, StoreError> {
        let Some(out) = final_note else {
            return self.rows.close(task_id, None).await;
        };
        let (out, due) = self.fold(out, true).await?;
        let mut closed = self.rows.close(task_id, Some(&out)).await?;
        if let Some(note) = &closed.note {
            self.send(&mut closed.row, note).await;
            self.mark_told(due).await;
        }
        Ok(closed)
    }

    /// Sets the stand-in's watch; its artifacts learn the push token the agent holds.
    pub async fn set_watch(&self, task_id: &str, watch: &Watch) -> Result<Row, StoreError> {
        let row = self.rows.set_watch(task_id, watch).await?;
        if let Some(artifacts) = &self.artifacts {
            artifacts.watching(watch);
        }
        Ok(row)
    }

    /// Starts reading the stand-in's artifacts for the next note now.
    pub fn read_ahead(&self) {
        if let Some(artifacts) = &self.artifacts {
            artifacts.read_ahead();
        }
    }

    /// At the invocation's end: what the agent's answers held and no note carried is
    /// kept for the next note.
    pub async fn keep(&self) {
        if let Some(artifacts) = &self.artifacts {
            artifacts.keep().await;
        }
    }

    /// Stage 1. A note goes without artifacts that could not be recorded (a later note
    /// carries what the agent lists again), but for the End step's final note, which
    /// `waits`: the step fails and is retried, as when the row store is down, and asks the
    /// agent again (the cancel, or GetTask). A step applying a final state goes without:
    /// Turn is not retried (its message may not be sent twice), and a failed step would
    /// end the stand-in FAILED.
    async fn fold(
        &self,
        out: &RemoteOut,
        waits: bool,
    ) -> Result<(RemoteOut, Option<Due>), StoreError> {
        let mut out = out.clone();
        let Some(artifacts) = &self.artifacts else {
            out.noted_at = Some(crate::clock::now_rfc3339());
            return Ok((out, None));
        };
        let mut due = match artifacts.due(out.is_final).await {
            Ok(due) => due,
            Err(err) if waits => {
                return Err(StoreError::Backend(format!(
                    "the final note waits for its artifacts: {err}"
                )));
            }
            Err(err) => {
                tracing::warn!(error = %err, "the note goes without its artifacts");
                Due::default()
            }
        };
        out.artifacts = std::mem::take(&mut due.views);
        out.artifacts_omitted = due.omitted;
        // After the artifacts' read, just before the write: the note's `at`.
        out.noted_at = Some(crate::clock::now_rfc3339());
        Ok((out, Some(due)))
    }

    /// Stages 3 and 4. The row the caller gets back counts the mark: the next note told
    /// on it (a turn's next progress note) leaves at once too.
    async fn send(&self, row: &mut Row, note: &ParentNote) {
        if let Some(at_once) = &self.at_once
            && at_once.send(row, note).await
        {
            row.sent_through = row.sent_through.max(note.seq);
        }
    }

    /// Stage 5.
    async fn mark_told(&self, due: Option<Due>) {
        if let (Some(artifacts), Some(due)) = (&self.artifacts, due)
            && !due.versions.is_empty()
        {
            artifacts.told(due).await;
        }
    }
}
