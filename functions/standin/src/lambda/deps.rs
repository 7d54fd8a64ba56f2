//! The adapters and the agent client each kind of function runs on, built once per
//! process from its settings (clients cost milliseconds).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use aws_config::SdkConfig;

use super::config::{ControlSettings, NotifySettings, Retries, StepSettings, Tables};
use crate::a2a::client::{Timeouts, fetch_card};
use crate::a2a::{A2aClient, A2aError, ResolvedAgent};
use crate::adapters::dynamo::DynamoRowStore;
use crate::adapters::events::EventBridgeBus;
use crate::adapters::sfn::{SfnCallback, SfnDoorbell, SfnExecutions};
use crate::adapters::sqs::SqsParentQueue;
use crate::config::{AgentSpec, AgentsConfig, ConfigError};
use crate::domain::wake::Pacing;

pub(super) async fn aws(retries: Retries) -> SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(retries.config())
        .load()
        .await
}

/// The row store and the doorbell: all the push receiver and a park need.
pub struct Rows {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
}

impl Rows {
    pub fn new(aws: &SdkConfig, tables: &Tables) -> Self {
        Self {
            store: DynamoRowStore::new(
                aws_sdk_dynamodb::Client::new(aws),
                &tables.rows,
                &tables.notes,
            ),
            bell: SfnDoorbell::new(aws_sdk_sfn::Client::new(aws)),
        }
    }
}

/// What the steps run on: the rows, the agents and their client, and the pacing.
pub struct StepDeps {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
    pub agents: AgentsConfig,
    pub push_base_url: Option<String>,
    pub history_bound: u32,
    pub pacing: Pacing,
    pub turn_window: Duration,
    pub follow_heartbeat: Duration,
    http: reqwest::Client,
    /// Agent cards read once per process: every step would otherwise fetch the card again.
    cards: Mutex<HashMap<String, ResolvedAgent>>,
}

impl StepDeps {
    pub fn new(aws: &SdkConfig, settings: StepSettings) -> Result<Self, ConfigError> {
        let http = crate::tls::Roots::agent_client(settings.agent_ca_file.as_deref())?;
        let Rows { store, bell } = Rows::new(aws, &settings.tables);
        Ok(Self {
            store,
            bell,
            agents: settings.agents,
            push_base_url: settings.push_base_url,
            history_bound: settings.history_bound,
            pacing: settings.pacing,
            turn_window: settings.turn_window,
            follow_heartbeat: settings.follow_heartbeat,
            http,
            cards: Mutex::default(),
        })
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

/// What the control API runs on: the rows, the executions, the agents' names.
pub struct ControlDeps {
    pub rows: Rows,
    pub executions: SfnExecutions,
    pub agents: AgentsConfig,
}

impl ControlDeps {
    pub fn new(aws: &SdkConfig, settings: ControlSettings) -> Self {
        Self {
            rows: Rows::new(aws, &settings.tables),
            executions: SfnExecutions::new(
                aws_sdk_sfn::Client::new(aws),
                settings.state_machine_arn,
            ),
            agents: settings.agents,
        }
    }
}

/// What notify runs on: the parent's queue, the note bus, Step Functions parents.
pub struct NotifyDeps {
    pub queue: SqsParentQueue,
    pub bus: Option<EventBridgeBus>,
    pub callback: SfnCallback,
}

impl NotifyDeps {
    pub fn new(aws: &SdkConfig, settings: NotifySettings) -> Self {
        Self {
            queue: SqsParentQueue::new(aws_sdk_sqs::Client::new(aws), settings.parent_queue_url),
            bus: settings
                .note_bus
                .map(|bus| EventBridgeBus::new(aws_sdk_eventbridge::Client::new(aws), bus)),
            callback: SfnCallback::new(aws_sdk_sfn::Client::new(aws)),
        }
    }
}
