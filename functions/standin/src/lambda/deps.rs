//! The adapters and the agent client each kind of function runs on, built once per
//! process from its settings (clients cost milliseconds).

use std::sync::Arc;

use aws_config::SdkConfig;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use standin_remote::tls::Roots;
use standin_remote::{AgentClient, Connector, Reach, RemoteError};

use super::calls::CallRecorder;
use super::config::{NotifySettings, OutletSettings, Retries, StepSettings, Tables};
use crate::agents::{AgentSpec, ConfigError};
use crate::artifacts::s3::S3Blobs;
use crate::artifacts::{Blobs, Collecting, Desk, HeldSecrets, Ours, PartRoom};
use crate::auth::Keyring;
use crate::auth::secrets::Secrets;
use crate::auth::secretsmanager::SecretsManager;
use crate::auth::sigv4::AgentCoreSigner;
use crate::auth::sts::StsRoleKeys;
use crate::digest::TokenDigest;
use crate::doorbell::sfn::SfnDoorbell;
use crate::outbox::at_once::AtOnce;
use crate::outbox::callback::SfnCallback;
use crate::outbox::deliver::Outlets;
use crate::outbox::events::EventBridgeBus;
use crate::outbox::sqs::SqsParentQueue;
use crate::outbox::{NoteArtifacts, Teller};
use crate::push::invoke::LambdaHearer;
use crate::registry::dynamo::DynamoRegistry;
use crate::registry::{Catalog, Registry};
use crate::row::dynamo::DynamoRowStore;
use crate::row::{Row, StandIns};
use crate::steps::{Invocation, StepError};

/// The agent as the steps reach it: its answers' artifacts go to the desk.
pub type Reached = Collecting<AgentClient>;

/// A client of one service on the shared configuration (its builder tuned by the closure
/// given), recording its calls when asked.
macro_rules! client {
    ($name:ident, $sdk:ident $(, |$builder:ident, $config:ident| $tune:expr)?) => {
        pub fn $name(&self) -> $sdk::Client {
            let mut builder = $sdk::config::Builder::from(&self.config);
            $(builder = {
                let ($builder, $config) = (builder, &self.config);
                $tune
            };)?
            if self.record {
                builder = builder.interceptor(CallRecorder);
            }
            $sdk::Client::from_conf(builder.build())
        }
    };
}

pub struct Aws {
    config: SdkConfig,
    record: bool,
}

impl Aws {
    pub(super) async fn load(retries: Retries, record: bool, http: SharedHttpClient) -> Self {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(http)
            .retry_config(retries.config())
            .load()
            .await;
        Self { config, record }
    }

    client!(dynamodb, aws_sdk_dynamodb);
    client!(sfn, aws_sdk_sfn);
    client!(sqs, aws_sdk_sqs);
    client!(eventbridge, aws_sdk_eventbridge);
    client!(secretsmanager, aws_sdk_secretsmanager);
    client!(sts, aws_sdk_sts);
    // Lambda, calling once: an invoke retried after its function started would start a
    // second run of it (the door's hearer; its hearing commits once, but asks twice).
    client!(lambda_once, aws_sdk_lambda, |builder, _config| builder
        .retry_config(aws_config::retry::RetryConfig::disabled()));
    // S3, by path (`endpoint/bucket/key`) when the endpoint is not AWS's own (LocalStack,
    // a proxy): a bucket's own host name would not resolve there.
    client!(s3, aws_sdk_s3, |builder, config| builder
        .force_path_style(config.endpoint_url().is_some()));
}

/// The row store and the doorbell: all the push receiver and a park need.
pub struct Rows {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
}

impl Rows {
    pub fn new(aws: &Aws, tables: &Tables) -> Self {
        Self {
            store: row_store(aws, tables),
            bell: SfnDoorbell::new(aws.sfn()),
        }
    }
}

fn row_store(aws: &Aws, tables: &Tables) -> DynamoRowStore {
    DynamoRowStore::new(aws.dynamodb(), &tables.rows, &tables.notes)
}

/// The push receiver's: the rows and the doorbell, and the hearer it hands the pushes
/// it claims (None: every push rings the park).
pub struct PushDeps {
    pub rows: Rows,
    pub hearer: Option<LambdaHearer>,
}

impl PushDeps {
    pub fn new(aws: &Aws, settings: super::config::PushSettings) -> Result<Self, ConfigError> {
        Ok(Self {
            rows: Rows::new(aws, &settings.tables),
            hearer: settings
                .hearer
                .map(|name| LambdaHearer::new(aws.lambda_once(), name)),
        })
    }
}

