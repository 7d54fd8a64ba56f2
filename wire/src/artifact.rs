//! What a sub-task produced, as the parent sees it: in each note (`ParentNote::artifacts`)
//! and from `GET /standins/{id}/artifacts`. The bytes themselves are read through
//! `GET /standins/{id}/artifacts/{artifact_id}` (a short-lived link per part).

use serde::{Deserialize, Serialize};

/// Text and data carried inline in one note, in all: a note stays far below the 256 KB
/// of SQS, EventBridge and Step Functions.
pub const NOTE_INLINE_BYTES: usize = 8 * 1024;

/// One artifact: A2A's artifact with each part described, its content inline when small.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactView {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent's metadata (JSON), when it gave some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    pub parts: Vec<PartView>,
    /// False while the agent is still streaming chunks of it (`lastChunk` not seen).
    pub complete: bool,
    /// Past the stand-in's bounds (`MaxArtifactBytes`, `MaxArtifacts`): some content
    /// was not kept. The parts say which.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    Text,
    Data,
    File,
    /// A file the agent points at (`uri`): kept as the reference, never fetched.
    Url,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartView {
    pub kind: PartKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Bytes stored (text as UTF-8, data as JSON); absent for a URL part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// SHA-256 (hex) of the stored bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The text, when small enough to come inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The data, when small enough to come inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// A URL part's reference (the agent's, never fetched by the stand-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The content is stored and can be read through the API.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stored: bool,
    /// Why some or all of the content is not there: `truncated` (past the bounds),
    /// `redacted` (it echoed a secret of ours, which was blanked), `unreadable` (not
    /// what the part said it was), `not_stored` (storage failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<PartFlag>,
}

impl PartView {
    /// A part of `kind` with its names, nothing of its content known yet.
    pub fn described(kind: PartKind, media_type: Option<String>, filename: Option<String>) -> Self {
        Self {
            kind,
            media_type,
            filename,
            size: None,
            sha256: None,
            text: None,
            data: None,
            url: None,
            stored: false,
            flag: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartFlag {
    Truncated,
    Redacted,
    Unreadable,
    NotStored,
}

/// `GET /standins/{id}/artifacts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactsPage {
    pub task_id: String,
    pub artifacts: Vec<ArtifactView>,
    /// The `after` of the following page (the last artifact of this one); None on the
    /// last page.
    #[serde(default)]
    pub next: Option<String>,
}

/// `GET /standins/{id}/artifacts/{artifact_id}`: the artifact, and a link per stored part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactContent {
    pub task_id: String,
    pub artifact: ArtifactView,
    /// One per part, in order: where its stored bytes can be read until `expires_at`
    /// (null for a part with nothing stored).
    pub links: Vec<Option<String>>,
    /// RFC 3339.
    pub expires_at: String,
}
