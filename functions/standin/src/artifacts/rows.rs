//! The row store, with the artifacts a note carries: before a note is written the desk
//! folds in what the calls saw, and the note carries the artifacts completed since the
//! last one (the final note, all of them); once written, the manifest records it.
//! Every other write passes through unchanged.

use std::sync::Arc;

use super::desk::Desk;
use crate::row::{Applied, Closed, Guard, Row, RowStore, StoreError, Watch};
use crate::state::RemoteOut;

pub struct WithArtifacts<'a, S> {
    inner: &'a S,
    desk: Option<Arc<Desk>>,
}

impl<'a, S: RowStore> WithArtifacts<'a, S> {
    /// Without a desk (no bucket configured) it is the store itself.
    pub fn new(inner: &'a S, desk: Option<Arc<Desk>>) -> Self {
        Self { inner, desk }
    }

    /// `out` with the artifacts its note carries, and the (id, version) pairs that
    /// will be marked told once it is written. (Echoes of ours were blanked where the
    /// agent's words arrived: `Collecting`, on the same desk.)
    async fn carrying(&self, out: &RemoteOut) -> (RemoteOut, Vec<(String, u64)>) {
        let mut out = out.clone();
        let Some(desk) = &self.desk else {
            return (out, Vec::new());
        };
        match desk.save().await {
            Ok(manifest) => {
                let note = manifest.for_note(out.is_final);
                out.artifacts = note.views;
                out.artifacts_omitted = note.omitted;
                (out, note.told)
            }
            Err(err) => {
                tracing::error!(error = %err, "artifacts not recorded; the note goes without them");
                (out, Vec::new())
            }
        }
    }

    async fn told_if(&self, applied: &Applied, told: Vec<(String, u64)>) {
        if matches!(applied, Applied::Changed { .. }) {
            self.told(told).await;
        }
    }

    async fn told(&self, told: Vec<(String, u64)>) {
        if let Some(desk) = &self.desk
            && !told.is_empty()
            && let Err(err) = desk.noted(told).await
        {
            tracing::error!(error = %err, "artifacts told but not marked; the next note repeats them");
        }
    }
}

impl<S: RowStore> RowStore for WithArtifacts<'_, S> {
    crate::row_store_pass_through!(
        create,
        get,
        list,
        record,
        park,
        claim_follow,
        end_park,
        roll,
        drain,
        drain_from,
        take_rung,
        set_remote,
        notes,
    );

    async fn apply(
        &self,
        task_id: &str,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        let (out, told) = self.carrying(out).await;
        let applied = self.inner.apply(task_id, &out, guard).await?;
        self.told_if(&applied, told).await;
        Ok(applied)
    }
    async fn apply_to(
        &self,
        row: &Row,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        let (out, told) = self.carrying(out).await;
        let applied = self.inner.apply_to(row, &out, guard).await?;
        self.told_if(&applied, told).await;
        Ok(applied)
    }
    async fn set_watch(&self, task_id: &str, watch: &Watch) -> Result<Row, StoreError> {
        let row = self.inner.set_watch(task_id, watch).await?;
        // A registration gave the agent a push token: an echo of it is blanked from now.
        if let Some(desk) = &self.desk {
            desk.set_token(watch.token_digest.clone());
        }
        Ok(row)
    }
    async fn close(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> Result<Closed, StoreError> {
        let Some(note) = final_note else {
            return self.inner.close(task_id, None).await;
        };
        let (note, told) = self.carrying(note).await;
        let closed = self.inner.close(task_id, Some(&note)).await?;
        if closed.note.is_some() {
            self.told(told).await;
        }
        Ok(closed)
    }
}
