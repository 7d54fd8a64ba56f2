//! The steps of a stand-in: turn, register, fetch, wake, end, park. Each takes the
//! execution's state and returns it with the next step decided.

pub mod next;

use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::agents::AgentSpec;
use crate::doorbell::Doorbell;
use crate::doorbell::{self, EndCause};
use crate::row::{Applied, Closed, RowStore, StoreError};
use crate::row::{Guard, WatchMode};
use crate::state::{MAX_ID_BYTES, RemoteOut, TurnReader, from_status};
use crate::watch::{fit_to_streaming, plan_watch, register};
use next::{Cursor, Next, Pacing, Woke};
use standin_remote::{Agent, FollowUp, RemoteError, Sent, Turn};

/// GetTask attempts when no push triggered the fetch (a push-triggered one has the rechecks).
pub const FETCH_ATTEMPTS: u32 = 3;

/// How the park ended, as the state machine reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParkOutcome {
    pub woke: Woke,
}

/// The execution's state between steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub task_id: String,
    pub agent: String,
    /// The first turn's text (dropped once sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default)]
    pub cursor: Cursor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Next>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub park: Option<ParkOutcome>,
    /// Which execution of this stand-in this is (0, then one more per roll).
    #[serde(default)]
    pub generation: u32,
    /// Set with `Next::Roll`: the successor execution's name and input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor: Option<Successor>,
    /// A Step Functions parent that started this execution itself
    /// (`states:startExecution.waitForTaskToken`) passes its task token here; the first
    /// turn keeps it on the row and drops it from the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_token: Option<String>,
}

/// What the roll starts: the same stand-in under the next generation's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Successor {
    pub name: String,
    pub input: Box<Step>,
}

#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("stand-in {0} has no row: start it through the control API")]
    NoRow(String),
    #[error("step input is missing {0}")]
    Input(&'static str),
}

impl Step {
    /// A new stand-in's first step.
    pub fn start(
        task_id: impl Into<String>,
        agent: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            agent: agent.into(),
            message: Some(message.into()),
            cursor: Cursor::default(),
            next: None,
            park: None,
            generation: 0,
            successor: None,
            parent_task_token: None,
        }
    }

    fn then(mut self, next: Next) -> Self {
        self.next = Some(next);
        self.park = None;
        self.message = None;
        self
    }
}

