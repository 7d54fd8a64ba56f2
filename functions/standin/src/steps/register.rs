//! The registration: the watch chosen once per remote task, then a check.

use tracing::{info, warn};

use super::check::check_if_decided;
use super::next::{self, Pacing};
use super::{Invocation, Step, StepError, load_row};
use crate::row::{RowStore, Watch, WatchMode};
use crate::watch::{fit_to_streaming, plan_watch, register as register_push};
use standin_remote::Agent;

/// Choose the watch once; push registers with a fresh token whose digest goes on the row,
/// then a check reconciles with GetTask in the same invocation. Without a card now the
/// stand-in follows: following needs none up front and retries on its own.
pub async fn register<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    push_base_url: Option<&str>,
    mut step: Step,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let teller = &invocation.teller;
    let row = load_row(teller.rows(), &step).await?;
    let remote = row
        .remote_task_id
        .clone()
        .ok_or(StepError::Input("a remote task id (no turn yet)"))?;
    let agent = match invocation.agent().await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "card unavailable at registration; following");
            teller.set_watch(&step.task_id, &Watch::follow()).await?;
            let next = next::after_register(&mut step.cursor, WatchMode::Follow, pacing);
            return Ok(step.then(next));
        }
    };
    let updates = invocation.spec.as_ref().map(|s| s.updates);
    let plan = plan_watch(updates, agent.can_push(), push_base_url);
    let watch = fit_to_streaming(
        register_push(agent, plan, &step.task_id, &remote, push_base_url).await,
        agent.can_stream(),
    );
    info!(task_id = %step.task_id, mode = ?watch.mode, "watch chosen");
    let row = teller.set_watch(&step.task_id, &watch).await?;
    let next = next::after_register(&mut step.cursor, watch.mode, pacing);
    check_if_decided(invocation, step.then(next), Some(row), pacing).await
}
