//! Configuration from the environment, one type per kind of function, read and checked
//! at start: a missing or malformed variable fails the cold start naming it. Each kind
//! reads only what it uses, so a variable one kind needs cannot fail another's start.

use std::path::PathBuf;
use std::time::Duration;

use crate::agent_rules::EntryRules;
use crate::agents::{AgentsConfig, ConfigError};
use crate::config_error::https_or_loopback;
use crate::steps::next::{FOLLOW_WINDOW_SECS, IDLE_RECHECK_SECS, MAX_STANDIN_SECS, Pacing};

mod env;

pub use env::{Env, ProcessEnv};
use env::{boolean, ca_file, list, number, optional, positive, required, secs};

/// Park/wake cycles before a roll, when `HISTORY_BOUND` is not set (the template's
/// `HistoryBound` default).
pub const DEFAULT_HISTORY_BOUND: u32 = 500;
/// The most park/wake cycles one execution may run before it rolls: a cycle writes about
/// 22 events to the execution's history, which Step Functions ends at 25,000 (the
/// execution fails, with no final note); 1,000 leaves room for retries and the end.
pub const MAX_HISTORY_BOUND: u32 = 1000;
/// The longest a turn reads the agent's stream, when `TURN_WINDOW_SECS` is not set.
pub const DEFAULT_TURN_WINDOW_SECS: u64 = 240;
/// How often a follow heartbeats its park, when `FOLLOW_HEARTBEAT_SECS` is not set.
pub const DEFAULT_FOLLOW_HEARTBEAT_SECS: u64 = 10;

fn agents(env: &impl Env) -> Result<AgentsConfig, ConfigError> {
    let document = optional(env, "AGENTS").unwrap_or_else(|| r#"{"agents":[]}"#.into());
    let in_agents = |e: ConfigError| ConfigError::new(format!("AGENTS: {}", e.field), e.problem);
    let config = AgentsConfig::parse(&document).map_err(in_agents)?;
    let rules = entry_rules(env)?;
    for (i, agent) in config.agents.iter().enumerate() {
        let at = format!("agents[{i}]");
        rules.check(&at, agent).map_err(in_agents)?;
    }
    Ok(config)
}

/// What the deployment lets an agent entry name: secrets under `AGENT_SECRETS_PREFIX`
/// (unset, any), roles matching `AGENT_ROLE_ARN_PATTERN` (unset, any), AgentCore Runtime
/// in `AWS_REGION` or at `AGENTCORE_ENDPOINT`, and none of the stack's own places (the
/// AWS endpoint it calls, `AWS_ENDPOINT_URL`; its push API, `PUSH_BASE_URL`; its APIs'
/// ids, `OWN_API_IDS`).
pub fn entry_rules(env: &impl Env) -> Result<EntryRules, ConfigError> {
    let agentcore_endpoint = optional(env, "AGENTCORE_ENDPOINT");
    // The session token goes with every signature: never in clear off the machine.
    if let Some(endpoint) = &agentcore_endpoint
        && !reqwest::Url::parse(endpoint).is_ok_and(|url| https_or_loopback(&url))
    {
        return Err(ConfigError::new(
            "AGENTCORE_ENDPOINT",
            format!("must be an https:// URL (http:// on loopback only), got {endpoint:?}"),
        ));
    }
    // The AWS endpoint the functions call, the push URL (Register's), and the stack's
    // own places the template names for every function (`OWN_ORIGINS`).
    let own_origins = ["AWS_ENDPOINT_URL", "PUSH_BASE_URL"]
        .iter()
        .filter_map(|name| optional(env, name))
        .chain(list(env, "OWN_ORIGINS"))
        .filter_map(|url| crate::agent_rules::origin_of(&url))
        .collect();
    Ok(EntryRules {
        secret_prefix: optional(env, "AGENT_SECRETS_PREFIX").unwrap_or_default(),
        role_pattern: optional(env, "AGENT_ROLE_ARN_PATTERN"),
        region: optional(env, "AWS_REGION"),
        agentcore_endpoint,
        own_origins,
        own_api_ids: list(env, "OWN_API_IDS"),
    })
}

/// The row table and the note log: every function but notify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tables {
    pub rows: String,
    pub notes: String,
}

impl Tables {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        Ok(Self {
            rows: required(env, "TABLE_NAME")?,
            notes: required(env, "NOTES_TABLE_NAME")?,
        })
    }
}

