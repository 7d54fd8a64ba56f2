//! One stand-in's part storage: content handed over as it arrives (the remote crate's
//! `ContentSink`) goes up in parts of `PART_BYTES`, checked for echoes of our secrets,
//! hashed as stored, and bounded by what the stand-in may still keep.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, OwnedSemaphorePermit};

use super::blobs::{BlobError, Blobs, MIN_PART_BYTES, Upload};
use super::guard::EchoGuard;
use super::kept::{load, parts_prefix};
use super::manifest::{Bounds, Manifest};
use super::room::{Claim, PART_ROOM_BYTES, PartRoom};
use crate::digest::TokenDigest;
use standin_remote::{ContentSink, Spilled};
use standin_wire::PartFlag;

/// What of ours must not be stored: the push token (its digest) and the credentials held.
#[derive(Clone, Default)]
pub struct Ours {
    pub token: Option<TokenDigest>,
    pub held: Option<Arc<dyn HeldSecrets>>,
}

/// Bytes held before a part goes up: S3's least part size, plus what the guard holds
/// back. What a function holds of one artifact at a time.
pub const PART_BYTES: usize = MIN_PART_BYTES;
const _: () = assert!(
    super::room::PART_ROOM_BYTES > PART_BYTES,
    "the process's room counts a part as the sink holds it"
);

/// How long a part waits for a place in the process's room before it goes unstored
/// (flagged `not_stored`): the agent's other events wait behind it on its stream.
pub const PLACE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Large content streams in and is stored as it arrives; an answer's small parts are
/// stored after it is read. So large content leaves this much of the bound (an answer's
/// inline content is at most the skim's 256 KiB): a draft listed before a large file is
/// never cut to nothing by the file that followed it.
const SMALL_PARTS_RESERVE: u64 = 256 * 1024;

/// Where a part's bytes went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stored {
    /// None when nothing is stored (unreadable, or storage failed).
    pub key: Option<String>,
    pub size: u64,
    pub sha256: String,
    /// When truncated: the SHA-256 of the whole content received.
    pub whole: Option<String>,
    pub flag: Option<PartFlag>,
}

#[derive(Default)]
struct Open {
    spill: String,
    /// Its place in the process's room for parts (None: no room is kept, or it is a
    /// whole small part, already in memory).
    _place: Option<Arc<OwnedSemaphorePermit>>,
    /// Built when the part opens, from the credentials held then (the call that brings
    /// the part has read them).
    guard: EchoGuard,
    key: String,
    held: Vec<u8>,
    upload: Option<Upload>,
    /// Of the bytes stored (after any blanking).
    sha: Sha256,
    size: u64,
    /// What it took of the stand-in's bound, given back if nothing new is stored.
    taken: u64,
    /// Of every byte received, kept or not: a truncated read of content stored whole
    /// earlier is that content.
    whole: Sha256,
    flag: Option<PartFlag>,
    failed: bool,
}

#[derive(Default)]
struct State {
    /// Parts being received, by spill (a GetTask may store some while a stream's is open).
    open: HashMap<String, Open>,
    done: HashMap<String, Stored>,
    bytes_left: u64,
    /// Content this sink stored, by SHA-256, with its key and size: the same content read
    /// again in this invocation is kept once. Never a key read from the manifest: another
    /// desk may replace the artifact that lists it and delete the key at any time (a
    /// follower and a turn on one stand-in), and a manifest that listed a deleted key
    /// would link to nothing; a key of our own is listed by nobody else until we save.
    known: HashMap<String, (String, u64)>,
    next: u64,
}

/// The credential values a process holds, for the guard.
pub trait HeldSecrets: Send + Sync {
    fn held(&self) -> BoxFuture<'_, Vec<String>>;
}

impl HeldSecrets for crate::auth::Keyring {
    fn held(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(self.held_values())
    }
}

pub struct PartSink {
    blobs: Arc<dyn Blobs>,
    task_id: String,
    bounds: Bounds,
    /// The digest of the push token the agent holds (a registration may give it a new one).
    token: std::sync::Mutex<Option<TokenDigest>>,
    held: Option<Arc<dyn HeldSecrets>>,
    /// Read from the manifest at the first part: a call with no artifact costs no read.
    state: Mutex<Option<State>>,
    /// The process's room for parts held in memory (None: unbounded, one stand-in's
    /// process outside Lambda), and this stand-in's claim on it.
    room: Option<PartRoom>,
    claim: Claim,
}

impl PartSink {
    pub fn new(blobs: Arc<dyn Blobs>, task_id: &str, bounds: Bounds, secrets: Ours) -> Self {
        Self {
            blobs,
            task_id: task_id.to_owned(),
            bounds,
            token: std::sync::Mutex::new(secrets.token),
            held: secrets.held,
            state: Mutex::new(None),
            room: None,
            claim: Claim::default(),
        }
    }

