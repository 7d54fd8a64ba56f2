//! Where a stand-in's artifacts are kept in the blobs: its manifest, one object read and
//! replaced whole, and its parts under one prefix.

use super::blobs::{BlobError, Blobs};
use super::manifest::Manifest;

pub fn manifest_key(task_id: &str) -> String {
    format!("{task_id}/manifest.json")
}

pub fn parts_prefix(task_id: &str) -> String {
    format!("{task_id}/parts/")
}

/// The stand-in's manifest and its version (none before its first artifact).
pub async fn load(
    blobs: &dyn Blobs,
    task_id: &str,
) -> Result<(Manifest, Option<String>), BlobError> {
    match blobs.get(&manifest_key(task_id)).await? {
        None => Ok((Manifest::default(), None)),
        Some(object) => {
            let manifest = serde_json::from_slice(&object.bytes)
                .map_err(|e| BlobError::Unreadable(format!("the manifest does not read: {e}")))?;
            Ok((manifest, object.etag))
        }
    }
}