/// The push receiver: the tables, and the function that hears the pushes it claims
/// (`HEARER_FUNCTION`; unset, every push rings the park).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSettings {
    pub tables: Tables,
    pub hearer: Option<String>,
}

impl PushSettings {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        Ok(Self {
            tables: Tables::read(env)?,
            hearer: optional(env, "HEARER_FUNCTION"),
        })
    }
}

/// The state machine's steps (turn, register, wake, end, follow).
#[derive(Debug, Clone)]
pub struct StepSettings {
    pub tables: Tables,
    pub agents: AgentsConfig,
    /// The agent registry's table: only the turn reads it (a first turn snapshots the
    /// entry on the row; every later step reads the row's).
    pub agents_table: Option<String>,
    /// Without it, no push URL can be offered and every stand-in follows or polls.
    pub push_base_url: Option<String>,
    pub history_bound: u32,
    pub pacing: Pacing,
    pub turn_window: Duration,
    pub follow_heartbeat: Duration,
    pub agent_ca_file: Option<PathBuf>,
    /// Whether agents may be on private or loopback addresses (`ALLOW_PRIVATE_AGENTS`,
    /// default false; the template sets it true on LocalStack).
    pub allow_private_agents: bool,
    /// The deployment's name (`STACK_NAME`): the salt of each stand-in's session id.
    pub stack_name: String,
    /// Where artifacts go (`ARTIFACTS_BUCKET`); without it they are not collected.
    pub artifacts: Option<ArtifactSettings>,
    /// Where a step sends its note at once (`PARENT_QUEUE_URL`, `NOTE_BUS_NAME`);
    /// without them every note goes by the outbox's stream.
    pub outlets: Option<OutletSettings>,
    /// What an agent entry may name; a registry entry read back is held to it.
    pub entry_rules: EntryRules,
}

/// The artifacts bucket and what one stand-in may keep in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactSettings {
    pub bucket: String,
    pub bounds: crate::artifacts::Bounds,
    /// The function's memory (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, set by Lambda), which
    /// bounds the parts held at once; None outside Lambda: unbounded.
    pub memory_mib: Option<u64>,
}

impl ArtifactSettings {
    pub fn read(env: &impl Env) -> Result<Option<Self>, ConfigError> {
        let Some(bucket) = optional(env, "ARTIFACTS_BUCKET") else {
            return Ok(None);
        };
        let defaults = crate::artifacts::Bounds::default();
        let memory = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE";
        let max_count = positive(env, "MAX_ARTIFACTS", defaults.max_count as u64)?;
        Ok(Some(Self {
            bucket,
            bounds: crate::artifacts::Bounds {
                max_bytes: number(env, "MAX_ARTIFACT_BYTES", defaults.max_bytes)?,
                max_count: usize::try_from(max_count).map_err(|_| {
                    ConfigError::new("MAX_ARTIFACTS", format!("{max_count} is too many"))
                })?,
            },
            memory_mib: optional(env, memory)
                .map(|_| positive(env, memory, 0))
                .transpose()?,
        }))
    }
}

/// The longest a stand-in may live (`MAX_STANDIN_SECS`): its default deadline, and the
/// most a start or an agent entry may ask.
pub fn max_standin_secs(env: &impl Env) -> Result<u64, ConfigError> {
    positive(env, "MAX_STANDIN_SECS", MAX_STANDIN_SECS)
}

