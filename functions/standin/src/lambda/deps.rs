//! The adapters and the agent client each kind of function runs on, built once per
//! process from its settings (clients cost milliseconds).

use std::collections::HashMap;
use std::sync::Mutex;

use aws_config::SdkConfig;

use super::calls::CallRecorder;

use super::config::{ControlSettings, NotifySettings, Retries, StepSettings, Tables};
use crate::a2a::client::{Timeouts, fetch_card};
use crate::a2a::{A2aClient, A2aError, ResolvedAgent};
use crate::adapters::dynamo::DynamoRowStore;
use crate::adapters::events::EventBridgeBus;
use crate::adapters::sfn::{SfnCallback, SfnDoorbell, SfnExecutions};
use crate::adapters::sqs::SqsParentQueue;
use crate::config::{AgentSpec, AgentsConfig, ConfigError};

/// A client of one service on the shared configuration, recording its calls when asked.
macro_rules! client {
    ($name:ident, $sdk:ident) => {
        pub fn $name(&self) -> $sdk::Client {
            let mut builder = $sdk::config::Builder::from(&self.config);
            if self.record {
                builder = builder.interceptor(CallRecorder);
            }
            $sdk::Client::from_conf(builder.build())
        }
    };
}

/// The SDK's configuration, and whether the clients record their calls.
pub struct Aws {
    config: SdkConfig,
    record: bool,
}

impl Aws {
    pub(super) async fn load(retries: Retries, record: bool) -> Self {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .retry_config(retries.config())
            .load()
            .await;
        Self { config, record }
    }

    client!(dynamodb, aws_sdk_dynamodb);
    client!(sfn, aws_sdk_sfn);
    client!(sqs, aws_sdk_sqs);
    client!(eventbridge, aws_sdk_eventbridge);
}

/// The row store and the doorbell: all the push receiver and a park need.
pub struct Rows {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
}

impl Rows {
    pub fn new(aws: &Aws, tables: &Tables) -> Self {
        Self {
            store: DynamoRowStore::new(aws.dynamodb(), &tables.rows, &tables.notes),
            bell: SfnDoorbell::new(aws.sfn()),
        }
    }
}

/// What the steps run on: the rows, the agents' client, and the step settings.
pub struct StepDeps {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
    pub settings: StepSettings,
    http: reqwest::Client,
    /// Agent cards read once per process: every step would otherwise fetch the card again.
    cards: Mutex<HashMap<String, ResolvedAgent>>,
}

impl StepDeps {
    pub fn new(aws: &Aws, settings: StepSettings) -> Result<Self, ConfigError> {
        let http = crate::tls::Roots::agent_client(settings.agent_ca_file.as_deref())?;
        let Rows { store, bell } = Rows::new(aws, &settings.tables);
        Ok(Self {
            store,
            bell,
            settings,
            http,
            cards: Mutex::default(),
        })
    }

    pub(crate) fn spec(&self, agent: &str) -> Option<&AgentSpec> {
        self.settings.agents.agent(agent)
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
    pub fn new(aws: &Aws, settings: ControlSettings) -> Self {
        Self {
            rows: Rows::new(aws, &settings.tables),
            executions: SfnExecutions::new(aws.sfn(), settings.state_machine_arn),
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
    pub fn new(aws: &Aws, settings: NotifySettings) -> Self {
        Self {
            queue: SqsParentQueue::new(aws.sqs(), settings.parent_queue_url),
            bus: settings
                .note_bus
                .map(|bus| EventBridgeBus::new(aws.eventbridge(), bus)),
            callback: SfnCallback::new(aws.sfn()),
        }
    }
}
