//! Stand-in as an A2A agent: the front a parent's own A2A client calls. For each agent the
//! deployment knows, `/a2a/{agent_id}` speaks A2A 1.0 over JSON-RPC, and every call is
//! answered through the control API ([`ControlCalls`]), so the front checks nothing the
//! API does not and keeps nothing of its own:
//!
//! - `SendMessage` with no `taskId` starts a stand-in (the task's id is the stand-in's);
//!   with the `taskId` of one that waits, it is the reply. Unless `returnImmediately`, the
//!   answer waits for the task to ask, end or [`WAIT_BOUND`] to pass.
//! - `GetTask`: the stand-in's view (status from its latest note, history from its notes
//!   and the parent's turns, artifacts as kept, a stored part as a five-minute link).
//! - `ListTasks` (this agent's, filtered by status and context) and `CancelTask`.
//!
//! `card.rs` is the front's card, `rpc.rs` the JSON-RPC envelope and A2A's error codes,
//! `message.rs` what a parent's message becomes, `task.rs` a stand-in as an A2A task.

mod calls;
mod card;
mod message;
mod push_calls;
mod push_config;
mod rpc;
mod task;
pub mod webhook;

use std::time::Duration;

use serde_json::{Value, json};

pub use calls::{Answered, ControlCalls};
pub use card::{Door, KEY_SCHEME, front_card};
use rpc::{Call, RpcError, field};

/// How long a blocking `SendMessage` or a `CancelTask` waits for the task to ask or end:
/// A2A clients take a blocking answer that is neither as a failure (ADK's does), so as
/// long as API Gateway lets an answer take (29 s) with room for the reads after it. Each
/// wait holds one of the control function's concurrent executions; a task still working
/// then is answered as it stands.
pub const WAIT_BOUND: Duration = Duration::from_secs(25);
/// The first pause between two reads of the note log while waiting; each doubles, up to
/// [`WAIT_STEP_MOST`].
const WAIT_STEP: Duration = Duration::from_millis(250);
const WAIT_STEP_MOST: Duration = Duration::from_secs(1);

/// The front of one agent.
pub struct Front<'a, C> {
    api: &'a C,
    agent: &'a str,
}

impl<'a, C: ControlCalls> Front<'a, C> {
    pub fn new(api: &'a C, agent: &'a str) -> Self {
        Self { api, agent }
    }

    /// The JSON-RPC answer to `body`, sent with `version` as its `A2A-Version` header.
    pub async fn answer(&self, body: &[u8], version: Option<&str>) -> Value {
        let (id, call) = match rpc::read(body, version) {
            Ok(read) => read,
            Err((id, err)) => return rpc::failure(&id, &err),
        };
        match self.dispatch(call).await {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(err) => rpc::failure(&id, &err),
        }
    }

