//! The Lambda side: configuration from the environment, the AWS adapters built once per
//! process, and one handler per function. Each `functions/<name>/src/main.rs` calls one
//! `serve_*` here.

use std::future::Future;

use futures_util::future::BoxFuture;
use std::time::Duration;

use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::warn;

use crate::a2a::client::{Timeouts, fetch_card};
use crate::a2a::{A2aClient, A2aError, ResolvedAgent};
use crate::adapters::dynamo::DynamoRowStore;
use crate::adapters::sfn::{SfnDoorbell, SfnExecutions};
use crate::adapters::sqs::SqsParentQueue;
use crate::config::{AgentSpec, AgentsConfig, ConfigError};
use crate::domain::doorbell;
use crate::domain::receiver;
use crate::domain::row::WatchMode;
use crate::domain::wake::{FOLLOW_WINDOW_SECS, IDLE_RECHECK_SECS, Next, Pacing};
use crate::handlers::control::{self, Control};
use crate::handlers::{self, FollowTiming, Step};
use crate::ports::RowStore;

/// Everything a function needs, built once per process (clients cost milliseconds).
pub struct Deps {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
    pub queue: Option<SqsParentQueue>,
    pub sfn: aws_sdk_sfn::Client,
    pub agents: AgentsConfig,
    pub http: reqwest::Client,
    pub push_base_url: Option<String>,
    pub history_bound: u32,
    pub pacing: Pacing,
    pub turn_window: Duration,
    pub follow_heartbeat: Duration,
    pub state_machine_arn: Option<String>,
    /// Agent cards read once per process: every step would otherwise fetch the card again.
    cards: std::sync::Mutex<std::collections::HashMap<String, ResolvedAgent>>,
}

/// Park/wake cycles before a roll, when `HISTORY_BOUND` is not set (the template's
/// `HistoryBound` default).
pub const DEFAULT_HISTORY_BOUND: u32 = 500;
/// The longest a turn reads the agent's stream, when `TURN_WINDOW_SECS` is not set.
pub const DEFAULT_TURN_WINDOW_SECS: u64 = 240;
/// How often a follow heartbeats its park, when `FOLLOW_HEARTBEAT_SECS` is not set.
pub const DEFAULT_FOLLOW_HEARTBEAT_SECS: u64 = 10;

fn env(name: &str) -> Result<String, ConfigError> {
    std::env::var(name).map_err(|_| ConfigError {
        field: name.to_owned(),
        problem: "environment variable is not set".into(),
    })
}

fn env_opt(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn env_num(name: &str, default: u64) -> Result<u64, ConfigError> {
    match env_opt(name) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| ConfigError {
            field: name.to_owned(),
            problem: format!("must be a whole number, got {v:?}"),
        }),
    }
}

fn positive(name: &str, value: u64) -> Result<u64, ConfigError> {
    if value == 0 {
        return Err(ConfigError {
            field: name.to_owned(),
            problem: "must be at least 1".into(),
        });
    }
    Ok(value)
}

/// How hard a function's AWS calls retry before its step sees the error.
#[derive(Debug, Clone, Copy)]
pub enum Retries {
    /// The steps, the follow and notify ride out throttling and short outages on their
    /// own. The SDK's default of three attempts lost turns under the soak: a turn's
    /// message cannot be sent twice, so Step Functions does not retry a turn whose
    /// row-store write failed after the send, and with DynamoDB throttling a fifth of
    /// the calls for a minute, three throttles in a row came up. Eight attempts with
    /// backoff up to 4 s span about ten seconds.
    Patient,
    /// The push and control APIs answer within API Gateway's 29 s and the push
    /// function's 10 s: three attempts with backoff up to a second, then a 503 the
    /// caller can retry.
    Prompt,
}

