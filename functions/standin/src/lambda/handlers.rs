//! The state machine's steps as Lambda handlers: each hands its step the adapters it
//! runs on. Nothing is decided here: every fallback is the step's own (`steps`, `follow`).

use std::time::Duration;

use tokio::time::Instant;

use serde_json::{Value, json};
use std::sync::Arc;

use standin_remote::{AgentClient, RemoteError};

use super::deps::{FollowDeps, Rows, Standing, StepDeps};
use super::failure::StepFailure;
use crate::agents::AgentSpec;
use crate::artifacts::{Collecting, Desk};
use crate::follow::{self, FollowEnd, FollowTiming, WindowEnd, follower};
use crate::row::Row;
use crate::steps::{self, ParkInput, Step};

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
    let standing = deps.standing(&step.task_id, &step.agent).await?;
    Ok(reached(deps, step, standing))
}

/// `reach`, from the stand-in as read or written already.
fn reached(
    deps: &'static StepDeps,
    step: &Step,
    Standing { spec, token, row }: Standing,
) -> (
    Option<AgentSpec>,
    impl FnOnce() -> ConnectFuture + use<>,
    Option<Arc<Desk>>,
    Option<Row>,
) {
    let desk = deps.desk(&step.task_id, token);
    (
        spec.clone(),
        connector(deps, &step.task_id, &step.agent, spec, desk.clone()),
        desk,
        row,
    )
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

/// The deployment's pacing with the stand-in's own: its agent's poll bound and
/// unreachable bound, its deadline (the start's, else its agent's, within the stack's),
/// and now.
fn pacing(deps: &StepDeps, spec: Option<&AgentSpec>, step: &Step) -> steps::next::Pacing {
    let pacing = deps.settings.pacing;
    let most = pacing.deadline_secs;
    let asked = step
        .deadline_secs
        .or_else(|| spec.and_then(|s| s.max_duration).map(|d| d.as_secs()));
    let pacing = steps::next::Pacing {
        deadline_secs: asked.map_or(most, |secs| secs.clamp(1, most)),
        now_secs: crate::clock::now_ms() / 1000,
        ..pacing
    };
    match spec {
        Some(spec) => steps::next::Pacing {
            max_unreachable_secs: spec.max_unreachable.as_secs(),
            ..pacing.with_poll_max(spec.poll_max_interval)
        },
        None => pacing,
    }
}

pub async fn turn(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect, desk, _) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let pacing = pacing(deps, spec.as_ref(), &step);
    let step = steps::turn(
        &deps.teller(desk.clone()),
        connect,
        spec.as_ref(),
        step,
        settings.turn_window,
        pacing,
    )
    .await?;
    keep(desk).await;
    Ok(step)
}

pub async fn register(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (spec, connect, desk, _) = reach(deps, &step).await?;
    let settings = &deps.settings;
    let pacing = pacing(deps, spec.as_ref(), &step);
    let step = steps::register(
        &deps.teller(desk.clone()),
        connect,
        spec.as_ref(),
        settings.push_base_url.as_deref(),
        step,
        pacing,
    )
    .await?;
    keep(desk).await;
    Ok(step)
}

pub async fn wake(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let settings = &deps.settings;
    let taken = steps::take_rung(&deps.store, &step, settings.history_bound).await?;
    let standing = match &taken {
        // The push that rang is taken, and the row came back with the write: no read.
        Some(taken) => {
            deps.standing_in(&step.task_id, &step.agent, Some(taken.row.clone()))
                .await?
        }
        None => deps.standing(&step.task_id, &step.agent).await?,
    };
    let (spec, connect, desk, row) = reached(deps, &step, standing);
    if let Some(desk) = &desk {
        // A wake that checks writes its note after the agent answers: the manifest is
        // read meanwhile.
        desk.read_ahead();
    }
    let teller = deps.teller(desk.clone());
    let (bound, pacing) = (settings.history_bound, pacing(deps, spec.as_ref(), &step));
    let step = match taken {
        Some(taken) => steps::wake_taken(&teller, connect, step, taken, bound, pacing).await?,
        None => steps::wake(&teller, connect, step, row.as_ref(), bound, pacing).await?,
    };
    keep(desk).await;
    Ok(step)
}

