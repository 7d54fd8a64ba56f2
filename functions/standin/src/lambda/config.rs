//! Configuration from the environment, checked at start, and the AWS adapters and the
//! agent client built from it once per process.

use std::time::Duration;

use lambda_runtime::Error;

use crate::a2a::client::{Timeouts, fetch_card};
use crate::a2a::{A2aClient, A2aError, ResolvedAgent};
use crate::adapters::dynamo::DynamoRowStore;
use crate::adapters::sfn::SfnDoorbell;
use crate::adapters::sqs::SqsParentQueue;
use crate::config::{AgentSpec, AgentsConfig, ConfigError};
use crate::domain::wake::{IDLE_RECHECK_SECS, Pacing};

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

    pub(crate) fn queue(&self) -> Result<&SqsParentQueue, Error> {
        self.queue
            .as_ref()
            .ok_or_else(|| "PARENT_QUEUE_URL is not set".into())
    }

    pub(crate) fn spec(&self, agent: &str) -> Option<&AgentSpec> {
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