    /// Parts streamed in are held within `room`, shared with the process's other sinks.
    pub fn within(mut self, room: Option<PartRoom>) -> Self {
        self.room = room;
        self
    }

    /// What is stored already and what may still be, from the manifest.
    async fn state(&self) -> tokio::sync::MappedMutexGuard<'_, State> {
        let mut state = self.state.lock().await;
        if state.is_none() {
            let manifest = match load(self.blobs.as_ref(), &self.task_id).await {
                Ok((manifest, _)) => manifest,
                Err(err) => {
                    tracing::error!(error = %err, "manifest unreadable; storing within the whole bound");
                    Manifest::default()
                }
            };
            *state = Some(State {
                bytes_left: manifest.bytes_left(self.bounds),
                ..State::default()
            });
        }
        tokio::sync::MutexGuard::map(state, |s| s.get_or_insert_with(State::default))
    }

    /// Keys about to be deleted (the manifest kept an earlier copy of their content, or
    /// none): content read again in this invocation is stored anew, not linked to them.
    pub async fn forget(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        let mut state = self.state.lock().await;
        if let Some(state) = state.as_mut() {
            let gone: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
            state
                .known
                .retain(|_, (key, _)| !gone.contains(key.as_str()));
        }
    }

    /// Where the content handed over as `spill` went (None: never closed).
    pub async fn stored(&self, spill: &str) -> Option<Stored> {
        self.state().await.done.get(spill).cloned()
    }

    /// Content that came whole (a small part): stored the same way.
    pub async fn store_whole(&self, bytes: Vec<u8>) -> Stored {
        let mut state = self.state().await;
        let spill = format!("whole-{}", state.next);
        let mut open = self.open(&mut state, spill).await;
        self.take_bytes(&mut state, &mut open, bytes, 0).await;
        self.close(&mut state, open, true).await
    }

    /// The push token the agent now holds (a registration gave it one).
    pub fn set_token(&self, token: Option<TokenDigest>) {
        if let Ok(mut kept) = self.token.lock() {
            *kept = token;
        }
    }

    /// What must not be kept, as of now.
    pub async fn guard(&self) -> EchoGuard {
        let held = match &self.held {
            Some(held) => held.held().await,
            None => Vec::new(),
        };
        let token = self.token.lock().ok().and_then(|t| t.clone());
        EchoGuard::new(token, held)
    }

    async fn open(&self, state: &mut State, spill: String) -> Open {
        let guard = self.guard().await;
        state.next += 1;
        // Unique across invocations (two may store for one stand-in at once).
        let key = format!(
            "{}{}-{}",
            parts_prefix(&self.task_id),
            hex::encode(rand::random::<[u8; 8]>()),
            state.next
        );
        Open {
            spill,
            guard,
            key,
            ..Open::default()
        }
    }

    /// `reserve`: what of the bound this content leaves others (`SMALL_PARTS_RESERVE`).
    async fn take_bytes(&self, state: &mut State, open: &mut Open, bytes: Vec<u8>, reserve: u64) {
        open.whole.update(&bytes);
        if open.failed {
            // Nothing more of it is stored, so nothing more is held or counted.
            return;
        }
        let room = usize::try_from(state.bytes_left.saturating_sub(reserve)).unwrap_or(usize::MAX);
        let fits = bytes.len().min(room);
        if fits < bytes.len() {
            open.flag = Some(PartFlag::Truncated);
        }
        state.bytes_left -= fits as u64;
        open.taken += fits as u64;
        let hold = open.guard.hold();
        let needed = open.held.len() + fits;
        if needed > open.held.capacity() {
            // Doubled as usual, but never past a part's room (which is what it is counted
            // at), unless this very chunk needs more.
            let doubled = (open.held.capacity() * 2).min(PART_ROOM_BYTES);
            open.held
                .reserve_exact(needed.max(doubled) - open.held.len());
        }
        open.held.extend_from_slice(&bytes[..fits]);
        if open.held.len() >= PART_BYTES + hold {
            // Checked whole; the tail held back is checked again with what follows it.
            if open.guard.redact(&mut open.held) {
                open.flag.get_or_insert(PartFlag::Redacted);
            }
            let rest = open.held.split_off(open.held.len() - hold);
            let part = std::mem::replace(&mut open.held, rest);
            self.upload_part(open, part).await;
        }
    }

    async fn upload_part(&self, open: &mut Open, part: Vec<u8>) {
        if open.failed {
            return;
        }
        open.sha.update(&part);
        open.size += part.len() as u64;
        if open.upload.is_none() {
            match self.blobs.start(&open.key).await {
                Ok(upload) => open.upload = Some(upload),
                Err(err) => return self.fail(open, &err).await,
            }
        }
        if let Some(upload) = open.upload.as_mut()
            && let Err(err) = self.blobs.part(upload, part).await
        {
            self.fail(open, &err).await;
        }
    }

    async fn fail(&self, open: &mut Open, err: &BlobError) {
        tracing::error!(error = %err, "an artifact part was not stored");
        open.failed = true;
        open.held = Vec::new();
        self.abort(open.upload.take()).await;
    }

    async fn abort(&self, upload: Option<Upload>) {
        if let Some(upload) = upload {
            let _ = self.blobs.abort(upload).await;
        }
    }

    async fn close(&self, state: &mut State, mut open: Open, valid: bool) -> Stored {
        let mut last = std::mem::take(&mut open.held);
        if open.guard.redact(&mut last) {
            open.flag.get_or_insert(PartFlag::Redacted);
        }
        if !valid {
            open.flag = Some(PartFlag::Unreadable);
        }
        open.sha.update(&last);
        open.size += last.len() as u64;
        let sha256 = hex::encode(open.sha.clone().finalize());
        let whole = hex::encode(open.whole.clone().finalize());
        let truncated = open.flag == Some(PartFlag::Truncated);
        // Content stored before, whole: a truncated re-read of it is that content.
        let whole_before = state.known.get(&whole).filter(|_| truncated).cloned();
        let known = state.known.get(&sha256).cloned().or(whole_before.clone());
        let stored_before = known.as_ref().map(|(key, _)| key.clone());
        let upload = open.upload.take();
        let key = if open.failed || !valid {
            self.abort(upload).await;
            None
        } else if stored_before.is_some() {
            self.abort(upload).await;
            stored_before.clone()
        } else if let Err(err) = self.write(upload, &open.key, last).await {
            self.fail(&mut open, &err).await;
            None
        } else {
            Some(open.key.clone())
        };
        if key.is_none() || key == stored_before {
            // Nothing new stored (content stored earlier, or none at all): this copy
            // spends nothing of the bound.
            state.bytes_left += open.taken;
        }
        if let Some(key) = &key {
            state.known.insert(sha256.clone(), (key.clone(), open.size));
        }
        let (sha256, size, whole) = match whole_before {
            Some((_, size)) if key == stored_before && key.is_some() => {
                open.flag = None;
                (whole, size, None)
            }
            _ => (sha256, open.size, Some(whole).filter(|_| truncated)),
        };
        let flag = open.flag.or(key.is_none().then_some(PartFlag::NotStored));
        let stored = Stored {
            key,
            size,
            sha256,
            whole,
            flag,
        };
        state.done.insert(open.spill, stored.clone());
        stored
    }

    /// A part's last bytes written: the part whole, or its upload completed.
    async fn write(
        &self,
        upload: Option<Upload>,
        key: &str,
        last: Vec<u8>,
    ) -> Result<(), BlobError> {
        let Some(mut upload) = upload else {
            return self.blobs.put(key, last).await;
        };
        let done = if last.is_empty() {
            Ok(())
        } else {
            self.blobs.part(&mut upload, last).await
        };
        match done {
            Ok(()) => self.blobs.complete(upload).await,
            Err(err) => {
                let _ = self.blobs.abort(upload).await;
                Err(err)
            }
        }
    }
}

