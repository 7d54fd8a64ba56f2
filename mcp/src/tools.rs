//! The tools: each one control API call (`wait` a long poll of the note log), its
//! refusal said as the API says it, so the model reads what to do.

use std::time::Duration;

use tokio::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use crate::api::ControlApi;
use crate::shapes::*;

/// The default and the longest wait for a note.
const WAIT_SECS: u64 = 20;
pub const MAX_WAIT_SECS: u64 = 55;
/// How often the note log is read while waiting.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// The most notes one wait returns; the rest come with the next.
const MAX_NOTES: usize = 50;

const INSTRUCTIONS: &str = "Delegate sub-tasks to remote A2A agents. list_agents names them; \
delegate starts one sub-task and returns its task_id; wait returns what the agent said since \
after_seq (call it again with the after_seq it returns until a note is final); when a note's \
state is TASK_STATE_INPUT_REQUIRED, answer with reply; artifacts reads what the agent made.";

/// Stand-in's tools over one control API.
#[derive(Clone)]
pub struct StandInTools<A> {
    api: std::sync::Arc<A>,
    tool_router: ToolRouter<Self>,
    /// The longest `wait`: [`MAX_WAIT_SECS`], or less where the transport's own timeout
    /// is shorter (API Gateway answers within 29 s).
    max_wait_secs: u64,
}

/// An id as one path segment: every byte but `[A-Za-z0-9_-]` escaped, and an id that a
/// URL would read as a dot segment (`.`, `..`) or as nothing refused, so no id can name
/// another path.
fn path_id(id: &str) -> Result<String, String> {
    if id.is_empty() || id.bytes().all(|b| b == b'.') {
        return Err(format!(
            "{id:?} is not an id: give the id as the tools returned it"
        ));
    }
    Ok(standin_wire::path_segment(id))
}

fn decode<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, String> {
    serde_json::from_value(value)
        .map_err(|err| format!("{what}: an answer this tool cannot read: {err}"))
}

#[tool_router]
impl<A: ControlApi> StandInTools<A> {
    pub fn new(api: A) -> Self {
        Self::sharing(std::sync::Arc::new(api))
    }

    /// The tools over an API other tools share (one per request, over HTTP).
    pub fn sharing(api: std::sync::Arc<A>) -> Self {
        Self {
            api,
            tool_router: Self::tool_router(),
            max_wait_secs: MAX_WAIT_SECS,
        }
    }

    /// The tools, a `wait` lasting at most `secs`.
    pub fn waiting_at_most(self, secs: u64) -> Self {
        Self {
            max_wait_secs: secs.min(MAX_WAIT_SECS),
            ..self
        }
    }

