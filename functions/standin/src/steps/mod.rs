//! The state machine's steps. Each takes the execution's state and returns it with the
//! next step decided, by [`next`] (parks, rechecks, rolls, turns, registration) or as an
//! end its own exchange with the agent called for (a first turn refused, an agent out of
//! reach), with its reason. Only this module decides; the wiring just builds each
//! invocation's view of its stand-in (`Invocation`) and hands it to the step.

mod check;
mod end;
mod hear;
mod invocation;
pub mod next;
mod park;
mod progress;
mod register;
mod turn;
mod wake;

pub use progress::COALESCE;

use serde::{Deserialize, Serialize};
use standin_wire::InputPart;

pub use check::CHECK_ATTEMPTS;
pub use end::end;
pub use hear::hear;
pub use invocation::Invocation;
pub use park::{Owner, ParkInput, park};
pub use register::register;
pub use turn::{adopt, turn};
pub use wake::{successor, take_rung, wake};

use crate::doorbell;
use crate::outbox::Teller;
use crate::row::{Applied, Guard, Row, RowStore, RungPush, StoreError};
use crate::state::RemoteOut;
use next::{Cursor, Next, Woke};

/// How the park ended, as the state machine reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParkOutcome {
    pub woke: Woke,
    /// The push pending on the row when it rang (`Doorbell::ring`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<RungPush>,
}

#[cfg(any(test, feature = "test-support"))]
impl ParkOutcome {
    /// A park that ended with no push carried.
    pub fn woke(woke: Woke) -> Self {
        Self { woke, push: None }
    }
}

/// The execution's state between steps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub task_id: String,
    pub agent: String,
    /// The first turn's text (dropped once sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What the parent gave beside the first turn's text (dropped with it), as given: a
    /// parent that starts the execution itself writes them, and the first turn reads
    /// them with the control API's rules (a bad one ends the stand-in, saying why).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub parts: serde_json::Value,
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
    /// The execution running this step, as the state machine's first state (Bind) writes
    /// it from `$$.Execution.Name`: what the step checks its row against. None only where
    /// no state machine runs the step (unit tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionName>,
    /// A rolled generation's lease, as its predecessor wrote it on the row; always
    /// written (null before the first roll), since the park states read `$.lease`.
    #[serde(default)]
    pub lease: Option<String>,
    /// Seconds the stand-in may live from its first turn, as its starter asked (at most
    /// the stack's `MaxStandInSecs`); none: its agent's `max_duration`, or the stack's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_secs: Option<u64>,
    /// The stand-in's W3C `traceparent`: the one its starter gave, or the one its first
    /// turn began (see [`Step::traced`]). Every call to the agent carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// The execution running a step, as the state machine's Bind state names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionName {
    pub name: String,
}

/// Whether an execution may act on stand-in `task_id`'s row: named as that stand-in's
/// generation (`{task_id}`, `{task_id}__N`), the row's live generation with its lease or
/// the one before with the lease it had (finishing its own roll, or ending the stand-in),
/// and running the row's agent. The reason it may not, or None.
pub fn not_ours(
    task_id: &str,
    generation: u32,
    execution: Option<&str>,
    lease: Option<&str>,
    row: Option<&Row>,
) -> Option<String> {
    let name = execution?;
    let expected = execution_name(task_id, generation);
    if name != expected {
        return Some(format!(
            "execution {name:?} is not stand-in {task_id:?}'s (its generation {generation} runs as {expected:?})"
        ));
    }
    let Some(row) = row else {
        // No row yet: only a first turn makes one, for generation 0 by its own name.
        return (generation > 0).then(|| {
            format!("execution {name:?} is not the live generation of stand-in {task_id:?}")
        });
    };
    let live = generation == row.generation && lease == row.lease.as_deref();
    let finishing = generation + 1 == row.generation && lease == row.previous_lease.as_deref();
    if !(live || finishing) {
        return Some(format!(
            "execution {name:?} is not the live generation of stand-in {task_id:?} (that is {})",
            execution_name(task_id, row.generation)
        ));
    }
    None
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
    /// The execution is not the stand-in's (see `not_ours`): it may not touch the row.
    #[error("{0}")]
    NotOurs(String),
    /// The stand-in ended with no row to record it (its id broke the rules), while a
    /// parent's token waits in the step: the state machine answers it with this reason.
    #[error("{0}")]
    Unrecorded(String),
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
    /// The bucket of the files the parent uploaded did not answer.
    #[error("the uploaded files could not be read: {0}")]
    Uploads(crate::artifacts::BlobError),
}

