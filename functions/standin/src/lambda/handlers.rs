//! The state machine's steps and the push receiver as Lambda handlers: each hands its
//! step (or `push::receiver`) the adapters it runs on and carries its answer. Nothing is
//! decided here: every fallback is the step's own (`steps`, `follow`).

use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::Error;
use serde_json::{Value, json};

use super::deps::{PushDeps, Rows, StepDeps};
use super::failure::StepFailure;
use crate::push::{HearRequest, Heard, receiver};
use crate::steps::{self, ParkInput, Step};

pub async fn turn(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let step = step.traced(rand::random());
    let (task_id, agent, trace) = (&step.task_id, &step.agent, step.traceparent.as_deref());
    let invocation = deps.invocation(task_id, agent, None, trace).await?;
    let pacing = invocation.pacing(deps.settings.pacing, &step);
    let step = steps::turn(&invocation, step, deps.settings.turn_window, pacing).await?;
    invocation.finish().await;
    Ok(step)
}

pub async fn register(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (task_id, agent, trace) = (&step.task_id, &step.agent, step.traceparent.as_deref());
    let invocation = deps.invocation(task_id, agent, None, trace).await?;
    let pacing = invocation.pacing(deps.settings.pacing, &step);
    let push_base_url = deps.settings.push_base_url.as_deref();
    let step = steps::register(&invocation, push_base_url, step, pacing).await?;
    invocation.finish().await;
    Ok(step)
}

pub async fn wake(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let bound = deps.settings.history_bound;
    // The push that rang, taken first when it can be: the row comes back with the write.
    let taken = steps::take_rung(&deps.store, &step, bound).await?;
    let row = taken.as_ref().map(|taken| taken.row.clone());
    let (task_id, agent, trace) = (&step.task_id, &step.agent, step.traceparent.as_deref());
    let invocation = deps.invocation(task_id, agent, row, trace).await?;
    let pacing = invocation.pacing(deps.settings.pacing, &step);
    let step = steps::wake(&invocation, step, taken, bound, pacing).await?;
    invocation.finish().await;
    Ok(step)
}

/// Close and tell the parent before anything slow at the agent: the card is read only
/// when the end needs the agent (a cancel's remote answer, a push config to delete).
pub async fn end(deps: &'static StepDeps, step: Step) -> Result<Step, StepFailure> {
    let (task_id, agent, trace) = (&step.task_id, &step.agent, step.traceparent.as_deref());
    let invocation = deps.invocation(task_id, agent, None, trace).await?;
    steps::end(&invocation, &step).await?;
    invocation.finish().await;
    Ok(step)
}

/// A push the receiver claimed: heard on the row its claim returned, as the wake hears
/// on the row its take returned.
pub async fn hear(deps: &'static StepDeps, request: HearRequest) -> Result<Heard, StepFailure> {
    let row = &request.row;
    let trace = row.traceparent.as_deref();
    let invocation = deps
        .invocation(&row.task_id, &row.agent, Some(row.clone()), trace)
        .await?;
    let heard = crate::steps::hear(&invocation, &deps.bell, &request).await?;
    invocation.finish().await;
    Ok(heard)
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

pub async fn push(deps: &'static PushDeps, request: Request) -> Result<Response<Body>, Error> {
    let params = request.path_parameters();
    let task_id = params.first("task_id").unwrap_or_default().to_owned();
    let body = request.body().as_ref();
    let (store, bell, headers) = (&deps.rows.store, &deps.rows.bell, request.headers());
    let answer = match &deps.hearer {
        Some(hearer) => receiver::receive_heard(store, bell, hearer, &task_id, headers, body).await,
        None => receiver::receive(store, bell, &task_id, headers, body).await,
    };
    let mut response = Response::builder().status(answer.status);
    if !answer.body.is_empty() {
        response = response.header("content-type", "application/json");
    }
    Ok(response.body(Body::from(answer.body))?)
}
