//! The row: one record per stand-in, the shared state every function reads and rings.

#[cfg(any(test, feature = "test-support"))]
pub mod contract;
pub mod dynamo;
mod marks;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
mod note;
#[cfg(any(test, feature = "test-support"))]
mod passing;
mod store;
mod webhooks;

pub use marks::SentMarks;
pub use note::note_of;
pub use store::{
    Applied, Closed, Drained, HearingClaim, Notes, Parks, RowStore, StandIns, StoreError,
};
pub use webhooks::{MAX_WEBHOOKS, Webhook, WebhookSecret, Webhooks};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use standin_wire::InputPart;

use crate::digest::TokenDigest;
use crate::state::RemoteOut;
use standin_wire::TaskState;

pub use standin_wire::WatchMode;

/// The watch chosen once per remote task. Only the token's digest is ever kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    pub mode: WatchMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_digest: Option<TokenDigest>,
}

impl Watch {
    fn of(mode: WatchMode) -> Self {
        Self {
            mode,
            config_id: None,
            token_digest: None,
        }
    }

    pub fn off() -> Self {
        Self::of(WatchMode::Off)
    }

    pub fn follow() -> Self {
        Self::of(WatchMode::Follow)
    }

    pub fn poll() -> Self {
        Self::of(WatchMode::Poll)
    }
}

/// How a follow window ended, as the follow function reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FollowOutcome {
    /// A change was applied (fenced) before ringing.
    Changed { is_final: bool },
    /// The stream showed a "change" that applying found equal: pause before following.
    Unchanged,
    /// The window ran out with no change: follow again.
    WindowOver,
    /// The follow itself failed: retry after FOLLOW_RETRY.
    Failed,
    /// The agent is gone for good: the watch turns off.
    Gone,
}

/// Something that must wake a parked stand-in, as recorded on the row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum WakeEvent {
    Cancel {
        reason: String,
    },
    Reply {
        text: String,
        /// What the parent gave beside the text, sent to the agent after it.
        #[serde(default, skip_serializing_if = "Vec::is_empty", with = "parts_as_text")]
        parts: Vec<InputPart>,
        /// The parent's name for this reply: a reply whose id the row has seen is not
        /// queued again (a retried request, or an SDK retry after a lost answer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// A doorbell: the claimed state is a hint for rechecks, never applied.
    Push {
        claimed: Option<TaskState>,
    },
    /// A doorbell whose hearing asked the agent already and found it disagree with the
    /// claim: the wake starts at the first recheck's wait instead of asking at once, so a
    /// push still costs at most one GetTask and the rechecks.
    Asked {
        claimed: Option<TaskState>,
    },
    Follow {
        epoch: u64,
        outcome: FollowOutcome,
    },
}

#[cfg(any(test, feature = "test-support"))]
impl WakeEvent {
    /// A reply the parent did not name.
    pub fn reply(text: impl Into<String>) -> Self {
        WakeEvent::Reply {
            text: text.into(),
            parts: Vec::new(),
            id: None,
        }
    }
}

/// A reply waiting on the row: its text alone (a string, as every reply was kept before
/// replies had parts), or its text with the parent's parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum QueuedReply {
    Text(String),
    WithParts {
        text: String,
        #[serde(with = "parts_as_text")]
        parts: Vec<InputPart>,
    },
}

/// A reply's parts as the row keeps them: one JSON string, since a parent's data may nest
/// deeper than DynamoDB's 32 levels or hold a number past its range, and a string's size
/// is what it takes (the turn's 32 KiB bound holds on the row as it does on the wire).
mod parts_as_text {
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};
    use standin_wire::InputPart;

    pub fn serialize<S: Serializer>(parts: &[InputPart], to: S) -> Result<S::Ok, S::Error> {
        to.serialize_str(&serde_json::to_string(parts).map_err(S::Error::custom)?)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Vec<InputPart>, D::Error> {
        let text = String::deserialize(from)?;
        serde_json::from_str(&text).map_err(D::Error::custom)
    }
}

#[cfg(any(test, feature = "test-support"))]
impl From<&str> for QueuedReply {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

/// A reply of text alone, as the tests name one.
#[cfg(any(test, feature = "test-support"))]
impl PartialEq<&str> for QueuedReply {
    fn eq(&self, text: &&str) -> bool {
        matches!(self, Self::Text(own) if own == text)
    }
}

impl QueuedReply {
    pub fn new(text: &str, parts: &[InputPart]) -> Self {
        if parts.is_empty() {
            Self::Text(text.to_owned())
        } else {
            Self::WithParts {
                text: text.to_owned(),
                parts: parts.to_vec(),
            }
        }
    }