impl Step {
    /// The refusal of a step run by an execution that is not its stand-in's.
    pub fn refuse_if_not_ours(&self, row: Option<&Row>) -> Result<(), StepError> {
        if let (Some(_), Some(row)) = (&self.execution, row)
            && row.agent != self.agent
        {
            return Err(StepError::NotOurs(format!(
                "the execution runs agent {:?}, stand-in {:?} agent {:?}",
                self.agent, self.task_id, row.agent
            )));
        }
        let execution = self.execution.as_ref().map(|b| b.name.as_str());
        let lease = self.lease.as_deref();
        let reason = not_ours(&self.task_id, self.generation, execution, lease, row);
        reason.map_or(Ok(()), |reason| Err(StepError::NotOurs(reason)))
    }

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
            ..Self::default()
        }
    }

    /// The start, in the trace its starter gave or began (a `traceparent`).
    pub fn with_trace(self, traceparent: String) -> Self {
        Self {
            traceparent: Some(traceparent),
            ..self
        }
    }

    /// A first turn with no trace (a Step Functions parent gave none) begins one, before
    /// the agent is reached, so every call carries it; `random` is 24 fresh bytes. Any
    /// other step is left as it is.
    pub fn traced(self, random: [u8; 24]) -> Self {
        if self.traceparent.is_some() || self.message.is_none() {
            return self;
        }
        self.with_trace(standin_wire::TraceContext::begin(random).header())
    }

    /// The start, with what its starter gave beside the message.
    pub fn with_parts(self, parts: Vec<InputPart>) -> Self {
        let parts = match parts.is_empty() {
            true => serde_json::Value::Null,
            false => serde_json::to_value(parts).unwrap_or_default(),
        };
        Self { parts, ..self }
    }

    /// The start, with the deadline its starter asked for.
    pub fn with_deadline(self, deadline_secs: Option<u64>) -> Self {
        Self {
            deadline_secs,
            ..self
        }
    }

    fn then(mut self, next: Next) -> Self {
        self.next = Some(next);
        self.park = None;
        self.message = None;
        self.parts = serde_json::Value::Null;
        self
    }
}

/// The stand-in's row, for a step its execution may take (`not_ours`).
pub(crate) async fn load_row<S: RowStore>(store: &S, step: &Step) -> Result<Row, StepError> {
    let row = store
        .get(&step.task_id)
        .await?
        .ok_or_else(|| StepError::NoRow(step.task_id.clone()))?;
    step.refuse_if_not_ours(Some(&row))?;
    Ok(row)
}

/// Refuses a step whose execution is not its stand-in's, before it touches anything: by
/// its name, and against the row's live generation and lease when there is a row. `known`:
/// the row as the invocation read it on its way in, if any (judging instead of a read).
pub(crate) async fn ensure_ours<S: RowStore>(
    store: &S,
    step: &Step,
    known: Option<&Row>,
) -> Result<(), StepError> {
    if let Some(row) = known {
        return step.refuse_if_not_ours(Some(row));
    }
    if step.execution.is_none() {
        return Ok(());
    }
    let row = store.get(&step.task_id).await?;
    step.refuse_if_not_ours(row.as_ref())
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The row moved and the parent's note (if the change is one) was written; the row
    /// as that write left it (the next apply's row seen, a read less).
    Changed(Box<Row>),
    /// The agent said what the row already knew.
    Unchanged,
    /// The row was already closed by a final state (a retry of a step that applied it):
    /// the stand-in ends, and the parent has been told.
    AlreadyFinal,
}

/// A step's apply (turn, check): refused only on a closed row, which a final state closed.
/// `seen`: the row as the step last read or wrote it, when it has one (a read less).
pub(crate) async fn apply_open<S: RowStore>(
    teller: &Teller<'_, S>,
    task_id: &str,
    seen: Option<&Row>,
    out: &RemoteOut,
) -> Result<Outcome, StepError> {
    let applied = match seen {
        Some(row) => doorbell::apply_to(teller, row, out, &Guard::Open).await,
        None => doorbell::apply(teller, task_id, out, &Guard::Open).await,
    };
    match applied {
        Ok(Applied::Changed { row, .. }) => Ok(Outcome::Changed(row)),
        Ok(Applied::Unchanged) => Ok(Outcome::Unchanged),
        Err(StoreError::Refused(_)) => Ok(Outcome::AlreadyFinal),
        Err(err) => Err(err.into()),
    }
}

/// The execution name of a generation: the local task id, then `__N` after rolls
/// (execution names allow only letters, digits, `-` and `_`; local ids may not hold `__`).
pub fn execution_name(task_id: &str, generation: u32) -> String {
    match generation {
        0 => task_id.to_owned(),
        _ => format!("{task_id}__{generation}"),
    }
}