impl Retries {
    fn config(self) -> aws_config::retry::RetryConfig {
        let (attempts, max_backoff) = match self {
            Self::Patient => (8, Duration::from_secs(4)),
            Self::Prompt => (3, Duration::from_secs(1)),
        };
        aws_config::retry::RetryConfig::standard()
            .with_max_attempts(attempts)
            .with_initial_backoff(Duration::from_millis(100))
            .with_max_backoff(max_backoff)
    }
}

impl Deps {
    pub async fn from_env(retries: Retries) -> Result<Self, ConfigError> {
        let roots = crate::tls::Roots::from_env()?;
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .retry_config(retries.config())
            .load()
            .await;
        let agents =
            AgentsConfig::parse(&env_opt("AGENTS").unwrap_or_else(|| r#"{"agents":[]}"#.into()))
                .map_err(|e| ConfigError {
                    field: format!("AGENTS: {}", e.field),
                    problem: e.problem,
                })?;
        let sfn = aws_sdk_sfn::Client::new(&config);
        let http = roots.agent_http_client()?;
        Ok(Self {
            store: DynamoRowStore::new(
                aws_sdk_dynamodb::Client::new(&config),
                env("TABLE_NAME")?,
                env("NOTES_TABLE_NAME")?,
            ),
            bell: SfnDoorbell::new(sfn.clone()),
            queue: env_opt("PARENT_QUEUE_URL")
                .map(|url| SqsParentQueue::new(aws_sdk_sqs::Client::new(&config), url)),
            sfn,
            agents,
            http,
            push_base_url: env_opt("PUSH_BASE_URL"),
            history_bound: u32::try_from(env_num(
                "HISTORY_BOUND",
                u64::from(DEFAULT_HISTORY_BOUND),
            )?)
            .unwrap_or(u32::MAX),
            pacing: Pacing {
                idle_recheck_secs: positive(
                    "IDLE_RECHECK_SECS",
                    env_num("IDLE_RECHECK_SECS", IDLE_RECHECK_SECS)?,
                )?,
            },
            turn_window: Duration::from_secs(env_num(
                "TURN_WINDOW_SECS",
                DEFAULT_TURN_WINDOW_SECS,
            )?),
            follow_heartbeat: Duration::from_secs(env_num(
                "FOLLOW_HEARTBEAT_SECS",
                DEFAULT_FOLLOW_HEARTBEAT_SECS,
            )?),
            state_machine_arn: env_opt("STATE_MACHINE_ARN"),
            cards: Default::default(),
        })
    }

    fn queue(&self) -> Result<&SqsParentQueue, Error> {
        self.queue
            .as_ref()
            .ok_or_else(|| "PARENT_QUEUE_URL is not set".into())
    }

    fn spec(&self, agent: &str) -> Option<&AgentSpec> {
        self.agents.agent(agent)
    }

    /// Fetches the card and connects (JSON-RPC or HTTP+JSON, whichever it prefers).
    pub async fn connect(&self, agent: &str) -> Result<A2aClient, A2aError> {
        let spec = self
            .spec(agent)
            .ok_or_else(|| A2aError::Card(format!("no agent {agent:?} in the AGENTS document")))?;
        let cached = self.cards.lock().ok().and_then(|c| c.get(agent).cloned());
        let resolved = match cached {
            Some(resolved) => resolved,
            None => {
                let (card, url) = fetch_card(&self.http, &spec.url, Timeouts::default()).await?;
                let resolved = ResolvedAgent::from_card(&card, &url)?;
                crate::a2a::reach::check_interface(
                    &spec.url,
                    &spec.allowed_origins,
                    &resolved.endpoint,
                )
                .await?;
                if let Ok(mut cards) = self.cards.lock() {
                    cards.insert(agent.to_owned(), resolved.clone());
                }
                resolved
            }
        };
        A2aClient::new(
            self.http.clone(),
            resolved,
            spec.participant.as_deref(),
            Timeouts::default(),
        )
    }
}

/// JSON logs, without timestamps (CloudWatch stamps every line).
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_target(false)
        .without_time()
        .with_current_span(false)
        .try_init();
}

async fn deps() -> Result<&'static Deps, Error> {
    deps_with(Retries::Patient).await
}

