//! The stand-in's record of what its agent produced: each artifact as the parent sees it,
//! where each part's bytes are stored, and which version the parent was last told of.
//! Pure: the desk loads and saves it, the store adds what notes carry.

use serde::{Deserialize, Serialize};

use standin_wire::{ArtifactView, NOTE_INLINE_BYTES, PartFlag, PartView};

/// How much one stand-in may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Stored bytes in all (`MaxArtifactBytes`).
    pub max_bytes: u64,
    /// Artifacts (`MaxArtifacts`): past it an artifact is listed, truncated, without parts.
    pub max_count: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            max_bytes: 100 * 1024 * 1024,
            max_count: 100,
        }
    }
}

/// Parts one artifact keeps (an agent may append a part per token); past it, truncated.
pub const MAX_PARTS: usize = 1000;
/// What a note may carry of artifacts, serialized: past it the rest are read through the
/// API (the note says how many), so a note stays far below SQS's 256 KB.
pub const NOTE_ARTIFACT_BYTES: usize = 64 * 1024;
/// Text and data inline in one answer of the artifacts API, in all (the rest is read
/// through the parts' links).
pub const API_INLINE_BYTES: usize = 1024 * 1024;
/// One page of the artifacts API, as the manifest counts its artifacts: with the manifest's
/// own bound, an answer stays under Lambda's 6 MB whatever the agent streamed.
pub const API_PAGE_BYTES: usize = 1024 * 1024;
/// The manifest's size in all, as saved (each part and each artifact's names, metadata and
/// inline text): every reader loads it whole, the End function (128 MB) included, and the
/// artifacts API answers any one artifact within Lambda's 6 MB, even escaped a second time
/// as the proxy's body. Past it, new parts are not kept (the artifact is listed truncated),
/// an artifact's names and metadata do not grow, and new artifacts are not listed.
pub const MAX_MANIFEST_BYTES: usize = 2 * 1024 * 1024;
/// An artifact's metadata larger than this is left out of notes (the API shows it).
const NOTE_METADATA_BYTES: usize = 1024;

/// Artifacts listed at most, truncated ones included: past it a new id is not listed
/// (an agent inventing ids cannot grow the manifest without end).
const LISTED_PER_KEPT: usize = 4;

/// A part, and where its bytes are stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPart {
    pub view: PartView,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A truncated part's whole content's SHA-256 (the stored bytes' is the view's): a
    /// later read of the same content is the same part, whatever of it fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<String>,
}

/// An artifact as a step saw it, its parts stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub metadata: Option<serde_json::Value>,
    pub parts: Vec<StoredPart>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    pub parts: Vec<StoredPart>,
    pub complete: bool,
    #[serde(default)]
    pub truncated: bool,
    /// Listed past `Bounds::max_count` (no parts kept), or past `MAX_PARTS` (no more
    /// kept): what streams of it is not kept.
    #[serde(default)]
    pub listed_only: bool,
    /// Bumped on every change; a note carries an entry whose version it has not told.
    pub version: u64,
    #[serde(default)]
    pub noted: u64,
    /// What it takes in the saved manifest (`entry_bytes`), kept as it changes so that an
    /// update counts only what it adds; 0 in a manifest saved before it was kept.
    #[serde(default)]
    pub bytes: usize,
}

impl Entry {
    /// The artifact as the parent sees it; `inline_left` is what may still come inline.
    pub fn view(&self, inline_left: &mut usize) -> ArtifactView {
        ArtifactView {
            artifact_id: self.artifact_id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            metadata: self.metadata.clone(),
            parts: self
                .parts
                .iter()
                .map(|p| inline_within(&p.view, inline_left))
                .collect(),
            complete: self.complete,
            truncated: self.truncated,
        }
    }

    fn same_content(&self, parts: &[StoredPart]) -> bool {
        let content = |p: &StoredPart| {
            let digest = p.whole.clone().or_else(|| p.view.sha256.clone());
            let flag = p.view.flag.filter(|f| *f != PartFlag::Truncated);
            (digest, p.view.url.clone(), flag)
        };
        self.parts.iter().map(content).eq(parts.iter().map(content))
    }

    /// What it takes in the saved manifest, as kept (counted once for an older one).
    fn size(&self) -> usize {
        match self.bytes {
            0 => entry_bytes(self),
            kept => kept,
        }
    }

