//! The check: ask the agent where the task stands (GetTask) and apply it.

use tracing::warn;

use super::next::{self, Next, Pacing};
use super::{Invocation, Outcome, Step, StepError, apply_open, load_row};
use crate::doorbell::EndCause;
use crate::row::{Row, RowStore};
use crate::state::from_status;
use standin_remote::{Agent, RemoteError, Status};

/// GetTask attempts when no push triggered the check (a push-triggered one has the
/// rechecks).
pub const CHECK_ATTEMPTS: u32 = 3;

/// The check, when the step decided on one (`known`: the row its write left).
pub(crate) async fn check_if_decided<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    step: Step,
    known: Option<Row>,
    pacing: Pacing,
) -> Result<Step, StepError> {
    match step.next {
        Some(Next::Check { .. }) => checked(invocation, None, step, known, pacing).await,
        _ => Ok(step),
    }
}

/// A GetTask of `remote` asked before the check (while the wake drained), and its answer.
pub struct AskedAhead {
    pub remote: String,
    pub answer: Result<Status, RemoteError>,
}

/// GetTask (unless asked `ahead`) and apply. An agent out of reach, or a failed GetTask,
/// keeps the row's last state (fail closed) and the rechecks go on. `known`: the row as the
/// step's own write just left it, if any (a read less before the agent is asked).
pub async fn checked<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    ahead: Option<AskedAhead>,
    mut step: Step,
    known: Option<Row>,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let teller = &invocation.teller;
    let push_triggered = step.next == Some(next::PUSH_CHECK);
    let row = match known {
        Some(row) => {
            step.refuse_if_not_ours(Some(&row))?;
            row
        }
        None => load_row(teller.rows(), &step).await?,
    };
    // Asked about the remote task the row names still (it never changes once set).
    let mut answered = ahead
        .filter(|a| row.remote_task_id.as_deref() == Some(a.remote.as_str()))
        .map(|a| a.answer);
    let agent = match invocation.agent().await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "agent unavailable for GetTask; keeping the last state");
            let next = next::unreachable(&mut step.cursor, &step.agent, &cause(&err), pacing)
                .unwrap_or_else(|| {
                    next::after_check(&mut step.cursor, row.mode(), None, false, pacing)
                });
            return Ok(step.then(next));
        }
    };
    let Some(remote) = row.remote_task_id.clone() else {
        // Nothing to ask about (an off park before any remote task): park as before.
        let next = next::after_check(&mut step.cursor, row.mode(), None, false, pacing);
        return Ok(step.then(next));
    };
    let attempts = if push_triggered { 1 } else { CHECK_ATTEMPTS };
    let mut fetched = None;
    let mut changed_at = None;
    let mut failure = None;
    for attempt in 1..=attempts {
        let answer = match answered.take() {
            Some(answer) => answer,
            None => agent.get(&remote).await,
        };
        match answer {
            Ok(task) => {
                let known = row.last_text();
                fetched = Some(from_status(&task, known).about(&remote));
                changed_at = task.at;
                break;
            }
            Err(err) => {
                warn!(task_id = %step.task_id, attempt, error = %err, "GetTask failed");
                let retryable = err.is_retryable();
                failure = Some(err);
                if !retryable {
                    break;
                }
            }
        }
    }
    let mut changed = false;
    if let Some(out) = &fetched {
        match apply_open(teller, &step.task_id, Some(&row), out).await? {
            Outcome::AlreadyFinal => return Ok(step.then(Next::End(EndCause::Final))),
            Outcome::Changed(_) => {
                changed = true;
                crate::metrics::heard(changed_at.as_deref(), row.mode().as_str(), &step.task_id);
            }
            Outcome::Unchanged => {}
        }
    }
    let mode = row.mode();
    if fetched.is_none() && matches!(failure, Some(RemoteError::TaskNotFound(_))) {
        // The agent no longer knows the task: asking would go on for ever. Re-checked a
        // bounded number of times, then the stand-in ends failed.
        warn!(task_id = %step.task_id, gone_checks = step.cursor.gone_checks + 1, "remote task unknown to the agent");
        let next = next::after_gone(&mut step.cursor, mode, pacing);
        return Ok(step.then(next));
    }
    if fetched.is_some() {
        step.cursor.gone_checks = 0;
        step.cursor.reached();
    } else if let Some(err) = failure
        && let Some(end) = next::unreachable(&mut step.cursor, &step.agent, &cause(&err), pacing)
    {
        return Ok(step.then(end));
    }
    let next = next::after_check(&mut step.cursor, mode, fetched.as_ref(), changed, pacing);
    Ok(step.then(next))
}

/// Why the agent could not be reached, in the stand-in's own words: the parent's note
/// carries no text the agent or a transport wrote (an echoed key, a URL's query), only
/// what kind of failure it was and its status.
fn cause(err: &RemoteError) -> String {
    match err {
        RemoteError::Http { .. }
        | RemoteError::Timeout { .. }
        | RemoteError::TooLarge { .. }
        | RemoteError::Unauthorized { .. } => err.to_string(),
        RemoteError::Rpc { code, .. } => format!("the agent answered JSON-RPC error {code}"),
        RemoteError::Grpc { code, .. } => format!("the agent answered gRPC status {code}"),
        other => format!(
            "{} (the functions' log has the detail)",
            other.kind().replace('_', " ")
        ),
    }
}
