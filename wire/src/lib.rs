//! The stand-in's wire: what it and its parent say to each other, written once and used
//! by the functions, the `standin` command and the tests. The parent note (on the queue
//! and in the note log), the control API's request and answer bodies, and the ids whose
//! rules the API enforces, as types that cannot hold a value the rules refuse.

mod artifact;
mod body_error;
mod control;
mod id;
mod keys;
mod note;
pub mod openapi;
mod parts;
mod path;
pub mod scrub;
mod state;
pub mod time;
mod trace;
mod turn;
mod upload;
mod webhook;

pub use artifact::{
    ArtifactContent, ArtifactView, ArtifactsPage, NOTE_INLINE_BYTES, PartFlag, PartKind, PartView,
};
pub use body_error::BodyError;
pub use control::{
    Accepted, AgentView, AgentsPage, CancelRequest, CardView, ErrorBody, ListPage,
    MAX_MESSAGE_BYTES, MAX_REASON_BYTES, NO_TOKEN_HERE, NotesPage, PendingView, Removed,
    ReplyRequest, SkillView, StandInStatus, StartRequest, Started, Summary,
};
pub use id::{IdError, MAX_REPLY_ID_BYTES, ReplyId, TaskId};
pub use keys::{
    IssuedKeyView, KEY_ID_RULE, KeyRequest, KeyView, KeysPage, MAX_KEY_NAME_CHARS, is_key_id,
};
pub use note::ParentNote;
pub use parts::{FileContent, InputFile, InputPart, MAX_PARTS, MAX_TURN_BYTES, parse_parts};
pub use path::path_segment;
pub use state::{TaskState, WatchMode};
pub use trace::TraceContext;
pub use turn::{TurnKind, TurnView, TurnsPage};
pub use upload::{MAX_UPLOAD_BYTES, UPLOAD_LINK_SECONDS, UploadId, UploadLink, UploadRequest};
pub use webhook::{
    MAX_WEBHOOK_ID_CHARS, MAX_WEBHOOK_SECRET_CHARS, MAX_WEBHOOK_URL_CHARS, WEBHOOK_ID_RULE,
    WebhookList, WebhookRequest, WebhookView, is_webhook_id,
};
