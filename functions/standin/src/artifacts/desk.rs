//! One invocation's artifacts for one stand-in: what its calls to the agent saw, folded
//! into the stand-in's manifest (kept beside the parts, `{task_id}/manifest.json`), and
//! what the next note carries.

use std::sync::{Arc, Mutex};

use super::blobs::{BlobError, Blobs};
use super::guard::EchoGuard;
use super::kept::{load, manifest_key};
use super::manifest::{Bounds, Manifest, Seen, StoredPart};
use super::room::PartRoom;
use super::sink::{Ours, PartSink, Stored};
use standin_remote::{Artifact, ArtifactUpdate, Content, ContentKind, ContentSink, Part};
use standin_wire::scrub::{MAX_NAME_BYTES, MAX_TEXT_BYTES, bound_to};
use standin_wire::{NOTE_INLINE_BYTES, PartFlag, PartKind, PartView};

/// What a call showed: artifacts as the agent sent them, or as seen, their parts stored.
#[derive(Debug, Clone)]
enum Observed<A = Artifact> {
    Update {
        artifact: A,
        append: bool,
        last_chunk: bool,
    },
    /// A whole task's artifacts: the agent's account of them, and whether the task
    /// stood still (interrupted or ended) when it gave it.
    Task(Vec<A>, bool),
}

/// What one invocation keeps of what its calls saw before folding it (an agent may stream
/// a part per token), by count and by bytes (a follower holds 100 stand-ins in 256 MB);
/// past either, updates are dropped: the task's own account at the end restores them.
const MAX_OBSERVED: usize = 1000;
pub const MAX_OBSERVED_BYTES: usize = 4 * 1024 * 1024;

/// What an artifact holds in memory until folded: its inline content and its words.
fn artifact_bytes(artifact: &Artifact) -> usize {
    let len = |texts: &[&Option<String>]| -> usize {
        texts.iter().copied().flatten().map(String::len).sum()
    };
    let part = |p: &Part| {
        let content = match &p.content {
            Content::Text(t) | Content::Data(t) | Content::Url(t) | Content::Unreadable(t) => {
                t.len()
            }
            Content::Bytes(b) => b.len(),
            Content::Stored { spill, .. } => spill.len(),
        };
        content + len(&[&p.filename, &p.media_type])
    };
    let words = len(&[&artifact.name, &artifact.description, &artifact.metadata]);
    artifact.id.len() + words + artifact.parts.iter().map(part).sum::<usize>()
}

fn observed_bytes(observed: &Observed) -> usize {
    match observed {
        Observed::Update { artifact, .. } => artifact_bytes(artifact),
        Observed::Task(artifacts, _) => artifacts.iter().map(artifact_bytes).sum(),
    }
}

/// Writes of the manifest tried at once before giving up (each after re-reading it).
const SAVE_ATTEMPTS: usize = 4;
/// Parts no longer listed deleted at once.
const DELETES_AT_ONCE: usize = 16;

/// The manifest and its version, as read.
type Loaded = Result<(Manifest, Option<String>), BlobError>;

pub struct Desk {
    blobs: Arc<dyn Blobs>,
    task_id: String,
    bounds: Bounds,
    sink: Arc<PartSink>,
    observed: Mutex<Vec<Observed>>,
    /// A read of the manifest started ahead of the first change (`read_ahead`).
    ahead: Mutex<Option<tokio::task::JoinHandle<Loaded>>>,
    /// The manifest as this desk last read or wrote it, and its version: the next change
    /// that writes starts from it instead of a read (its write is conditional on that
    /// version, so a copy another writer has since replaced is read again).
    copy: Mutex<Option<(Manifest, String)>>,
}

impl Drop for Desk {
    fn drop(&mut self) {
        if let Ok(mut ahead) = self.ahead.lock()
            && let Some(read) = ahead.take()
        {
            read.abort();
        }
    }
}