    async fn call(
        &self,
        what: &str,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<Value, String> {
        self.api.call(method, path, body).await?.accepted(what)
    }

    #[tool(
        description = "The agents this deployment can delegate to, 100 at a time: each one's id, and its name, description and skills as its own card claims them (the id is what names it)."
    )]
    async fn list_agents(
        &self,
        Parameters(ListAgents { after }): Parameters<ListAgents>,
    ) -> Result<Json<Agents>, String> {
        let path = match &after {
            Some(id) => format!("/agents?after={}", path_id(id)?),
            None => "/agents".to_owned(),
        };
        let page = self.call("listing the agents", "GET", path, None).await?;
        let agents = page["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(agent_out)
            .collect();
        // A page that names itself as the next is the last, not a loop.
        let next = page["next"]
            .as_str()
            .filter(|next| !next.is_empty() && after.as_deref() != Some(*next))
            .map(str::to_owned);
        Ok(Json(Agents { agents, next }))
    }

    #[tool(
        description = "Start a sub-task: send the agent its first message, with data and files if any. Returns the task_id; then wait for what the agent says."
    )]
    async fn delegate(
        &self,
        Parameters(ask): Parameters<Delegate>,
    ) -> Result<Json<Delegated>, String> {
        let body = with_parts(
            json!({"agent": ask.agent, "message": ask.message}),
            parts(ask.data.as_ref(), ask.files.as_deref()),
            [
                ("deadline_secs", ask.deadline_secs.map(Value::from)),
                ("task_id", ask.task_id.map(Value::from)),
            ],
        );
        let started = self
            .call("the delegation", "POST", "/standins".into(), Some(body))
            .await?;
        Ok(Json(Delegated {
            task_id: decode(started["task_id"].clone(), "delegate")?,
            // Read leniently: the stand-in has started, and a retry would start another.
            trace_id: started["trace_id"].as_str().map(str::to_owned),
        }))
    }

    #[tool(
        description = "Answer the agent's question (a note in TASK_STATE_INPUT_REQUIRED): the text, with data and files if any, is its next message."
    )]
    async fn reply(&self, Parameters(reply): Parameters<Reply>) -> Result<Json<Accepted>, String> {
        let body = with_parts(
            json!({"text": reply.text}),
            parts(reply.data.as_ref(), reply.files.as_deref()),
            [("reply_id", reply.reply_id.map(Value::from))],
        );
        let path = format!("/standins/{}/reply", path_id(&reply.task_id)?);
        self.call("the reply", "POST", path, Some(body)).await?;
        Ok(Json(Accepted {
            task_id: reply.task_id,
            accepted: true,
        }))
    }

    #[tool(
        description = "Cancel the sub-task: the remote task is cancelled and the last note says why."
    )]
    async fn cancel(
        &self,
        Parameters(cancel): Parameters<Cancel>,
    ) -> Result<Json<Accepted>, String> {
        let body = cancel
            .reason
            .map_or_else(|| json!({}), |reason| json!({"reason": reason}));
        let path = format!("/standins/{}/cancel", path_id(&cancel.task_id)?);
        self.call("the cancel", "POST", path, Some(body)).await?;
        Ok(Json(Accepted {
            task_id: cancel.task_id,
            accepted: true,
        }))
    }

    #[tool(
        description = "Where the sub-task stands: its last state and text, and whether it has ended."
    )]
    async fn status(&self, Parameters(of): Parameters<TaskRef>) -> Result<Json<Status>, String> {
        let path = format!("/standins/{}", path_id(&of.task_id)?);
        let row = self.call("the status", "GET", path, None).await?;
        Ok(Json(Status {
            task_id: of.task_id,
            agent: row["agent"].as_str().unwrap_or_default().to_owned(),
            state: row["state"].as_str().map(str::to_owned),
            text: row["text"].as_str().map(str::to_owned),
            seq: row["seq"].as_u64().unwrap_or_default(),
            closed: row["closed"].as_bool().unwrap_or_default(),
        }))
    }

    #[tool(
        description = "Wait for what the agent says: the notes after after_seq, as soon as there is one (or none when timeout_secs pass). Call again with the after_seq it returns until a note is final."
    )]
    async fn wait(&self, Parameters(wait): Parameters<Wait>) -> Result<Json<Waited>, String> {
        let after = wait.after_seq.unwrap_or_default();
        let secs = wait
            .timeout_secs
            .unwrap_or(WAIT_SECS)
            .min(self.max_wait_secs);
        let until = Instant::now() + Duration::from_secs(secs);
        let id = path_id(&wait.task_id)?;
        let path = format!("/standins/{id}/notes?after={after}");
        let mut read_again = false;
        loop {
            let page = self
                .call("reading the notes", "GET", path.clone(), None)
                .await?;
            let notes: Vec<Note> = page["notes"]
                .as_array()
                .into_iter()
                .flatten()
                .take(MAX_NOTES)
                .map(note)
                .collect();
            if !notes.is_empty() || Instant::now() >= until {
                let mut ended = notes.iter().any(|n| n.is_final);
                if notes.is_empty() {
                    // Nothing new: the final note may have come before, or just now
                    // (then the log is read once more, so the final text is not lost).
                    let row = self.call("the status", "GET", format!("/standins/{id}"), None);
                    let row = row.await?;
                    let closed = row["closed"].as_bool().unwrap_or_default();
                    if closed && !read_again && row["seq"].as_u64().is_some_and(|seq| seq > after) {
                        read_again = true;
                        continue;
                    }
                    ended = closed;
                }
                let after_seq = notes.last().map_or(after, |n| n.seq);
                return Ok(Json(Waited {
                    notes,
                    after_seq,
                    ended,
                }));
            }
            tokio::time::sleep(POLL_EVERY.min(until.saturating_duration_since(Instant::now())))
                .await;
        }
    }

    #[tool(
        description = "What the agent made: the artifacts, or with artifact_id one of them, its small text and data inline and a link for each stored part."
    )]
    async fn artifacts(
        &self,
        Parameters(of): Parameters<ArtifactsOf>,
    ) -> Result<Json<Artifacts>, String> {
        let base = format!("/standins/{}/artifacts", path_id(&of.task_id)?);
        match of.artifact_id {
            None => {
                let path = match &of.after {
                    Some(after) => format!("{base}?after={}", path_id(after)?),
                    None => base,
                };
                let page = self.call("the artifacts", "GET", path, None).await?;
                Ok(Json(Artifacts {
                    artifacts: decode(page["artifacts"].clone(), "artifacts")?,
                    links: None,
                    next: page["next"].as_str().map(str::to_owned),
                }))
            }
            Some(id) => {
                let path = format!("{base}/{}", path_id(&id)?);
                let one = self.call("the artifact", "GET", path, None).await?;
                Ok(Json(Artifacts {
                    artifacts: vec![one["artifact"].clone()],
                    links: Some(decode(one["links"].clone(), "artifacts")?),
                    next: None,
                }))
            }
        }
    }
}

/// A start's or a reply's body: the parts when there are any, and each field given.
fn with_parts<const N: usize>(
    mut body: Value,
    parts: Vec<Value>,
    fields: [(&str, Option<Value>); N],
) -> Value {
    if !parts.is_empty() {
        body["parts"] = parts.into();
    }
    for (name, value) in fields {
        if let Some(value) = value {
            body[name] = value;
        }
    }
    body
}

/// An agent of `/agents` as `list_agents` gives it: its card's words, or why there are
/// none (a deployment older than cards shows neither).
fn agent_out(view: &Value) -> AgentOut {
    let text = |value: &Value| value.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let card = &view["card"];
    AgentOut {
        id: view["agent"]["id"].as_str().unwrap_or_default().to_owned(),
        source: view["source"].as_str().unwrap_or_default().to_owned(),
        url: text(&view["agent"]["url"]),
        name: text(&card["name"]),
        description: text(&card["description"]),
        // Each skill on its own: one that does not read leaves the others.
        skills: card["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|skill| serde_json::from_value(skill.clone()).ok())
            .collect(),
        card_error: text(&card["error"]),
    }
}

/// A note of the log as the tools give it.
fn note(value: &Value) -> Note {
    let list = |key: &str| value[key].as_array().cloned().unwrap_or_default();
    Note {
        seq: value["seq"].as_u64().unwrap_or_default(),
        state: value["state"].as_str().unwrap_or_default().to_owned(),
        text: value["text"].as_str().unwrap_or_default().to_owned(),
        is_final: value["final"].as_bool().unwrap_or_default(),
        artifacts: list("artifacts"),
        parts: list("parts"),
    }
}

#[tool_handler(router = self.tool_router)]
impl<A: ControlApi> ServerHandler for StandInTools<A> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("standin", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

#[cfg(test)]
mod tests;
