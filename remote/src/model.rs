//! What the stand-in knows of a remote task, whatever the protocol version.

use futures_util::stream::BoxStream;

use crate::error::RemoteError;
use standin_wire::TaskState;

/// Where a remote task stands, as the agent said it. The state is already the stand-in's
/// reading of it: an agent that says "input required, but further messages start anew"
/// (the `awaiting-next-message` sub-state) has completed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    pub task_id: String,
    /// None when the agent gave none.
    pub context_id: Option<String>,
    pub state: TaskState,
    /// The status message's text parts, joined by newlines; None without a status
    /// message (the reader keeps the text it knew).
    pub text: Option<String>,
    /// When the agent says the state changed (RFC 3339), as it said it.
    pub at: Option<String>,
    /// The status message's parts other than text (a data form an INPUT_REQUIRED
    /// question asks to fill, a file, a link), as the agent gave them.
    pub parts: Vec<Part>,
    /// The task's artifacts as the agent holds them now: set only for a whole task
    /// read by a call that collects them (never from a status update).
    pub artifacts: Option<Vec<Artifact>>,
}

impl Status {
    pub fn new(task_id: impl Into<String>, state: TaskState, text: Option<&str>) -> Self {
        Self {
            task_id: task_id.into(),
            state,
            text: text.map(str::to_owned),
            ..Self::default()
        }
    }
}

/// One item of a stream of a task's updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// The task's state (a whole task or a status update).
    Status(Status),
    /// A message that belongs to no task: the agent answered directly, and the exchange
    /// is over with this text.
    Answer(String),
    /// An artifact, or part of one (only when the call collected them).
    Artifact(ArtifactUpdate),
    /// Something that carries no task state: a message about a task, or an artifact
    /// the call did not collect.
    Other,
}

/// A turn's or a subscription's updates, as they arrive.
pub type UpdateStream = BoxStream<'static, Result<Update, RemoteError>>;

/// What the agent answered to a turn sent without a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// A task, as it stands at once.
    Task(Status),
    /// A direct answer with no task: the exchange is over; its text.
    Answer(String),
}

/// The task a follow-up continues. Both ids go with it: an SDK given only the task makes
/// up a fresh context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowUp {
    pub task_id: String,
    pub context_id: String,
}

/// One user turn: the first message of a stand-in, or a parent's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Unique per turn, so the agent can tell a resend from a new message.
    pub message_id: String,
    pub text: String,
    /// What the parent gave beside the text (data, files), sent after it.
    pub parts: Vec<standin_wire::InputPart>,
    pub follow_up: Option<FollowUp>,
}

impl Turn {
    pub fn new(text: impl Into<String>, follow_up: Option<FollowUp>) -> Self {
        let mut id = [0u8; 16];
        rand::Rng::fill_bytes(&mut rand::rng(), &mut id);
        Self::with_id(hex::encode(id), text, follow_up)
    }

    /// A turn whose id the caller derives, so a retried step sends the same message
    /// again rather than a new one the agent would take twice.
    pub fn with_id(
        message_id: impl Into<String>,
        text: impl Into<String>,
        follow_up: Option<FollowUp>,
    ) -> Self {
        Self {
            message_id: message_id.into(),
            text: text.into(),
            parts: Vec::new(),
            follow_up,
        }
    }

    /// The turn with the parent's parts after its text.
    pub fn with_parts(self, parts: Vec<standin_wire::InputPart>) -> Self {
        Self { parts, ..self }
    }
}

/// A push registration: where the agent should post the task's changes, under our own
/// config id, with the token it must present.
#[derive(Clone, PartialEq, Eq)]
pub struct PushRequest {
    pub remote_task_id: String,
    pub config_id: String,
    pub url: String,
    pub token: String,
}

// The token must never reach a log line, so Debug leaves it out.
impl std::fmt::Debug for PushRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushRequest")
            .field("remote_task_id", &self.remote_task_id)
            .field("config_id", &self.config_id)
            .field("url", &self.url)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// A piece of a task's output (an A2A artifact), as the stand-in keeps it. Large content
/// is not here: it went to the [`ContentSink`](crate::ContentSink) as it arrived, and the
/// part names where (`Content::Stored`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Artifact {
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    /// The agent's metadata, as JSON text.
    pub metadata: Option<String>,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub media_type: Option<String>,
    pub filename: Option<String>,
    pub content: Content,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Text(String),
    /// JSON text.
    Data(String),
    /// A file's bytes, small enough to have come inline.
    Bytes(Vec<u8>),
    /// A file the agent points at; the stand-in never fetches it.
    Url(String),
    /// Content handed to the sink as it arrived, under this spill id.
    Stored {
        spill: String,
        kind: ContentKind,
    },
    /// A part the stand-in cannot read (no content, or bytes that are not base64).
    Unreadable(String),
}

/// What stored content holds, as the sink receives it (already decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentKind {
    /// UTF-8 text.
    Text,
    /// A file's bytes.
    File,
    /// JSON text.
    Data,
}

/// An artifact update from a stream: `append` adds its parts to the artifact of the same
/// id; without it the artifact is replaced. `last_chunk` says the artifact is whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactUpdate {
    pub artifact: Artifact,
    pub append: bool,
    pub last_chunk: bool,
}

/// Large content on its way out of an answer, in order: opened, its bytes in chunks,
/// closed (`valid` is false when the bytes could not be decoded, e.g. a file part that
/// is not base64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spilled {
    Opened { spill: String, kind: ContentKind },
    Bytes { spill: String, bytes: Vec<u8> },
    Closed { spill: String, valid: bool },
}

/// What an agent says of itself on its card: what a parent reads to choose one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub skills: Vec<Skill>,
}

/// One thing the agent says it can do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Skill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}
