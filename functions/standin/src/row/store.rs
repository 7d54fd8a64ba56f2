//! The row store: every write atomic and conditional. DynamoDB in `dynamo`, memory in
//! `memory`; one contract (`contract`) both pass.

use std::future::Future;

use super::{Guard, Row, Rung, WakeEvent, Watch};
use crate::state::RemoteOut;
use standin_wire::ParentNote;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("no stand-in {0}")]
    NotFound(String),
    #[error("stand-in {0} already exists")]
    AlreadyExists(String),
    /// The write's guard failed: closed, another watch, another epoch, another digest.
    #[error("stand-in {0} refused the write (closed or superseded)")]
    Refused(String),
    #[error("row store unavailable: {0}")]
    Backend(String),
    /// As many replies as a row holds already wait for the stand-in to take them.
    #[error("stand-in {0} has {max} replies waiting already", max = super::MAX_QUEUED_REPLIES)]
    RepliesFull(String),
}

/// What `apply` did with a remote state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The row moved and the parent's note is in the outbox, written in the same
    /// transaction; `row` is the row after the write (a final state closed it).
    Changed {
        note: Box<ParentNote>,
        row: Box<Row>,
    },
    /// Same (state, text) as the row already had.
    Unchanged,
}

/// What a push's claim of a hearing found (`Parks::claim_hearing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HearingClaim {
    /// The hearing is the push's: the row as the claim left it.
    Claimed(Box<Row>),
    /// The push is the stand-in's, but a hearing cannot be claimed now (not parked, an
    /// event waits, another hearing's lease runs): nothing was written.
    Busy,
    /// A transaction held the row (a hearing committing, a note being told): nothing was
    /// written, and whether the push is the stand-in's is not known.
    Contended,
}

/// What a drain took, and the row as it was left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drained {
    pub event: Option<WakeEvent>,
    pub row: Row,
    /// The event taken is the one the caller's row showed (the drain from a copy's one write
    /// landed): nothing was recorded in its slot since the caller read the row.
    pub as_seen: bool,
}

/// What a close did: the row as closed, and the final note it wrote (None when the row
/// was already closed: a final state, or an earlier run of the same end, told the parent
/// already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub row: Row,
    pub note: Option<Box<ParentNote>>,
}

#[cfg(any(test, feature = "test-support"))]
impl Closed {
    /// The number of the final note this close wrote.
    pub fn seq(&self) -> Option<u64> {
        self.note.as_ref().map(|n| n.seq)
    }
}

/// The row store, all three roles: a caller that plays one asks for that one. Every write
/// (one UpdateItem, or one transaction with the note it records; the drain is two)
/// returns the item after it.
pub trait RowStore: Parks + Notes + StandIns {}

impl<T: Parks + Notes + StandIns> RowStore for T {}

