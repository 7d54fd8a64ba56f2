//! A thin A2A client: exactly the calls the stand-in makes, over the binding (JSON-RPC,
//! HTTP+JSON, gRPC) and in the dialect (1.0 or 0.3) the agent's card chose (`card`,
//! `dialect`); each binding's wire is its `Transport`, and what comes back is read here
//! into the model.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
#[cfg(test)]
use reqwest::header::HeaderName;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::artifact;
use super::binding::{Link, Transport};
use super::call::Call;
use super::card::ResolvedAgent;
use super::collect::Collect;
use super::dialect::Calls;
pub use super::http::Timeouts;
use super::limits::{MAX_EVENT_BYTES, bounded_message};
use super::map;
use super::said::{Heard, Said, speak_for};
use super::types::{
    AuthenticationInfo, Message, SendMessageResult, StreamResponse, Task,
    TaskPushNotificationConfig,
};
use crate::auth::Credentials;
use crate::error::RemoteError;
use crate::model::{PushRequest, Sent, Status, Turn, Update, UpdateStream};
use crate::port::{Agent, ContentSink};

#[cfg(test)]
const PARTICIPANT_HEADER: &str = "x-participant-id";

/// A stream of events from SendStreamingMessage or SubscribeToTask.
pub type EventStream = BoxStream<'static, Result<StreamResponse, RemoteError>>;

/// The agent client on the built-in roots alone (see [`crate::tls::Roots`]); the
/// functions build theirs with `AGENT_CA_FILE` too.
#[cfg(test)]
pub fn http_client() -> Result<reqwest::Client, RemoteError> {
    crate::tls::Roots::built_in()
        .agent_http_client()
        .map_err(|e| RemoteError::Transport(format!("cannot build the HTTP client: {e}")))
}

/// A connected agent: its card read, its interface chosen. Reached only through [`Agent`].
pub struct AgentClient {
    http: reqwest::Client,
    agent: ResolvedAgent,
    calls: Calls,
    headers: HeaderMap,
    timeouts: Timeouts,
    transport: Arc<dyn Transport>,
    credentials: Option<Arc<dyn Credentials>>,
    collect: Option<Collect>,
}

impl AgentClient {
    /// The most of one streamed event a stream holds in memory at once (large content is
    /// handed to the sink as it arrives instead).
    pub const MAX_EVENT_BYTES: usize = MAX_EVENT_BYTES;

    /// Fetches and validates the card, then talks to the interface it prefers.
    #[cfg(test)]
    pub(crate) async fn connect(
        http: reqwest::Client,
        base_url: &str,
        participant: Option<&str>,
        timeouts: Timeouts,
    ) -> Result<Self, RemoteError> {
        let at = super::card::CardAt::Base(base_url);
        let read = super::card::CardRead {
            http: &http,
            headers: &HeaderMap::new(),
            credentials: None,
            timeouts,
        };
        let read = super::card::fetch_card(read, at).await?;
        let agent = ResolvedAgent::from_card(&read.card, &read.url, &[], None)?;
        let mut headers = HeaderMap::new();
        if let Some(p) = participant {
            let value = HeaderValue::from_str(p)
                .map_err(|_| RemoteError::Card("participant is not a valid header value".into()))?;
            headers.insert(HeaderName::from_static(PARTICIPANT_HEADER), value);
        }
        Self::new(http, agent, headers, timeouts)
    }

    /// `headers` go on every call (the agent's own, its session and participant ones);
    /// the version and extensions headers are added here.
    pub(crate) fn new(
        http: reqwest::Client,
        agent: ResolvedAgent,
        mut headers: HeaderMap,
        timeouts: Timeouts,
    ) -> Result<Self, RemoteError> {
        headers.insert(
            "a2a-version",
            HeaderValue::from_static(agent.dialect.version()),
        );
        if !agent.extensions.is_empty() {
            let value = HeaderValue::from_str(&agent.extensions.join(","))
                .map_err(|_| RemoteError::Card("an extension URI is not a valid header".into()))?;
            headers.insert("a2a-extensions", value);
        }
        let calls = Calls {
            dialect: agent.dialect,
            tenant: agent.tenant.clone(),
        };
        let transport = agent.binding.transport();
        Ok(Self {
            http,
            agent,
            calls,
            headers,
            timeouts,
            transport,
            credentials: None,
            collect: None,
        })
    }