async fn deps_with(retries: Retries) -> Result<&'static Deps, Error> {
    init_logs();
    let deps = Deps::from_env(retries)
        .await
        .map_err(|e| format!("configuration: {e}"))?;
    Ok(Box::leak(Box::new(deps)))
}

// The futures below are boxed on purpose: the SDK's and the runtime's future types are
// deep enough to overflow the compiler's query depth in every main otherwise.

/// Serves a state-machine step: Step in, Step out.
pub async fn serve_step<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(&'static Deps, Step) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<Step, Error>> + Send + 'static,
{
    let deps = deps().await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<Step>| handler(deps, event.payload),
    )))
    .await
}

/// The input of a `.waitForTaskToken` park: the stand-in, the park's number and token.
#[derive(Debug, Deserialize)]
pub struct ParkInput {
    pub task_id: String,
    #[serde(default)]
    pub agent: String,
    pub park: u64,
    pub token: String,
}

pub async fn serve_park<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(&'static Deps, ParkInput) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<Value, Error>> + Send + 'static,
{
    let deps = deps().await?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<ParkInput>| handler(deps, event.payload),
    )))
    .await
}

pub async fn turn(deps: &'static Deps, step: Step) -> Result<Step, Error> {
    let agent = match deps.connect(&step.agent).await {
        Ok(agent) => agent,
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "agent unavailable for the turn");
            return Ok(ended(step, format!("agent unavailable: {err}")));
        }
    };
    if step.message.is_some()
        && let Some(spec) = deps.spec(&step.agent)
        && let Some(reason) =
            crate::domain::watch::misconfigured(&spec.id, spec.updates, agent.agent().streaming)
    {
        warn!(task_id = %step.task_id, %reason, "stand-in not started");
        return Ok(ended(step, reason));
    }
    Ok(handlers::steps::turn(&deps.store, &agent, step, deps.turn_window, deps.pacing).await?)
}

/// The step ends the stand-in as failed, for `reason` (scrubbed and bounded).
fn ended(mut step: Step, reason: String) -> Step {
    step.message = None;
    step.next = Some(Next::End(doorbell::EndCause::failed(&reason)));
    step
}

/// Chooses the watch; push then reconciles with GetTask in the same invocation.
pub async fn register(deps: &'static Deps, step: Step) -> Result<Step, Error> {
    let spec = deps.spec(&step.agent);
    match deps.connect(&step.agent).await {
        Ok(agent) => {
            let step = handlers::steps::register_watch(
                &deps.store,
                &agent,
                spec,
                deps.push_base_url.as_deref(),
                step,
                deps.pacing,
            )
            .await?;
            fetch_if_decided(deps, step).await
        }
        Err(err) => {
            // No card now: following needs none up front and retries on its own.
            warn!(task_id = %step.task_id, error = %err, "card unavailable at registration; following");
            let mut step = step;
            deps.store
                .set_watch(&step.task_id, &crate::domain::row::Watch::follow())
                .await?;
            step.next = Some(crate::domain::wake::after_register(
                &mut step.cursor,
                WatchMode::Follow,
                deps.pacing,
            ));
            Ok(step)
        }
    }
}