/// What the steps run on: the rows, the agents' catalog and connector, the settings.
pub struct StepDeps {
    pub store: DynamoRowStore,
    pub bell: SfnDoorbell,
    pub settings: StepSettings,
    catalog: Catalog,
    agents: Connector,
    keyring: Arc<Keyring>,
    /// The artifacts bucket, when the stack has one.
    blobs: Option<Arc<dyn Blobs>>,
    /// Where a step sends its note at once, when configured.
    outlets: Option<OutletAdapters>,
    /// The process's room for artifact parts held in memory (None: unbounded).
    room: Option<PartRoom>,
}

impl StepDeps {
    pub fn new(aws: &Aws, settings: StepSettings) -> Result<Self, ConfigError> {
        let private = settings.allow_private_agents;
        let (roots, http) = agent_http(settings.agent_ca_file.as_deref(), private)?;
        // AgentCore Runtime agents' calls are signed with the roles their entries name,
        // assumed through STS (never with the function's own role).
        let signer = AgentCoreSigner::new(
            Arc::new(StsRoleKeys::new(aws.sts(), &settings.stack_name)),
            aws.config.region().map(|r| r.to_string()),
            settings.entry_rules.agentcore_endpoint.clone(),
        );
        // Secrets Manager's client is made only here, and only the steps reach agents.
        let secrets = Secrets::new(SecretsManager::new(aws.secretsmanager()));
        let keyring = Arc::new(Keyring::new(secrets, http.clone(), signer, private));
        let bucket = settings.artifacts.as_ref().map(|a| &a.bucket);
        let blobs = bucket.map(|bucket| Arc::new(S3Blobs::new(aws.s3(), bucket)) as Arc<dyn Blobs>);
        let Rows { store, bell } = Rows::new(aws, &settings.tables);
        let agents_table = settings.agents_table.as_deref();
        let catalog = catalog(aws, settings.agents.clone(), agents_table)
            .with_rules(settings.entry_rules.clone());
        let outlets = settings.outlets.clone();
        Ok(Self {
            store,
            bell,
            settings,
            catalog,
            agents: Connector::new(roots, http),
            keyring,
            blobs,
            outlets: outlets.map(|outlets| OutletAdapters::new(aws, outlets)),
            room: None,
        }
        .holding(1))
    }

    /// A process that holds `streams` stand-ins' streams at once: the room for parts is
    /// what its memory leaves after them.
    pub fn holding(mut self, streams: usize) -> Self {
        let memory = self.settings.artifacts.as_ref().and_then(|a| a.memory_mib);
        self.room = memory.map(|memory| {
            if !PartRoom::fits(memory, streams, AgentClient::MAX_EVENT_BYTES) {
                tracing::warn!(
                    memory,
                    streams,
                    "the function's memory may not hold every stream's event buffer at once; raise its MemorySize or lower FollowsPerFunction"
                );
            }
            PartRoom::for_memory(memory, streams, AgentClient::MAX_EVENT_BYTES)
        });
        self
    }

