//! The registration: the watch chosen once per remote task, then a check.

use std::future::Future;

use tracing::{info, warn};

use super::next::{self, Next, Pacing};
use super::{Step, StepError, check, load_row, ready};
use crate::agents::AgentSpec;
use crate::outbox::Teller;
use crate::row::{RowStore, Watch, WatchMode};
use crate::watch::{fit_to_streaming, plan_watch, register as register_push};
use standin_remote::{Agent, RemoteError};

/// Choose the watch once; push registers with a fresh token whose digest goes on the row,
/// then a check reconciles with GetTask in the same invocation. Without a card now the
/// stand-in follows: following needs none up front and retries on its own.
pub async fn register<S, A, C, F>(
    teller: &Teller<'_, S>,
    connect: C,
    spec: Option<&AgentSpec>,
    push_base_url: Option<&str>,
    mut step: Step,
    pacing: Pacing,
) -> Result<Step, StepError>
where
    S: RowStore,
    A: Agent,
    C: FnOnce() -> F,
    F: Future<Output = Result<A, RemoteError>>,
{
    let row = load_row(teller.rows(), &step).await?;
    let remote = row
        .remote_task_id
        .clone()
        .ok_or(StepError::Input("a remote task id (no turn yet)"))?;
    let agent = match connect().await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "card unavailable at registration; following");
            teller.set_watch(&step.task_id, &Watch::follow()).await?;
            let next = next::after_register(&mut step.cursor, WatchMode::Follow, pacing);
            return Ok(step.then(next));
        }
    };
    let plan = plan_watch(spec.map(|s| s.updates), agent.can_push(), push_base_url);
    let watch = fit_to_streaming(
        register_push(&agent, plan, &step.task_id, &remote, push_base_url).await,
        agent.can_stream(),
    );
    info!(task_id = %step.task_id, mode = ?watch.mode, "watch chosen");
    let row = teller.set_watch(&step.task_id, &watch).await?;
    let next = next::after_register(&mut step.cursor, watch.mode, pacing);
    let step = step.then(next);
    match step.next {
        Some(Next::Check { .. }) => check(teller, ready(agent), step, Some(row), pacing).await,
        _ => Ok(step),
    }
}
