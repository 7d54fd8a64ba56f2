//! The control plane: what a parent calls. The control API over the library's ports
//! (start, reply, cancel, status, notes, list), its routes (`http`), the A2A front
//! (`front`) and the MCP tools (`mcp`) over the same calls, the front's keys (`keys`),
//! the parent's turns kept (`turns`) and the agents' cards (`cards`), and the control
//! function's wiring (`lambda`). The Lambda glue turns an HTTP request into a [`Call`]
//! and the [`ApiAnswer`] back into a response; everything a parent is told, and with
//! which status, is decided here. The stand-ins themselves run in the library
//! (`standin`), which knows nothing of this crate.

mod agents;
mod artifacts;
pub mod cards;
mod executions;
pub mod front;
pub mod http;
mod http_io;
mod in_process;
pub mod keys;
pub mod lambda;
mod mcp;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
pub mod sfn;
pub mod turns;
mod uploads;
mod webhooks;

pub use executions::{ExecutionError, Executions};

use serde::Serialize;
use serde_json::Value;
use standin_wire::{
    Accepted, BodyError, CancelRequest, ErrorBody, InputPart, ListPage, NotesPage, PendingView,
    ReplyRequest, StandInStatus, StartRequest, Started, Summary, TaskId, TraceContext,
};
use tracing::{error, warn};

use standin::doorbell;
use standin::doorbell::Doorbell;
use standin::registry::{Catalog, RegistryError};
use standin::row::{Guard, Row, WakeEvent};
use standin::row::{RowStore, StoreError, Webhooks};
use standin::steps::{Step, execution_name};

/// What the parent asked for, as `http` routes it from method and path.
#[derive(Debug, Clone, PartialEq)]
pub enum Call<'a> {
    Start(&'a Value),
    Upload(&'a Value),
    Reply {
        task_id: &'a str,
        body: &'a Value,
    },
    Cancel {
        task_id: &'a str,
        body: &'a Value,
    },
    Status {
        task_id: &'a str,
    },
    Notes {
        task_id: &'a str,
        after: Option<&'a str>,
    },
    Turns {
        task_id: &'a str,
    },
    Artifacts {
        task_id: &'a str,
        after: Option<&'a str>,
    },
    Artifact {
        task_id: &'a str,
        artifact_id: &'a str,
    },
    /// Every stand-in, or `agent`'s only (newest first).
    List {
        after: Option<&'a str>,
        agent: Option<&'a str>,
    },
    WebhookSet {
        task_id: &'a str,
        webhook_id: &'a str,
        body: &'a Value,
    },
    WebhookList {
        task_id: &'a str,
    },
    WebhookDelete {
        task_id: &'a str,
        webhook_id: &'a str,
    },
    AgentPut {
        id: &'a str,
        body: &'a Value,
    },
    /// An agents document, put whole or not at all.
    AgentsPut {
        body: &'a Value,
    },
    AgentShow {
        id: &'a str,
    },
    AgentRemove {
        id: &'a str,
    },
    AgentList {
        after: Option<&'a str>,
    },
    KeyCreate {
        body: &'a Value,
    },
    KeyList {
        after: Option<&'a str>,
    },
    KeyRevoke {
        key_id: &'a str,
    },
    NoRoute {
        method: &'a str,
        path: &'a str,
    },
}

/// The HTTP answer: a status and a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiAnswer {
    pub status: u16,
    pub body: Value,
}

impl ApiAnswer {
    fn of(status: u16, body: impl Serialize) -> Self {
        Self {
            status,
            body: serde_json::to_value(body).unwrap_or(Value::Null),
        }
    }

    fn error(status: u16, error: impl Into<String>) -> Self {
        Self::of(
            status,
            ErrorBody {
                error: error.into(),
                agents: None,
            },
        )
    }
}