impl StepSettings {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        let history_bound = number(env, "HISTORY_BOUND", u64::from(DEFAULT_HISTORY_BOUND))?;
        Ok(Self {
            tables: Tables::read(env)?,
            agents: agents(env)?,
            agents_table: optional(env, "AGENTS_TABLE_NAME"),
            push_base_url: optional(env, "PUSH_BASE_URL"),
            history_bound: u32::try_from(history_bound)
                .ok()
                .filter(|bound| (2..=MAX_HISTORY_BOUND).contains(bound))
                .ok_or_else(|| ConfigError {
                    field: "HISTORY_BOUND".into(),
                    problem: format!(
                        "must be 2 to at most {MAX_HISTORY_BOUND} cycles (an execution's history holds 25,000 events), got {history_bound}"
                    ),
                })?,
            pacing: Pacing {
                idle_recheck_secs: positive(env, "IDLE_RECHECK_SECS", IDLE_RECHECK_SECS)?,
                deadline_secs: max_standin_secs(env)?,
                ..Pacing::default()
            },
            turn_window: secs(env, "TURN_WINDOW_SECS", DEFAULT_TURN_WINDOW_SECS)?,
            follow_heartbeat: secs(env, "FOLLOW_HEARTBEAT_SECS", DEFAULT_FOLLOW_HEARTBEAT_SECS)?,
            agent_ca_file: ca_file(env),
            allow_private_agents: boolean(env, "ALLOW_PRIVATE_AGENTS")?,
            stack_name: optional(env, "STACK_NAME").unwrap_or_default(),
            artifacts: ArtifactSettings::read(env)?,
            outlets: optional(env, "PARENT_QUEUE_URL")
                .map(|_| OutletSettings::read(env))
                .transpose()?,
            entry_rules: entry_rules(env)?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct FollowerSettings {
    pub steps: StepSettings,
    /// The follow queue (`FOLLOW_QUEUE_URL`): more requests, and parks handed back.
    pub queue_url: String,
    /// The most parks one invocation follows at once (`FOLLOWS_PER_FUNCTION`).
    pub capacity: usize,
    /// How long one invocation follows before it hands back (`FOLLOW_WINDOW_SECS`; at
    /// most `MAX_FOLLOW_WINDOW_SECS`, the function's timeout less a minute).
    pub window: Duration,
}

/// How many parks one follower holds, when `FOLLOWS_PER_FUNCTION` is not set.
pub const DEFAULT_FOLLOWS_PER_FUNCTION: u64 = 100;
/// The most one follower may hold: each holds a connection and a heartbeat every
/// `FOLLOW_HEARTBEAT_SECS`.
pub const MAX_FOLLOWS_PER_FUNCTION: u64 = 500;
/// The longest follower window: the follow function's timeout (660 s) less a minute
/// for the last reports and the hand-back.
pub const MAX_FOLLOW_WINDOW_SECS: u64 = 600;

impl FollowerSettings {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        let capacity = positive(env, "FOLLOWS_PER_FUNCTION", DEFAULT_FOLLOWS_PER_FUNCTION)?;
        if capacity > MAX_FOLLOWS_PER_FUNCTION {
            let problem = format!("must be at most {MAX_FOLLOWS_PER_FUNCTION}, got {capacity}");
            return Err(ConfigError::new("FOLLOWS_PER_FUNCTION", problem));
        }
        let window = positive(env, "FOLLOW_WINDOW_SECS", FOLLOW_WINDOW_SECS)?;
        if window > MAX_FOLLOW_WINDOW_SECS {
            let problem = format!(
                "must be at most {MAX_FOLLOW_WINDOW_SECS} (the function's timeout less a minute), got {window}"
            );
            return Err(ConfigError::new("FOLLOW_WINDOW_SECS", problem));
        }
        Ok(Self {
            steps: StepSettings::read(env)?,
            queue_url: required(env, "FOLLOW_QUEUE_URL")?,
            capacity: usize::try_from(capacity).unwrap_or(usize::MAX),
            window: Duration::from_secs(window),
        })
    }
}

/// The control API: it starts executions of one state machine and checks agent names.
#[derive(Debug, Clone)]
pub struct ControlSettings {
    pub tables: Tables,
    pub agents: AgentsConfig,
    pub agents_table: String,
    pub state_machine_arn: String,
    /// What an agent entry may name (`PUT /agents` refuses the rest).
    pub entry_rules: EntryRules,
    /// The artifacts bucket (`ARTIFACTS_BUCKET`), when the deployment keeps them.
    pub artifacts_bucket: Option<String>,
    /// The most `deadline_secs` a start may ask (`MAX_STANDIN_SECS`).
    pub max_standin_secs: u64,
    /// How the agents' cards are reached when `/agents` shows them.
    pub agent_ca_file: Option<PathBuf>,
    pub allow_private_agents: bool,
    /// How the API is reached from outside (`API_URL_FORM`: `aws`, the default, or
    /// `localstack`), for the URLs it writes of itself.
    pub api_url_form: ApiUrlForm,
    /// The webhook queue (`WEBHOOK_QUEUE_URL`): a webhook set is queued for delivery.
    pub webhook_queue_url: Option<String>,
    /// The A2A front's keys: without them the keyed door lets no one in.
    pub keys_table: Option<String>,
    /// The parent's turns: without them a task's history is the agent's alone.
    pub turns_table: Option<String>,
}

impl ControlSettings {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        Ok(Self {
            tables: Tables::read(env)?,
            agents: agents(env)?,
            agents_table: required(env, "AGENTS_TABLE_NAME")?,
            state_machine_arn: required(env, "STATE_MACHINE_ARN")?,
            entry_rules: entry_rules(env)?,
            artifacts_bucket: optional(env, "ARTIFACTS_BUCKET"),
            max_standin_secs: max_standin_secs(env)?,
            agent_ca_file: ca_file(env),
            allow_private_agents: boolean(env, "ALLOW_PRIVATE_AGENTS")?,
            api_url_form: api_url_form(env)?,
            webhook_queue_url: optional(env, "WEBHOOK_QUEUE_URL"),
            keys_table: stack_table(env, KEYS_TABLE_SUFFIX),
            turns_table: stack_table(env, TURNS_TABLE_SUFFIX),
        })
    }
}

/// The keys table's and the turns table's names after the stack's (`{stack}-keys`,
/// `{stack}-turns`), as the template names them: one more variable each would take the
/// control function's environment past Lambda's 4 KB (the agents document is most of it).
pub const KEYS_TABLE_SUFFIX: &str = "-keys";
pub const TURNS_TABLE_SUFFIX: &str = "-turns";

/// The table named `{STACK_NAME}{suffix}`; none outside a stack.
fn stack_table(env: &impl Env, suffix: &str) -> Option<String> {
    optional(env, "STACK_NAME").map(|stack| format!("{stack}{suffix}"))
}

/// How the control API is reached from outside, for the URLs it writes of itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiUrlForm {
    /// `https://{domain}{stage or base path}`: API Gateway, its own domain or a custom one.
    Aws,
    /// `http://{host}/_aws/execute-api/{api id}/{stage}`: LocalStack's form.
    LocalStack,
}