    async fn dispatch(&self, call: Call) -> Result<Value, RpcError> {
        match call {
            Call::Send(params) => self.send(params).await,
            Call::Get { id, history } => self.task(&id, history, None).await,
            Call::Cancel { id } => self.cancel(&id).await,
            Call::List(filter) => self.list(filter).await,
            Call::PushSet(params) => {
                let task_id = field(&params, "taskId")
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| RpcError::invalid_params("taskId: the task's id is required"))?;
                let asked = push_config::read(&params)?;
                self.set_push(&task_id, asked, None).await
            }
            Call::PushGet { task_id, id } => self.push_config(&task_id, &id).await,
            Call::PushList { task_id } => {
                let configs = self.push_configs(&task_id).await?;
                Ok(json!({"configs": configs, "nextPageToken": ""}))
            }
            Call::PushDelete { task_id, id } => self.delete_push(&task_id, &id).await,
        }
    }

    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<Answered, RpcError> {
        self.api
            .call(method, path, body)
            .await
            .map_err(RpcError::internal)
    }

    /// SendMessage: a start, or a reply to the task it names.
    async fn send(&self, params: Value) -> Result<Value, RpcError> {
        let sent = message::read(&params)?;
        let push = match field(
            field(&params, "configuration"),
            "taskPushNotificationConfig",
        ) {
            config if config.is_object() => Some(push_config::read(config)?),
            _ => None,
        };
        let (task_id, after) = match &sent.task_id {
            // A config with a start is the start's own webhook: checked before the
            // stand-in starts, and every note of it told.
            None => (self.start(&sent, push.as_ref()).await?, None),
            Some(task_id) => {
                let before = self.stand_in(task_id).await?;
                if let Some(asked) = push {
                    // The notes after this message (set before it is taken, and never
                    // skipping a note the same webhook has not had).
                    let seq = before["seq"].as_u64().unwrap_or_default();
                    self.set_push(task_id, asked, Some(seq)).await?;
                }
                // A message sent again that the stand-in took already is answered with
                // the task, not taken twice.
                let sent_again = sent.reply_id().is_some_and(|id| {
                    before["replies_taken"]
                        .as_array()
                        .is_some_and(|taken| taken.iter().any(|t| t == id))
                });
                if !sent_again {
                    task::takes_a_message(task_id, &before)?;
                    self.reply(task_id, &sent).await?;
                }
                let seq = before["seq"].as_u64().unwrap_or_default();
                (task_id.clone(), Some(seq))
            }
        };
        if !sent.return_immediately {
            // The start or the reply is taken: a wait that fails only shortens it.
            let _ = self
                .wait(&task_id, after.unwrap_or(0), task::asks_or_ends)
                .await;
        }
        let task = self.task(&task_id, sent.history, after).await?;
        Ok(json!({"task": task}))
    }

    /// Starts a stand-in; its id is the message's own (an agent's, a message id's
    /// digest), so a start sent again, after a timeout say, is the same stand-in.
    async fn start(
        &self,
        sent: &message::Sent,
        push: Option<&push_config::Asked>,
    ) -> Result<String, RpcError> {
        let mut body = json!({"agent": self.agent, "message": sent.text});
        if !sent.parts.is_empty() {
            body["parts"] = sent.parts.clone().into();
        }
        if let Some(context) = &sent.context_id {
            body["context_id"] = context.clone().into();
        }
        if let Some(asked) = push {
            let mut webhook = asked.body.clone();
            if let Some(id) = &asked.id {
                webhook["webhook_id"] = id.clone().into();
            }
            body["webhook"] = webhook;
        }
        let named = sent
            .message_id
            .as_deref()
            .map(|id| task::id_for(self.agent, id));
        if let Some(task_id) = &named {
            body["task_id"] = task_id.clone().into();
        }
        let answer = self.call("POST", "/standins".into(), Some(body)).await?;
        match (answer.status, named) {
            (200..=202, _) => answer.body["task_id"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| RpcError::internal("the start named no task")),
            // Sent again after it ended: the same task, as it ended.
            (409, Some(task_id)) => Ok(task_id),
            (501, _) => Err(push_config::not_offered()),
            _ => Err(rpc::refused(&answer, "")),
        }
    }

    async fn reply(&self, task_id: &str, sent: &message::Sent) -> Result<(), RpcError> {
        let mut body = json!({"text": sent.text});
        if !sent.parts.is_empty() {
            body["parts"] = sent.parts.clone().into();
        }
        if let Some(reply_id) = sent.reply_id() {
            body["reply_id"] = reply_id.into();
        }
        let path = format!("/standins/{}/reply", rpc::task_segment(task_id)?);
        let answer = self.call("POST", path, Some(body)).await?;
        match answer.status {
            200 | 202 => Ok(()),
            409 => Err(RpcError::unsupported(format!(
                "Task {task_id} is in terminal state"
            ))),
            _ => Err(rpc::refused(&answer, task_id)),
        }
    }

    async fn cancel(&self, task_id: &str) -> Result<Value, RpcError> {
        let before = self.stand_in(task_id).await?;
        let path = format!("/standins/{}/cancel", rpc::task_segment(task_id)?);
        let answer = self.call("POST", path, Some(json!({}))).await?;
        match answer.status {
            200 | 202 => {}
            409 => {
                return Err(RpcError::not_cancelable(format!(
                    "Task {task_id} is in terminal state"
                )));
            }
            _ => return Err(rpc::refused(&answer, task_id)),
        }
        let after = before["seq"].as_u64().unwrap_or_default();
        let _ = self.wait(task_id, after, task::ends).await;
        self.task(task_id, None, None).await
    }

    /// The stand-in's row as `GET /standins/{id}` shows it; TaskNotFound for one that is
    /// not there or not this agent's.
    async fn stand_in(&self, task_id: &str) -> Result<Value, RpcError> {
        let path = format!("/standins/{}", rpc::task_segment(task_id)?);
        let answer = self.call("GET", path, None).await?;
        match answer.status {
            200 if answer.body["agent"] == self.agent => Ok(answer.body),
            200 | 404 => Err(RpcError::not_found(task_id)),
            _ => Err(rpc::refused(&answer, task_id)),
        }
    }

    /// Waits until a note after `after` is one `done` takes, or the bound passes.
    async fn wait(
        &self,
        task_id: &str,
        mut after: u64,
        done: fn(&Value) -> bool,
    ) -> Result<(), RpcError> {
        let until = tokio::time::Instant::now() + WAIT_BOUND;
        let mut step = WAIT_STEP;
        loop {
            let notes = self.notes(task_id, after).await?;
            if let Some(last) = notes.last() {
                after = last["seq"].as_u64().unwrap_or(after);
            }
            let now = tokio::time::Instant::now();
            if notes.iter().any(done) || now >= until {
                return Ok(());
            }
            tokio::time::sleep(step.min(until - now)).await;
            step = (step * 2).min(WAIT_STEP_MOST);
        }
    }

    /// The notes after `after`, every page of them up to a bound.
    async fn notes(&self, task_id: &str, mut after: u64) -> Result<Vec<Value>, RpcError> {
        let mut notes = Vec::new();
        for _ in 0..task::MAX_NOTE_PAGES {
            let path = format!(
                "/standins/{}/notes?after={after}",
                rpc::task_segment(task_id)?
            );
            let answer = self.call("GET", path, None).await?;
            if answer.status != 200 {
                return Err(rpc::refused(&answer, task_id));
            }
            let page = answer.body["notes"].as_array().cloned().unwrap_or_default();
            notes.extend(page);
            match answer.body["next"].as_u64() {
                Some(next) if next > after => after = next,
                _ => break,
            }
        }
        Ok(notes)
    }

    /// GetTask: the stand-in as an A2A task, with the last `history` of its messages
    /// (absent: [`task::DEFAULT_HISTORY`]). `replied_after`: the seq a reply was sent
    /// after; with no note since, the task is working on it.
    async fn task(
        &self,
        task_id: &str,
        history: Option<usize>,
        replied_after: Option<u64>,
    ) -> Result<Value, RpcError> {
        let row = self.stand_in(task_id).await?;
        let seq = row["seq"].as_u64().unwrap_or_default();
        let keep = history
            .unwrap_or(task::DEFAULT_HISTORY)
            .min(task::MAX_HISTORY);
        // Only the notes the answer shows: the latest, and the history kept before it.
        let from = seq.saturating_sub(keep as u64 + 1);
        let notes = if seq > 0 {
            self.notes(task_id, from).await?
        } else {
            Vec::new()
        };
        let turns = self.turns(task_id).await?;
        let artifacts = self.artifacts(task_id).await?;
        let mut task = task::of(task_id, &row, &notes, &turns, artifacts, keep);
        // A reply taken with no word from the agent since, or one still waiting to reach
        // it: the task works on it, whatever its last note asked.
        let unanswered = replied_after.is_some_and(|after| seq <= after);
        let queued = row["pending"]["replies"].as_u64().unwrap_or_default() > 0;
        if (unanswered || queued) && row["closed"] != true {
            task["status"] = json!({"state": "TASK_STATE_WORKING"});
        }
        Ok(task)
    }

    /// The parent's turns, as the control API keeps them (none where it keeps none).
    async fn turns(&self, task_id: &str) -> Result<Vec<Value>, RpcError> {
        let id = rpc::task_segment(task_id)?;
        let answer = self
            .call("GET", format!("/standins/{id}/turns"), None)
            .await?;
        Ok(match answer.status {
            200 => answer.body["turns"].as_array().cloned().unwrap_or_default(),
            _ => Vec::new(),
        })
    }

    /// The task's artifacts, each stored part given as its link (an artifact whose link
    /// does not come is given without it).
    async fn artifacts(&self, task_id: &str) -> Result<Vec<Value>, RpcError> {
        let id = rpc::task_segment(task_id)?;
        let mut artifacts = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..task::MAX_ARTIFACT_PAGES {
            let path = match &after {
                Some(after) => format!("/standins/{id}/artifacts?after={after}"),
                None => format!("/standins/{id}/artifacts"),
            };
            let answer = self.call("GET", path, None).await?;
            // A deployment without an artifacts bucket keeps none.
            if answer.status != 200 {
                break;
            }
            for view in answer.body["artifacts"].as_array().into_iter().flatten() {
                let links = self.links(&id, view, artifacts.len()).await;
                artifacts.push(task::artifact(view, &links));
            }
            match answer.body["next"]
                .as_str()
                .and_then(|n| rpc::segment(n).ok())
            {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        Ok(artifacts)
    }

    /// The links of an artifact's stored parts, for the first few artifacts.
    async fn links(&self, task: &str, view: &Value, index: usize) -> Vec<Value> {
        let stored = view["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p["stored"] == true));
        let artifact = view["artifact_id"]
            .as_str()
            .and_then(|a| rpc::segment(a).ok());
        let (true, Some(artifact)) = (stored && index < task::MAX_LINKED_ARTIFACTS, artifact)
        else {
            return Vec::new();
        };
        let path = format!("/standins/{task}/artifacts/{artifact}");
        match self.call("GET", path, None).await {
            Ok(answer) if answer.status == 200 => {
                answer.body["links"].as_array().cloned().unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    /// ListTasks: this agent's stand-ins, a page of the API's at a time.
    async fn list(&self, filter: rpc::ListFilter) -> Result<Value, RpcError> {
        // This agent's stand-ins only, from the control API's index of them, so a page
        // token is one of this agent's own tasks.
        let agent = rpc::segment(self.agent)
            .map_err(|_| RpcError::invalid_params("the agent's id does not read"))?;
        let path = match &filter.page_token {
            Some(token) => format!(
                "/standins?agent={agent}&after={}",
                rpc::segment(token)
                    .map_err(|_| RpcError::invalid_params("pageToken: not one this front gave"))?
            ),
            None => format!("/standins?agent={agent}"),
        };
        let answer = self.call("GET", path, None).await?;
        if answer.status != 200 {
            return Err(rpc::refused(&answer, ""));
        }
        let tasks: Vec<Value> = answer.body["standins"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|summary| summary["agent"] == self.agent)
            .map(task::listed)
            .filter(|task| filter.keeps(task))
            .collect();
        let next = answer.body["next"].as_str().unwrap_or_default();
        Ok(json!({
            "tasks": tasks,
            "nextPageToken": next,
            "pageSize": tasks.len(),
            "totalSize": tasks.len(),
        }))
    }
}

#[cfg(test)]
mod tests;
