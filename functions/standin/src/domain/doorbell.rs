//! The doorbell protocol (README, "Architecture"): ring, park, drain, the fences, and
//! close first. Every step is one conditional write on the row, then at most one ring.

use tracing::{info, warn};

use super::remote::RemoteOut;
use super::row::{FollowOutcome, Guard, Row, WakeEvent, WatchMode};
use crate::a2a::{A2aError, TaskState};
use crate::ports::{
    AgentPort, Applied, Closed, Doorbell, DoorbellError, Drained, RowStore, StoreError,
};

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
    if let Some(token) = &row.park_token {
        ring_token(bell, task_id, token).await;
    }
    Ok(row)
}

async fn ring_token<D: Doorbell>(bell: &D, task_id: &str, token: &str) {
    match bell.ring(token).await {
        Ok(()) | Err(DoorbellError::ParkOver) => {}
        Err(err) => warn!(task_id, error = %err, "ring failed; the event waits on the row"),
    }
}

/// Stores the token of park number `park`; if an event is already pending, rings itself
/// so nothing recorded between the last wake and this park is lost. A late or repeated
/// invoke of an older park is refused by the store and changes nothing (`Ok(None)`).
pub async fn park<S: RowStore, D: Doorbell>(
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
    if !row.pending.is_empty() {
        ring_token(bell, task_id, token).await;
    }
    Ok(Some(row))
}

/// Ends park `park` and takes the next pending event by priority; the others stay for
/// the next park.
pub async fn drain<S: RowStore>(
    store: &S,
    task_id: &str,
    park: u64,
) -> Result<Drained, StoreError> {
    store.drain(task_id, park).await
}

/// Apply: if (state, scrubbed text) differs from the row, move the row and record the
/// parent's note in the same transaction (the outbox delivers it). A final state closes
/// the row in that write, so it outranks any reply or cancel that comes later.
pub async fn apply<S: RowStore>(
    store: &S,
    task_id: &str,
    out: &RemoteOut,
    guard: &Guard,
) -> Result<Applied, StoreError> {
    store.apply(task_id, out, guard).await
}

/// A follow's report, fenced on its park's epoch: a late follow from an earlier park
/// changes nothing and rings nothing.
pub async fn follow_report<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    row: &Row,
    epoch: u64,
    change: Option<&RemoteOut>,
    outcome_without_change: FollowOutcome,
) -> Result<FollowOutcome, StoreError> {
    let guard = Guard::Epoch(epoch);
    let outcome = match change {
        Some(out) => match apply(store, &row.task_id, out, &guard).await? {
            Applied::Changed { row: applied, .. } if out.is_final => {
                // The final state closed the row: nothing can be recorded on it any more,
                // so ring the park directly; its wake finds the row closed and ends.
                if let Some(token) = &applied.park_token {
                    ring_token(bell, &row.task_id, token).await;
                }
                return Ok(FollowOutcome::Changed { is_final: true });
            }
            Applied::Changed { .. } => FollowOutcome::Changed { is_final: false },
            Applied::Unchanged => FollowOutcome::Unchanged,
        },
        None => outcome_without_change,
    };
    ring(
        store,
        bell,
        &row.task_id,
        &WakeEvent::Follow { epoch, outcome },
        &guard,
    )
    .await?;
    Ok(outcome)
}

/// A follow stops once its park is over: closed, re-parked, woken, or an event waits.
pub fn follow_should_stop(row: &Row, epoch: u64) -> bool {
    !Guard::Epoch(epoch).admits(row) || !row.pending.is_empty()
}

/// Why a stand-in ends.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "cause")]
pub enum EndCause {
    /// The remote task reached a final state (already on the row).
    Final,
    Cancelled {
        reason: String,
    },
    /// The stand-in could not go on (for example the first turn failed).
    Failed {
        reason: String,
    },
}

/// How many times the end tries to delete the push config.
pub const DELETE_ATTEMPTS: u32 = 2;

/// The final note a cause writes, when the row is not closed yet. A final state applied
/// earlier closed the row itself and told the parent under its own number.
fn final_out(row: &Row, cause: &EndCause) -> RemoteOut {
    let remote_task_id = row.remote_task_id.clone().unwrap_or_default();
    let (state, text) = match cause {
        EndCause::Final => match row.last.as_ref().filter(|l| l.is_final) {
            Some(last) => (last.state, last.text.clone()),
            None => (
                TaskState::Failed,
                "the stand-in ended without a final state".to_owned(),
            ),
        },
        EndCause::Cancelled { reason } => (TaskState::Canceled, super::scrub::scrub(reason)),
        EndCause::Failed { reason } => (TaskState::Failed, super::scrub::scrub(reason)),
    };
    RemoteOut {
        remote_task_id,
        state,
        text,
        is_final: true,
    }
}

/// Close first, and tell the parent in the same write: `closed` is set together with the
/// final note (unless a final state already closed the row and told the parent), so every
/// push from then on is refused and the note is in the outbox before anything slow.
/// Returns the row as closed; `clean_up` then deletes the push config and cancels the
/// remote task.
pub async fn close<S: RowStore>(
    store: &S,
    task_id: &str,
    cause: &EndCause,
) -> Result<Closed, StoreError> {
    let row = store
        .get(task_id)
        .await?
        .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
    if row.closed {
        return Ok(Closed { row, seq: None });
    }
    let out = final_out(&row, cause);
    store.close(task_id, Some(&out)).await
}

/// After the close: delete the push config (errors logged and swallowed) and, when the
/// parent's cancel is what ended the stand-in, cancel the remote task. Both are
/// idempotent, so a retried end repeats them harmlessly.
pub async fn clean_up<A: AgentPort>(agent: &A, row: &Row, cause: &EndCause) {
    let task_id = row.task_id.as_str();
    let remote_id = row.remote_task_id.clone().unwrap_or_default();
    if let Some(watch) = &row.watch
        && watch.mode == WatchMode::Push
        && let Some(config_id) = &watch.config_id
    {
        delete_push_config(agent, task_id, &remote_id, config_id).await;
    }
    let cancelled_by_parent = row
        .last
        .as_ref()
        .is_some_and(|l| l.is_final && l.state == TaskState::Canceled);
    if matches!(cause, EndCause::Cancelled { .. })
        && cancelled_by_parent
        && !remote_id.is_empty()
        && let Err(err) = agent.cancel_task(&remote_id).await
    {
        info!(task_id, error = %err, "remote cancel failed; the stand-in has ended anyway");
    }
}

async fn delete_push_config<A: AgentPort>(
    agent: &A,
    task_id: &str,
    remote_id: &str,
    config_id: &str,
) {
    let mut last: Option<A2aError> = None;
    for _ in 0..DELETE_ATTEMPTS {
        match agent.delete_push_config(remote_id, config_id).await {
            Ok(()) => return,
            Err(err) => last = Some(err),
        }
    }
    if let Some(err) = last {
        warn!(task_id, error = %err, "push config not deleted; later pushes are refused anyway");
    }
}
