//! The adapters and the agent client each kind of function runs on, built once per
//! process from its settings (clients cost milliseconds).

use aws_config::SdkConfig;
use standin_remote::tls::Roots;
use standin_remote::{AgentClient, Connector, Reach, RemoteError};

use super::calls::CallRecorder;

use super::config::{ControlSettings, NotifySettings, Retries, StepSettings, Tables};
use crate::agents::{AgentSpec, AgentsConfig, ConfigError};
use crate::control::sfn::SfnExecutions;
use crate::doorbell::sfn::SfnDoorbell;
use crate::outbox::callback::SfnCallback;
use crate::outbox::events::EventBridgeBus;
use crate::outbox::sqs::SqsParentQueue;
use crate::row::dynamo::DynamoRowStore;

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

/// What the steps run on: the rows, the agents' connector, and the step settings.
pub struct StepDeps {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
    pub settings: StepSettings,
    agents: Connector,
}

impl StepDeps {
    pub fn new(aws: &Aws, settings: StepSettings) -> Result<Self, ConfigError> {
        let http =
            Roots::agent_client(settings.agent_ca_file.as_deref()).map_err(|e| ConfigError {
                field: e.field,
                problem: e.problem,
            })?;
        let Rows { store, bell } = Rows::new(aws, &settings.tables);
        Ok(Self {
            store,
            bell,
            settings,
            agents: Connector::new(http),
        })
    }

    pub(crate) fn spec(&self, agent: &str) -> Option<&AgentSpec> {
        self.settings.agents.agent(agent)
    }

    /// Reads the agent's card (once per process) and connects.
    pub async fn connect(&self, agent: &str) -> Result<AgentClient, RemoteError> {
        let spec = self.spec(agent).ok_or_else(|| {
            RemoteError::Card(format!("no agent {agent:?} in the AGENTS document"))
        })?;
        let reach = Reach {
            url: &spec.url,
            allowed_origins: &spec.allowed_origins,
            participant: spec.participant.as_deref(),
        };
        self.agents.connect(agent, reach).await
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