impl Desk {
    /// Nothing is read until a call brings an artifact or a note is written.
    /// `room`: the process's room for parts held in memory, shared by its desks.
    pub fn new(
        blobs: Arc<dyn Blobs>,
        task_id: &str,
        bounds: Bounds,
        ours: Ours,
        room: Option<PartRoom>,
    ) -> Self {
        Self {
            sink: Arc::new(PartSink::new(blobs.clone(), task_id, bounds, ours).within(room)),
            blobs,
            task_id: task_id.to_owned(),
            bounds,
            observed: Mutex::new(Vec::new()),
            ahead: Mutex::new(None),
            copy: Mutex::new(None),
        }
    }

    /// Starts reading the manifest now, for the first change to use instead of reading it
    /// then (as good, like `copy`): a wake's note waits for the agent's answer, and the
    /// read overlaps it.
    pub fn read_ahead(&self) {
        let (blobs, task_id) = (self.blobs.clone(), self.task_id.clone());
        if let Ok(mut ahead) = self.ahead.lock()
            && ahead.is_none()
        {
            // In the invocation's span: its log lines name the stand-in like the rest.
            let read = async move { load(blobs.as_ref(), &task_id).await };
            *ahead = Some(tokio::spawn(tracing::Instrument::instrument(
                read,
                tracing::Span::current(),
            )));
        }
    }

    /// The read started ahead, once (None: none was, or it was used).
    async fn read_before(&self) -> Option<Loaded> {
        let read = self.ahead.lock().ok()?.take();
        read?.await.ok()
    }

    /// What must not be kept or told, as of now: the push token the agent holds and
    /// every credential this process presents.
    pub async fn guard(&self) -> super::guard::EchoGuard {
        self.sink.guard().await
    }

    /// Where the calls store large content as it arrives.
    pub fn sink(&self) -> Arc<dyn ContentSink> {
        self.sink.clone()
    }

    pub fn observe_update(&self, update: &ArtifactUpdate) {
        self.push(Observed::Update {
            artifact: update.artifact.clone(),
            append: update.append,
            last_chunk: update.last_chunk,
        });
    }

    /// `settled`: the task was interrupted or ended when it listed them.
    pub fn observe_task(&self, artifacts: &[Artifact], settled: bool) {
        self.push(Observed::Task(artifacts.to_vec(), settled));
    }

    /// The push token the agent now holds (a registration gave it one).
    pub fn set_token(&self, token: Option<crate::digest::TokenDigest>) {
        self.sink.set_token(token);
    }

    fn push(&self, observed: Observed) {
        if let Ok(mut all) = self.observed.lock() {
            let held: usize = all.iter().map(observed_bytes).sum();
            let full =
                all.len() >= MAX_OBSERVED || held + observed_bytes(&observed) > MAX_OBSERVED_BYTES;
            if full && matches!(observed, Observed::Update { .. }) {
                tracing::warn!("too many artifact updates in one invocation; the rest dropped");
                return;
            }
            all.push(observed);
        }
    }

    fn take_observed(&self) -> Vec<Observed> {
        self.observed
            .lock()
            .map(|mut all| std::mem::take(&mut *all))
            .unwrap_or_default()
    }

    /// Keeps what the calls saw for the next note, if they saw anything.
    pub async fn keep(&self) -> Result<(), BlobError> {
        let observed = self.take_observed();
        if !observed.is_empty() {
            self.fold(observed).await?;
        }
        Ok(())
    }

    /// Folds what was seen into the manifest and saves it; returns the manifest saved.
    pub async fn save(&self) -> Result<Manifest, BlobError> {
        self.fold(self.take_observed()).await
    }

    async fn fold(&self, observed: Vec<Observed>) -> Result<Manifest, BlobError> {
        let folded = self.fold_once(observed.clone()).await;
        // What a fold could not record goes back, for the next one.
        if folded.is_err()
            && let Ok(mut all) = self.observed.lock()
        {
            let later = std::mem::replace(&mut *all, observed);
            all.extend(later);
        }
        folded
    }