/// A stand-in started by a Step Functions parent has no row yet: the first turn makes
/// it, with the parent's task token, so its end answers the parent like any other. A row
/// that exists (the control API made it, or this turn is retried) is kept as it is.
///
/// A first step Step Functions would refuse under its own name (the execution must be
/// named by the stand-in's id) or without a message still gets its row, so the turn can
/// end it as failed and the parent hears why instead of waiting.
pub async fn adopt<S: RowStore>(store: &S, step: &mut Step) -> Result<(), StepError> {
    let token = step.parent_task_token.take();
    let first = step.message.is_some() || token.is_some();
    if !first || store.get(&step.task_id).await?.is_some() {
        return Ok(());
    }
    let mut row = crate::row::Row::new(step.task_id.as_str(), step.agent.as_str());
    row.created_at = Some(crate::clock::now_rfc3339());
    row.parent_task_token = token;
    match store.create(&row).await {
        Ok(_) | Err(StoreError::AlreadyExists(_)) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

async fn load_row<S: RowStore>(store: &S, task_id: &str) -> Result<crate::row::Row, StepError> {
    store
        .get(task_id)
        .await?
        .ok_or_else(|| StepError::NoRow(task_id.to_owned()))
}

/// The turn: send the message (first turn, or the parent's reply), read to an interrupted
/// or final state, apply. A follow-up the agent refuses (-32004 for a task that already
/// ended, task not found, a stream that breaks before its first event) may still have
/// moved the task, so GetTask decides; only an agent that cannot be reached at all (or a
/// first turn that fails) ends the stand-in as failed.
pub async fn turn<S: RowStore, A: Agent>(
    store: &S,
    agent: &A,
    mut step: Step,
    window: Duration,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let text = match step.next.take() {
        Some(Next::Turn { reply }) => reply,
        _ => step.message.take().ok_or(StepError::Input("message"))?,
    };
    let row = load_row(store, &step.task_id).await?;
    let follow_up =
        row.remote_task_id
            .clone()
            .zip(row.context_id.clone())
            .map(|(task_id, context_id)| FollowUp {
                task_id,
                context_id,
            });
    let message = Turn::new(text, follow_up);
    let mut sent = send(agent, &message, window).await;
    if row.remote_task_id.is_some()
        && matches!(&sent, Err(err) if err.is_retryable() && !matches!(err, RemoteError::Timeout { .. }))
    {
        // Refused before the agent took it (connection, 5xx, 429): once more.
        tokio::time::sleep(RESEND_AFTER).await;
        sent = send(agent, &message, window).await;
    }
    let (out, context) = match sent {
        Ok(Some(result)) => result,
        refused => {
            // A timeout may have delivered the reply all the same: the watch will tell.
            let maybe_taken = matches!(&refused, Err(RemoteError::Timeout { .. }));
            let why = match refused {
                Err(err) => format!("turn failed: {err}"),
                _ => "the agent answered without a task state".to_owned(),
            };
            warn!(task_id = %step.task_id, reason = %why, "turn refused; asking GetTask");
            let Some(remote) = row.remote_task_id.as_deref() else {
                return Ok(step.then(Next::End(EndCause::failed(&why))));
            };
            match agent.get(remote).await {
                Ok(task) => {
                    let known = row.last.as_ref().map_or("", |l| l.text.as_str());
                    let out = from_status(&task, known).about(remote);
                    // Nothing moved and the agent still waits for input: the reply was not
                    // taken, and parking would leave parent and agent waiting on each other.
                    if out.state.is_interrupted()
                        && !maybe_taken
                        && row
                            .last
                            .as_ref()
                            .is_some_and(|last| !out.differs_from(last))
                    {
                        let reason = format!("the agent did not take the reply ({why})");
                        return Ok(step.then(Next::End(EndCause::failed(&reason))));
                    }
                    (out, None)
                }
                Err(err) => {
                    let reason = format!("{why}; GetTask failed too: {err}");
                    return Ok(step.then(Next::End(EndCause::failed(&reason))));
                }
            }
        }
    };
    let out = match row.remote_task_id.as_deref() {
        Some(remote) => out.about(remote),
        None => {
            let too_long = out.remote_task_id.len() > MAX_ID_BYTES
                || context.as_ref().is_some_and(|c| c.len() > MAX_ID_BYTES);
            if too_long || out.remote_task_id.is_empty() {
                let reason = format!(
                    "the agent's task or context id is empty or over the {MAX_ID_BYTES}-byte limit"
                );
                return Ok(step.then(Next::End(EndCause::failed(&reason))));
            }
            store
                .set_remote(&step.task_id, &out.remote_task_id, context.as_deref())
                .await?;
            out
        }
    };
    if apply_open(store, &step.task_id, &out).await? == Outcome::AlreadyFinal {
        return Ok(step.then(Next::End(EndCause::Final)));
    }
    let next = next::after_turn(
        &mut step.cursor,
        &out,
        row.watch.as_ref().map(|w| w.mode),
        pacing,
    );
    Ok(step.then(next))
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The row moved and the parent's note (if the change is one) was written.
    Changed,
    /// The agent said what the row already knew.
    Unchanged,
    /// The row was already closed by a final state (a retry of a step that applied it):
    /// the stand-in ends, and the parent has been told.
    AlreadyFinal,
}

/// A step's apply (turn, fetch): refused only on a closed row, which a final state closed.
async fn apply_open<S: RowStore>(
    store: &S,
    task_id: &str,
    out: &RemoteOut,
) -> Result<Outcome, StepError> {
    match doorbell::apply(store, task_id, out, &Guard::Open).await {
        Ok(Applied::Changed { .. }) => Ok(Outcome::Changed),
        Ok(Applied::Unchanged) => Ok(Outcome::Unchanged),
        Err(StoreError::Refused(_)) => Ok(Outcome::AlreadyFinal),
        Err(err) => Err(err.into()),
    }
}

/// How long a refused follow-up waits before it is sent once more.
const RESEND_AFTER: Duration = Duration::from_secs(2);

async fn send<A: Agent>(
    agent: &A,
    message: &Turn,
    window: Duration,
) -> Result<Option<(RemoteOut, Option<String>)>, RemoteError> {
    if agent.can_stream() {
        send_turn(agent, message, window).await
    } else {
        send_unary(agent, message, window).await
    }
}

/// The turn of an agent whose card says it cannot stream: SendMessage answers at once
/// (`returnImmediately`); GetTask then follows the task, waiting 1 s, 2 s, 4 s, … (at
/// most 8 s) between asks, to an interrupted or final state or the end of the window.
/// So a first turn longer than the window still learns its task and hands it to the watch.
async fn send_unary<A: Agent>(
    agent: &A,
    message: &Turn,
    window: Duration,
) -> Result<Option<(RemoteOut, Option<String>)>, RemoteError> {
    let deadline = tokio::time::Instant::now() + window;
    let task = match agent.send(message).await? {
        Sent::Task(task) => task,
        Sent::Answer(_) => return Ok(None),
    };
    let context = task.context_id.clone();
    let mut out = from_status(&task, "");
    let mut wait = Duration::from_secs(1);
    while !(out.is_final || out.state.is_interrupted())
        && tokio::time::Instant::now() + wait < deadline
    {
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(UNARY_POLL_MAX);
        match agent.get(&task.task_id).await {
            Ok(now) => out = from_status(&now, &out.text).about(&task.task_id),
            Err(err) if err.is_retryable() => continue,
            Err(_) => break,
        }
    }
    Ok(Some((out, context)))
}

/// The longest wait between GetTask calls while a non-streaming turn runs.
const UNARY_POLL_MAX: Duration = Duration::from_secs(8);

async fn send_turn<A: Agent>(
    agent: &A,
    message: &Turn,
    window: Duration,
) -> Result<Option<(RemoteOut, Option<String>)>, RemoteError> {
    let mut reader = TurnReader::new();
    let mut stream = agent.send_streaming(message).await?;
    let deadline = tokio::time::Instant::now() + window;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            // The window is over: what was seen so far is the turn's result; the watch
            // hears the rest.
            Err(_) | Ok(None) => break,
            Ok(Some(Err(err))) => {
                if reader.last().is_none() {
                    return Err(err);
                }
                break;
            }
            Ok(Some(Ok(event))) => {
                if reader.read(&event) {
                    break;
                }
            }
        }
    }
    let context = reader.context_id().map(str::to_owned);
    Ok(reader.finish().map(|out| (out, context)))
}