    fn into_event(self) -> WakeEvent {
        let (text, parts) = match self {
            Self::Text(text) => (text, Vec::new()),
            Self::WithParts { text, parts } => (text, parts),
        };
        WakeEvent::Reply {
            text,
            parts,
            id: None,
        }
    }
}

/// A pending doorbell: the state the push claimed (a hint for rechecks, never applied),
/// and whether its hearing asked the agent already (`WakeEvent::Asked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingPush {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed: Option<TaskState>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub asked: bool,
}

impl PendingPush {
    /// The doorbell a push or asked event records (None for any other event).
    pub fn of(event: &WakeEvent) -> Option<Self> {
        let (claimed, asked) = match *event {
            WakeEvent::Push { claimed } => (claimed, false),
            WakeEvent::Asked { claimed } => (claimed, true),
            _ => return None,
        };
        Some(Self { claimed, asked })
    }

    /// The wake event it stands for.
    pub fn event(self) -> WakeEvent {
        let claimed = self.claimed;
        match self.asked {
            true => WakeEvent::Asked { claimed },
            false => WakeEvent::Push { claimed },
        }
    }
}

/// For `skip_serializing_if`: a field at its default is not written.
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// The pending push as a ring carries it to the park it ends: its claim and its number
/// (`Pending::push_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RungPush {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed: Option<TaskState>,
    pub id: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub asked: bool,
}

impl RungPush {
    /// The pending doorbell it carries, as the row held it.
    pub fn pending(&self) -> PendingPush {
        PendingPush {
            claimed: self.claimed,
            asked: self.asked,
        }
    }
}

/// A number for a push being recorded: 64 random bits, as hex.
pub fn new_push_id() -> String {
    hex::encode(rand::random::<[u8; 8]>())
}

/// A follow's report, stamped with the epoch of the park it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowReport {
    pub epoch: u64,
    pub outcome: FollowOutcome,
}

/// How many replies may wait on a row at once: each may be 32 KiB, and a DynamoDB item
/// holds 400 KB.
pub const MAX_QUEUED_REPLIES: usize = 8;

/// How many reply ids a row remembers at most: every reply is named (the API names the
/// unnamed ones), so a long conversation would otherwise grow the row to DynamoDB's
/// 400 KB and make it unwritable. At this size the oldest are dropped down to
/// [`REPLY_IDS_KEPT`], so a retry of any of the latest 64 replies is still known.
pub const REPLY_IDS_MAX: usize = 128;
/// How many of the newest reply ids a trimmed row keeps.
pub const REPLY_IDS_KEPT: usize = 64;

/// The pending wake events, one slot per kind; replies queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<QueuedReply>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PendingPush>,
    /// The pending push's number, drawn for each push recorded, so that two pushes
    /// claiming the same state still differ: a wake that asked the agent before taking
    /// the push it saw takes only that push, and one recorded after its question stays
    /// pending. Beside the claim, not in it, so that a version that compares the claim
    /// alone (before the numbers) still takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow: Option<FollowReport>,
}