pub async fn fetch(deps: &'static Deps, step: Step) -> Result<Step, Error> {
    match deps.connect(&step.agent).await {
        Ok(agent) => Ok(handlers::steps::fetch(&deps.store, &agent, step, deps.pacing).await?),
        Err(err) => {
            warn!(task_id = %step.task_id, error = %err, "agent unavailable for GetTask; keeping the last state");
            let mut step = step;
            let mode = deps
                .store
                .get(&step.task_id)
                .await?
                .map_or(WatchMode::Off, |r| r.mode());
            step.next = Some(crate::domain::wake::after_fetch(
                &mut step.cursor,
                mode,
                None,
                deps.pacing,
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
pub async fn wake(deps: &'static Deps, step: Step) -> Result<Step, Error> {
    let step = handlers::steps::wake_up(&deps.store, step, deps.history_bound, deps.pacing).await?;
    fetch_if_decided(deps, step).await
}

async fn fetch_if_decided(deps: &'static Deps, step: Step) -> Result<Step, Error> {
    match step.next {
        Some(Next::Fetch { .. }) => fetch(deps, step).await,
        _ => Ok(step),
    }
}

/// Close and tell the parent before anything slow at the agent: the card is read only
/// when the end needs the agent (a cancel's remote answer, a push config to delete).
pub async fn end(deps: &'static Deps, step: Step) -> Result<Step, Error> {
    let connect = || async {
        deps.connect(&step.agent)
            .await
            .map_err(
                |err| warn!(task_id = %step.task_id, error = %err, "agent unavailable at the end"),
            )
            .ok()
    };
    handlers::steps::end(&deps.store, &step, connect).await?;
    Ok(step)
}

pub async fn park(deps: &'static Deps, input: ParkInput) -> Result<Value, Error> {
    let stored = handlers::steps::park(
        &deps.store,
        &deps.bell,
        &input.task_id,
        input.park,
        &input.token,
    )
    .await?;
    Ok(json!({"parked": stored}))
}

pub async fn follow(deps: &'static Deps, input: ParkInput) -> Result<Value, Error> {
    let spec = deps.spec(&input.agent);
    let interval = spec.map_or(crate::config::DEFAULT_FOLLOW_INTERVAL, |s| {
        s.follow_interval
    });
    let timing = FollowTiming {
        window: Duration::from_secs(FOLLOW_WINDOW_SECS),
        interval,
        heartbeat: deps.follow_heartbeat,
    };
    // Reading the card can take a slow agent's whole timeout: heartbeat meanwhile.
    let connected = handlers::follow::with_heartbeats(
        &deps.bell,
        &input.token,
        deps.follow_heartbeat,
        deps.connect(&input.agent),
    )
    .await;
    let end = match connected {
        Ok(agent) => {
            handlers::follow(
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
            handlers::follow::follow_unavailable(
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

/// The outbox's delivery: DynamoDB Streams hands the notify function each new note, in
/// the order written per stand-in; it sends them to the parent's FIFO queue in that
/// order. A refused send reports that record as the batch's first failure, so the event
/// source retries from it and nothing after it overtakes it.
pub async fn serve_notify() -> Result<(), Error> {
    let deps = deps().await?;
    // Checked at start: a notify function without its queue would hold every note.
    deps.queue().map_err(|e| format!("configuration: {e}"))?;
    Box::pin(lambda_runtime::run(service_fn(
        move |event: LambdaEvent<NoteStream>| {
            let stop_at = stop_before(event.context.deadline, NOTIFY_MARGIN);
            notify(deps, event.payload, stop_at)
        },
    )))
    .await
}

/// The part of a DynamoDB Streams event the notify function reads.
#[derive(Debug, Deserialize)]
pub struct NoteStream {
    #[serde(rename = "Records", default)]
    records: Vec<NoteRecord>,
}

#[derive(Debug, Deserialize)]
struct NoteRecord {
    #[serde(rename = "eventName", default)]
    event_name: String,
    dynamodb: NoteRecordData,
}

#[derive(Debug, Deserialize)]
struct NoteRecordData {
    #[serde(rename = "SequenceNumber")]
    sequence_number: String,
    #[serde(rename = "NewImage", default)]
    new_image: Option<Value>,
}

/// Time kept back from the function's deadline to answer with what was sent.
const NOTIFY_MARGIN: Duration = Duration::from_secs(3);

/// The instant `margin` before the invocation's deadline (epoch milliseconds).
fn stop_before(deadline_ms: u64, margin: Duration) -> tokio::time::Instant {
    let left = Duration::from_millis(deadline_ms.saturating_sub(crate::clock::now_ms()));
    tokio::time::Instant::now() + left.saturating_sub(margin)
}

async fn notify(
    deps: &'static Deps,
    stream: NoteStream,
    stop_at: tokio::time::Instant,
) -> Result<Value, Error> {
    let queue = deps.queue()?;
    // Only inserts are notes; the TTL's removals are not.
    let inserts: Vec<&NoteRecord> = stream
        .records
        .iter()
        .filter(|r| r.event_name == "INSERT")
        .collect();
    let mut notes = Vec::with_capacity(inserts.len());
    let mut records = Vec::with_capacity(inserts.len());
    for record in &inserts {
        let note = record
            .dynamodb
            .new_image
            .as_ref()
            .and_then(|image| image["body"]["S"].as_str())
            .and_then(|body| serde_json::from_str::<crate::ports::ParentNote>(body).ok());
        match note {
            Some(note) => {
                notes.push(note);
                records.push(*record);
            }
            // Not a note this function wrote: holding the shard for it would hold every
            // stand-in's notes behind it. Said loudly; the note log keeps what there is.
            None => tracing::error!(
                sequence_number = %record.dynamodb.sequence_number,
                "a notes-table record that is not a note; skipped"
            ),
        }
    }
    let failures = match crate::domain::notify::deliver(queue, &notes, stop_at).await {
        None => vec![],
        Some(i) => vec![json!({"itemIdentifier": records[i].dynamodb.sequence_number})],
    };
    Ok(json!({ "batchItemFailures": failures }))
}

/// The push receiver behind `POST /a2a/push/{task_id}`.
pub async fn serve_push() -> Result<(), Error> {
    let deps = deps_with(Retries::Prompt).await?;
    Box::pin(lambda_http::run(service_fn(move |request: Request| {
        Box::pin(push(deps, request)) as BoxFuture<'static, Result<Response<Body>, Error>>
    })))
    .await
}

async fn push(deps: &'static Deps, request: Request) -> Result<Response<Body>, Error> {
    let params = request.path_parameters();
    let task_id = params.first("task_id").unwrap_or_default().to_owned();
    let body: &[u8] = match request.body() {
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => &[],
    };
    let answer =
        receiver::receive(&deps.store, &deps.bell, &task_id, request.headers(), body).await;
    let mut response = Response::builder().status(answer.status);
    if !answer.body.is_empty() {
        response = response.header("content-type", "application/json");
    }
    Ok(response.body(Body::from(answer.body))?)
}

/// The parent's control API: start, reply, cancel, status, notes, list
/// (`handlers::control` decides; this only carries HTTP).
pub async fn serve_control() -> Result<(), Error> {
    let deps = deps_with(Retries::Prompt).await?;
    let machine = deps
        .state_machine_arn
        .clone()
        .ok_or("configuration: STATE_MACHINE_ARN: environment variable is not set")?;
    let executions: &'static SfnExecutions =
        Box::leak(Box::new(SfnExecutions::new(deps.sfn.clone(), machine)));
    Box::pin(lambda_http::run(service_fn(move |request: Request| {
        Box::pin(control(deps, executions, request))
            as BoxFuture<'static, Result<Response<Body>, Error>>
    })))
    .await
}

async fn control(
    deps: &'static Deps,
    executions: &'static SfnExecutions,
    request: Request,
) -> Result<Response<Body>, Error> {
    let path = request.raw_http_path().trim_end_matches('/').to_owned();
    let params = request.path_parameters();
    let query = request.query_string_parameters();
    let body = match request.body() {
        Body::Text(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        Body::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let call = control::route(
        request.method().as_str(),
        &path,
        params.first("task_id"),
        query.first("after"),
        &body,
    );
    let answer = Control {
        store: &deps.store,
        bell: &deps.bell,
        executions,
        agents: &deps.agents,
    }
    .handle(call)
    .await;
    Ok(Response::builder()
        .status(answer.status)
        .header("content-type", "application/json")
        .body(Body::from(answer.body.to_string()))?)
}