    /// How this invocation tells stand-in notes: with `desk`'s artifacts, each note sent
    /// at once where the function has outlets.
    fn teller(&self, desk: Option<Arc<Desk>>) -> Teller<'_, DynamoRowStore> {
        let teller =
            Teller::new(&self.store).with_artifacts(desk.map(|d| d as Arc<dyn NoteArtifacts>));
        match &self.outlets {
            Some(out) => teller.sending_at_once(AtOnce::new(&self.store, Some(out.outlets()))),
            None => teller,
        }
    }

    /// Stand-in `task_id`'s view for this invocation: its row (`row` as a write returned
    /// it, else read now), its agent's entry, its artifacts' desk and teller, and its
    /// agent, reached when a step first asks, in the stand-in's trace: the row's (the
    /// first turn wrote it, so a retried first turn that began another keeps the first),
    /// else `trace`, the step's, for a first turn whose row does not exist yet.
    pub async fn invocation(
        &'static self,
        task_id: &str,
        agent: &str,
        row: Option<Row>,
        trace: Option<&str>,
    ) -> Result<Invocation<'static, DynamoRowStore, Reached>, StepError> {
        let Standing { spec, token, row } = self.standing(task_id, agent, row).await?;
        let desk = self.desk(task_id, token);
        let trace = row
            .as_ref()
            .and_then(|row| row.traceparent.clone())
            .or_else(|| trace.map(str::to_owned))
            .filter(|given| standin_wire::TraceContext::parse("traceparent", given).is_ok());
        let (task_id, agent, reached) = (task_id.to_owned(), agent.to_owned(), spec.clone());
        let (sink, collected) = (desk.as_ref().map(|d| d.sink()), desk.clone());
        let connect = async move {
            let Some(spec) = reached else {
                return Err(RemoteError::Card(format!(
                    "no agent {agent:?} in the stack's Agents or the agent registry"
                )));
            };
            let client = self.connect(&spec, &task_id, trace.as_deref()).await;
            Collecting::reached(client.map(|c| c.with_artifacts(sink)), collected).await
        };
        Ok(Invocation::new(self.teller(desk), connect)
            .with_spec(spec)
            .with_row(row)
            .with_uploads(self.blobs.clone()))
    }

    /// Stand-in `task_id`'s artifacts desk for this invocation (None: no bucket);
    /// `token` is the digest of the push token its agent was given.
    fn desk(&self, task_id: &str, token: Option<TokenDigest>) -> Option<Arc<Desk>> {
        let (blobs, settings) = (self.blobs.clone()?, self.settings.artifacts.as_ref()?);
        let held = Some(self.keyring.clone() as Arc<dyn HeldSecrets>);
        let (ours, room) = (Ours { token, held }, self.room.clone());
        let desk = Desk::new(blobs, task_id, settings.bounds, ours, room);
        Some(Arc::new(desk))
    }

    /// The stand-in as the invocation finds it: its agent (the entry its row kept when it
    /// started, else, for a first turn or a row from before snapshots, the catalog's), the
    /// digest of the push token the agent was given, and the row (`row`, else read now).
    pub async fn standing(
        &self,
        task_id: &str,
        agent: &str,
        row: Option<Row>,
    ) -> Result<Standing, StepError> {
        let row = match row {
            Some(row) => Some(row),
            None => self.store.get(task_id).await?,
        };
        let watch = row.as_ref().and_then(|row| row.watch.as_ref());
        let token = watch.and_then(|watch| watch.token_digest.clone());
        // Held to the rules as they are now: they may have tightened since the stand-in
        // started.
        let kept = row
            .as_ref()
            .filter(|row| row.agent == agent)
            .and_then(|row| row.agent_entry.as_deref())
            .map(|text| {
                let spec = AgentSpec::parse_entry(text)?;
                self.settings.entry_rules.check("", &spec).map(|()| spec)
            });
        if let Some(Err(err)) = &kept {
            tracing::error!(task_id, error = %err, "the row's agent entry does not read or breaks the deployment's rules; using the catalog's");
        }
        let spec = match kept {
            Some(Ok(spec)) => Some(spec),
            _ => self.catalog.agent(agent).await?.map(|(spec, _)| spec),
        };
        Ok(Standing { spec, token, row })
    }

    /// Reads the agent's card (once per process and entry: an edited entry reads it
    /// again) and connects on behalf of stand-in `task_id`, every call carrying its
    /// `traceparent`.
    pub async fn connect(
        &self,
        spec: &AgentSpec,
        task_id: &str,
        traceparent: Option<&str>,
    ) -> Result<AgentClient, RemoteError> {
        let session = spec.session_header.as_deref().map(|name| {
            let salt = &self.settings.stack_name;
            (name, crate::agents::session_id(salt, task_id))
        });
        let key = spec.to_entry().to_string();
        let auth = spec.auth.as_ref();
        let reach = Reach {
            credentials: auth.map(|auth| self.keyring.credentials(&key, auth)),
            session: session.as_ref().map(|(name, id)| (*name, id.as_str())),
            traceparent,
            ..reach_of(spec, self.settings.allow_private_agents)
        };
        self.agents.connect(&key, reach).await
    }
}

/// The roots agents are trusted on and the client that calls them: public addresses only
/// unless the deployment allows private agents.
pub fn agent_http(
    ca_file: Option<&std::path::Path>,
    allow_private: bool,
) -> Result<(Roots, reqwest::Client), ConfigError> {
    let tls = |e: standin_remote::tls::TlsError| ConfigError::new(e.field, e.problem);
    let mut roots = match ca_file {
        Some(path) => Roots::with_file(path).map_err(tls)?,
        None => Roots::built_in(),
    };
    if !allow_private {
        roots = roots.public_only();
    }
    let http = roots.agent_http_client().map_err(tls)?;
    Ok((roots, http))
}

/// Where an entry says its agent is and what every call to it carries, as anyone may
/// reach it: no credentials, no stand-in's session or trace.
pub fn reach_of(spec: &AgentSpec, allow_private: bool) -> Reach<'_> {
    Reach {
        agent: &spec.id,
        credentials: None,
        url: &spec.url,
        card_url: spec.card_url.as_deref(),
        allowed_origins: &spec.allowed_origins,
        participant: spec.participant.as_deref(),
        headers: &spec.headers,
        session: None,
        traceparent: None,
        extensions: &spec.extensions,
        allow_private,
        card_signing: spec.card_signing.as_ref(),
        preferred_binding: spec.preferred_binding,
    }
}

