//! The composition root: each `functions/<name>/src/main.rs` calls one `serve_*` here
//! (the control function's is the control plane's, built on `build`, `Aws` and
//! `ControlSettings` from here), which reads its kind's settings (`config`), builds its
//! dependencies once per process (`deps`) and hands each event to its handler (`steps`,
//! `notify`, `http`).

mod calls;
mod config;

pub use config::{KEYS_TABLE_SUFFIX, TURNS_TABLE_SUFFIX};
mod deps;
mod failure;
mod handlers;
mod http;
mod logs;
mod trust;

use futures_util::future::BoxFuture;
use lambda_http::{Body, Request, Response};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument;

use crate::agents::ConfigError;
use crate::outbox::stream;

pub use crate::steps::ParkInput;
pub use config::{
    ApiUrlForm, ControlSettings, DEFAULT_FOLLOW_HEARTBEAT_SECS, DEFAULT_FOLLOWS_PER_FUNCTION,
    DEFAULT_HISTORY_BOUND, DEFAULT_TURN_WINDOW_SECS, Env, FollowerSettings, MAX_FOLLOW_WINDOW_SECS,
    MAX_FOLLOWS_PER_FUNCTION, MAX_HISTORY_BOUND, NotifySettings, ProcessEnv, PushSettings, Retries,
    StepSettings, Tables, WebhookSettings,
};
pub use deps::{Aws, FollowDeps, NotifyDeps, PushDeps, Rows, StepDeps, WebhookDeps};
pub use deps::{agent_http, catalog, reach_of};
pub use failure::{PERMANENT, StepFailure, TRANSIENT};
pub use handlers::{end, park, register, turn, wake};
pub use logs::request_span;

/// Reads the settings first (a missing variable fails the cold start naming it, before
/// any client is built), then builds the function's dependencies once.
pub async fn build<S, D: 'static>(
    retries: Retries,
    read: fn(&ProcessEnv) -> Result<S, ConfigError>,
    make: fn(&Aws, S) -> Result<D, ConfigError>,
) -> Result<&'static D, Error> {
    logs::init();
    crate::metrics::init(ProcessEnv.var("STACK_NAME"));
    let configured = |e: ConfigError| format!("configuration: {e}");
    let settings = read(&ProcessEnv).map_err(configured)?;
    let record = config::record_calls(&ProcessEnv).map_err(configured)?;
    let http = trust::aws_trust(&ProcessEnv)
        .and_then(trust::aws_http_client)
        .map_err(configured)?;
    let built = make(&Aws::load(retries, record, http).await, settings).map_err(configured)?;
    Ok(Box::leak(Box::new(built)))
}

// The futures below are boxed on purpose: the SDK's and the runtime's future types are
// deep enough to overflow the compiler's query depth in every main otherwise.

/// Serves an invoked function: its event in, its answer out.
async fn serve<D, E, R, F, Fut>(deps: &'static D, handler: F) -> Result<(), Error>
where
    D: Sync + 'static,
    E: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
    F: Fn(&'static D, E) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<R, StepFailure>> + Send + 'static,
{
    // The event is read as JSON first, so that its span names the stand-in.
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<Value>| {
            let span = logs::event_span(&event.payload);
            async move {
                let input: E = serde_json::from_value(event.payload)
                    .map_err(|e| StepFailure::permanent(format!("the event does not read: {e}")))?;
                handler(deps, input).await
            }
            .instrument(span)
        },
    )))
    .await
}

