//! The composition root: each `functions/<name>/src/main.rs` calls one `serve_*` here
//! (the control function's is the control plane's, built on `build`, `Aws` and
//! `ControlSettings` from here), which reads its kind's settings (`config`), builds its
//! dependencies once per process (`deps`) and hands each event to its handler
//! (`handlers`, `notify`, `webhook`, `follow`).

mod calls;
mod config;
mod deps;
mod failure;
mod handlers;
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
use crate::webhook;

pub use config::{
    ApiUrlForm, ControlSettings, DEFAULT_FOLLOW_HEARTBEAT_SECS, DEFAULT_HISTORY_BOUND,
    DEFAULT_TURN_WINDOW_SECS, Env, FollowerSettings, KEYS_TABLE_SUFFIX, MAX_FOLLOW_WINDOW_SECS,
    MAX_HISTORY_BOUND, NotifySettings, ProcessEnv, PushSettings, Retries, StepSettings,
    TURNS_TABLE_SUFFIX, Tables, WebhookSettings,
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

/// A state-machine step: the execution's state in, the state with `next` decided out.
pub async fn serve_step<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(&'static StepDeps, crate::steps::Step) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<crate::steps::Step, StepFailure>> + Send + 'static,
{
    let deps = build(Retries::Patient, StepSettings::read, StepDeps::new).await?;
    serve(deps, handler).await
}

/// The follower: the follow queue's batch and what it takes meanwhile, each park's
/// stream held until the window's end, then handed back (`follow::serve`).
pub async fn serve_follow() -> Result<(), Error> {
    let deps = build(Retries::Patient, FollowerSettings::read, FollowDeps::new).await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<aws_lambda_events::event::sqs::SqsEvent>| async move {
            // The window ends a minute before the deadline at the latest, for the last
            // reports and the hand-back.
            let latest =
                stream::stop_before(event.context.deadline, std::time::Duration::from_secs(60));
            let until = latest.min(tokio::time::Instant::now() + deps.window);
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

/// A push or off park: stores its `.waitForTaskToken` token, or rings it at once.
pub async fn serve_park() -> Result<(), Error> {
    let rows = |aws: &Aws, tables| Ok(Rows::new(aws, &tables));
    let deps = build(Retries::Patient, Tables::read, rows).await?;
    serve(deps, park).await
}

/// The outbox's delivery (`notify`): each new note from the notes table's stream, to the
/// parent in the order written; it keeps the invocation's deadline to answer in time.
pub async fn serve_notify() -> Result<(), Error> {
    let deps = build(Retries::Patient, NotifySettings::read, NotifyDeps::new).await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<stream::Event>| async move {
            let stop_at = stream::stop_before(event.context.deadline, stream::NOTIFY_MARGIN);
            let span = logs::batch_span(&stream::task_ids(&event.payload));
            let (outlets, marks) = (deps.outlets.outlets(), &deps.marks);
            let answer = stream::notify(outlets, marks, &event.payload, stop_at);
            Ok::<_, Error>(answer.instrument(span).await)
        },
    )))
    .await
}

/// The webhooks' delivery (`webhook`): each stand-in the webhook queue names, its notes
/// to its webhooks in order; it keeps the invocation's deadline to answer in time.
pub async fn serve_webhook() -> Result<(), Error> {
    let deps = build(Retries::Patient, WebhookSettings::read, WebhookDeps::new).await?;
    let (store, poster, redelivery) = (&deps.store, &deps.poster, &deps.redelivery);
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<aws_lambda_events::sqs::SqsEvent>| async move {
            let stop_at = stream::stop_before(event.context.deadline, webhook::WEBHOOK_MARGIN);
            let answer = webhook::handle(store, poster, redelivery, &event.payload, stop_at);
            Ok::<_, Error>(answer.await)
        },
    )))
    .await
}

/// The push receiver behind `POST /a2a/push/{task_id}`.
pub async fn serve_push() -> Result<(), Error> {
    let deps = build(Retries::Prompt, PushSettings::read, PushDeps::new).await?;
    Box::pin(lambda_http::run(service_fn(move |request: Request| {
        let span = logs::request_span(&request);
        Box::pin(handlers::push(deps, request).instrument(span))
            as BoxFuture<'static, Result<Response<Body>, Error>>
    })))
    .await
}

/// The hearer: a push the receiver claimed, heard and told (`steps::hear`).
pub async fn serve_hear() -> Result<(), Error> {
    let deps = build(Retries::Patient, StepSettings::read, StepDeps::new).await?;
    serve(deps, handlers::hear).await
}
