//! The attribute names the expressions write, as `Row` (and the note log's items) name
//! them: a test checks each against the serialised row, and the template's keys and TTL.

pub const TASK_ID: &str = "task_id";
pub const AGENT: &str = "agent";
pub const REMOTE_TASK_ID: &str = "remote_task_id";
pub const CONTEXT_ID: &str = "context_id";
pub const WATCH: &str = "watch";
pub const LAST: &str = "last";
pub const CLOSED: &str = "closed";
pub const EPOCH: &str = "epoch";
pub const WOKEN: &str = "woken";
pub const TAKEN: &str = "taken";
pub const PARK_TOKEN: &str = "park_token";
pub const PENDING: &str = "pending";
pub const SEQ: &str = "seq";
pub const CREATED_AT: &str = "created_at";
/// The index of each agent's stand-ins by when they started (`agent`, `created_at`; keys
/// only): `list_of_agent` queries it, then reads the rows.
pub const BY_AGENT: &str = "by_agent";
pub const REPLY_IDS: &str = "reply_ids";
// Of `watch`:
pub const MODE: &str = "mode";
pub const TOKEN_DIGEST: &str = "token_digest";
// Of `pending`:
pub const CANCEL: &str = "cancel";
pub const REPLIES: &str = "replies";
pub const PUSH: &str = "push";
pub const PUSH_ID: &str = "push_id";
pub const FOLLOW: &str = "follow";
/// Both tables' TTL attribute (not a field of `Row`: set at the close).
pub const EXPIRES_AT: &str = "expires_at";
/// A note log item's note, as JSON.
pub const NOTE_BODY: &str = "body";
/// The row's Step Functions parent token; copied onto its final note's item, where
/// notify reads it from the stream.
pub const PARENT_TASK_TOKEN: &str = "parent_task_token";
pub const WEBHOOKS: &str = "webhooks";
pub const WEBHOOKS_REV: &str = "webhooks_rev";
/// On a note log item: the stand-in had webhooks when the note was written, so notify
/// also wakes their deliverer.
pub const WEBHOOKED: &str = "webhooked";
pub const LEASE: &str = "lease";
pub const GENERATION: &str = "generation";
pub const PREVIOUS_LEASE: &str = "previous_lease";
pub const SENT_THROUGH: &str = "sent_through";
pub const FOLLOW_CLAIM: &str = "follow_claim";
pub const HEARING: &str = "hearing";
pub const HEARING_PARK: &str = "hearing_park";
pub const HEARING_UNTIL: &str = "hearing_until";
