//! The desk as a note's artifacts (stages 1 and 5 of the outbox's `tell`): before a note
//! is written the desk folds in what the calls saw, and the note carries the artifacts
//! completed since the last one (the final note, all of them); once it is written, the
//! manifest records it.

use futures_util::future::BoxFuture;

use super::blobs::BlobError;
use super::desk::Desk;
use crate::outbox::{ArtifactsUnrecorded, Due, NoteArtifacts};
use crate::row::Watch;

impl NoteArtifacts for Desk {
    fn due(&self, is_final: bool) -> BoxFuture<'_, Result<Due, ArtifactsUnrecorded>> {
        Box::pin(async move {
            match self.save().await {
                Ok(manifest) => {
                    let note = manifest.for_note(is_final);
                    Ok(Due {
                        views: note.views,
                        omitted: note.omitted,
                        versions: note.told,
                    })
                }
                // Waiting mends neither: the note goes without them.
                Err(err @ (BlobError::Unreadable(_) | BlobError::Refused(_))) => {
                    tracing::error!(error = %err, "artifacts not recorded; the note goes without them");
                    Ok(Due::default())
                }
                Err(err) => Err(ArtifactsUnrecorded(err.to_string())),
            }
        })
    }

    fn told(&self, due: Due) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(err) = self.noted(due.versions).await {
                tracing::error!(error = %err, "artifacts told but not marked; the next note repeats them");
            }
        })
    }

    fn watching(&self, watch: &Watch) {
        // A registration gave the agent a push token: an echo of it is blanked from now.
        self.set_token(watch.token_digest.clone());
    }

    fn read_ahead(&self) {
        Desk::read_ahead(self);
    }

    fn keep(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(err) = Desk::keep(self).await {
                tracing::error!(error = %err, "artifacts seen but not recorded");
            }
        })
    }
}
