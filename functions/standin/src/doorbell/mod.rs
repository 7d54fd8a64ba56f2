//! The doorbell protocol (docs/architecture.md): ring, park, drain, the fences, and
//! close first. Every step is one conditional write on the row, then at most one ring.

#[cfg(any(test, feature = "test-support"))]
pub mod memory;
mod port;
pub mod sfn;

pub use port::{Doorbell, DoorbellError};

use std::future::Future;

use tracing::{info, warn};

use crate::metrics::{self, Metric};
use crate::outbox::Teller;
use crate::row::{Applied, Closed, RowStore, StoreError};
use crate::row::{FollowOutcome, Guard, Row, WakeEvent, WatchMode};
use crate::state::RemoteOut;
use standin_remote::{Agent, RemoteError};
use standin_wire::TaskState;
use standin_wire::scrub::scrub;

/// Records the event (never on a closed row), then rings the stored park token if any.
/// A refused or failed ring is ignored: the event is on the row and the next park sees it.
pub async fn ring<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    event: &WakeEvent,
    guard: &Guard,
) -> Result<Row, StoreError> {
    let row = store.record(task_id, event, guard).await?;
    ring_parked(bell, &row).await;
    Ok(row)
}

/// Rings the park the row holds, with nothing recorded: for a row closed by a final
/// state, on which nothing can be recorded any more (its wake finds it closed and ends).
pub async fn ring_parked<D: Doorbell>(bell: &D, row: &Row) {
    let Some(token) = &row.park_token else {
        return;
    };
    let task_id = &row.task_id;
    match bell.ring(token, row.pending.rung_push().as_ref()).await {
        Ok(()) | Err(DoorbellError::ParkOver) => {}
        Err(err) => warn!(task_id, error = %err, "ring failed; the event waits on the row"),
    }
}

/// Rings the stored park token again for an event waiting on the row (its ring failed).
pub async fn ring_waiting<D: Doorbell>(bell: &D, row: &Row) {
    if !row.pending.is_empty() {
        ring_parked(bell, row).await;
    }
}

