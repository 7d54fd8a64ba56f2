//! The hearing of a push the door claimed (`push::door`): ask the agent where the task
//! stands, commit the change with its note and send it, then ring the park with a report,
//! as the follower does. No Step Functions round trip comes before the note.
//!
//! The hearing applies nothing from the push's body. Its commit is conditioned on the
//! hearing still being the row's (its id, in the park it was claimed in, not woken since)
//! and on the row as the door's claim returned it (its note number), so a hearer that
//! outlived its lease, or one the wake overtook, commits nothing.

use tracing::{info, warn};

use super::hearer::{HearRequest, Heard};
use crate::doorbell::{self, Doorbell};
use crate::row::{Applied, FollowOutcome, Guard, RowStore, StoreError, WakeEvent};
use crate::state::from_status;
use crate::steps::{Invocation, StepError};
use standin_remote::Agent;

pub async fn hear<S: RowStore, D: Doorbell, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    bell: &D,
    request: &HearRequest,
) -> Result<Heard, StepError> {
    let row = &request.row;
    let task_id = row.task_id.as_str();
    let Some(remote) = row.remote_task_id.as_deref() else {
        return Ok(Heard::Passed);
    };
    invocation.teller.read_ahead();
    let agent = match invocation.agent().await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id, error = %err, "agent unavailable to hear a push; the park is rung");
            return Ok(Heard::Passed);
        }
    };
    let task = match agent.get(remote).await {
        Ok(task) => task,
        Err(err) => {
            warn!(task_id, error = %err, "GetTask for a push failed; the park is rung");
            return Ok(Heard::Passed);
        }
    };
    let known = row.last.as_ref().map_or("", |l| l.text.as_str());
    let out = from_status(&task, known).about(remote);
    if request.claimed.is_some_and(|claimed| claimed != out.state) {
        // The agent does not show what its push claims yet: the stand-in's rechecks ask
        // again after their waits.
        info!(
            task_id,
            "a push's claim is not what GetTask answers; the park is rung"
        );
        return Ok(Heard::Passed);
    }
    let guard = Guard::Hearing {
        epoch: row.epoch,
        id: request.hearing.clone(),
    };
    match doorbell::apply_to(&invocation.teller, row, &out, &guard).await {
        Ok(Applied::Changed { row: applied, .. }) => {
            crate::metrics::heard(task.at.as_deref(), "push", task_id);
            report(invocation.rows(), bell, &applied, row.epoch, out.is_final).await;
            Ok(Heard::Told)
        }
        Ok(Applied::Unchanged) | Err(StoreError::Refused(_) | StoreError::NotFound(_)) => {
            Ok(Heard::Passed)
        }
        Err(err) => Err(err.into()),
    }
}

/// Rings the park with what was heard: a final state closed the row, so its park is rung
/// directly (its wake finds the row closed and ends); any other change is recorded as a
/// report, so the wake decides without asking the agent again. A report that cannot be
/// recorded (the park ended meanwhile) is dropped: the note is told already.
async fn report<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    applied: &crate::row::Row,
    epoch: u64,
    is_final: bool,
) {
    let task_id = applied.task_id.as_str();
    if is_final {
        doorbell::ring_parked(bell, applied).await;
        return;
    }
    let event = WakeEvent::Follow {
        epoch,
        outcome: FollowOutcome::Changed { is_final: false },
    };
    if let Err(err) = doorbell::ring(store, bell, task_id, &event, &Guard::Epoch(epoch)).await {
        info!(task_id, error = %err, "a heard push's report was not recorded; the note is told");
    }
}
