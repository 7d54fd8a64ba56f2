//! `/standins/{id}/artifacts`: what the sub-task produced, as the manifest lists it, and
//! each stored part through a link that reads it for a few minutes. The parent reaches
//! the bytes only this way: the bucket is the stack's, not the parent's.

use standin_wire::{ArtifactContent, ArtifactsPage};

use super::{ApiAnswer, Control, ControlError, Executions};
use standin::artifacts::kept::load;
use standin::doorbell::Doorbell;
use standin::row::RowStore;

/// How long a part's link reads it.
pub const LINK_SECONDS: u64 = 300;

impl<S: RowStore, D: Doorbell, E: Executions> Control<'_, S, D, E> {
    pub(super) async fn artifacts(
        &self,
        task_id: &str,
        after: Option<&str>,
    ) -> Result<ApiAnswer, ControlError> {
        let Some(blobs) = self.artifacts else {
            return Ok(no_bucket());
        };
        if self.store.get(task_id).await?.is_none() {
            return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
        }
        let (manifest, _) = load(blobs, task_id).await?;
        let Some((artifacts, next)) = manifest.page(after) else {
            return Ok(ApiAnswer::error(
                400,
                format!(
                    "after={:?}: stand-in {task_id} lists no such artifact (pass the `next` of the page before)",
                    after.unwrap_or_default()
                ),
            ));
        };
        Ok(ApiAnswer::of(
            200,
            ArtifactsPage {
                task_id: task_id.to_owned(),
                artifacts,
                next,
            },
        ))
    }

    pub(super) async fn artifact(
        &self,
        task_id: &str,
        artifact_id: &str,
    ) -> Result<ApiAnswer, ControlError> {
        let Some(blobs) = self.artifacts else {
            return Ok(no_bucket());
        };
        if self.store.get(task_id).await?.is_none() {
            return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
        }
        let (manifest, _) = load(blobs, task_id).await?;
        let Some(entry) = manifest.get(artifact_id) else {
            return Ok(ApiAnswer::error(
                404,
                format!("stand-in {task_id} has no artifact {artifact_id:?}"),
            ));
        };
        let mut links = Vec::with_capacity(entry.parts.len());
        for part in &entry.parts {
            links.push(match &part.key {
                Some(key) => Some(blobs.link(key, LINK_SECONDS).await?),
                None => None,
            });
        }
        let mut inline = standin::artifacts::manifest::API_INLINE_BYTES;
        Ok(ApiAnswer::of(
            200,
            ArtifactContent {
                task_id: task_id.to_owned(),
                artifact: entry.view(&mut inline),
                links,
                expires_at: standin::clock::rfc3339_in(LINK_SECONDS),
            },
        ))
    }
}

fn no_bucket() -> ApiAnswer {
    ApiAnswer::error(
        404,
        "this deployment keeps no artifacts (the function has no ARTIFACTS_BUCKET)",
    )
}