    async fn fold_once(&self, observed: Vec<Observed>) -> Result<Manifest, BlobError> {
        let guard = self.sink.guard().await;
        // Parts are stored once, here; the edit may run again on a conflict.
        let mut stored = Vec::with_capacity(observed.len());
        for each in observed {
            stored.push(match each {
                Observed::Update {
                    artifact,
                    append,
                    last_chunk,
                } => Observed::Update {
                    artifact: self.seen(&artifact, &guard).await,
                    append,
                    last_chunk,
                },
                Observed::Task(list, settled) => {
                    let mut all = Vec::with_capacity(list.len());
                    for artifact in &list {
                        all.push(self.seen(artifact, &guard).await);
                    }
                    Observed::Task(all, settled)
                }
            });
        }
        self.change(|manifest, bounds| {
            let fold = |each| match each {
                Observed::Update {
                    artifact,
                    append,
                    last_chunk,
                } => manifest.update(artifact, append, last_chunk, bounds),
                Observed::Task(all, settled) => manifest.reconcile(all, settled, bounds),
            };
            stored.iter().cloned().flat_map(fold).collect()
        })
        .await
    }

    /// A note told of these (id, version) pairs (none: nothing to mark, nothing read).
    pub async fn noted(&self, told: Vec<(String, u64)>) -> Result<(), BlobError> {
        if told.is_empty() {
            return Ok(());
        }
        self.change(|manifest, _| {
            manifest.noted(&told);
            Vec::new()
        })
        .await
        .map(drop)
    }

    /// Reads, changes and writes the manifest back only if no one wrote it meanwhile;
    /// parts the change no longer lists are deleted.
    async fn change(
        &self,
        edit: impl Fn(&mut Manifest, Bounds) -> Vec<String>,
    ) -> Result<Manifest, BlobError> {
        let key = manifest_key(&self.task_id);
        for _ in 0..SAVE_ATTEMPTS {
            let copy = self.copy.lock().ok().and_then(|mut copy| copy.take());
            let (mut manifest, etag, read_now) = match copy {
                Some((manifest, etag)) => (manifest, Some(etag), false),
                None => {
                    let (manifest, etag) = match self.read_before().await {
                        Some(Ok(loaded)) => loaded,
                        // None read ahead, or that read failed: read now.
                        _ => load(self.blobs.as_ref(), &self.task_id).await?,
                    };
                    (manifest, etag, true)
                }
            };
            let before = manifest.clone();
            let left = edit(&mut manifest, self.bounds);
            let version = if manifest != before {
                let bytes = serde_json::to_vec(&manifest)
                    .map_err(|e| BlobError::Unavailable(format!("manifest: {e}")))?;
                match self.blobs.put_if(&key, bytes, etag.as_deref()).await {
                    Ok(version) => version,
                    Err(BlobError::Conflict) => continue,
                    Err(err) => return Err(err),
                }
            } else if read_now {
                etag
            } else {
                // Nothing to write to this desk's copy: what another writer added since
                // (a note is to carry it) only a read shows.
                continue;
            };
            // No version (the store named none, or there is no manifest yet): the next
            // change reads.
            if let (Ok(mut copy), Some(version)) = (self.copy.lock(), version) {
                *copy = Some((manifest.clone(), version));
            }
            // Content is shared by key: only what no artifact lists any more goes.
            self.delete(manifest.unreferenced(left)).await;
            return Ok(manifest);
        }
        Err(BlobError::Conflict)
    }

    /// A task listed again may leave thousands of parts behind: they go a few at a time,
    /// so the deletes fit well within a follow's heartbeat.
    async fn delete(&self, keys: Vec<String>) {
        use futures_util::StreamExt as _;
        self.sink.forget(&keys).await;
        futures_util::stream::iter(keys)
            .for_each_concurrent(DELETES_AT_ONCE, |key| async move {
                if let Err(err) = self.blobs.delete(&key).await {
                    tracing::warn!(error = %err, "a part no longer listed stays until it expires");
                }
            })
            .await;
    }

