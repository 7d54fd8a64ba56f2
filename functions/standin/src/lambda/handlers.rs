//! The state machine's steps as Lambda handlers: each hands its step the adapters it
//! runs on. Nothing is decided here: every fallback is the step's own (`steps`, `follow`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use standin_remote::{AgentClient, RemoteError};

use super::deps::{Rows, StepDeps};
use super::failure::StepFailure;
use crate::agents::AgentSpec;
use crate::follow::{self, FollowTiming};
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

/// Connects to the stand-in's agent only when the step asks.
fn connector(
    deps: &'static StepDeps,
    task_id: &str,
    agent: &str,
    spec: Option<AgentSpec>,
) -> impl FnOnce() -> std::pin::Pin<
    Box<dyn Future<Output = Result<AgentClient, RemoteError>> + Send + 'static>,
> + use<> {
    let agent = agent.to_owned();
    let task_id = task_id.to_owned();
    move || {
        Box::pin(async move {
            match spec {
                Some(spec) => deps.connect(&spec, &task_id).await,
                None => Err(RemoteError::Card(format!(
                    "no agent {agent:?} in the stack's Agents or the agent registry"
                ))),
            }
        })
    }
}

/// The stand-in's agent and the way to reach it.
async fn reach(
    deps: &'static StepDeps,
    step: &Step,
) -> Result<(Option<AgentSpec>, impl FnOnce() -> ConnectFuture + use<>), StepFailure> {
    let spec = deps.spec(&step.task_id, &step.agent).await?;
    Ok((
        spec.clone(),
        connector(deps, &step.task_id, &step.agent, spec),
    ))
}

type ConnectFuture =
    std::pin::Pin<Box<dyn Future<Output = Result<AgentClient, RemoteError>> + Send + 'static>>;

/// The deployment's pacing with the stand-in's agent's own poll bound.
fn pacing(deps: &StepDeps, spec: Option<&AgentSpec>) -> steps::next::Pacing {
    let pacing = deps.settings.pacing;
    spec.map_or(pacing, |spec| pacing.with_poll_max(spec.poll_max_interval))
}

pub async fn turn(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let step = steps::turn(
        &deps.store,
        connect,
        spec.as_ref(),
        step,
        settings.turn_window,
        pacing(deps, spec.as_ref()),
    )
    .await?;
    Ok(step)
}

pub async fn register(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let step = steps::register(
        &deps.store,
        connect,
        spec.as_ref(),
        settings.push_base_url.as_deref(),
        step,
        pacing(deps, spec.as_ref()),
    )
    .await?;
    Ok(step)
}

pub async fn wake(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let step = steps::wake(
        &deps.store,
        connect,
        step,
        settings.history_bound,
        pacing(deps, spec.as_ref()),
    )
    .await?;
    Ok(step)
}

/// Close and tell the parent before anything slow at the agent: the card is read only
/// when the end needs the agent (a cancel's remote answer, a push config to delete).
pub async fn end(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (_, connect) = reach(deps, &step).await?;
    steps::end(&deps.store, &step, connect).await?;
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
    let spec = deps
        .spec(&input.task_id, &input.agent)
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
    let connect = connector(deps, &input.task_id, &input.agent, spec)();
    let end = follow::run(&deps.store, &deps.bell, connect, &park, timing).await?;
    Ok(json!({"follow": format!("{end:?}")}))
}
