//! The state machine's steps as Lambda handlers: each reads what it needs from its deps
//! (the agent's card, the row store, the doorbell) and calls the step over the ports in
//! `handlers`; when the agent cannot be reached, the fallback each step takes is here.

use std::time::Duration;

use lambda_runtime::Error;
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::warn;

use super::deps::{Rows, StepDeps};
use crate::doorbell;
use crate::follow::FollowTiming;
use crate::row::RowStore;
use crate::row::WatchMode;
use crate::steps::Step;
use crate::steps::next::{FOLLOW_WINDOW_SECS, Next};

/// The input of a `.waitForTaskToken` park: the stand-in, the park's number and token.
#[derive(Debug, Deserialize)]
pub struct ParkInput {
    pub task_id: String,
    #[serde(default)]
    pub agent: String,
    pub park: u64,
    pub token: String,
}

pub async fn turn(deps: &'static StepDeps, mut step: Step) -> Result<Step, Error> {
    // Before anything can fail: a stand-in whose row exists can always be ended.
    crate::steps::adopt(&deps.store, &mut step).await?;
    if step.next.is_none() {
        // A first turn. One started through the control API passed these checks there;
        // one a parent started itself is checked here by the same parser, and ends
        // failed, telling the parent why, rather than fail where nobody hears it.
        let first = json!({"agent": step.agent, "message": step.message, "task_id": step.task_id});
        if let Err(standin_wire::BodyError(reason)) = standin_wire::StartRequest::parse(&first) {
            warn!(task_id = %step.task_id, %reason, "stand-in not started");
            return Ok(ended(step, reason));
        }
    }
    let agent = match deps.connect(&step.agent).await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "agent unavailable for the turn");
            return Ok(ended(step, format!("agent unavailable: {err}")));
        }
    };
    if step.message.is_some()
        && let Some(spec) = deps.spec(&step.agent)
        && let Some(reason) = crate::watch::misconfigured(
            &spec.id,
            spec.updates,
            standin_remote::Agent::can_stream(&agent),
        )
    {
        warn!(task_id = %step.task_id, %reason, "stand-in not started");
        return Ok(ended(step, reason));
    }
    Ok(crate::steps::turn(
        &deps.store,
        &agent,
        step,
        deps.settings.turn_window,
        deps.settings.pacing,
    )
    .await?)
}

/// The step ends the stand-in as failed, for `reason` (scrubbed and bounded).
fn ended(mut step: Step, reason: String) -> Step {
    step.message = None;
    step.next = Some(Next::End(doorbell::EndCause::failed(&reason)));
    step
}

/// Chooses the watch; push then reconciles with GetTask in the same invocation.
pub async fn register(deps: &'static StepDeps, step: Step) -> Result<Step, Error> {
    let spec = deps.spec(&step.agent);
    match deps.connect(&step.agent).await {
        Ok(agent) => {
            let step = crate::steps::register_watch(
                &deps.store,
                &agent,
                spec,
                deps.settings.push_base_url.as_deref(),
                step,
                deps.settings.pacing,
            )
            .await?;
            fetch_if_decided(deps, step).await
        }
        Err(err) => {
            // No card now: following needs none up front and retries on its own.
            warn!(task_id = %step.task_id, error = %err, "card unavailable at registration; following");
            let mut step = step;
            deps.store
                .set_watch(&step.task_id, &crate::row::Watch::follow())
                .await?;
            step.next = Some(crate::steps::next::after_register(
                &mut step.cursor,
                WatchMode::Follow,
                deps.settings.pacing,
            ));
            Ok(step)
        }
    }
}

pub async fn fetch(deps: &'static StepDeps, step: Step) -> Result<Step, Error> {
    match deps.connect(&step.agent).await {
        Ok(agent) => {
            Ok(crate::steps::fetch(&deps.store, &agent, step, deps.settings.pacing).await?)
        }
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "agent unavailable for GetTask; keeping the last state");
            let mut step = step;
            let mode = deps
                .store
                .get(&step.task_id)
                .await?
                .map_or(WatchMode::Off, |r| r.mode());
            step.next = Some(crate::steps::next::after_fetch(
                &mut step.cursor,
                mode,
                None,
                deps.settings.pacing,
            ));
            step.park = None;
            Ok(step)
        }
    }
}

/// Drains one event and decides; a push heard (or an idle push park that ran its time)
/// is fetched in the same invocation, so a push-heard change costs one invocation after
/// the park. A retried wake drains the same event again (the drain is idempotent per
/// park), so nothing is lost when the fetch's write fails and the whole step is retried.
pub async fn wake(deps: &'static StepDeps, step: Step) -> Result<Step, Error> {
    let step = crate::steps::wake_up(
        &deps.store,
        step,
        deps.settings.history_bound,
        deps.settings.pacing,
    )
    .await?;
    fetch_if_decided(deps, step).await
}

async fn fetch_if_decided(deps: &'static StepDeps, step: Step) -> Result<Step, Error> {
    match step.next {
        Some(Next::Fetch { .. }) => fetch(deps, step).await,
        _ => Ok(step),
    }
}

/// Close and tell the parent before anything slow at the agent: the card is read only
/// when the end needs the agent (a cancel's remote answer, a push config to delete).
pub async fn end(deps: &'static StepDeps, step: Step) -> Result<Step, Error> {
    let connect = || async {
        deps.connect(&step.agent)
            .await
            .map_err(
                |err| warn!(task_id = %step.task_id, error = %err, "agent unavailable at the end"),
            )
            .ok()
    };
    crate::steps::end(&deps.store, &step, connect).await?;
    Ok(step)
}

pub async fn park(deps: &'static Rows, input: ParkInput) -> Result<Value, Error> {
    let stored = crate::steps::park(
        &deps.store,
        &deps.bell,
        &input.task_id,
        input.park,
        &input.token,
    )
    .await?;
    Ok(json!({"parked": stored}))
}

pub async fn follow(deps: &'static StepDeps, input: ParkInput) -> Result<Value, Error> {
    let spec = deps.spec(&input.agent);
    let interval = spec.map_or(crate::agents::DEFAULT_FOLLOW_INTERVAL, |s| {
        s.follow_interval
    });
    let timing = FollowTiming {
        window: Duration::from_secs(FOLLOW_WINDOW_SECS),
        interval,
        heartbeat: deps.settings.follow_heartbeat,
    };
    // Reading the card can take a slow agent's whole timeout: heartbeat meanwhile.
    let connected = crate::follow::with_heartbeats(
        &deps.bell,
        &input.token,
        deps.settings.follow_heartbeat,
        deps.connect(&input.agent),
    )
    .await;
    let end = match connected {
        Ok(agent) => {
            crate::follow::follow(
                &deps.store,
                &deps.bell,
                &agent,
                &input.task_id,
                input.park,
                &input.token,
                timing,
            )
            .await?
        }
        Err(err) => {
            warn!(task_id = %input.task_id, error = %err, "agent unavailable to follow; retrying later");
            crate::follow::follow_unavailable(
                &deps.store,
                &deps.bell,
                &input.task_id,
                input.park,
                &input.token,
            )
            .await?
        }
    };
    Ok(json!({"follow": format!("{end:?}")}))
}