    /// Its names and metadata as given, if with them it still fits beside `others` bytes;
    /// else they stay as they were (an agent cannot grow the manifest past its bound
    /// through its names once the parts filled it).
    fn rename_within(
        &mut self,
        name: Option<String>,
        description: Option<String>,
        metadata: Option<serde_json::Value>,
        others: usize,
    ) {
        let before = head_bytes(self);
        let old = (
            std::mem::replace(&mut self.name, name),
            std::mem::replace(&mut self.description, description),
            std::mem::replace(&mut self.metadata, metadata),
        );
        let bytes = head_bytes(self);
        if others + bytes > MAX_MANIFEST_BYTES && bytes > before {
            tracing::warn!(artifact_id = %self.artifact_id, "names past the manifest's bound; kept as they were");
            (self.name, self.description, self.metadata) = old;
        }
    }

    /// Its parts replaced by the first of `parts` that fit beside `others` bytes; the
    /// keys no longer kept (the rest of `parts`, then the old parts not listed again).
    fn replace_parts(&mut self, parts: Vec<StoredPart>, others: usize) -> Vec<String> {
        let budget = MAX_MANIFEST_BYTES.saturating_sub(others + head_bytes(self));
        let (parts, mut past, used) = fitting(parts, MAX_PARTS, budget);
        self.bytes = head_bytes(self) + used;
        self.listed_only |= !past.is_empty();
        let old = std::mem::replace(&mut self.parts, parts);
        past.extend(replaced(old, &self.parts));
        past
    }

    /// A change recorded: a new version, truncated if any of it is not kept.
    fn changed(&mut self, complete: bool) {
        self.complete = complete;
        self.truncated = self.listed_only
            || self
                .parts
                .iter()
                .any(|p| p.view.flag == Some(PartFlag::Truncated));
        self.version += 1;
    }
}

fn text_bytes(text: &Option<String>) -> usize {
    text.as_deref()
        .map_or(0, standin_wire::scrub::escaped_bytes)
}

/// The bytes a part takes in the saved manifest, at most (its strings as escaped JSON,
/// the constant for its keys, numbers and flags), counted without writing it.
fn part_bytes(part: &StoredPart) -> usize {
    let view = &part.view;
    256 + text_bytes(&view.media_type)
        + text_bytes(&view.filename)
        + text_bytes(&view.sha256)
        + text_bytes(&view.text)
        + text_bytes(&view.url)
        + view.data.as_ref().map_or(0, |d| d.to_string().len())
        + text_bytes(&part.key)
        + text_bytes(&part.whole)
}

/// The bytes an artifact takes in the saved manifest besides its parts (its fields are
/// bounded each; the constant covers the keys and flags).
fn head_bytes(entry: &Entry) -> usize {
    256 + standin_wire::scrub::escaped_bytes(&entry.artifact_id)
        + text_bytes(&entry.name)
        + text_bytes(&entry.description)
        + entry.metadata.as_ref().map_or(0, |m| m.to_string().len())
}

fn entry_bytes(entry: &Entry) -> usize {
    head_bytes(entry) + entry.parts.iter().map(part_bytes).sum::<usize>()
}

/// The first of `parts` that fit `count` and `budget` bytes; the rest's keys, to delete.
fn fitting(
    mut parts: Vec<StoredPart>,
    count: usize,
    budget: usize,
) -> (Vec<StoredPart>, Vec<String>, usize) {
    let mut used = 0;
    let mut fit = 0;
    for part in parts.iter().take(count) {
        let bytes = part_bytes(part);
        if used + bytes > budget {
            break;
        }
        used += bytes;
        fit += 1;
    }
    let past = parts.split_off(fit);
    (parts, keys(&past), used)
}

fn keys(parts: &[StoredPart]) -> Vec<String> {
    parts.iter().filter_map(|p| p.key.clone()).collect()
}

/// Keys of `old` parts that `kept` does not list (the same content may be stored under
/// one key for both).
fn replaced(old: Vec<StoredPart>, kept: &[StoredPart]) -> Vec<String> {
    old.into_iter()
        .filter_map(|p| p.key)
        .filter(|key| !kept.iter().any(|k| k.key.as_deref() == Some(key)))
        .collect()
}

/// A part's inline text or data, kept only while the budget lasts.
fn inline_within(part: &PartView, left: &mut usize) -> PartView {
    let mut part = part.clone();
    let size = part.text.as_ref().map(String::len).unwrap_or_default()
        + part.data.as_ref().map_or(0, |d| d.to_string().len());
    if size > *left {
        part.text = None;
        part.data = None;
    } else {
        *left -= size;
    }
    part
}