impl ContentSink for PartSink {
    fn take(&self, spilled: Spilled) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // A place in the room is waited for before this stand-in's parts are locked,
            // so its other parts go on meanwhile; for a while only, so a room held by
            // slow agents cannot hold this stream's other events back for long.
            let place = match (&spilled, &self.room) {
                (Spilled::Opened { .. }, Some(room)) => {
                    match tokio::time::timeout(PLACE_WAIT, self.claim.place(room)).await {
                        Ok(Some(place)) => Ok(Some(place)),
                        Ok(None) | Err(_) => Err(()),
                    }
                }
                _ => Ok(None),
            };
            let mut state = self.state().await;
            match spilled {
                Spilled::Opened { spill, .. } => {
                    // Parts arrive one at a time: one still open is a broken stream's,
                    // whose end will never come. It is closed unreadable, so a stand-in
                    // holds one part in memory at most.
                    for (_, dangling) in std::mem::take(&mut state.open) {
                        self.close(&mut state, dangling, false).await;
                    }
                    let mut open = self.open(&mut state, spill.clone()).await;
                    match place {
                        Ok(place) => open._place = place,
                        Err(()) => {
                            tracing::warn!(
                                task_id = %self.task_id,
                                "no room for an artifact part within {PLACE_WAIT:?}; it is not stored"
                            );
                            open.failed = true;
                        }
                    }
                    state.open.insert(spill, open);
                }
                Spilled::Bytes { spill, bytes } => {
                    let Some(mut open) = state.open.remove(&spill) else {
                        return;
                    };
                    self.take_bytes(&mut state, &mut open, bytes, SMALL_PARTS_RESERVE)
                        .await;
                    state.open.insert(spill, open);
                }
                Spilled::Closed { spill, valid } => {
                    if let Some(open) = state.open.remove(&spill) {
                        self.close(&mut state, open, valid).await;
                    }
                }
            }
        })
    }
}