/// Stores the token of park number `park`; if an event is already pending, rings itself
/// so nothing recorded between the last wake and this park is lost. A late or repeated
/// invoke of an older park is refused by the store and changes nothing (`Ok(None)`).
pub async fn store_park<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    park: u64,
    token: &str,
) -> Result<Option<Row>, StoreError> {
    let row = match store.park(task_id, park, token).await {
        Ok(row) => row,
        Err(StoreError::Refused(_)) => {
            info!(
                task_id,
                park, "park refused: not the newest park, or the row is closed"
            );
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    ring_waiting(bell, &row).await;
    Ok(Some(row))
}

/// `Parks::drain` with no row seen.
#[cfg(any(test, feature = "test-support"))]
pub async fn drain<S: RowStore>(
    store: &S,
    task_id: &str,
    park: u64,
) -> Result<crate::row::Drained, StoreError> {
    store.drain(task_id, None, park).await
}

/// Apply: if (state, scrubbed text) differs from the row, move the row and record the
/// parent's note in the same transaction (the outbox delivers it). A final state closes
/// the row in that write, so it outranks any reply or cancel that comes later.
pub async fn apply<S: RowStore>(
    teller: &Teller<'_, S>,
    task_id: &str,
    out: &RemoteOut,
    guard: &Guard,
) -> Result<Applied, StoreError> {
    let applied = teller.tell(task_id, None, out, guard).await?;
    Ok(counted(task_id, out, applied))
}

/// `apply` to the row as the caller last read or wrote it (`Notes::apply` with the row seen).
pub async fn apply_to<S: RowStore>(
    teller: &Teller<'_, S>,
    row: &Row,
    out: &RemoteOut,
    guard: &Guard,
) -> Result<Applied, StoreError> {
    let applied = teller.tell(&row.task_id, Some(row), out, guard).await?;
    Ok(counted(&row.task_id, out, applied))
}

fn counted(task_id: &str, out: &RemoteOut, applied: Applied) -> Applied {
    // The write that applies a final state closes the row, once: the stand-in has ended.
    if out.is_final && matches!(applied, Applied::Changed { .. }) {
        let state = out.state.as_str().trim_start_matches("TASK_STATE_");
        ended(task_id, &state.to_ascii_lowercase());
    }
    applied
}

/// Counts a stand-in's end by its cause, where the write that ends it happens (so a
/// retried End step does not count it again).
fn ended(task_id: &str, cause: &str) {
    metrics::record(Metric::StandInsEnded, 1.0, Some(cause), Some(task_id));
}

/// A follow's report, fenced on its park's epoch: a late follow from an earlier park
/// changes nothing and rings nothing.
pub async fn follow_report<S: RowStore, D: Doorbell>(
    teller: &Teller<'_, S>,
    bell: &D,
    row: &Row,
    epoch: u64,
    change: Option<&RemoteOut>,
    outcome_without_change: FollowOutcome,
) -> Result<FollowOutcome, StoreError> {
    let guard = Guard::Epoch(epoch);
    let outcome = match change {
        Some(out) => match apply(teller, &row.task_id, out, &guard).await? {
            Applied::Changed { row: applied, .. } if out.is_final => {
                ring_parked(bell, &applied).await;
                return Ok(FollowOutcome::Changed { is_final: true });
            }
            Applied::Changed { .. } => FollowOutcome::Changed { is_final: false },
            Applied::Unchanged => FollowOutcome::Unchanged,
        },
        None => outcome_without_change,
    };
    let event = WakeEvent::Follow { epoch, outcome };
    ring(teller.rows(), bell, &row.task_id, &event, &guard).await?;
    Ok(outcome)
}

/// A follow stops once its park is over: closed, re-parked, woken, or an event waits.
pub fn follow_should_stop(row: &Row, epoch: u64) -> bool {
    !Guard::Epoch(epoch).admits(row) || !row.pending.is_empty()
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "cause")]
pub enum EndCause {
    /// The remote task reached a final state (already on the row).
    Final,
    Cancelled {
        reason: String,
    },
    /// The stand-in's deadline passed: the remote task is cancelled, as for a parent's
    /// cancel.
    Deadline {
        reason: String,
    },
    /// The stand-in could not go on (for example the first turn failed).
    Failed {
        reason: String,
    },
}

impl EndCause {
    /// A failure whose reason goes into the execution's state and the parent's note:
    /// scrubbed and bounded first, whatever an agent put into it.
    pub fn failed(reason: &str) -> Self {
        Self::Failed {
            reason: scrub(reason),
        }
    }
}

const DELETE_ATTEMPTS: u32 = 2;

/// The final note a cause writes, when the row is not closed yet. A final state applied
/// earlier closed the row itself and told the parent under its own number.
fn final_out(row: &Row, cause: &EndCause) -> RemoteOut {
    let (state, text) = match cause {
        EndCause::Final => match row.last.as_ref().filter(|l| l.is_final) {
            Some(last) => (last.state, last.text.clone()),
            None => (
                TaskState::Failed,
                "the stand-in ended without a final state".to_owned(),
            ),
        },
        EndCause::Cancelled { reason } | EndCause::Deadline { reason } => {
            (TaskState::Canceled, scrub(reason))
        }
        EndCause::Failed { reason } => (TaskState::Failed, scrub(reason)),
    };
    RemoteOut {
        text,
        is_final: true,
        ..crate::state::remote_out(row.remote_task_id.as_deref().unwrap_or_default(), state, "")
    }
}

/// The end, in order. Close first: from the close on, every push is refused and a reply
/// or cancel gets 409. Tell the parent: one final note, written in the same transaction
/// as the close, unless a final state already closed the row and told the parent (it
/// wins over a later cancel). For the parent's cancel the note waits for one call: the
/// remote cancel, whose answer is the truth (a task that finished first reports how it
/// finished, not CANCELED). Then clean up: delete the push config (errors logged and
/// swallowed). `connect` reads the agent card only when the end needs the agent.
/// Idempotent: a retried end writes no second note.
pub async fn end_in_order<S, A, C, F>(
    teller: &Teller<'_, S>,
    task_id: &str,
    cause: &EndCause,
    connect: C,
) -> Result<Closed, StoreError>
where
    S: RowStore,
    A: Agent,
    C: FnOnce() -> F,
    F: Future<Output = Option<A>>,
{
    let row = teller
        .rows()
        .get(task_id)
        .await?
        .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
    let told = row.last.as_ref().is_some_and(|l| l.is_final);
    let cancels = matches!(
        cause,
        EndCause::Cancelled { .. } | EndCause::Deadline { .. }
    );
    let wants_agent = push_config(&row).is_some() || (!told && cancels);
    let closed = match cause {
        _ if told => Closed { row, note: None },
        EndCause::Cancelled { reason } | EndCause::Deadline { reason } => {
            let closing = if row.closed {
                row
            } else {
                let closing = teller.tell_end(task_id, None).await?.row;
                // A final state applied meanwhile has ended (and counted) the stand-in.
                if !closing.last.as_ref().is_some_and(|l| l.is_final) {
                    let why = match cause {
                        EndCause::Deadline { .. } => "deadline_passed",
                        _ => "cancelled_by_parent",
                    };
                    ended(task_id, why);
                }
                closing
            };
            let agent = if wants_agent { connect().await } else { None };
            let truth = match (&agent, closing.remote_task_id.as_deref()) {
                (Some(agent), Some(remote)) => cancel_remote(agent, task_id, remote, reason).await,
                _ => final_out(&closing, cause),
            };
            let closed = teller.tell_end(task_id, Some(&truth)).await?;
            if let Some(agent) = &agent {
                clean_up(agent, &closed.row).await;
            }
            return Ok(closed);
        }
        _ => {
            let closed = teller
                .tell_end(task_id, Some(&final_out(&row, cause)))
                .await?;
            // No note written: a final state applied meanwhile ended (and counted) it.
            if closed.note.is_some() {
                let cause = match cause {
                    EndCause::Failed { .. } => "stand_in_failed",
                    _ => "ended_without_a_final_state",
                };
                ended(task_id, cause);
            }
            closed
        }
    };
    if wants_agent && let Some(agent) = connect().await {
        clean_up(&agent, &closed.row).await;
    }
    Ok(closed)
}

fn push_config(row: &Row) -> Option<&str> {
    let watch = row.watch.as_ref().filter(|w| w.mode == WatchMode::Push)?;
    watch.config_id.as_deref()
}

/// Asks the remote task to cancel; its answer decides the final note. A task that had
/// already finished (CancelTask refuses it, or answers it finished) reports its own final
/// state; anything else, an agent that cannot be reached included, is the parent's
/// CANCELED with its reason.
async fn cancel_remote<A: Agent>(
    agent: &A,
    task_id: &str,
    remote: &str,
    reason: &str,
) -> RemoteOut {
    let parent_cancel = crate::state::remote_out(remote, TaskState::Canceled, reason);
    let task = match agent.cancel(remote).await {
        Ok(task) => Some(task),
        Err(RemoteError::TaskNotCancelable(_)) => agent.get(remote).await.ok(),
        Err(err) => {
            warn!(task_id, error = %err, "remote cancel failed; the parent's cancel stands");
            None
        }
    };
    match task.map(|t| crate::state::from_status(&t, "").about(remote)) {
        Some(out) if out.is_final && out.state != TaskState::Canceled => out,
        _ => parent_cancel,
    }
}

/// After the close and the note: delete the push config (two attempts, errors logged and
/// swallowed; a later push is refused anyway). Idempotent.
async fn clean_up<A: Agent>(agent: &A, row: &Row) {
    let Some(config_id) = push_config(row) else {
        return;
    };
    let remote_id = row.remote_task_id.as_deref().unwrap_or_default();
    for attempt in 1..=DELETE_ATTEMPTS {
        match agent.delete_push(remote_id, config_id).await {
            Ok(()) => return,
            Err(err) if attempt == DELETE_ATTEMPTS => {
                let task_id = row.task_id.as_str();
                warn!(task_id, error = %err, "push config not deleted; later pushes are refused anyway");
            }
            Err(_) => {}
        }
    }
}
