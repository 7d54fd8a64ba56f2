//! Where artifacts' bytes and each stand-in's manifest are kept: a port, with S3 (`s3`)
//! and memory (`memory`) adapters.

use futures_util::future::BoxFuture;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    #[error("artifact storage unavailable: {0}")]
    Unavailable(String),
    /// A conditional write lost to another writer.
    #[error("the manifest changed under this write")]
    Conflict,
    /// What is kept does not read (no retry makes it read).
    #[error("{0}")]
    Unreadable(String),
    /// The store refused the call for good (access denied, no such bucket).
    #[error("artifact storage refused the call: {0}")]
    Refused(String),
}

/// One multipart upload in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    pub key: String,
    pub id: String,
    /// (part number, ETag), in order.
    pub parts: Vec<(i32, String)>,
}

/// An object read whole, and its version for a conditional write back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub bytes: Vec<u8>,
    pub etag: Option<String>,
}

pub trait Blobs: Send + Sync {
    fn put(&self, key: &str, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), BlobError>>;
    /// Writes only if the object is still at `etag` (None: only if it does not exist);
    /// the version written, when the store names it.
    fn put_if(
        &self,
        key: &str,
        bytes: Vec<u8>,
        etag: Option<&str>,
    ) -> BoxFuture<'_, Result<Option<String>, BlobError>>;
    fn get(&self, key: &str) -> BoxFuture<'_, Result<Option<Versioned>, BlobError>>;
    fn delete(&self, key: &str) -> BoxFuture<'_, Result<(), BlobError>>;
    fn start(&self, key: &str) -> BoxFuture<'_, Result<Upload, BlobError>>;
    /// Uploads the next part (every part but the last at least `MIN_PART_BYTES`).
    fn part<'a>(
        &'a self,
        upload: &'a mut Upload,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), BlobError>>;
    fn complete(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>>;
    fn abort(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>>;
    /// A link that reads the object for `seconds`.
    fn link(&self, key: &str, seconds: u64) -> BoxFuture<'_, Result<String, BlobError>>;
    /// A link that puts `size` bytes (of `media_type`) at `key` for `seconds`, once (never
    /// over an object), with the headers the request must carry as signed.
    fn put_link<'a>(
        &'a self,
        key: &'a str,
        seconds: u64,
        size: u64,
        media_type: Option<&'a str>,
    ) -> BoxFuture<'a, Result<PutLink, BlobError>>;
    /// The object's size in bytes, or None when there is no such object.
    fn size(&self, key: &str) -> BoxFuture<'_, Result<Option<u64>, BlobError>>;
}

/// A presigned PUT: where, and the headers it was signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutLink {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// S3's least part size (but the last).
pub const MIN_PART_BYTES: usize = 5 * 1024 * 1024;