/// The stack's agents, and the registry's when the function is given its table.
pub fn catalog(aws: &Aws, stack: crate::agents::AgentsConfig, table: Option<&str>) -> Catalog {
    let registry = table
        .map(|table| Box::new(DynamoRegistry::new(aws.dynamodb(), table)) as Box<dyn Registry>);
    Catalog::new(stack, registry)
}

/// The AWS adapters a note goes out through (the parent's queue, the note bus, Step
/// Functions parents), owned once per process; `outlets()` is the outbox's view of them.
pub struct OutletAdapters {
    queue: SqsParentQueue,
    bus: Option<EventBridgeBus>,
    callback: SfnCallback,
    webhooks: Option<SqsParentQueue>,
}

impl OutletAdapters {
    pub fn new(aws: &Aws, settings: OutletSettings) -> Self {
        Self {
            queue: SqsParentQueue::new(aws.sqs(), settings.parent_queue_url),
            bus: settings
                .note_bus
                .map(|bus| EventBridgeBus::new(aws.eventbridge(), bus)),
            callback: SfnCallback::new(aws.sfn()),
            webhooks: settings
                .webhook_queue_url
                .map(|url| SqsParentQueue::new(aws.sqs(), url)),
        }
    }

    pub fn outlets(&self) -> Outlets<'_, SqsParentQueue, EventBridgeBus, SfnCallback> {
        Outlets {
            queue: &self.queue,
            bus: self.bus.as_ref(),
            callback: &self.callback,
            webhooks: self.webhooks.as_ref(),
        }
    }
}

/// A stand-in as an invocation finds it (`StepDeps::standing`).
pub struct Standing {
    pub spec: Option<AgentSpec>,
    pub token: Option<TokenDigest>,
    pub row: Option<Row>,
}

pub struct FollowDeps {
    pub steps: StepDeps,
    pub requests: crate::follow::sqs::SqsFollowRequests,
    pub capacity: usize,
    pub window: std::time::Duration,
}

impl FollowDeps {
    pub fn new(aws: &Aws, settings: super::config::FollowerSettings) -> Result<Self, ConfigError> {
        Ok(Self {
            requests: crate::follow::sqs::SqsFollowRequests::new(aws.sqs(), settings.queue_url),
            capacity: settings.capacity,
            window: settings.window,
            steps: StepDeps::new(aws, settings.steps)?.holding(settings.capacity),
        })
    }
}

impl crate::follow::serve::FollowPorts for FollowDeps {
    type Rows = DynamoRowStore;
    type Bell = SfnDoorbell;
    type Agent = Reached;
    type Requests = crate::follow::sqs::SqsFollowRequests;

    fn requests(&self) -> &Self::Requests {
        &self.requests
    }

    fn bell(&self) -> &SfnDoorbell {
        &self.steps.bell
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn heartbeat(&self) -> std::time::Duration {
        self.steps.settings.follow_heartbeat
    }

    async fn invocation(
        &'static self,
        task_id: &str,
        agent: &str,
    ) -> Result<Invocation<'static, DynamoRowStore, Reached>, StepError> {
        self.steps.invocation(task_id, agent, None, None).await
    }
}

pub struct NotifyDeps {
    pub outlets: OutletAdapters,
    pub marks: DynamoRowStore,
}

impl NotifyDeps {
    pub fn new(aws: &Aws, settings: NotifySettings) -> Result<Self, ConfigError> {
        Ok(Self {
            outlets: OutletAdapters::new(aws, settings.outlets),
            // Notify reads no note log: the stream hands it the notes.
            marks: DynamoRowStore::new(aws.dynamodb(), settings.rows_table, ""),
        })
    }
}

/// What the webhook function runs on: the rows and notes, the POST, the queue's delays.
pub struct WebhookDeps {
    pub store: DynamoRowStore,
    pub poster: crate::webhook::http::HttpWebhooks,
    pub redelivery: crate::webhook::sqs::SqsDeliveryQueue,
}

impl WebhookDeps {
    pub fn new(aws: &Aws, settings: super::config::WebhookSettings) -> Result<Self, ConfigError> {
        let (_, http) = agent_http(settings.agent_ca_file.as_deref(), settings.allow_private)?;
        Ok(Self {
            store: row_store(aws, &settings.tables),
            poster: crate::webhook::http::HttpWebhooks::new(http, settings.allow_private),
            redelivery: crate::webhook::sqs::SqsDeliveryQueue::new(aws.sqs(), settings.queue_url),
        })
    }
}