/// Close and tell the parent before anything slow at the agent: the card is read only
/// when the end needs the agent (a cancel's remote answer, a push config to delete).
pub async fn end(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (_, connect, desk, _) = reach(deps, &step).await?;
    steps::end(&deps.teller(desk.clone()), &step, connect).await?;
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

/// The follower: the parks it was invoked with (the follow queue's batch) and those it
/// takes meanwhile, each followed until the window's end, then handed back.
pub async fn follow_many(deps: &'static FollowDeps, first: Vec<String>, until: Instant) -> Value {
    let plan = follower::Plan {
        capacity: deps.capacity,
        until,
        take_wait: FOLLOWER_TAKE_WAIT,
        last_take: FOLLOWER_LAST_TAKE,
        take_retry: FOLLOWER_TAKE_RETRY,
        straggle: FOLLOWER_STRAGGLE,
    };
    let held = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let summary = follower::multiplex(&deps.requests, first, plan, |request| {
        if let Some(id) = follow::requests::task_id(&request) {
            held.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(id);
        }
        follow_request(&deps.steps, request, until)
    })
    .await;
    let task_ids = held
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .collect::<Vec<_>>()
        .join(",");
    if let Some(error) = &summary.last_take_error {
        tracing::warn!(
            task_ids,
            failures = summary.take_failures,
            error,
            "taking follow requests failed; the follower tried again"
        );
    }
    tracing::info!(
        task_ids,
        followed = summary.followed,
        peak = summary.peak,
        handed_back = summary.handed_back,
        hand_back_failed = summary.hand_back_failed,
        "follower done"
    );
    json!({
        "followed": summary.followed,
        "peak": summary.peak,
        "handed_back": summary.handed_back,
        "hand_back_failed": summary.hand_back_failed,
    })
}

/// The longest one take from the follow queue waits (SQS's longest long poll).
const FOLLOWER_TAKE_WAIT: Duration = Duration::from_secs(20);
/// No new park this close to the window's end: it would be handed back at once.
const FOLLOWER_LAST_TAKE: Duration = Duration::from_secs(5);
const FOLLOWER_TAKE_RETRY: Duration = Duration::from_secs(1);
/// How long past the window a follow may take to end (a report under way) before it is
/// cut off; within the function's last minute.
const FOLLOWER_STRAGGLE: Duration = Duration::from_secs(30);

/// Follows one request until `until`; the request to hand back if its park still stands.
async fn follow_request(
    deps: &'static StepDeps,
    request: String,
    until: Instant,
) -> Option<String> {
    follow::requests::follow_request(
        &deps.bell,
        &request,
        super::logs::event_span,
        |park, hop| follow(deps, park, hop, until, WindowEnd::HandBack),
    )
    .await
}

/// One followed park: reach the agent, follow for `window`, end it as `at_window_end`.
async fn follow(
    deps: &'static StepDeps,
    input: ParkInput,
    hop: u64,
    until: Instant,
    at_window_end: WindowEnd,
) -> Result<FollowEnd, StepFailure> {
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
        window: until.saturating_duration_since(Instant::now()),
        ends_by: Some(until),
        interval,
        heartbeat: deps.settings.follow_heartbeat,
        at_window_end,
    };
    let park = follow::Park {
        task_id: &input.task_id,
        number: input.park,
        token: &input.token,
        owner: input.owner(),
        hop,
    };
    let desk = deps.desk(&input.task_id, token);
    let connect = connector(deps, &input.task_id, &input.agent, spec, desk.clone())();
    let end = follow::run(
        &deps.teller(desk.clone()),
        &deps.bell,
        connect,
        &park,
        timing,
    )
    .await?;
    keep(desk).await;
    Ok(end)
}