/// Choose the watch once; push registers with a fresh token whose digest goes on the row.
pub async fn register_watch<S: RowStore, A: Agent>(
    store: &S,
    agent: &A,
    spec: Option<&AgentSpec>,
    push_base_url: Option<&str>,
    mut step: Step,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let row = load_row(store, &step.task_id).await?;
    let remote = row
        .remote_task_id
        .clone()
        .ok_or(StepError::Input("a remote task id (no turn yet)"))?;
    let plan = plan_watch(spec.map(|s| s.updates), agent.can_push(), push_base_url);
    let watch = fit_to_streaming(
        register(agent, plan, &step.task_id, &remote, push_base_url).await,
        agent.can_stream(),
    );
    info!(task_id = %step.task_id, mode = ?watch.mode, "watch chosen");
    store.set_watch(&step.task_id, &watch).await?;
    let next = next::after_register(&mut step.cursor, watch.mode, pacing);
    Ok(step.then(next))
}

/// GetTask and apply. A failure keeps the row's last state (fail closed).
pub async fn fetch<S: RowStore, A: Agent>(
    store: &S,
    agent: &A,
    mut step: Step,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let push_triggered = matches!(
        step.next,
        Some(Next::Fetch {
            push_triggered: true
        })
    );
    let row = load_row(store, &step.task_id).await?;
    let remote = row
        .remote_task_id
        .clone()
        .ok_or(StepError::Input("a remote task id"))?;
    let attempts = if push_triggered { 1 } else { FETCH_ATTEMPTS };
    let mut fetched = None;
    let mut changed_at = None;
    for attempt in 1..=attempts {
        match agent.get(&remote).await {
            Ok(task) => {
                let known = row.last.as_ref().map_or("", |l| l.text.as_str());
                fetched = Some(from_status(&task, known).about(&remote));
                changed_at = task.at;
                break;
            }
            Err(err) => {
                warn!(task_id = %step.task_id, attempt, error = %err, "GetTask failed");
                if !err.is_retryable() {
                    break;
                }
            }
        }
    }
    if let Some(out) = &fetched {
        match apply_open(store, &step.task_id, out).await? {
            Outcome::AlreadyFinal => return Ok(step.then(Next::End(EndCause::Final))),
            Outcome::Changed => {
                let watch = match row.mode() {
                    WatchMode::Push => "push",
                    WatchMode::Follow => "follow",
                    WatchMode::Off => "off",
                };
                crate::metrics::heard(changed_at.as_deref(), watch, &step.task_id);
            }
            Outcome::Unchanged => {}
        }
    }
    let next = next::after_fetch(&mut step.cursor, row.mode(), fetched.as_ref(), pacing);
    Ok(step.then(next))
}

