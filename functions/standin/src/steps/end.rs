//! The end: close first, tell the parent, then clean up at the agent.

use tracing::warn;

use super::next::Next;
use super::{Invocation, Step, StepError, ensure_ours};
use crate::doorbell::{self, EndCause};
use crate::row::{Closed, RowStore, StoreError};
use standin_remote::Agent;

/// Why the end runs (a missing cause is a routing fault: said, not hidden).
fn end_cause(step: &Step) -> EndCause {
    match &step.next {
        Some(Next::End(cause)) => cause.clone(),
        _ => EndCause::Failed {
            reason: "ended without a cause".into(),
        },
    }
}

/// The end: close, tell the parent, clean up (see `doorbell::end_in_order`). The agent
/// is reached (its card read) only when the end needs it. A row that is gone (it
/// expired) has nothing left to close: the end is done.
pub async fn end<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    step: &Step,
) -> Result<Option<Closed>, StepError> {
    let teller = &invocation.teller;
    // The row as the invocation read it judges, when it found one: a read less.
    ensure_ours(teller.rows(), step, invocation.row.as_ref()).await?;
    let connect = || async {
        invocation
            .agent()
            .await
            .map_err(
                |err| warn!(task_id = %step.task_id, error = %err, "agent unavailable at the end"),
            )
            .ok()
    };
    match doorbell::end_in_order(teller, &step.task_id, &end_cause(step), connect).await {
        Ok(closed) => Ok(Some(closed)),
        // No row, but a parent waits on the token this step still carries (a stand-in
        // whose id broke the rules got no row): the state machine answers it with why.
        Err(StoreError::NotFound(_)) if step.parent_task_token.is_some() => {
            let reason = match end_cause(step) {
                EndCause::Failed { reason }
                | EndCause::Cancelled { reason }
                | EndCause::Deadline { reason } => reason,
                EndCause::Final => "the stand-in ended before it had a row".to_owned(),
            };
            Err(StepError::Unrecorded(reason))
        }
        Err(StoreError::NotFound(_)) => {
            warn!(task_id = %step.task_id, "no row to close; the stand-in has ended");
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}
