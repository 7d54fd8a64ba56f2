//! The control function's wiring: its settings read and its adapters built once per
//! process on the library's (`standin::lambda`), each request routed by `http::router`.

mod gateway;

use lambda_http::{Request, service_fn};
use lambda_runtime::Error;
use standin::agents::{AgentSpec, ConfigError};
use standin::artifacts::s3::S3Blobs;
use standin::lambda::{
    ApiUrlForm, Aws, ControlSettings, Retries, Rows, agent_http, build, catalog, reach_of,
    request_span,
};
use standin::registry::Catalog;
use standin_remote::Connector;
use tower::ServiceExt;
use tracing::Instrument;

use crate::cards::Cards;
use crate::sfn::SfnExecutions;

/// Reads the agents' cards for `/agents`, with no credentials: the control API shows a
/// parent what each agent says of itself and never presents an agent's secrets.
struct PublicCards {
    connector: Connector,
    allow_private: bool,
}

impl crate::cards::CardReader for PublicCards {
    fn read<'a>(
        &'a self,
        spec: &'a AgentSpec,
    ) -> standin::registry::BoxFuture<'a, Result<standin_remote::Profile, String>> {
        Box::pin(async move {
            self.connector
                .describe(reach_of(spec, self.allow_private))
                .await
                .map_err(|err| err.to_string())
        })
    }
}

/// What the control API runs on: the rows, the executions, the agents' names.
pub struct ControlDeps {
    pub rows: Rows,
    pub executions: SfnExecutions,
    pub agents: Catalog,
    pub artifacts: Option<S3Blobs>,
    pub max_standin_secs: u64,
    pub cards: Cards,
    pub api_url_form: ApiUrlForm,
    pub webhooks: Option<standin::webhook::sqs::SqsDeliveryQueue>,
    pub allow_private: bool,
    pub keys: Option<crate::keys::dynamo::DynamoKeys>,
    pub turns: Option<crate::turns::dynamo::DynamoTurns>,
}

impl ControlDeps {
    pub fn new(aws: &Aws, settings: ControlSettings) -> Result<Self, ConfigError> {
        let (roots, http) = agent_http(
            settings.agent_ca_file.as_deref(),
            settings.allow_private_agents,
        )?;
        let cards = Cards::new(Box::new(PublicCards {
            connector: Connector::new(roots, http),
            allow_private: settings.allow_private_agents,
        }));
        Ok(Self {
            rows: Rows::new(aws, &settings.tables),
            executions: SfnExecutions::new(aws.sfn(), settings.state_machine_arn),
            agents: catalog(aws, settings.agents, Some(&settings.agents_table))
                .with_rules(settings.entry_rules),
            artifacts: settings
                .artifacts_bucket
                .map(|bucket| S3Blobs::new(aws.s3(), bucket)),
            max_standin_secs: settings.max_standin_secs,
            cards,
            api_url_form: settings.api_url_form,
            webhooks: settings
                .webhook_queue_url
                .map(|url| standin::webhook::sqs::SqsDeliveryQueue::new(aws.sqs(), url)),
            allow_private: settings.allow_private_agents,
            keys: settings
                .keys_table
                .map(|table| crate::keys::dynamo::DynamoKeys::new(aws.dynamodb(), table)),
            turns: settings
                .turns_table
                .map(|table| crate::turns::dynamo::DynamoTurns::new(aws.dynamodb(), table)),
        })
    }
}

/// The parent's control API: start, reply, cancel, status, notes, list.
pub async fn serve_control() -> Result<(), Error> {
    let deps = build(Retries::Prompt, ControlSettings::read, |aws, settings| {
        ControlDeps::new(aws, settings)
    })
    .await?;
    let router = crate::http::router(crate::Control {
        store: &deps.rows.store,
        bell: &deps.rows.bell,
        executions: &deps.executions,
        agents: &deps.agents,
        cards: Some(&deps.cards),
        artifacts: deps
            .artifacts
            .as_ref()
            .map(|b| b as &dyn standin::artifacts::Blobs),
        max_standin_secs: deps.max_standin_secs,
        webhooks: deps
            .webhooks
            .as_ref()
            .map(|q| q as &dyn standin::webhook::DeliveryQueue),
        allow_private: deps.allow_private,
        keys: deps.keys.as_ref().map(|k| k as &dyn crate::keys::KeyStore),
        turns: deps.turns.as_ref().map(|t| t as &dyn crate::turns::TurnLog),
    });
    let url_form = deps.api_url_form;
    Box::pin(lambda_http::run(service_fn(move |request: Request| {
        let span = request_span(&request);
        let mut request = request;
        if let Some(base) = gateway::public_base(&request, url_form) {
            request.extensions_mut().insert(base);
        }
        let request = gateway::by_resource(request);
        Box::pin(router.clone().oneshot(request).instrument(span))
    })))
    .await
}
