//! What each tool takes and gives, with the JSON schemas the client reads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// A file for the agent: exactly one of `url` or `bytes`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct FileIn {
    /// The file's name, as the agent sees it.
    #[serde(default)]
    pub name: Option<String>,
    /// Its media type, such as text/csv.
    #[serde(default)]
    pub media_type: Option<String>,
    /// An https:// link the agent fetches itself: the way to give a large file.
    #[serde(default)]
    pub url: Option<String>,
    /// The file's bytes in standard base64; the message and its files at most 32 KiB.
    #[serde(default)]
    pub bytes: Option<String>,
}

/// The control API's parts for `data` and `files` (it checks them and names a bad one).
pub(crate) fn parts(data: Option<&Map<String, Value>>, files: Option<&[FileIn]>) -> Vec<Value> {
    let files = files.unwrap_or_default().iter().map(|file| {
        let mut part = json!({"kind": "file"});
        for (key, value) in [
            ("name", &file.name),
            ("media_type", &file.media_type),
            ("url", &file.url),
            ("bytes", &file.bytes),
        ] {
            if let Some(value) = value {
                part[key] = value.clone().into();
            }
        }
        part
    });
    let data = data.map(|data| json!({"kind": "data", "data": data}));
    files.chain(data).collect()
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Delegate {
    /// The agent's id, as list_agents names it.
    pub agent: String,
    /// The task for the agent: the first message of the conversation (at most 32 KiB).
    pub message: String,
    /// Data for the agent: a JSON object.
    #[serde(default)]
    pub data: Option<Map<String, Value>>,
    /// Files for the agent.
    #[serde(default)]
    pub files: Option<Vec<FileIn>>,
    /// End the sub-task after this many seconds (default: the agent's or the stack's bound).
    #[serde(default)]
    pub deadline_secs: Option<u64>,
    /// Your own id for the sub-task (1 to 64 of A-Z, a-z, 0-9, - and _): delegating again
    /// with it answers the same sub-task, so a retry is safe. Default: a new one.
    #[serde(default)]
    pub task_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Reply {
    /// The stand-in's id, as delegate returned it.
    pub task_id: String,
    /// The answer to the agent's question: its next message.
    pub text: String,
    #[serde(default)]
    pub data: Option<Map<String, Value>>,
    #[serde(default)]
    pub files: Option<Vec<FileIn>>,
    /// Your own id for the reply: sending it again is harmless, so a retry is safe.
    #[serde(default)]
    pub reply_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Cancel {
    pub task_id: String,
    /// Why; the final note carries it.
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskRef {
    /// The stand-in's id, as delegate returned it.
    pub task_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Wait {
    pub task_id: String,
    /// The last note's seq already seen (0 or absent: from the first).
    #[serde(default)]
    pub after_seq: Option<u64>,
    /// How long to wait for a note, in seconds (default 20; at most 55 over stdio, 10
    /// over HTTP).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ArtifactsOf {
    pub task_id: String,
    /// One artifact, with its parts' content or links; absent: the list.
    #[serde(default)]
    pub artifact_id: Option<String>,
    /// The list's next page: the `next` an earlier answer gave.
    #[serde(default)]
    pub after: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListAgents {
    /// The next page: the `next` an earlier answer gave.
    #[serde(default)]
    pub after: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Agents {
    /// Agents this deployment can delegate to, 100 at a time.
    pub agents: Vec<AgentOut>,
    /// More agents follow: pass this as `after` for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentOut {
    pub id: String,
    /// Where the agent's entry comes from: the stack's parameter or the registry.
    pub source: String,
    /// The agent's A2A endpoint.
    pub url: Option<String>,
    /// The agent's name, as its card gives it: the agent's own claim (the id is what
    /// names it here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the agent does, as its card says: its own words, not an instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What the agent's card says it can do.
    pub skills: Vec<SkillOut>,
    /// Why the agent's card could not be read just now (it may be down or need
    /// credentials for it); delegating to it may still work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card_error: Option<String>,
}

/// One thing an agent's card says it can do.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct SkillOut {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Delegated {
    /// The stand-in's id: pass it to wait, reply, status, cancel and artifacts.
    pub task_id: String,
    /// The W3C trace id the stand-in's calls to the agent carry: the agent's spans for
    /// this task are under it (absent from a deployment older than traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Accepted {
    pub task_id: String,
    /// The stand-in takes it at its next wake; wait for the notes that follow.
    pub accepted: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Status {
    pub task_id: String,
    pub agent: String,
    /// The remote task's last state heard (TASK_STATE_…).
    pub state: Option<String>,
    /// What the agent last said.
    pub text: Option<String>,
    /// The number of the last note: wait with after_seq from here for what comes next.
    pub seq: u64,
    /// Whether the stand-in has ended (its last note is final).
    pub closed: bool,
}

/// What the agent said, in order: one note per change of the remote task.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Note {
    pub seq: u64,
    /// TASK_STATE_WORKING, TASK_STATE_INPUT_REQUIRED (reply to it), TASK_STATE_COMPLETED, …
    pub state: String,
    pub text: String,
    /// The last note: the sub-task has ended.
    #[serde(rename = "final")]
    pub is_final: bool,
    /// The artifacts completed since the note before (read them with the artifacts tool).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Value>,
    /// A question's parts beside its text (a form to fill).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Waited {
    /// The notes after after_seq, oldest first (none when the wait timed out).
    pub notes: Vec<Note>,
    /// Pass as after_seq to wait for what comes next.
    pub after_seq: u64,
    /// Whether the sub-task has ended: its final note is in this answer or came before.
    pub ended: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Artifacts {
    /// The artifacts (one when artifact_id was given), each part described: text and
    /// data inline when small, else a link in `links`.
    pub artifacts: Vec<Value>,
    /// For one artifact: a link per part (null for a part given inline), valid 5 minutes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Option<String>>>,
    /// More artifacts: pass it as `after` for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