/// The park step for push and off: store the token if this park is the newest; ring
/// itself if an event waits. A late or repeated invoke changes nothing.
pub async fn park<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    park: u64,
    token: &str,
) -> Result<bool, StepError> {
    Ok(doorbell::park(store, bell, task_id, park, token)
        .await?
        .is_some())
}

/// After a park: count the cycle (roll past the bound), end the park, drain one event,
/// decide. A row closed by a final state (a follow applied it) ends the stand-in.
pub async fn wake_up<S: RowStore>(
    store: &S,
    mut step: Step,
    history_bound: u32,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let park = next::park_number(step.next.as_ref()).unwrap_or(step.cursor.parks);
    if next::count_cycle(&mut step.cursor, history_bound) {
        // Nothing is drained: pending events wait on the row for the successor's park.
        let row = store.wake(&step.task_id, park).await?;
        let input = successor(&step, row.mode(), pacing);
        step.successor = Some(Successor {
            name: execution_name(&step.task_id, input.generation),
            input: Box::new(input),
        });
        return Ok(step.then(Next::Roll));
    }
    let woke = step.park.map_or(Woke::Rung, |p| p.woke);
    let drained = store.drain(&step.task_id, park).await?;
    if drained.row.closed {
        return Ok(step.then(Next::End(EndCause::Final)));
    }
    let next = next::after_wake(
        &mut step.cursor,
        drained.row.mode(),
        woke,
        drained.event,
        pacing,
    );
    Ok(step.then(next))
}

/// The successor's input after a roll: same stand-in, fresh cycle count, same timers and
/// park numbers, starting with the park its watch needs.
pub fn successor(step: &Step, mode: WatchMode, pacing: Pacing) -> Step {
    let mut cursor = step.cursor.rolled();
    let next = next::park_for(&mut cursor, mode, pacing);
    Step {
        task_id: step.task_id.clone(),
        agent: step.agent.clone(),
        message: None,
        next: Some(next),
        cursor,
        park: None,
        generation: step.generation + 1,
        successor: None,
        parent_task_token: None,
    }
}

/// The execution name of a generation: the local task id, then `__N` after rolls
/// (execution names allow only letters, digits, `-` and `_`; local ids may not hold `__`).
pub fn execution_name(task_id: &str, generation: u32) -> String {
    if generation == 0 {
        task_id.to_owned()
    } else {
        format!("{task_id}__{generation}")
    }
}

/// Why the end runs (a missing cause is a routing fault: said, not hidden).
pub fn end_cause(step: &Step) -> EndCause {
    match &step.next {
        Some(Next::End(cause)) => cause.clone(),
        _ => EndCause::Failed {
            reason: "ended without a cause".into(),
        },
    }
}

/// The end: close, tell the parent, clean up (see `doorbell::end`). `connect` reads the
/// agent card, only when the end needs the agent. A row that is gone (it expired) has
/// nothing left to close: the end is done.
pub async fn end<S, A, C, F>(
    store: &S,
    step: &Step,
    connect: C,
) -> Result<Option<Closed>, StepError>
where
    S: RowStore,
    A: Agent,
    C: FnOnce() -> F,
    F: std::future::Future<Output = Option<A>>,
{
    match doorbell::end(store, &step.task_id, &end_cause(step), connect).await {
        Ok(closed) => Ok(Some(closed)),
        Err(StoreError::NotFound(_)) => {
            warn!(task_id = %step.task_id, "no row to close; the stand-in has ended");
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}