/// What went wrong on our side (a 5xx): the caller may try again.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Executions(#[from] ExecutionError),
    #[error("the step input could not be written: {0}")]
    Input(#[from] serde_json::Error),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Artifacts(#[from] standin::artifacts::BlobError),
    #[error(transparent)]
    Keys(#[from] crate::keys::KeyStoreError),
    #[error(transparent)]
    Turns(#[from] crate::turns::TurnLogError),
}

/// What a parent may see of a row: never the park token or the token's digest.
pub fn summary(row: &Row) -> Summary {
    Summary {
        task_id: row.task_id.clone(),
        agent: row.agent.clone(),
        remote_task_id: row.remote_task_id.clone(),
        watch: row.watch.as_ref().map(|w| w.mode),
        state: row.last.as_ref().map(|l| l.state),
        text: row.last.as_ref().map(|l| l.text.clone()),
        closed: row.closed,
        seq: row.seq,
        created_at: row.created_at.clone(),
        last_note_at: row.last.as_ref().and_then(|l| l.noted_at.clone()),
        context_id: row.parent_context_id.clone(),
    }
}

/// The statuses of an execution that will not run again.
const TERMINAL_STATUSES: [&str; 4] = ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"];

/// Notes per page of the note log.
pub const NOTES_PAGE: u32 = 100;
/// Stand-ins per page of the list.
pub const LIST_PAGE: u32 = 50;

/// The control API over a row store, a doorbell and the executions.
pub struct Control<'a, S, D, E> {
    pub store: &'a S,
    pub bell: &'a D,
    pub executions: &'a E,
    pub agents: &'a Catalog,
    /// What the agents' cards say of them, when the deployment reads cards.
    pub cards: Option<&'a crate::cards::Cards>,
    /// The artifacts bucket, when the deployment has one.
    pub artifacts: Option<&'a dyn standin::artifacts::Blobs>,
    /// The most `deadline_secs` a start may ask (the stack's `MaxStandInSecs`).
    pub max_standin_secs: u64,
    /// The webhook queue, when the deployment delivers webhooks.
    pub webhooks: Option<&'a dyn standin::webhook::DeliveryQueue>,
    /// Whether a webhook may be on a private address (`AllowPrivateAgents`).
    pub allow_private: bool,
    /// The A2A front's keys, when the deployment keeps them.
    pub keys: Option<&'a dyn crate::keys::KeyStore>,
    /// The parent's turns, when the deployment keeps them.
    pub turns: Option<&'a dyn crate::turns::TurnLog>,
}

// Only references: a copy is as good as the original, whatever the ports are.
impl<S, D, E> Clone for Control<'_, S, D, E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S, D, E> Copy for Control<'_, S, D, E> {}

impl<S: RowStore + Webhooks, D: Doorbell, E: Executions> Control<'_, S, D, E> {
    /// The answer to a call. A failure on our side (the row store or Step Functions did
    /// not answer) is a 503 the parent may retry, logged with its cause.
    pub async fn handle(&self, call: Call<'_>) -> ApiAnswer {
        match self.answer(call).await {
            Ok(answer) => answer,
            Err(err) => {
                error!(error = %err, "control call failed");
                let what = match err {
                    ControlError::Store(_) => "the stand-ins' table did not answer",
                    ControlError::Executions(_) => "Step Functions did not answer",
                    ControlError::Input(_) => "the stand-in's input could not be written",
                    ControlError::Registry(_) => "the agent registry did not answer",
                    ControlError::Artifacts(_) => "the artifacts bucket did not answer",
                    ControlError::Keys(_) => "the keys table did not answer",
                    ControlError::Turns(_) => "the turns table did not answer",
                };
                ApiAnswer::error(503, format!("{what}; try again"))
            }
        }
    }

    async fn answer(&self, call: Call<'_>) -> Result<ApiAnswer, ControlError> {
        match call {
            Call::Start(body) => self.start(body).await,
            Call::Upload(body) => self.upload(body).await,
            Call::Reply { task_id, body } => self.reply(task_id, body).await,
            Call::Cancel { task_id, body } => self.cancel(task_id, body).await,
            Call::Status { task_id } => self.status(task_id).await,
            Call::Notes { task_id, after } => self.notes(task_id, after).await,
            Call::Turns { task_id } => self.turns(task_id).await,
            Call::Artifacts { task_id, after } => self.artifacts(task_id, after).await,
            Call::Artifact {
                task_id,
                artifact_id,
            } => self.artifact(task_id, artifact_id).await,
            Call::List { after, agent } => {
                if let Some(agent) = agent.filter(|a| !standin::agents::is_agent_id(a)) {
                    return Ok(ApiAnswer::error(
                        400,
                        format!(
                            "agent: must be an agent's id (1 to 64 letters, digits, '.', '_' or '-'), got {agent:?}"
                        ),
                    ));
                }
                let (rows, next) = match agent {
                    Some(agent) => self.store.list_of_agent(agent, after, LIST_PAGE).await?,
                    None => self.store.list(after, LIST_PAGE).await?,
                };
                let standins = rows.iter().map(summary).collect();
                Ok(ApiAnswer::of(200, ListPage { standins, next }))
            }
            Call::WebhookSet {
                task_id,
                webhook_id,
                body,
            } => self.set_webhook(task_id, webhook_id, body).await,
            Call::WebhookList { task_id } => self.list_webhooks(task_id).await,
            Call::WebhookDelete {
                task_id,
                webhook_id,
            } => self.delete_webhook(task_id, webhook_id).await,
            Call::AgentPut { id, body } => self.put_agent(id, body).await,
            Call::AgentsPut { body } => self.put_agents(body).await,
            Call::AgentShow { id } => self.show_agent(id).await,
            Call::AgentRemove { id } => self.remove_agent(id).await,
            Call::AgentList { after } => self.list_agents(after).await,
            Call::KeyCreate { body } => self.create_key(body).await,
            Call::KeyList { after } => self.list_keys(after).await,
            Call::KeyRevoke { key_id } => self.revoke_key(key_id).await,
            Call::NoRoute { method, path } => {
                Ok(ApiAnswer::error(404, format!("no route {method} {path}")))
            }
        }
    }

    async fn start(&self, body: &Value) -> Result<ApiAnswer, ControlError> {
        // The agent first: a caller who names one this deployment does not know learns
        // the known ones before anything else about the body.
        let mut spec = None;
        if let Some(agent) = body["agent"].as_str().filter(|a| !a.is_empty()) {
            match self.agents.agent(agent).await? {
                Some((found, _)) => spec = Some(found),
                None => return self.unknown_agent(agent).await,
            }
        }
        let request = match StartRequest::parse(body) {
            Ok(request) => request,
            Err(BodyError(message)) => return Ok(ApiAnswer::error(400, message)),
        };
        let delivery = spec.as_ref().map(|s| s.file_delivery).unwrap_or_default();
        if let Some(refused) = self.unput_upload(&request.parts, delivery).await? {
            return Ok(ApiAnswer::error(400, refused));
        }
        if let Some(asked) = request.deadline_secs.filter(|s| *s > self.max_standin_secs) {
            return Ok(ApiAnswer::error(
                400,
                format!(
                    "deadline_secs: must be at most {} (this deployment's MaxStandInSecs), got {asked}",
                    self.max_standin_secs
                ),
            ));
        }
        let agent = request.agent.as_str();
        let Some(spec) = spec.filter(|spec| spec.id == agent) else {
            return self.unknown_agent(agent).await;
        };
        let task_id = match request.task_id {
            Some(id) => id,
            None => TaskId::parse(&format!("si-{}", random_hex()))
                .map_err(|e| ControlError::Input(serde::de::Error::custom(e)))?,
        };
        // From here on the invocation's log lines name the stand-in it starts.
        tracing::Span::current().record("task_id", task_id.as_str());
        let message = request.message.as_str();
        let mut trace = request
            .traceparent
            .as_deref()
            .and_then(|given| TraceContext::parse("traceparent", given).ok())
            .unwrap_or_else(|| TraceContext::begin(rand::random()));
        let mut row = Row::new(task_id.as_str(), agent);
        if let Some(webhook) = request.webhook {
            match self.start_webhook(task_id.as_str(), webhook).await {
                Ok((id, hook)) => {
                    row.webhooks.insert(id, hook);
                }
                Err(refused) => return Ok(refused),
            }
        }
        row.created_at = Some(standin::clock::now_rfc3339());
        row.parent_context_id = request.context_id;
        row.agent_entry = Some(spec.to_entry().to_string());
        row.traceparent = Some(trace.header());
        match self.store.create(&row).await {
            Ok(_) => {}
            Err(StoreError::AlreadyExists(_)) => {
                let existing = self.store.get(&task_id).await?;
                // A start sent again keeps the trace the first one began, so its input
                // is the same and Step Functions answers the running execution.
                if let Some(kept) = existing
                    .as_ref()
                    .and_then(|r| r.traceparent.as_deref())
                    .and_then(|kept| TraceContext::parse("traceparent", kept).ok())
                {
                    trace = kept;
                }
                if existing.as_ref().is_some_and(|r| r.agent != agent) {
                    return Ok(ApiAnswer::error(
                        409,
                        format!("stand-in {task_id} exists for another agent"),
                    ));
                }
                if existing.as_ref().is_some_and(|r| r.closed) {
                    return Ok(ApiAnswer::error(
                        409,
                        format!(
                            "stand-in {task_id} has ended; its notes stay readable at GET /standins/{task_id}/notes. Start a new stand-in with another task_id"
                        ),
                    ));
                }
                // Sent again with a webhook the first start lacked: it is set now.
                if let (Some(existing), Some((id, hook))) =
                    (existing.as_ref(), row.webhooks.iter().next())
                    && let Some(refused) = self.start_webhook_again(existing, id, hook).await?
                {
                    return Ok(refused);
                }
            }
            Err(err) => return Err(err.into()),
        }
        self.keep_turn(
            task_id.as_str(),
            crate::turns::TurnKind::Start,
            "start",
            0,
            message,
            &request.parts,
        )
        .await;
        let input = serde_json::to_string(
            &Step::start(task_id.as_str(), agent, message)
                .with_parts(request.parts)
                .with_deadline(request.deadline_secs)
                .with_trace(trace.header()),
        )?;
        let execution_arn = match self.executions.start(&task_id, &input, &trace).await {
            Ok(arn) => arn,
            // Starting twice with the same input is idempotent on Step Functions; a
            // different input under the same name is refused. Either way the answer is
            // the stand-in's newest execution (a roll starts `__1`, …), if it runs.
            Err(ExecutionError::AlreadyExists(_)) => {
                match self.current_execution(&task_id).await {
                    (arn, Some(status)) if status == "RUNNING" => arn,
                    // The newest execution has ended: an earlier stand-in of this id ended
                    // and its row expired while Step Functions keeps the name (or an
                    // earlier start of this one was answered 503 and its execution has
                    // ended). Close the row, so the id answers "ended" from now on.
                    (_, Some(status)) if TERMINAL_STATUSES.contains(&status.as_str()) => {
                        self.store.close(&task_id, None).await?;
                        return Ok(ApiAnswer::error(
                            409,
                            format!(
                                "task_id {task_id} was used by an earlier stand-in that has ended; start a new stand-in with another task_id"
                            ),
                        ));
                    }
                    // Unknown is not "ended", and neither is a status that is not
                    // terminal: closing a row on a guess could end a live one.
                    _ => {
                        return Ok(ApiAnswer::error(
                            503,
                            "Step Functions could not be asked about this stand-in; try the start again",
                        ));
                    }
                }
            }
            Err(err) => return Err(err.into()),
        };
        Ok(ApiAnswer::of(
            200,
            Started {
                task_id,
                execution_arn,
                trace_id: trace.trace_id().to_owned(),
            },
        ))
    }

    /// An unknown agent, with the known ones (the stack's and the registry's first
    /// page; `GET /agents` has them all).
    async fn unknown_agent(&self, agent: &str) -> Result<ApiAnswer, ControlError> {
        let (known, _) = self
            .agents
            .list(None, standin::registry::AGENTS_PAGE)
            .await?;
        Ok(ApiAnswer::of(
            400,
            ErrorBody {
                error: format!("unknown agent {agent:?}"),
                agents: Some(known.into_iter().map(|(a, _)| a.id).collect()),
            },
        ))
    }

    async fn reply(&self, task_id: &str, body: &Value) -> Result<ApiAnswer, ControlError> {
        let request = match ReplyRequest::parse(body) {
            Ok(request) => request,
            Err(BodyError(message)) => return Ok(ApiAnswer::error(400, message)),
        };
        if request.parts.iter().any(InputPart::is_upload) {
            // The stand-in first: a reply to one that is unknown or ended says so, and
            // costs no look at the bucket.
            let row = match self.store.get(task_id).await? {
                None => return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}"))),
                Some(row) if row.closed => {
                    return Ok(ApiAnswer::error(
                        409,
                        format!("stand-in {task_id} has ended"),
                    ));
                }
                Some(row) => row,
            };
            // The agent as the turn will reach it: the entry the row kept from the start,
            // else the catalog's.
            let kept = row
                .agent_entry
                .as_deref()
                .and_then(|entry| standin::agents::AgentSpec::parse_entry(entry).ok());
            let spec = match kept {
                Some(spec) => Some(spec),
                None => self.agents.agent(&row.agent).await?.map(|(spec, _)| spec),
            };
            let delivery = spec.map(|spec| spec.file_delivery).unwrap_or_default();
            if let Some(refused) = self.unput_upload(&request.parts, delivery).await? {
                return Ok(ApiAnswer::error(400, refused));
            }
        }
        // Unnamed, the reply gets a name here, which makes the store's own retries
        // harmless.
        let reply_id = request
            .reply_id
            .map_or_else(|| format!("r-{}", random_hex()), String::from);
        let event = WakeEvent::Reply {
            text: request.text.clone(),
            parts: request.parts.clone(),
            id: Some(reply_id.clone()),
        };
        let (answer, row) = self.ring(task_id, event).await?;
        // Taken: it reaches the agent after the newest note the row has.
        if let Some(row) = row {
            self.keep_turn(
                task_id,
                crate::turns::TurnKind::Reply,
                &reply_id,
                row.seq,
                &request.text,
                &request.parts,
            )
            .await;
        }
        Ok(answer)
    }

    async fn cancel(&self, task_id: &str, body: &Value) -> Result<ApiAnswer, ControlError> {
        let reason = match CancelRequest::parse(body) {
            Ok(request) => request.reason().to_owned(),
            Err(BodyError(message)) => return Ok(ApiAnswer::error(400, message)),
        };
        Ok(self.ring(task_id, WakeEvent::Cancel { reason }).await?.0)
    }

    /// The answer to an event rung on the stand-in, and its row once the event is on it.
    async fn ring(
        &self,
        task_id: &str,
        event: WakeEvent,
    ) -> Result<(ApiAnswer, Option<Row>), ControlError> {
        let refused = |answer| Ok((answer, None));
        match doorbell::ring(self.store, self.bell, task_id, &event, &Guard::Open).await {
            Ok(row) => Ok((
                ApiAnswer::of(
                    202,
                    Accepted {
                        task_id: task_id.to_owned(),
                        accepted: true,
                    },
                ),
                Some(row),
            )),
            Err(StoreError::NotFound(_)) => {
                refused(ApiAnswer::error(404, format!("no stand-in {task_id}")))
            }
            Err(StoreError::Refused(_)) => refused(ApiAnswer::error(
                409,
                format!("stand-in {task_id} has ended"),
            )),
            Err(err @ StoreError::RepliesFull(_)) => refused(ApiAnswer::error(
                429,
                format!("{err}; send more once it has taken them"),
            )),
            Err(err) => Err(err.into()),
        }
    }

    async fn status(&self, task_id: &str) -> Result<ApiAnswer, ControlError> {
        let Some(row) = self.store.get(task_id).await? else {
            return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
        };
        let (execution_arn, execution_status) = self.current_execution(task_id).await;
        Ok(ApiAnswer::of(
            200,
            StandInStatus {
                summary: summary(&row),
                execution_arn,
                execution_status,
                parked: row.is_parked(),
                pending: PendingView {
                    cancel: row.pending.cancel.is_some(),
                    replies: row.pending.replies.len(),
                    push: row.pending.push.is_some(),
                },
                replies_taken: row.reply_ids.clone(),
            },
        ))
    }

    /// The stand-in's newest execution and its status. The row names its live
    /// generation (`{task_id}`, then `{task_id}__N` after rolls), so only that one is
    /// asked about, whatever else runs under a similar name; while a roll starts its
    /// successor, the generation before it is still the newest that runs. Without a row
    /// (it expired while Step Functions kept the names) the generations are walked. The
    /// status is None when Step Functions can't be asked: then the newest is not known,
    /// and the answer is the generation it could not ask about, never an older one's.
    async fn current_execution(&self, task_id: &str) -> (String, Option<String>) {
        let arn_of = |generation| self.executions.arn(&execution_name(task_id, generation));
        let live = match self.store.get(task_id).await {
            Ok(Some(row)) => Some(row.generation),
            Ok(None) => None,
            Err(err) => {
                warn!(task_id, error = %err, "cannot read the stand-in's row");
                return (arn_of(0), None);
            }
        };
        if let Some(live) = live {
            let generations = if live > 0 {
                vec![live, live - 1]
            } else {
                vec![0]
            };
            for generation in generations {
                let arn = arn_of(generation);
                match self.executions.status(&arn).await {
                    Ok(status) => return (arn, Some(status)),
                    // The roll wrote the row; its successor is not started yet.
                    Err(ExecutionError::DoesNotExist(_)) => continue,
                    Err(err) => {
                        warn!(task_id, error = %err, "cannot describe the execution");
                        return (arn, None);
                    }
                }
            }
            return (arn_of(live), None);
        }
        let mut found: Option<(String, Option<String>)> = None;
        // Bounded: each generation is hundreds of park/wake cycles.
        for generation in 0..1000 {
            let arn = arn_of(generation);
            match self.executions.status(&arn).await {
                Ok(status) => found = Some((arn, Some(status))),
                Err(ExecutionError::DoesNotExist(_)) => break,
                Err(err) => {
                    warn!(task_id, error = %err, "cannot describe the execution");
                    return (arn, None);
                }
            }
        }
        found.unwrap_or_else(|| (arn_of(0), None))
    }

    /// The note log: every note the stand-in wrote, in order, after `after` (a `seq`),
    /// so a parent that lost messages can catch up.
    async fn notes(&self, task_id: &str, after: Option<&str>) -> Result<ApiAnswer, ControlError> {
        let after = match after.map(str::parse::<u64>) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                return Ok(ApiAnswer::error(
                    400,
                    "after must be a note number (a whole number, 0 or more)",
                ));
            }
        };
        if self.store.get(task_id).await?.is_none()
            && self.store.notes(task_id, 0, 1).await?.is_empty()
        {
            return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
        }
        let notes = self.store.notes(task_id, after, NOTES_PAGE).await?;
        let next = (notes.len() == NOTES_PAGE as usize)
            .then(|| notes.last().map(|n| n.seq))
            .flatten();
        Ok(ApiAnswer::of(
            200,
            NotesPage {
                task_id: task_id.to_owned(),
                notes,
                next,
            },
        ))
    }
}

fn random_hex() -> String {
    let mut bytes = [0u8; 12];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
    hex::encode(bytes)
}
