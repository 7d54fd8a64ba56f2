//! Blobs in memory, for the library's tests: what was stored, and the largest part any
//! one call was handed (to show content streams rather than sits whole).

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;

use super::blobs::{BlobError, Blobs, MIN_PART_BYTES, PutLink, Upload, Versioned};

#[derive(Default)]
pub struct MemoryBlobs {
    objects: Mutex<HashMap<String, (Vec<u8>, u64)>>,
    uploads: Mutex<HashMap<String, Vec<Vec<u8>>>>,
    largest_call: Mutex<usize>,
    next: Mutex<u64>,
    gets: Mutex<usize>,
    deletes: Mutex<usize>,
    /// Conditional writes (the manifest's) fail with this while set: S3 unavailable.
    failing_writes: Mutex<Option<BlobError>>,
}

impl MemoryBlobs {
    pub fn object(&self, key: &str) -> Option<Vec<u8>> {
        self.lock().get(key).map(|(b, _)| b.clone())
    }

    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.lock().keys().cloned().collect();
        keys.sort();
        keys
    }

    pub fn open_uploads(&self) -> usize {
        self.uploads.lock().map(|u| u.len()).unwrap_or_default()
    }

    /// Every object read.
    pub fn gets(&self) -> usize {
        self.gets.lock().map(|g| *g).unwrap_or_default()
    }

    /// Every delete asked for.
    pub fn deletes(&self) -> usize {
        self.deletes.lock().map(|d| *d).unwrap_or_default()
    }

    /// Every conditional write (the manifest's) fails with `err` from now, until `None`.
    pub fn fail_manifest_writes_with(&self, err: Option<BlobError>) {
        if let Ok(mut failing) = self.failing_writes.lock() {
            *failing = err;
        }
    }

    /// The most bytes one call handed over.
    pub fn largest_call(&self) -> usize {
        self.largest_call.lock().map(|l| *l).unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Vec<u8>, u64)>> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check(&self, bytes: usize) -> Result<(), BlobError> {
        if let Ok(mut largest) = self.largest_call.lock() {
            *largest = (*largest).max(bytes);
        }
        Ok(())
    }

    fn version(&self) -> u64 {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        *next += 1;
        *next
    }
}

impl Blobs for MemoryBlobs {
    fn put(&self, key: &str, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), BlobError>> {
        let result = self.check(bytes.len()).map(|()| {
            let version = self.version();
            self.lock().insert(key.to_owned(), (bytes, version));
        });
        Box::pin(async move { result })
    }

    fn put_if(
        &self,
        key: &str,
        bytes: Vec<u8>,
        etag: Option<&str>,
    ) -> BoxFuture<'_, Result<Option<String>, BlobError>> {
        let failing = self.failing_writes.lock().ok().and_then(|f| f.clone());
        let result = self.check(bytes.len()).and_then(|()| {
            if let Some(err) = failing {
                return Err(err);
            }
            let version = self.version();
            let mut objects = self.lock();
            let current = objects.get(key).map(|(_, v)| v.to_string());
            if current.as_deref() != etag {
                return Err(BlobError::Conflict);
            }
            objects.insert(key.to_owned(), (bytes, version));
            Ok(Some(version.to_string()))
        });
        Box::pin(async move { result })
    }

    fn get(&self, key: &str) -> BoxFuture<'_, Result<Option<Versioned>, BlobError>> {
        if let Ok(mut gets) = self.gets.lock() {
            *gets += 1;
        }
        let result = self.check(0).map(|()| {
            self.lock().get(key).map(|(bytes, version)| Versioned {
                bytes: bytes.clone(),
                etag: Some(version.to_string()),
            })
        });
        Box::pin(async move { result })
    }

    fn delete(&self, key: &str) -> BoxFuture<'_, Result<(), BlobError>> {
        if let Ok(mut deletes) = self.deletes.lock() {
            *deletes += 1;
        }
        let result = self.check(0).map(|()| {
            self.lock().remove(key);
        });
        Box::pin(async move { result })
    }

    fn start(&self, key: &str) -> BoxFuture<'_, Result<Upload, BlobError>> {
        let result = self.check(0).map(|()| {
            let id = self.version().to_string();
            if let Ok(mut uploads) = self.uploads.lock() {
                uploads.insert(id.clone(), Vec::new());
            }
            Upload {
                key: key.to_owned(),
                id,
                parts: Vec::new(),
            }
        });
        Box::pin(async move { result })
    }

    fn part<'a>(
        &'a self,
        upload: &'a mut Upload,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), BlobError>> {
        let result = self.check(bytes.len()).and_then(|()| {
            let mut uploads = self.uploads.lock().unwrap_or_else(|e| e.into_inner());
            let parts = uploads
                .get_mut(&upload.id)
                .ok_or_else(|| BlobError::Unavailable("no such upload".into()))?;
            if parts.last().is_some_and(|last| last.len() < MIN_PART_BYTES) {
                return Err(BlobError::Unavailable("EntityTooSmall".into()));
            }
            parts.push(bytes);
            let n = i32::try_from(parts.len()).unwrap_or(i32::MAX);
            upload.parts.push((n, format!("etag-{n}")));
            Ok(())
        });
        Box::pin(async move { result })
    }

    fn complete(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>> {
        let result = self.check(0).and_then(|()| {
            let parts = self
                .uploads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&upload.id)
                .ok_or_else(|| BlobError::Unavailable("no such upload".into()))?;
            let version = self.version();
            self.lock().insert(upload.key, (parts.concat(), version));
            Ok(())
        });
        Box::pin(async move { result })
    }

    fn abort(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>> {
        if let Ok(mut uploads) = self.uploads.lock() {
            uploads.remove(&upload.id);
        }
        Box::pin(async { Ok(()) })
    }

    fn link(&self, key: &str, seconds: u64) -> BoxFuture<'_, Result<String, BlobError>> {
        let link = format!("memory://{key}?expires={seconds}");
        Box::pin(async move { Ok(link) })
    }

    fn put_link<'a>(
        &'a self,
        key: &'a str,
        seconds: u64,
        size: u64,
        media_type: Option<&'a str>,
    ) -> BoxFuture<'a, Result<PutLink, BlobError>> {
        let link = PutLink {
            url: format!("memory://{key}?put={size}&expires={seconds}"),
            headers: media_type
                .map(|m| vec![("content-type".to_owned(), m.to_owned())])
                .unwrap_or_default(),
        };
        let result = self.check(0).map(|()| link);
        Box::pin(async move { result })
    }

    fn size(&self, key: &str) -> BoxFuture<'_, Result<Option<u64>, BlobError>> {
        let result = self
            .check(0)
            .map(|()| self.lock().get(key).map(|(bytes, _)| bytes.len() as u64));
        Box::pin(async move { result })
    }
}