/// Serves an HTTP API behind API Gateway.
async fn serve_http<D, F, Fut>(deps: &'static D, handler: F) -> Result<(), Error>
where
    D: Sync + 'static,
    F: Fn(&'static D, Request) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<Response<Body>, Error>> + Send + 'static,
{
    Box::pin(lambda_http::run(service_fn(move |request: Request| {
        let span = logs::request_span(&request);
        Box::pin(handler(deps, request).instrument(span))
            as BoxFuture<'static, Result<Response<Body>, Error>>
    })))
    .await
}

fn step_deps(aws: &Aws, settings: StepSettings) -> Result<StepDeps, ConfigError> {
    StepDeps::new(aws, settings)
}

fn rows(aws: &Aws, tables: Tables) -> Result<Rows, ConfigError> {
    Ok(Rows::new(aws, &tables))
}

/// A state-machine step: the execution's state in, the state with `next` decided out.
pub async fn serve_step<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(&'static StepDeps, crate::steps::Step) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<crate::steps::Step, StepFailure>> + Send + 'static,
{
    let deps = build(Retries::Patient, StepSettings::read, step_deps).await?;
    serve(deps, handler).await
}

/// The follower: the follow queue's batch and what it takes meanwhile, each park's
/// stream held until the window's end, then handed back (`follow::serve`).
pub async fn serve_follow() -> Result<(), Error> {
    let deps = build(Retries::Patient, FollowerSettings::read, FollowDeps::new).await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<aws_lambda_events::event::sqs::SqsEvent>| async move {
            let until = follow_until(event.context.deadline, deps.window);
            let (mut first, mut receipts) = (Vec::new(), Vec::new());
            for record in event.payload.records {
                first.extend(record.body);
                receipts.extend(record.receipt_handle);
            }
            let span = logs::follower_span(&crate::follow::requests::task_ids(&first));
            async move {
                deps.requests.delete_batch(receipts).await;
                Ok::<_, Error>(crate::follow::serve::follower(deps, first, until).await)
            }
            .instrument(span)
            .await
        },
    )))
    .await
}

/// The follower's window ends `window` from now, and a minute before its deadline at
/// the latest (for the last reports and the hand-back).
fn follow_until(deadline_ms: u64, window: std::time::Duration) -> tokio::time::Instant {
    let latest = stream::stop_before(deadline_ms, std::time::Duration::from_secs(60));
    latest.min(tokio::time::Instant::now() + window)
}

/// A push or off park: stores its `.waitForTaskToken` token, or rings it at once.
pub async fn serve_park() -> Result<(), Error> {
    let deps = build(Retries::Patient, Tables::read, rows).await?;
    serve(deps, park).await
}

/// The outbox's delivery (`notify`): each new note from the notes table's stream, to the
/// parent in the order written; it keeps the invocation's deadline to answer in time.
pub async fn serve_notify() -> Result<(), Error> {
    let deps = build(Retries::Patient, NotifySettings::read, |aws, settings| {
        Ok(NotifyDeps::new(aws, settings))
    })
    .await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<stream::Event>| async move {
            let stop_at = stream::stop_before(event.context.deadline, stream::NOTIFY_MARGIN);
            let span = logs::batch_span(&stream::task_ids(&event.payload));
            let outlets = deps.outlets.outlets();
            let answer = stream::notify(outlets, &deps.marks, &event.payload, stop_at)
                .instrument(span)
                .await;
            Ok::<_, Error>(answer)
        },
    )))
    .await
}

/// The webhooks' delivery (`webhook`): each stand-in the webhook queue names, its notes
/// to its webhooks in order; it keeps the invocation's deadline to answer in time.
pub async fn serve_webhook() -> Result<(), Error> {
    let deps = build(Retries::Patient, WebhookSettings::read, WebhookDeps::new).await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<aws_lambda_events::sqs::SqsEvent>| async move {
            let stop_at =
                stream::stop_before(event.context.deadline, crate::webhook::WEBHOOK_MARGIN);
            let answer = crate::webhook::handle(
                &deps.store,
                &deps.poster,
                &deps.redelivery,
                &event.payload,
                stop_at,
            )
            .await;
            Ok::<_, Error>(answer)
        },
    )))
    .await
}

/// The push receiver behind `POST /a2a/push/{task_id}`.
pub async fn serve_push() -> Result<(), Error> {
    let deps = build(Retries::Prompt, PushSettings::read, PushDeps::new).await?;
    serve_http(deps, http::push).await
}

/// The hearer: a push the receiver claimed, heard and told (`steps::hear`).
pub async fn serve_hear() -> Result<(), Error> {
    let deps = build(Retries::Patient, StepSettings::read, step_deps).await?;
    serve(deps, handlers::hear).await
}