    /// An artifact as seen, each part stored (a small one now, a large one was as it
    /// arrived), and no echo of ours in its names, metadata or links.
    async fn seen(&self, artifact: &Artifact, guard: &EchoGuard) -> Seen {
        let blank =
            |text: &Option<String>, max| text.as_deref().map(|t| bound_to(&guard.blank(t), max));
        let mut parts = Vec::with_capacity(artifact.parts.len());
        for part in &artifact.parts {
            let mut stored = self.stored_part(part).await;
            let view = &mut stored.view;
            view.media_type = blank(&view.media_type, MAX_NAME_BYTES);
            view.filename = blank(&view.filename, MAX_NAME_BYTES);
            view.url = blank(&view.url, MAX_URL_BYTES);
            parts.push(stored);
        }
        Seen {
            id: artifact.id.clone(),
            name: blank(&artifact.name, MAX_NAME_BYTES),
            description: blank(&artifact.description, MAX_TEXT_BYTES),
            metadata: artifact
                .metadata
                .as_deref()
                .and_then(|m| bounded_metadata(&guard.blank(m))),
            parts,
        }
    }

    async fn stored_part(&self, part: &Part) -> StoredPart {
        let mut view = PartView::described(
            PartKind::Text,
            part.media_type.clone(),
            part.filename.clone(),
        );
        let stored = match &part.content {
            Content::Text(text) => {
                let stored = self.sink.store_whole(text.clone().into_bytes()).await;
                if stored.flag.is_none() && text.len() <= NOTE_INLINE_BYTES {
                    view.text = Some(text.clone());
                }
                Some(stored)
            }
            Content::Data(json) => {
                view.kind = PartKind::Data;
                let stored = self.sink.store_whole(json.clone().into_bytes()).await;
                if stored.flag.is_none() && json.len() <= NOTE_INLINE_BYTES {
                    view.data = serde_json::from_str(json).ok();
                }
                Some(stored)
            }
            Content::Bytes(bytes) => {
                view.kind = PartKind::File;
                Some(self.sink.store_whole(bytes.clone()).await)
            }
            Content::Url(url) => {
                view.kind = PartKind::Url;
                view.url = Some(url.clone());
                None
            }
            Content::Stored { spill, kind } => {
                view.kind = match kind {
                    ContentKind::Text => PartKind::Text,
                    ContentKind::Data => PartKind::Data,
                    ContentKind::File => PartKind::File,
                };
                Some(self.sink.stored(spill).await.unwrap_or(Stored {
                    flag: Some(PartFlag::NotStored),
                    ..Stored::default()
                }))
            }
            Content::Unreadable(_) => {
                view.flag = Some(PartFlag::Unreadable);
                None
            }
        };
        if let Some(stored) = &stored {
            view.size = Some(stored.size);
            view.sha256 = Some(stored.sha256.clone()).filter(|s| !s.is_empty());
            view.stored = stored.key.is_some();
            view.flag = stored.flag;
        }
        let (key, whole) = stored.map_or((None, None), |s| (s.key, s.whole));
        StoredPart { view, key, whole }
    }
}

/// The longest URL an artifact's part keeps.
const MAX_URL_BYTES: usize = 2048;
/// The most bytes of an artifact's metadata kept, as JSON: every reader loads the
/// manifest whole, so no field of it may grow with what an agent chooses to send.
pub const MAX_METADATA_BYTES: usize = 4096;

/// An artifact's metadata, kept when it is JSON within `MAX_METADATA_BYTES`; past it,
/// a marker that says so (`{"truncated": true, "bytes": N}`), never the whole.
fn bounded_metadata(json: &str) -> Option<serde_json::Value> {
    if json.len() > MAX_METADATA_BYTES {
        return Some(serde_json::json!({"truncated": true, "bytes": json.len()}));
    }
    serde_json::from_str(json).ok()
}