/// What a note carries of the artifacts, and what to mark told once it is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForNote {
    pub views: Vec<ArtifactView>,
    /// (id, version) of each artifact carried.
    pub told: Vec<(String, u64)>,
    /// Due but past the note's room: the API lists them (and a later note may carry them).
    pub omitted: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub artifacts: Vec<Entry>,
    /// Bytes stored for the stand-in so far, against `Bounds::max_bytes`.
    #[serde(default)]
    pub stored_bytes: u64,
}

impl Manifest {
    pub fn bytes_left(&self, bounds: Bounds) -> u64 {
        bounds.max_bytes.saturating_sub(self.stored_bytes)
    }

    /// Every part listed that is stored under a key.
    fn stored_parts(&self) -> impl Iterator<Item = &StoredPart> {
        self.artifacts
            .iter()
            .flat_map(|e| &e.parts)
            .filter(|p| p.key.is_some())
    }

    /// Whether any artifact lists a part stored under `key` (content is shared by key).
    #[cfg(any(test, feature = "test-support"))]
    pub fn references(&self, key: &str) -> bool {
        self.stored_parts().any(|p| p.key.as_deref() == Some(key))
    }

    /// Of `keys`, the ones no artifact lists any more, each once (content is shared by
    /// key: a task listed again names one key for every part of the same content).
    pub fn unreferenced(&self, keys: Vec<String>) -> Vec<String> {
        // Most changes (a note told, an update that fit) leave nothing behind.
        if keys.is_empty() {
            return keys;
        }
        let listed: std::collections::HashSet<&str> = self
            .stored_parts()
            .filter_map(|p| p.key.as_deref())
            .collect();
        keys.into_iter()
            .filter(|key| !listed.contains(key.as_str()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// A streamed update: `append` adds its parts to the artifact of the same id, else
    /// it replaces (or adds) the artifact; `last_chunk` says it is whole. Returns the
    /// keys of stored parts no longer kept (the caller deletes them).
    pub fn update(
        &mut self,
        seen: Seen,
        append: bool,
        last_chunk: bool,
        bounds: Bounds,
    ) -> Vec<String> {
        self.size_every_entry();
        let others = self.bytes_besides(&seen.id);
        let Some(entry) = self.entry(&seen.id, bounds) else {
            return keys(&seen.parts);
        };
        let parts_bytes = entry.size().saturating_sub(head_bytes(entry));
        entry.rename_within(
            seen.name.or(entry.name.clone()),
            seen.description.or(entry.description.clone()),
            seen.metadata.or(entry.metadata.clone()),
            others + parts_bytes,
        );
        entry.bytes = head_bytes(entry) + parts_bytes;
        let gone = if entry.listed_only {
            keys(&seen.parts)
        } else if append {
            let room = MAX_PARTS.saturating_sub(entry.parts.len());
            let budget = MAX_MANIFEST_BYTES.saturating_sub(others + entry.bytes);
            let (parts, past, used) = fitting(seen.parts, room, budget);
            entry.parts.extend(parts);
            entry.bytes += used;
            if !past.is_empty() {
                tracing::warn!(artifact_id = %entry.artifact_id, "past the parts an artifact or the manifest keeps");
                entry.listed_only = true;
            }
            past
        } else {
            entry.replace_parts(seen.parts, others)
        };
        entry.changed(last_chunk);
        self.recount();
        gone
    }

    /// A whole task's artifacts, the agent's own account: each replaces what streamed
    /// under its id when its content differs, and is whole. Artifacts the task no longer
    /// lists stay (nothing the parent was told is taken back). Returns the keys of
    /// stored parts no longer kept.
    ///
    /// `settled`: the task stands still (interrupted or ended), so what it lists is
    /// whole; a task still working may list an artifact half streamed.
    pub fn reconcile(&mut self, task: Vec<Seen>, settled: bool, bounds: Bounds) -> Vec<String> {
        self.size_every_entry();
        let mut gone = Vec::new();
        for seen in task {
            let others = self.bytes_besides(&seen.id);
            let Some(entry) = self.entry(&seen.id, bounds) else {
                gone.extend(keys(&seen.parts));
                continue;
            };
            if entry.listed_only || entry.same_content(&seen.parts) {
                // Nothing kept of it, or stored again by this read: the earlier copy is
                // the one listed.
                gone.extend(replaced(seen.parts, &entry.parts));
                if settled && !entry.complete {
                    entry.complete = true;
                    entry.version += 1;
                }
                continue;
            }
            entry.rename_within(seen.name, seen.description, seen.metadata, others);
            gone.extend(entry.replace_parts(seen.parts, others));
            entry.changed(settled);
        }
        self.recount();
        gone
    }

    /// The entry for `id`, added when new; past `max_count` a new one is listed without
    /// parts, truncated; past `LISTED_PER_KEPT` times that, not at all.
    fn entry(&mut self, id: &str, bounds: Bounds) -> Option<&mut Entry> {
        if let Some(at) = self.artifacts.iter().position(|e| e.artifact_id == id) {
            return self.artifacts.get_mut(at);
        }
        let count = self.artifacts.len();
        if count >= bounds.max_count.saturating_mul(LISTED_PER_KEPT)
            || self.bytes_besides(id) >= MAX_MANIFEST_BYTES
        {
            tracing::warn!(artifact_id = id, "past the artifacts listed; not recorded");
            return None;
        }
        self.artifacts.push(Entry {
            artifact_id: id.to_owned(),
            truncated: count >= bounds.max_count,
            listed_only: count >= bounds.max_count,
            ..Entry::default()
        });
        self.artifacts.last_mut()
    }

    /// Each artifact's size, counted once for a manifest saved before sizes were kept.
    fn size_every_entry(&mut self) {
        for entry in self.artifacts.iter_mut().filter(|e| e.bytes == 0) {
            entry.bytes = entry_bytes(entry);
        }
    }

    fn bytes_besides(&self, id: &str) -> usize {
        self.artifacts
            .iter()
            .filter(|e| e.artifact_id != id)
            .map(Entry::size)
            .sum()
    }

    /// Stored parts no longer listed stop counting against the bound.
    fn recount(&mut self) {
        self.stored_bytes = self.stored_parts().filter_map(|p| p.view.size).sum();
    }

    /// What the next note carries: the artifacts whole (or truncated) and changed since
    /// a note last told of them, or, on the final note, every artifact; and the (id,
    /// version) pairs to mark told once it is written. Text and data come inline within
    /// `NOTE_INLINE_BYTES` in all.
    pub fn for_note(&self, is_final: bool) -> ForNote {
        let mut left = NOTE_INLINE_BYTES;
        let mut room = NOTE_ARTIFACT_BYTES;
        let mut note = ForNote::default();
        let due = self
            .artifacts
            .iter()
            .filter(|e| is_final || (e.complete || e.truncated) && e.version > e.noted);
        for entry in due {
            let mut view = entry.view(&mut left);
            view.metadata = view
                .metadata
                .filter(|m| m.to_string().len() <= NOTE_METADATA_BYTES);
            let size = serde_json::to_string(&view).map_or(usize::MAX, |j| j.len());
            if size > room {
                note.omitted += 1;
                continue;
            }
            room -= size;
            note.told.push((entry.artifact_id.clone(), entry.version));
            note.views.push(view);
        }
        note
    }

    /// A note told of these versions.
    pub fn noted(&mut self, told: &[(String, u64)]) {
        for entry in &mut self.artifacts {
            if let Some((_, version)) = told.iter().find(|(id, _)| *id == entry.artifact_id) {
                entry.noted = entry.noted.max(*version);
            }
        }
    }

    /// Every artifact as the parent sees it: text and data inline up to
    /// `API_INLINE_BYTES` in all, the rest described (its bytes through the part's link).
    #[cfg(any(test, feature = "test-support"))]
    pub fn views(&self) -> Vec<ArtifactView> {
        let mut left = API_INLINE_BYTES;
        self.artifacts.iter().map(|e| e.view(&mut left)).collect()
    }

    /// A page of the API's answer: the artifacts after the one named `after` (from the
    /// first when none), as many as fit `API_PAGE_BYTES` (one at least: an artifact is at
    /// most the manifest's bound), with text and data inline up to `API_INLINE_BYTES`;
    /// and the `after` of the next page, if any. None when `after` names no artifact.
    pub fn page(&self, after: Option<&str>) -> Option<(Vec<ArtifactView>, Option<String>)> {
        let start = match after {
            None => 0,
            Some(id) => self.artifacts.iter().position(|e| e.artifact_id == id)? + 1,
        };
        let (mut used, mut left) = (0, API_INLINE_BYTES);
        let mut views = Vec::new();
        for entry in self.artifacts.iter().skip(start) {
            used += entry.size();
            if used > API_PAGE_BYTES && !views.is_empty() {
                let next = self.artifacts[start + views.len() - 1].artifact_id.clone();
                return Some((views, Some(next)));
            }
            views.push(entry.view(&mut left));
        }
        Some((views, None))
    }

    pub fn get(&self, artifact_id: &str) -> Option<&Entry> {
        self.artifacts.iter().find(|e| e.artifact_id == artifact_id)
    }
}