    /// Calls from now on keep the task's artifacts, their large content stored through
    /// `sink` as it arrives.
    pub fn with_artifacts(mut self, sink: Option<Arc<dyn ContentSink>>) -> Self {
        self.collect = sink.map(Collect::new);
        self
    }

    /// A whole task's status, with its artifacts when they are collected.
    fn status_of(&self, task: &Task) -> Status {
        let mut status = map::task(task);
        if let Some(collect) = &self.collect {
            let artifacts = artifact::artifacts(&task.artifacts, &collect.names());
            speak_for(&mut status, artifacts.last().map(Said::of).as_ref());
            status.artifacts = Some(artifacts);
        }
        status
    }

    /// The wire's events as the model's updates.
    fn updates(&self, events: EventStream) -> UpdateStream {
        let names = self.collect.as_ref().map(|c| c.names());
        let mut heard = Heard::default();
        events
            .map(move |event| {
                let event = event?;
                let mut update = match (&names, &event.task, &event.artifact_update) {
                    (Some(names), Some(task), _) => {
                        let mut status = map::task(task);
                        let artifacts = artifact::artifacts(&task.artifacts, names);
                        heard.task(&artifacts);
                        status.artifacts = Some(artifacts);
                        Update::Status(status)
                    }
                    (Some(names), None, Some(update)) => {
                        let update = artifact::update(update, names);
                        heard.update(&update);
                        Update::Artifact(update)
                    }
                    _ => map::update(&event),
                };
                if let Update::Status(status) = &mut update {
                    speak_for(status, heard.last());
                }
                Ok(update)
            })
            .boxed()
    }

    /// Every call from now on presents `credentials`.
    pub(crate) fn with_credentials(mut self, credentials: Option<Arc<dyn Credentials>>) -> Self {
        self.credentials = credentials;
        self
    }

    /// The card an authenticated caller may read, in place of the public one, with the
    /// JSON it came as (its signatures sign that).
    pub(crate) async fn extended_card(
        &self,
    ) -> Result<(super::types::AgentCard, Value), RemoteError> {
        let json: Value = self.unary(self.calls.extended_card()).await?;
        let card =
            serde::Deserialize::deserialize(&json).map_err(|e| invalid("the extended card", e))?;
        Ok((card, json))
    }

    #[cfg(test)]
    pub(crate) fn agent(&self) -> &ResolvedAgent {
        &self.agent
    }

    /// A turn that blocks until an interrupted or terminal state (or returns at once).
    pub(crate) async fn send_message(
        &self,
        message: &Message,
        return_immediately: bool,
    ) -> Result<SendMessageResult, RemoteError> {
        let call = self.calls.send(&wire(message)?, return_immediately);
        let value: Value = self.unary(call).await?;
        parse_send_result(value)
    }

    pub(crate) async fn send_streaming_message(
        &self,
        message: &Message,
    ) -> Result<EventStream, RemoteError> {
        self.stream(self.calls.stream(&wire(message)?)).await
    }

    pub(crate) async fn get_task(&self, id: &str) -> Result<Task, RemoteError> {
        self.unary(self.calls.get(id)).await
    }

    pub(crate) async fn subscribe_to_task(&self, id: &str) -> Result<EventStream, RemoteError> {
        self.stream(self.calls.subscribe(id)).await
    }

    pub(crate) async fn cancel_task(&self, id: &str) -> Result<Task, RemoteError> {
        self.unary(self.calls.cancel(id)).await
    }

    /// Registers a push config under our own id (SDKs disagree on the default id).
    pub(crate) async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, RemoteError> {
        let params = serde_json::to_value(config)
            .map_err(|e| RemoteError::InvalidResponse(format!("cannot encode push config: {e}")))?;
        let config_id = config.id.as_deref().unwrap_or_default();
        let call = self.calls.create_push(&params, &config.task_id, config_id);
        self.unary(call).await
    }