impl Pending {
    /// The pending push with its number, as a ring carries it.
    pub fn rung_push(&self) -> Option<RungPush> {
        let push = self.push?;
        Some(RungPush {
            claimed: push.claimed,
            id: self.push_id.clone()?,
            asked: push.asked,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.cancel.is_none()
            && self.replies.is_empty()
            && self.push.is_none()
            && self.follow.is_none()
    }

    /// The next event by priority (cancel, reply, push, follow), removed from the row.
    /// One reply per turn: the others stay queued.
    pub fn take_next(&mut self) -> Option<WakeEvent> {
        if let Some(reason) = self.cancel.take() {
            return Some(WakeEvent::Cancel { reason });
        }
        if !self.replies.is_empty() {
            return Some(self.replies.remove(0).into_event());
        }
        if let Some(push) = self.push.take() {
            self.push_id = None;
            return Some(push.event());
        }
        self.follow
            .take()
            .map(|FollowReport { epoch, outcome }| WakeEvent::Follow { epoch, outcome })
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Pending {
    /// Records an event. A newer push replaces the older claim; a follow result replaces
    /// an older one; a cancel keeps its first reason.
    pub fn record(&mut self, event: &WakeEvent) {
        match event {
            WakeEvent::Cancel { reason } => {
                self.cancel.get_or_insert_with(|| reason.clone());
            }
            WakeEvent::Reply { text, parts, .. } => {
                self.replies.push(QueuedReply::new(text, parts))
            }
            WakeEvent::Push { .. } | WakeEvent::Asked { .. } => {
                self.push = PendingPush::of(event);
                self.push_id = Some(new_push_id());
            }
            &WakeEvent::Follow { epoch, outcome } => {
                self.follow = Some(FollowReport { epoch, outcome })
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub task_id: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<Watch>,
    /// The last state told to the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<RemoteOut>,
    #[serde(default)]
    pub closed: bool,
    /// The number of the newest park that stored its token (the execution numbers its
    /// parks); a park whose number is not newer changes nothing, and watchers' writes are
    /// fenced on it.
    #[serde(default)]
    pub epoch: u64,
    /// The number of the newest park whose wake has run: once `woken == epoch` the park is
    /// over, and neither a late park invoke nor an old watcher can write under it.
    #[serde(default)]
    pub woken: u64,
    /// What the wake of park `taken.park` drained, so a retried wake takes the same event
    /// instead of a second one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken: Option<Taken>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub park_token: Option<String>,
    #[serde(default)]
    pub pending: Pending,
    /// The last sequence number used for a parent note.
    #[serde(default)]
    pub seq: u64,
    /// Every note up to this number has reached the parent (or was refused for good):
    /// a step whose note is the next one sends it at once instead of leaving it to the
    /// outbox, and the outbox passes over what is marked.
    #[serde(default)]
    pub sent_through: u64,
    /// The newest follower's claim on the park it follows (`follow_claim(park, hop)`):
    /// a follow request handed on from follower to follower is followed once, however
    /// often SQS delivers it.
    #[serde(default)]
    pub follow_claim: u64,
    /// The ids of the latest replies the row has queued (at least the last
    /// [`REPLY_IDS_KEPT`]), so that a reply sent twice is queued once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reply_ids: Vec<String>,
    /// RFC 3339, UTC; set by the control API's start (rows from before it have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// A Step Functions parent's task token: notify answers it with the final note.
    /// Never shown to a parent through the API (the summary leaves it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_token: Option<String>,
    /// The live generation's lease, set when its predecessor rolled (None until the first
    /// roll): an execution of a rolled generation acts on the row only if its input
    /// carries it, so nobody can take a stand-in over by starting `{task_id}__N` first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    /// The live generation: 0, then one more at each roll (its execution is
    /// `{task_id}__{generation}`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub generation: u32,
    /// The lease of the generation before the live one, which may still finish its own
    /// roll (a retried wake) or end the stand-in (a successor name that was taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_lease: Option<String>,
    /// The agent's entry as the stand-in started with it (JSON, as the registry stores
    /// it): an edit or a removal of the agent changes new stand-ins only. It names
    /// secrets, never holds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_entry: Option<String>,
    /// The stand-in's W3C `traceparent` (the parent's, or one it began): every call to
    /// the agent carries it, every note names its trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The parent's webhooks by id (`webhooks.rs`): each note is also POSTed to them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub webhooks: BTreeMap<String, Webhook>,
    /// One more at each change of `webhooks`: a note is written only on the row as read,
    /// so one written from a read before a webhook was set is written again with it.
    #[serde(default, skip_serializing_if = "is_default")]
    pub webhooks_rev: u64,
    /// The parent's own context, as its start named it (`context_id` is the agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_context_id: Option<String>,
    /// The push hearing in flight (`push::door`): the id its door drew, the park it was
    /// claimed in and when its lease lapses (ms since the Unix epoch). Only the hearer
    /// holding this id commits what it heard, and only in that park.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hearing: Option<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub hearing_park: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub hearing_until: u64,
}

impl Row {
    /// The words the stand-in last heard (none yet: empty): a status without words of its
    /// own is read against them.
    pub fn last_text(&self) -> &str {
        self.last.as_ref().map_or("", |last| last.text.as_str())
    }

    pub fn new(task_id: impl Into<String>, agent: impl Into<String>) -> Self {
        Self {
            task_id: task_id.into(),
            agent: agent.into(),
            ..Self::default()
        }
    }

    /// Whether this reply was queued already (the parent named it, and the row has it).
    pub fn has_reply(&self, event: &WakeEvent) -> bool {
        matches!(event, WakeEvent::Reply { id: Some(id), .. } if self.reply_ids.contains(id))
    }

    pub fn mode(&self) -> WatchMode {
        self.watch.as_ref().map_or(WatchMode::Off, |w| w.mode)
    }

    /// No hearing in flight any more (its commit, or its end with nothing told).
    pub fn end_hearing(&mut self) {
        self.hearing = None;
        self.hearing_park = 0;
        self.hearing_until = 0;
    }

    /// Whether a park is live now: its token stored, its wake not yet run.
    pub fn is_parked(&self) -> bool {
        !self.closed && self.park_token.is_some() && self.epoch > self.woken
    }
}

/// The conditions of the writes the memory store checks as stated here (the DynamoDB
/// store's condition expressions say the same).
#[cfg(any(test, feature = "test-support"))]
impl Row {
    /// Whether a follower may claim park `park` at hand-on `hop`: the park and token
    /// stand, and no follower claimed this hop or a later one.
    pub fn admits_follow_claim(&self, park: u64, token: &str, hop: u64) -> bool {
        self.is_parked()
            && self.epoch == park
            && self.park_token.as_deref() == Some(token)
            && self.follow_claim < follow_claim(park, hop)
    }

    /// Whether a push may claim a hearing at `now_ms`: the stand-in is parked, nothing
    /// waits on the row (a ring is on its way: the wake will hear), and no hearing of
    /// this park holds a lease that runs.
    pub fn admits_hearing(&self, now_ms: u64) -> bool {
        let other_hearing = self.hearing.is_some()
            && self.hearing_park == self.epoch
            && self.hearing_until >= now_ms;
        self.is_parked() && self.pending.is_empty() && !other_hearing
    }

    /// Whether park `park` may store its token: it is newer than every park stored and
    /// every park woken (a late or repeated invoke of an old park is not).
    pub fn admits_park(&self, park: u64) -> bool {
        !self.closed && park > self.epoch && park > self.woken
    }
}

/// The event one wake took from the row (None: nothing was pending).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taken {
    pub park: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<WakeEvent>,
}

/// The push a ring carried to the park it ended, for the wake to take with no read before
/// it (`Parks::take_rung`), by the generation the wake runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rung<'a> {
    pub park: u64,
    pub push: &'a RungPush,
    pub agent: &'a str,
    pub generation: u32,
    pub lease: Option<&'a str>,
}

#[cfg(any(test, feature = "test-support"))]
impl Rung<'_> {
    /// The row still stands as the ring left it: open, the park not yet woken, that push
    /// (and no cancel or reply, which go first) pending, and run by this live generation.
    pub fn admits(&self, row: &Row) -> bool {
        !row.closed
            && row.woken < self.park
            && row.pending.rung_push().as_ref() == Some(self.push)
            && row.pending.cancel.is_none()
            && row.pending.replies.is_empty()
            && row.agent == self.agent
            && row.generation == self.generation
            && row.lease.as_deref() == self.lease
    }
}

/// The conditions a write to the row carries, so a concurrent close or park wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// The row exists and is not closed.
    Open,
    /// Open, in push mode, with this digest and this remote task (the receiver's checks).
    Push {
        digest: TokenDigest,
        remote_task_id: String,
    },
    /// Open, at this park's epoch, and that park not yet woken (a watcher's write).
    Epoch(u64),
    /// As `Epoch`, and the hearing claimed in that park is still this one (a push
    /// hearer's write: a hearer that outlived its lease commits nothing).
    Hearing { epoch: u64, id: String },
}

impl Guard {
    /// What a hearing's commit of `out` records for the wake beside it, in the same
    /// write: a report of the change, so the wake decides without asking the agent again
    /// (a final state closes the row instead, and its wake ends the stand-in). The commit
    /// also ends the hearing, so a hearing commits once however often it runs.
    pub fn hearing_report(&self, out: &RemoteOut) -> Option<FollowReport> {
        match self {
            Self::Hearing { epoch, .. } if !out.is_final => Some(FollowReport {
                epoch: *epoch,
                outcome: FollowOutcome::Changed { is_final: false },
            }),
            _ => None,
        }
    }

    /// Whether the row satisfies the guard; the stores evaluate exactly this.
    pub fn admits(&self, row: &Row) -> bool {
        if row.closed {
            return false;
        }
        match self {
            Self::Open => true,
            Self::Push {
                digest,
                remote_task_id,
            } => {
                let watch = row.watch.as_ref().filter(|w| w.mode == WatchMode::Push);
                let stored = watch.and_then(|w| w.token_digest.as_ref());
                stored.is_some_and(|d| d.matches(digest))
                    && row.remote_task_id.as_ref() == Some(remote_task_id)
            }
            Self::Epoch(epoch) => row.epoch == *epoch && row.woken < *epoch,
            Self::Hearing { epoch, id } => {
                Self::Epoch(*epoch).admits(row)
                    && row.hearing_park == *epoch
                    && row.hearing.as_deref() == Some(id.as_str())
            }
        }
    }
}

/// The most times one park is handed on: a park lasts at most an hour, a follower's
/// window at least ten seconds.
pub const MAX_FOLLOW_HOPS: u64 = 999;

/// One number that grows with the park and, within it, with each hand-on, so a claim on
/// an older park or an earlier hop is refused by one comparison.
pub fn follow_claim(park: u64, hop: u64) -> u64 {
    park.saturating_mul(MAX_FOLLOW_HOPS + 1)
        .saturating_add(hop.min(MAX_FOLLOW_HOPS))
}
