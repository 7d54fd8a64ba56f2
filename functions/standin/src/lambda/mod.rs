//! The composition root: each `functions/<name>/src/main.rs` calls one `serve_*` here,
//! which builds the function's dependencies once per process (`config`) and hands each
//! event to its handler (`steps`, `notify`, `http`).

mod config;
mod http;
mod notify;
mod steps;

use std::future::Future;

use futures_util::future::BoxFuture;
use lambda_http::{Body, Request, Response};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::adapters::sfn::SfnExecutions;

pub use config::{
    DEFAULT_FOLLOW_HEARTBEAT_SECS, DEFAULT_HISTORY_BOUND, DEFAULT_TURN_WINDOW_SECS, Deps, Retries,
};
pub use notify::NoteStream;
pub use steps::{ParkInput, end, fetch, follow, park, register, turn, wake};

/// JSON logs, without timestamps (CloudWatch stamps every line).
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_target(false)
        .without_time()
        .with_current_span(false)
        .try_init();
}

/// The function's dependencies, built once; a configuration error fails the cold start
/// naming the variable.
async fn deps(retries: Retries) -> Result<&'static Deps, Error> {
    init_logs();
    let deps = Deps::from_env(retries)
        .await
        .map_err(|e| format!("configuration: {e}"))?;
    Ok(Box::leak(Box::new(deps)))
}

// The futures below are boxed on purpose: the SDK's and the runtime's future types are
// deep enough to overflow the compiler's query depth in every main otherwise.

/// Serves an invoked function: its event in, its answer out.
async fn serve<E, R, F, Fut>(handler: F) -> Result<(), Error>
where
    E: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
    F: Fn(&'static Deps, E) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<R, Error>> + Send + 'static,
{
    let deps = deps(Retries::Patient).await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<E>| handler(deps, event.payload),
    )))
    .await
}

/// A state-machine step: the execution's state in, the state with `next` decided out.
pub async fn serve_step<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(&'static Deps, crate::handlers::Step) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<crate::handlers::Step, Error>> + Send + 'static,
{
    serve(handler).await
}

/// A `.waitForTaskToken` park: the park's number and token in, a report out.
pub async fn serve_park<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(&'static Deps, ParkInput) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<serde_json::Value, Error>> + Send + 'static,
{
    serve(handler).await
}

/// The outbox's delivery: DynamoDB Streams hands the notify function each new note, in
/// the order written per stand-in; it sends them to the parent's FIFO queue in that
/// order. A refused send reports that record as the batch's first failure, so the event
/// source retries from it and nothing after it overtakes it.
pub async fn serve_notify() -> Result<(), Error> {
    let deps = deps(Retries::Patient).await?;
    // Checked at start: a notify function without its queue would hold every note.
    deps.queue().map_err(|e| format!("configuration: {e}"))?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<NoteStream>| {
            let stop_at = notify::stop_before(event.context.deadline, notify::NOTIFY_MARGIN);
            notify::notify(deps, event.payload, stop_at)
        },
    )))
    .await
}

/// The push receiver behind `POST /a2a/push/{task_id}`.
pub async fn serve_push() -> Result<(), Error> {
    let deps = deps(Retries::Prompt).await?;
    Box::pin(lambda_http::run(service_fn(move |request: Request| {
        Box::pin(http::push(deps, request)) as BoxFuture<'static, Result<Response<Body>, Error>>
    })))
    .await
}

/// The parent's control API: start, reply, cancel, status, notes, list.
pub async fn serve_control() -> Result<(), Error> {
    let deps = deps(Retries::Prompt).await?;
    let machine = deps
        .state_machine_arn
        .clone()
        .ok_or("configuration: STATE_MACHINE_ARN: environment variable is not set")?;
    let executions: &'static SfnExecutions =
        Box::leak(Box::new(SfnExecutions::new(deps.sfn.clone(), machine)));
    Box::pin(lambda_http::run(service_fn(move |request: Request| {
        Box::pin(http::control(deps, executions, request))
            as BoxFuture<'static, Result<Response<Body>, Error>>
    })))
    .await
}
