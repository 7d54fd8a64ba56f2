//! The hearing of a push the door claimed (`push::door`), outside the state machine: ask
//! the agent where the task stands, commit the change with its note and a report for the
//! wake, send the note, then ring the park, with no Step Functions round trip before the
//! note. Nothing from the push's body is applied. The commit is conditioned on the hearing
//! still being the row's (its id, in the park it was claimed in, not woken since) and ends
//! it, so a hearing commits at most once, and not at all once another claimed the park
//! after its lease or the wake overtook it.

use tracing::{info, warn};

use super::{Invocation, StepError};
use crate::doorbell::{self, Doorbell};
use crate::push::{HearRequest, Heard};
use crate::row::{Applied, Guard, RowStore, StoreError};
use crate::state::from_status;
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
    if invocation.spec.as_ref().is_some_and(|s| s.auth.is_some()) {
        // The hear function holds no agent's credentials (its role reads no secret and
        // assumes no role): an agent that needs them is asked by the wake, as before.
        return Ok(Heard::Passed);
    }
    invocation.teller.read_ahead();
    let agent = match invocation.agent().await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id, error = %err, "agent unavailable to hear a push; the door rings the park");
            return Ok(Heard::Passed);
        }
    };
    let task = match agent.get(remote).await {
        Ok(task) => task,
        Err(err) => {
            warn!(task_id, error = %err, "GetTask for a push failed; the door rings the park");
            return Ok(Heard::Passed);
        }
    };
    let known = row.last_text();
    let out = from_status(&task, known).about(remote);
    if request.claimed.is_some_and(|claimed| claimed != out.state) {
        // The agent does not show what its push claims yet: the stand-in's rechecks ask
        // again after their waits.
        info!(
            task_id,
            "a push's claim is not what GetTask answers; the door rings the park"
        );
        return Ok(Heard::Disagreed);
    }
    let guard = Guard::Hearing {
        epoch: row.epoch,
        id: request.hearing.clone(),
    };
    // The commit records the report for the wake and ends the hearing, in one write.
    let heard = match doorbell::apply_to(&invocation.teller, row, &out, &guard).await {
        Ok(Applied::Changed { row: applied, .. }) => {
            crate::metrics::heard(task.at.as_deref(), "push", task_id);
            // A final state closed the row: its wake finds it closed and ends. Any other
            // change left its report on the row: its wake decides without asking again.
            doorbell::ring_parked(bell, &applied).await;
            Ok(Heard::Told)
        }
        // Nothing to tell: the hearing ends here, so the park's next push is heard.
        Ok(Applied::Unchanged) => invocation
            .rows()
            .end_hearing(task_id, row.epoch, &request.hearing)
            .await
            .map(|()| Heard::Unchanged),
        Err(err) => Err(err),
    };
    match heard {
        Err(StoreError::Refused(_) | StoreError::NotFound(_)) => Ok(Heard::Passed),
        heard => Ok(heard?),
    }
}