/// The stand-in's record: made, read, listed, and what it learns once (its remote task,
/// its watch).
pub trait StandIns: Send + Sync {
    /// Creates the row; `AlreadyExists` when a row with that id is there.
    fn create(&self, row: &Row) -> impl Future<Output = Result<Row, StoreError>> + Send;
    fn get(&self, task_id: &str) -> impl Future<Output = Result<Option<Row>, StoreError>> + Send;
    /// One page of rows in the store's own order, starting after `after` (a task id);
    /// returns the page and where the next one starts (None: that was the last).
    fn list(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<(Vec<Row>, Option<String>), StoreError>> + Send;
    /// One page of agent `agent`'s stand-ins, newest first, starting after stand-in
    /// `after` (the previous page's last); the page and the id the next one starts after.
    /// A stand-in of another agent as `after` starts nowhere: the page is empty.
    fn list_of_agent(
        &self,
        agent: &str,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<(Vec<Row>, Option<String>), StoreError>> + Send;
    /// Records the remote task (after the first turn) and its context.
    fn set_remote(
        &self,
        task_id: &str,
        remote_task_id: &str,
        context_id: Option<&str>,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    fn set_watch(
        &self,
        task_id: &str,
        watch: &Watch,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
}

/// The doorbell's writes: events recorded, parks stored, claimed, ended, drained, rolled.
pub trait Parks: Send + Sync {
    /// Records a wake event under its guard (never on a closed row).
    fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Stores the token of park number `park` and makes it the epoch, only if that park
    /// is newer than every park stored or woken (`Row::admits_park`); `Refused` otherwise
    /// (a late or repeated invoke of an old park), and on a closed row.
    fn park(
        &self,
        task_id: &str,
        park: u64,
        token: &str,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Claims a hearing of a push, in one write under the push's `guard`: where the row
    /// admits one at `now_ms` (`Row::admits_hearing`), it becomes hearing `id` of the
    /// live park until `until_ms`. `Busy` when the guard admits the push but not the
    /// hearing; `Contended` when a transaction held the row; `Refused` (or `NotFound`)
    /// when the guard fails.
    fn claim_hearing(
        &self,
        task_id: &str,
        guard: &Guard,
        id: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> impl Future<Output = Result<HearingClaim, StoreError>> + Send;
    /// Ends hearing `id` of park `epoch` with nothing told (the agent said nothing new),
    /// so the park's next push may claim one; `Refused` when it is not the row's hearing
    /// any more (nothing was written).
    fn end_hearing(
        &self,
        task_id: &str,
        epoch: u64,
        id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Claims park `park`, stored with `token`, for the follower that took its request
    /// at hand-on `hop` (`Row::admits_follow_claim`); `Refused` when the park no longer
    /// stands or another follower claimed this hop (a request SQS delivered twice) or a
    /// later one.
    fn claim_follow(
        &self,
        task_id: &str,
        park: u64,
        token: &str,
        hop: u64,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Ends park `park` (marks it woken, which closes the watchers' fence) without taking
    /// an event: the roll leaves every pending event for its successor.
    fn end_park(
        &self,
        task_id: &str,
        park: u64,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// The roll: ends park `park` like `end_park`, makes `to` the live generation with
    /// `lease` for it to present, and keeps `previous` (the rolling generation's own
    /// lease) for that one to finish with. Idempotent per park: a retried roll of the same
    /// park changes nothing and returns the row as the first one left it.
    fn roll(
        &self,
        task_id: &str,
        park: u64,
        to: u32,
        lease: &str,
        previous: Option<&str>,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Ends park `park` and takes the next pending event by priority. Idempotent per park:
    /// a retried drain of the same park returns the event the first one took. `seen` is
    /// the row as the caller read it, when it has one: while it is still the row, ending
    /// the park and taking its next event is one write (conditional on both).
    fn drain(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        park: u64,
    ) -> impl Future<Output = Result<Drained, StoreError>> + Send;
    /// Ends the rung park and takes the push its ring carried, in one write conditional
    /// on `Rung::admits` and returning the row: no read before it. None when the row
    /// moved since the ring (nothing was written: the drain as usual).
    fn take_rung(
        &self,
        task_id: &str,
        rung: &Rung<'_>,
    ) -> impl Future<Output = Result<Option<Drained>, StoreError>> + Send;
}

/// The notes' writes and reads: a change and its note in one write, the end, the log.
pub trait Notes: Send + Sync {
    /// If `out` is news after `last` (`RemoteOut::is_news_after`): moves `last` to `out`,
    /// takes the next note number and writes the parent's note to the outbox, all in one
    /// transaction; a final state also closes the row in it. Refused when the guard
    /// fails. `seen` is the row as the caller last read or wrote it, when it has one: one
    /// read less while it is still the row (the write is conditional on its note
    /// number), and read again before anything is decided on it otherwise.
    fn apply(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        out: &RemoteOut,
        guard: &Guard,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;
    /// Closes the row (drops the park token and pending events) and, with `final_note`,
    /// makes it `last` and writes its note under the next number in the same transaction
    /// (also on a row closed earlier without one). Once a final state is `last` it changes
    /// nothing (`Closed::seq` is None): the parent is told once.
    fn close(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> impl Future<Output = Result<Closed, StoreError>> + Send;
    /// The stand-in's notes with a number above `after`, in order, at most `limit`.
    fn notes(
        &self,
        task_id: &str,
        after: u64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ParentNote>, StoreError>> + Send;
}
