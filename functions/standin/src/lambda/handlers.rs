//! The state machine's steps as Lambda handlers: each hands its step the adapters it
//! runs on. Nothing is decided here: every fallback is the step's own (`steps`, `follow`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

use standin_remote::{AgentClient, RemoteError};

use super::deps::{Rows, Standing, StepDeps};
use super::failure::StepFailure;
use crate::agents::AgentSpec;
use crate::artifacts::{Collecting, Desk, WithArtifacts};
use crate::follow::{self, FollowTiming};
use crate::row::Row;
use crate::steps::next::FOLLOW_WINDOW_SECS;
use crate::steps::{self, Owner, Step};

/// The input of a `.waitForTaskToken` park: the stand-in, the park's number and token,
/// and the execution that parks (its name, generation and lease).
#[derive(Debug, Deserialize)]
pub struct ParkInput {
    pub task_id: String,
    #[serde(default)]
    pub agent: String,
    pub park: u64,
    pub token: String,
    #[serde(default)]
    pub execution: Option<String>,
    #[serde(default)]
    pub generation: u32,
    #[serde(default)]
    pub lease: Option<String>,
}

impl ParkInput {
    fn owner(&self) -> Owner {
        Owner {
            execution: self.execution.clone(),
            generation: self.generation,
            lease: self.lease.clone(),
        }
    }
}

/// The agent as the steps reach it: its answers' artifacts go to the desk.
type Reached = Collecting<AgentClient>;

/// Connects to the stand-in's agent only when the step asks.
fn connector(
    deps: &'static StepDeps,
    task_id: &str,
    agent: &str,
    spec: Option<AgentSpec>,
    desk: Option<Arc<Desk>>,
) -> impl FnOnce() -> ConnectFuture + use<> {
    let agent = agent.to_owned();
    let task_id = task_id.to_owned();
    move || {
        Box::pin(async move {
            let Some(spec) = spec else {
                return Err(RemoteError::Card(format!(
                    "no agent {agent:?} in the stack's Agents or the agent registry"
                )));
            };
            let sink = desk.as_ref().map(|d| d.sink());
            let client = deps.connect(&spec, &task_id).await?.with_artifacts(sink);
            Ok(Collecting::new(client, desk))
        })
    }
}

/// The stand-in's agent, the way to reach it, its artifacts desk, and its row as read
/// on the way in.
async fn reach(
    deps: &'static StepDeps,
    step: &Step,
) -> Result<
    (
        Option<AgentSpec>,
        impl FnOnce() -> ConnectFuture + use<>,
        Option<Arc<Desk>>,
        Option<Row>,
    ),
    StepFailure,
> {
    let Standing { spec, token, row } = deps.standing(&step.task_id, &step.agent).await?;
    let desk = deps.desk(&step.task_id, token);
    Ok((
        spec.clone(),
        connector(deps, &step.task_id, &step.agent, spec, desk.clone()),
        desk,
        row,
    ))
}

type ConnectFuture =
    std::pin::Pin<Box<dyn Future<Output = Result<Reached, RemoteError>> + Send + 'static>>;

/// What the calls saw but no note carried is kept for the next one.
async fn keep(desk: Option<Arc<Desk>>) {
    if let Some(desk) = desk
        && let Err(err) = desk.keep().await
    {
        tracing::error!(error = %err, "artifacts seen but not recorded");
    }
}

/// The deployment's pacing with the stand-in's agent's own poll bound.
fn pacing(deps: &StepDeps, spec: Option<&AgentSpec>) -> steps::next::Pacing {
    let pacing = deps.settings.pacing;
    spec.map_or(pacing, |spec| pacing.with_poll_max(spec.poll_max_interval))
}

pub async fn turn(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect, desk, _) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let step = steps::turn(
        &deps.sending(&WithArtifacts::new(&deps.store, desk.clone())),
        connect,
        spec.as_ref(),
        step,
        settings.turn_window,
        pacing(deps, spec.as_ref()),
    )
    .await?;
    keep(desk).await;
    Ok(step)
}

pub async fn register(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect, desk, _) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let step = steps::register(
        &deps.sending(&WithArtifacts::new(&deps.store, desk.clone())),
        connect,
        spec.as_ref(),
        settings.push_base_url.as_deref(),
        step,
        pacing(deps, spec.as_ref()),
    )
    .await?;
    keep(desk).await;
    Ok(step)
}

pub async fn wake(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect, desk, row) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let step = steps::wake(
        &deps.sending(&WithArtifacts::new(&deps.store, desk.clone())),
        connect,
        step,
        row.as_ref(),
        settings.history_bound,
        pacing(deps, spec.as_ref()),
    )
    .await?;
    keep(desk).await;
    Ok(step)
}

/// Close and tell the parent before anything slow at the agent: the card is read only
/// when the end needs the agent (a cancel's remote answer, a push config to delete).
pub async fn end(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (_, connect, desk, _) = reach(deps, &step).await?;
    steps::end(
        &deps.sending(&WithArtifacts::new(&deps.store, desk.clone())),
        &step,
        connect,
    )
    .await?;
    keep(desk).await;
    Ok(step)
}

pub async fn park(deps: &'static Rows, input: ParkInput) -> Result<Value, StepFailure> {
    let stored = steps::park(
        &deps.store,
        &deps.bell,
        &input.task_id,
        input.park,
        &input.token,
        &input.owner(),
    )
    .await?;
    Ok(json!({"parked": stored}))
}

pub async fn follow(deps: &'static StepDeps, input: ParkInput) -> Result<Value, StepFailure> {
    let Standing { spec, token, .. } = deps
        .standing(&input.task_id, &input.agent)
        .await
        .map_err(StepFailure::from)?;
    let interval = spec
        .as_ref()
        .map_or(crate::agents::DEFAULT_FOLLOW_INTERVAL, |s| {
            s.follow_interval
        });
    let timing = FollowTiming {
        window: Duration::from_secs(FOLLOW_WINDOW_SECS),
        interval,
        heartbeat: deps.settings.follow_heartbeat,
    };
    let park = follow::Park {
        task_id: &input.task_id,
        number: input.park,
        token: &input.token,
        owner: input.owner(),
    };
    let desk = deps.desk(&input.task_id, token);
    let connect = connector(deps, &input.task_id, &input.agent, spec, desk.clone())();
    let rows = WithArtifacts::new(&deps.store, desk.clone());
    let end = follow::run(&deps.sending(&rows), &deps.bell, connect, &park, timing).await?;
    keep(desk).await;
    Ok(json!({"follow": format!("{end:?}")}))
}
