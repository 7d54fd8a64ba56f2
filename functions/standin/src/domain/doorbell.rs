//! The doorbell protocol (ARCHITECTURE.md §3): ring, park, drain, the epoch fence, and
//! close first. Every step is one conditional write on the row, then at most one ring.

use tracing::{info, warn};

use super::remote::RemoteOut;
use super::row::{FollowOutcome, Guard, Row, WakeEvent, WatchMode};
use crate::a2a::{A2aError, TaskState};
use crate::clock::now_rfc3339;
use crate::ports::{
    AgentPort, Applied, Doorbell, DoorbellError, Drained, ParentNote, ParentQueue, RowStore,
    StoreError,
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

/// Stores the new park token (a new epoch); if an event is already pending, rings itself
/// so nothing recorded between the last wake and this park is lost.
pub async fn park<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    token: &str,
) -> Result<Row, StoreError> {
    let row = store.park(task_id, token).await?;
    if !row.pending.is_empty() {
        ring_token(bell, task_id, token).await;
    }
    Ok(row)
}

/// Takes the next pending event by priority; the others stay for the next park.
pub async fn drain<S: RowStore>(store: &S, task_id: &str) -> Result<Drained, StoreError> {
    store.drain(task_id).await
}

/// Apply: if (state, scrubbed text) differs from the row, move the row and tell the
/// parent. Final states are not sent here: the end's note carries them, once.
/// Returns whether the row changed.
pub async fn apply<S: RowStore, Q: ParentQueue>(
    store: &S,
    queue: &Q,
    row: &Row,
    out: &RemoteOut,
    guard: &Guard,
) -> Result<bool, StoreError> {
    match store.apply(&row.task_id, out, guard).await? {
        Applied::Unchanged => Ok(false),
        Applied::Changed { seq } => {
            if !out.is_final {
                tell_parent(queue, row, out, seq).await;
            }
            Ok(true)
        }
    }
}

async fn tell_parent<Q: ParentQueue>(queue: &Q, row: &Row, out: &RemoteOut, seq: u64) {
    let note = ParentNote {
        task_id: row.task_id.clone(),
        remote_task_id: out.remote_task_id.clone(),
        agent: row.agent.clone(),
        state: out.state.as_str().to_owned(),
        text: out.text.clone(),
        is_final: out.is_final,
        seq,
        at: now_rfc3339(),
    };
    if let Err(err) = queue.send(&note).await {
        warn!(task_id = %row.task_id, seq, error = %err, "parent note not sent");
    }
}

/// A follow's report, fenced on its park's epoch: a late follow from an earlier park
/// changes nothing and rings nothing.
pub async fn follow_report<S: RowStore, D: Doorbell, Q: ParentQueue>(
    store: &S,
    bell: &D,
    queue: &Q,
    row: &Row,
    epoch: u64,
    change: Option<&RemoteOut>,
    outcome_without_change: FollowOutcome,
) -> Result<FollowOutcome, StoreError> {
    let guard = Guard::Epoch(epoch);
    let outcome = match change {
        Some(out) => {
            if apply(store, queue, row, out, &guard).await? {
                FollowOutcome::Changed {
                    is_final: out.is_final,
                }
            } else {
                FollowOutcome::Unchanged
            }
        }
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

/// A follow stops once its park is over: closed, re-parked, or an event is waiting.
pub fn follow_should_stop(row: &Row, epoch: u64) -> bool {
    row.closed || row.epoch != epoch || !row.pending.is_empty()
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

/// Close first: `closed` is set before anything else, so every push from then on is
/// refused; then the push config is deleted (errors logged and swallowed), the remote
/// task cancelled if the parent cancelled, and the parent told, once.
pub async fn end<S: RowStore, A: AgentPort, Q: ParentQueue>(
    store: &S,
    agent: Option<&A>,
    queue: &Q,
    task_id: &str,
    cause: &EndCause,
) -> Result<ParentNote, StoreError> {
    // A final state already took its note number when it was applied (unsent): reuse it.
    let final_applied = matches!(cause, EndCause::Final)
        && store
            .get(task_id)
            .await?
            .is_some_and(|r| r.last.as_ref().is_some_and(|l| l.is_final));
    let (row, seq) = store.close(task_id, !final_applied).await?;
    let remote_id = row.remote_task_id.clone().unwrap_or_default();
    if let (Some(agent), Some(watch)) = (agent, &row.watch)
        && watch.mode == WatchMode::Push
        && let Some(config_id) = &watch.config_id
    {
        delete_push_config(agent, task_id, &remote_id, config_id).await;
    }
    if let (Some(agent), EndCause::Cancelled { .. }) = (agent, cause)
        && !remote_id.is_empty()
        && !row.last.as_ref().is_some_and(|l| l.is_final)
        && let Err(err) = agent.cancel_task(&remote_id).await
    {
        info!(task_id, error = %err, "remote cancel failed; the stand-in ends anyway");
    }
    let (state, text) = match cause {
        EndCause::Final => row
            .last
            .as_ref()
            .map_or((TaskState::Unspecified, String::new()), |l| {
                (l.state, l.text.clone())
            }),
        EndCause::Cancelled { reason } => (TaskState::Canceled, super::scrub::scrub(reason)),
        EndCause::Failed { reason } => (TaskState::Failed, super::scrub::scrub(reason)),
    };
    let note = ParentNote {
        task_id: task_id.to_owned(),
        remote_task_id: remote_id,
        agent: row.agent.clone(),
        state: state.as_str().to_owned(),
        text,
        is_final: true,
        seq,
        at: now_rfc3339(),
    };
    if let Err(err) = queue.send(&note).await {
        warn!(task_id, seq, error = %err, "final parent note not sent");
    }
    Ok(note)
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