fn api_url_form(env: &impl Env) -> Result<ApiUrlForm, ConfigError> {
    match optional(env, "API_URL_FORM").as_deref().map(str::trim) {
        None | Some("aws") => Ok(ApiUrlForm::Aws),
        Some("localstack") => Ok(ApiUrlForm::LocalStack),
        Some(other) => Err(ConfigError::new(
            "API_URL_FORM",
            format!("must be aws or localstack, got {other:?}"),
        )),
    }
}

/// Where notes go: the parent's queue and the note bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutletSettings {
    pub parent_queue_url: String,
    /// The EventBridge bus every note is also put on; none when unset or blank.
    pub note_bus: Option<String>,
    /// The webhook queue (`WEBHOOK_QUEUE_URL`), where a note of a stand-in with webhooks
    /// also goes; without it no webhook hears a note.
    pub webhook_queue_url: Option<String>,
}

impl OutletSettings {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        Ok(Self {
            parent_queue_url: required(env, "PARENT_QUEUE_URL")?,
            note_bus: optional(env, "NOTE_BUS_NAME"),
            webhook_queue_url: optional(env, "WEBHOOK_QUEUE_URL"),
        })
    }
}

/// The webhooks' delivery: the webhook queue's stand-ins, their webhooks and notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    pub tables: Tables,
    /// The webhook queue (`WEBHOOK_QUEUE_URL`), whose retries the function delays.
    pub queue_url: String,
    /// Webhooks are held to the agents' reach rules (`ALLOW_PRIVATE_AGENTS`).
    pub allow_private: bool,
    pub agent_ca_file: Option<PathBuf>,
}

impl WebhookSettings {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        Ok(Self {
            tables: Tables::read(env)?,
            queue_url: required(env, "WEBHOOK_QUEUE_URL")?,
            allow_private: boolean(env, "ALLOW_PRIVATE_AGENTS")?,
            agent_ca_file: ca_file(env),
        })
    }
}

/// The outbox's delivery: notes from the stream to the outlets, and the rows' sent marks
/// (the row table; it reads no note from the note log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifySettings {
    pub rows_table: String,
    pub outlets: OutletSettings,
}

impl NotifySettings {
    pub fn read(env: &impl Env) -> Result<Self, ConfigError> {
        Ok(Self {
            rows_table: required(env, "TABLE_NAME")?,
            outlets: OutletSettings::read(env)?,
        })
    }
}

/// Whether the function logs the IAM action of each AWS call it makes
/// (`RECORD_AWS_CALLS`: `true` or `false`, default `false`).
pub fn record_calls(env: &impl Env) -> Result<bool, ConfigError> {
    boolean(env, super::calls::RECORD_AWS_CALLS)
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
    pub(super) fn config(self) -> aws_config::retry::RetryConfig {
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

#[cfg(test)]
mod tests;