    /// Idempotent on the SDK: an unknown config id succeeds.
    pub(crate) async fn delete_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<(), RemoteError> {
        let _: Value = self
            .unary(self.calls.delete_push(task_id, config_id))
            .await?;
        Ok(())
    }

    fn link(&self) -> Link<'_> {
        Link {
            http: &self.http,
            endpoint: &self.agent.endpoint,
            headers: &self.headers,
            credentials: self.credentials.as_deref(),
            timeouts: self.timeouts,
            collect: self.collect.as_ref(),
        }
    }

    async fn unary<T: DeserializeOwned>(&self, call: Call) -> Result<T, RemoteError> {
        let operation = call.operation;
        let result = self.transport.unary(&self.link(), &call).await?;
        let result = self
            .calls
            .read(&call.answer, self.transport.as_ref(), result);
        serde_json::from_value(result).map_err(|e| invalid(&format!("{operation} result"), e))
    }

    async fn stream(&self, call: Call) -> Result<EventStream, RemoteError> {
        let items = self.transport.stream(&self.link(), &call).await?;
        let transport = self.transport.clone();
        let calls = self.calls.clone();
        Ok(items
            .map(move |item| {
                let item = calls.item(transport.as_ref(), item?);
                serde_json::from_value(item).map_err(|e| invalid("stream item", e))
            })
            .boxed())
    }
}

/// 1.0's wire form of a message, which each dialect writes its own way.
fn wire(message: &Message) -> Result<Value, RemoteError> {
    serde_json::to_value(message)
        .map_err(|e| RemoteError::InvalidResponse(format!("cannot encode the message: {e}")))
}

/// An answer that does not parse. The parser's message quotes the agent's text, so it is
/// scrubbed and cut like any remote text before it can reach a log or a reason.
fn invalid(what: &str, err: impl std::fmt::Display) -> RemoteError {
    RemoteError::InvalidResponse(bounded_message(&format!("{what}: {err}")))
}

fn parse_send_result(value: Value) -> Result<SendMessageResult, RemoteError> {
    serde_json::from_value(value).map_err(|e| invalid("SendMessage result", e))
}

impl Agent for AgentClient {
    fn can_push(&self) -> bool {
        self.agent.push_notifications
    }
    fn can_stream(&self) -> bool {
        self.agent.streaming
    }
    async fn send_streaming(&self, turn: &Turn) -> Result<UpdateStream, RemoteError> {
        let events = self
            .send_streaming_message(&Message::from_turn(turn))
            .await?;
        Ok(self.updates(events))
    }
    async fn send(&self, turn: &Turn) -> Result<Sent, RemoteError> {
        let result = self.send_message(&Message::from_turn(turn), true).await?;
        Ok(match &result {
            SendMessageResult::Task(task) => Sent::Task(self.status_of(task)),
            SendMessageResult::Message(_) => map::sent(&result),
        })
    }
    async fn get(&self, id: &str) -> Result<Status, RemoteError> {
        Ok(self.status_of(&self.get_task(id).await?))
    }
    async fn subscribe(&self, id: &str) -> Result<UpdateStream, RemoteError> {
        Ok(self.updates(self.subscribe_to_task(id).await?))
    }
    async fn register_push(&self, push: &PushRequest) -> Result<Option<String>, RemoteError> {
        let config = TaskPushNotificationConfig {
            id: Some(push.config_id.clone()),
            task_id: push.remote_task_id.clone(),
            url: push.url.clone(),
            token: Some(push.token.clone()),
            // The spec's own mechanism, for senders that ignore `token` (JS SDK).
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: Some(push.token.clone()),
            }),
        };
        let created = self.create_push_config(&config).await?;
        Ok(created.id.filter(|id| !id.is_empty()))
    }
    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), RemoteError> {
        self.delete_push_config(task_id, config_id).await
    }
    async fn cancel(&self, id: &str) -> Result<Status, RemoteError> {
        // The cancelled task's artifacts, as GetTask's: a stand-in the parent cancels
        // may learn of them only here.
        Ok(self.status_of(&self.cancel_task(id).await?))
    }
}
