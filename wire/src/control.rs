//! The control API's bodies. Requests are read with [`StartRequest::parse`] and its
//! kin, which give the one message a caller can act on for each thing wrong; answers
//! are plain serde types, read back by the `standin` command and the tests.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::body_error::{BodyError, field_refused};
use crate::id::{ReplyId, TaskId};
use crate::note::ParentNote;
use crate::parts::{InputPart, parse_parts};
use crate::state::{TaskState, WatchMode};

/// The longest first message or reply, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;
/// The longest cancel reason, in bytes.
pub const MAX_REASON_BYTES: usize = 4 * 1024;
/// Why `POST /standins` takes no parent task token: whoever could call it would have
/// the stack answer (complete or fail) any task of the account.
pub const NO_TOKEN_HERE: &str = "parent_task_token: is not taken by POST /standins: a Step Functions parent starts the stand-in's execution itself (states:startExecution.waitForTaskToken, passing parent_task_token in its input), so only a principal allowed StartExecution on the stand-in machine can have a task answered";

fn text<'a>(body: &'a Value, field: &str) -> Result<&'a str, BodyError> {
    match &body[field] {
        Value::Null => Err(field_refused(field, "is required")),
        Value::String(t) if t.is_empty() => Err(field_refused(field, "must not be empty")),
        Value::String(t) => Ok(t),
        other => Err(field_refused(
            field,
            format!("must be a string, got {other}"),
        )),
    }
}

fn bounded(field: &str, value: &str, limit: usize) -> Result<(), BodyError> {
    if value.len() > limit {
        return Err(field_refused(
            field,
            format!("must be at most {limit} bytes, got {}", value.len()),
        ));
    }
    Ok(())
}

/// `POST /standins`: start a stand-in that sends `message` to `agent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartRequest {
    pub agent: String,
    pub message: String,
    /// What the agent gets beside the message: data, files, more text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<InputPart>,
    /// The stand-in's id; the API makes one (`si-…`) when it is absent. Starting again
    /// with the same id and agent answers the running stand-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// How long the stand-in may live, in seconds from its first turn: then the remote
    /// task is cancelled and the parent told. None: the agent's `max_duration`, or the
    /// stack's `MaxStandInSecs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_secs: Option<u64>,
    /// The parent's W3C `traceparent`, sent on every call to the agent (the header of
    /// the same name says it too). None: the stand-in begins a trace of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// A webhook every note of the stand-in is POSTed to, set with the start, so it hears
    /// every note (`after` 0 unless given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<crate::webhook::WebhookRequest>,
    /// The parent's own context (its conversation, its session) the stand-in belongs to:
    /// shown with it, and the A2A front's `contextId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
}

/// The longest `context_id`, in characters.
pub const MAX_CONTEXT_ID_CHARS: usize = 128;

fn context_id(body: &Value) -> Result<Option<String>, BodyError> {
    match &body["context_id"] {
        Value::Null => Ok(None),
        Value::String(id)
            if !id.is_empty()
                && id.chars().count() <= MAX_CONTEXT_ID_CHARS
                && id.chars().all(|c| c.is_ascii_graphic()) =>
        {
            Ok(Some(id.clone()))
        }
        _ => Err(field_refused(
            "context_id",
            format!("must be 1 to {MAX_CONTEXT_ID_CHARS} printable ASCII characters, no spaces"),
        )),
    }
}

impl StartRequest {
    pub fn parse(body: &Value) -> Result<Self, BodyError> {
        let agent = text(body, "agent")?;
        let message = text(body, "message")?;
        bounded("message", message, MAX_MESSAGE_BYTES)?;
        let parts = parse_parts(body, message)?;
        let task_id = match &body["task_id"] {
            Value::Null => None,
            Value::String(id) => Some(TaskId::parse(id).map_err(|e| BodyError(e.to_string()))?),
            _ => return Err(BodyError(TaskId::RULE.into())),
        };
        if !body["parent_task_token"].is_null() {
            return Err(BodyError(NO_TOKEN_HERE.into()));
        }
        let deadline_secs = match &body["deadline_secs"] {
            Value::Null => None,
            value => Some(value.as_u64().filter(|secs| *secs > 0).ok_or_else(|| {
                field_refused(
                    "deadline_secs",
                    format!("must be a whole number of seconds, at least 1, got {value}"),
                )
            })?),
        };
        let traceparent = match &body["traceparent"] {
            Value::Null => None,
            Value::String(given) => {
                Some(crate::trace::TraceContext::parse("traceparent", given)?.header())
            }
            other => {
                return Err(field_refused(
                    "traceparent",
                    format!("must be a string, got {other}"),
                ));
            }
        };
        let webhook = match &body["webhook"] {
            Value::Null => None,
            given => Some(crate::webhook::WebhookRequest::parse_at(given, "webhook.")?),
        };
        Ok(Self {
            agent: agent.to_owned(),
            message: message.to_owned(),
            parts,
            task_id,
            deadline_secs,
            traceparent,
            webhook,
            context_id: context_id(body)?,
        })
    }
}

/// `POST /standins/{task_id}/reply`: the parent's answer to a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyRequest {
    pub text: String,
    /// What the agent gets beside the text: data, files, more text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<InputPart>,
    /// The parent's name for the reply: sending it again is harmless. Unnamed, the
    /// API names it, which makes only its own retries harmless.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_id: Option<ReplyId>,
}

impl ReplyRequest {
    pub fn parse(body: &Value) -> Result<Self, BodyError> {
        let text = text(body, "text")?;
        bounded("text", text, MAX_MESSAGE_BYTES)?;
        let parts = parse_parts(body, text)?;
        let reply_id = match body.get("reply_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => {
                Some(ReplyId::parse(id).map_err(|e| BodyError(e.to_string()))?)
            }
            Some(_) => return Err(BodyError(ReplyId::RULE.into())),
        };
        Ok(Self {
            text: text.to_owned(),
            parts,
            reply_id,
        })
    }
}

/// `POST /standins/{task_id}/cancel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl CancelRequest {
    pub const DEFAULT_REASON: &'static str = "cancelled by the parent";

    pub fn parse(body: &Value) -> Result<Self, BodyError> {
        let reason = match &body["reason"] {
            Value::Null => None,
            Value::String(reason) => {
                bounded("reason", reason, MAX_REASON_BYTES)?;
                Some(reason.clone())
            }
            other => {
                return Err(field_refused(
                    "reason",
                    format!("must be a string, got {other}"),
                ));
            }
        };
        Ok(Self { reason })
    }

    pub fn reason(&self) -> &str {
        self.reason.as_deref().unwrap_or(Self::DEFAULT_REASON)
    }
}

/// Every refusal and failure: the message, and with an unknown agent the known ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
}

/// The answer to a start (200).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    pub task_id: TaskId,
    pub execution_arn: String,
    /// The trace the stand-in's calls to the agent and its notes carry: the parent's,
    /// or the one the stand-in began.
    #[serde(default)]
    pub trace_id: String,
}

/// The answer to a reply or a cancel (202): the stand-in will act on it at its next wake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    pub task_id: String,
    pub accepted: bool,
}

/// What a parent may see of a stand-in: never the park token or the push token's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub task_id: String,
    pub agent: String,
    pub remote_task_id: Option<String>,
    pub watch: Option<WatchMode>,
    pub state: Option<TaskState>,
    pub text: Option<String>,
    pub closed: bool,
    pub seq: u64,
    pub created_at: Option<String>,
    /// When its last note was told (RFC 3339, UTC); None before its first note, and on
    /// stand-ins whose last note predates this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_note_at: Option<String>,
    /// The parent's context, when its start named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
}

/// `GET /standins/{task_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandInStatus {
    #[serde(flatten)]
    pub summary: Summary,
    /// The newest execution of the stand-in (a roll starts `{task_id}__1`, …).
    pub execution_arn: String,
    /// None when Step Functions could not be asked.
    pub execution_status: Option<String>,
    pub parked: bool,
    pub pending: PendingView,
    /// The ids of the latest replies the stand-in has taken (its last 64), so a parent
    /// that sent one again can tell it was taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies_taken: Vec<String>,
}

/// What waits for the stand-in's next wake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingView {
    pub cancel: bool,
    pub replies: usize,
    pub push: bool,
}

/// `GET /standins/{task_id}/notes?after=N`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotesPage {
    pub task_id: String,
    pub notes: Vec<ParentNote>,
    /// The `after` of the following page; None on the last.
    pub next: Option<u64>,
}

/// `GET /standins?after=…`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPage {
    pub standins: Vec<Summary>,
    pub next: Option<String>,
}

/// An agent as `/agents` shows it: its entry, and whose it is (`stack`: the template's
/// `Agents` parameter, changed by a deploy; `registry`: `PUT /agents/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentView {
    pub source: String,
    pub agent: Value,
    /// What the agent's card says of it (`GET /agents` and `GET /agents/{id}` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<CardView>,
}

/// What an agent's card says of it, read within seconds of the answer, or why it could
/// not be read (`error`, the other fields then empty).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CardView {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub skills: Vec<SkillView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One thing an agent's card says it can do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SkillView {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// `GET /agents?after=…`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentsPage {
    pub agents: Vec<AgentView>,
    pub next: Option<String>,
}

/// `DELETE /agents/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    pub id: String,
    pub removed: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused<T: std::fmt::Debug>(parsed: Result<T, BodyError>) -> String {
        match parsed {
            Ok(value) => panic!("accepted {value:?}"),
            Err(BodyError(message)) => message,
        }
    }

    #[test]
    fn a_start_names_what_is_missing_or_too_big() {
        let big = "m".repeat(MAX_MESSAGE_BYTES + 1);
        for (body, message) in [
            (json!({"message": "m"}), "agent: is required".to_owned()),
            (
                json!({"agent": "", "message": "m"}),
                "agent: must not be empty".to_owned(),
            ),
            (json!({"agent": "a"}), "message: is required".to_owned()),
            (
                json!({"agent": "a", "message": 7}),
                "message: must be a string, got 7".to_owned(),
            ),
            (
                json!({"agent": "a", "message": big}),
                format!(
                    "message: must be at most {MAX_MESSAGE_BYTES} bytes, got {}",
                    MAX_MESSAGE_BYTES + 1
                ),
            ),
            (
                json!({"agent": "a", "message": "m", "task_id": "a__1"}),
                TaskId::RULE.to_owned(),
            ),
            (
                json!({"agent": "a", "message": "m", "task_id": 5}),
                TaskId::RULE.to_owned(),
            ),
            (
                json!({"agent": "a", "message": "m", "parent_task_token": "AQB8-token"}),
                NO_TOKEN_HERE.to_owned(),
            ),
            (
                json!({"agent": "a", "message": "m", "parent_task_token": 5}),
                NO_TOKEN_HERE.to_owned(),
            ),
        ] {
            assert_eq!(refused(StartRequest::parse(&body)), message, "{body}");
        }
    }

    #[test]
    fn a_deadline_is_a_whole_number_of_seconds() {
        let start = |deadline: Value| {
            StartRequest::parse(&serde_json::json!({
                "agent": "writer", "message": "m", "deadline_secs": deadline
            }))
        };
        assert_eq!(
            start(Value::from(60)).map(|s| s.deadline_secs),
            Ok(Some(60))
        );
        assert_eq!(start(Value::Null).map(|s| s.deadline_secs), Ok(None));
        for bad in [
            Value::from(0),
            Value::from(-5),
            Value::from(1.5),
            Value::from("60"),
        ] {
            let refused = start(bad.clone()).expect_err("refused");
            assert!(
                refused
                    .0
                    .starts_with("deadline_secs: must be a whole number"),
                "{bad}: {refused}"
            );
        }
    }

    #[test]
    fn a_request_the_command_writes_is_one_the_api_reads() {
        let start = StartRequest {
            agent: "writer".into(),
            message: "Write a haiku".into(),
            parts: vec![
                InputPart::Data {
                    data: json!({"season": "autumn"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                },
                InputPart::File(crate::parts::InputFile {
                    name: Some("notes.txt".into()),
                    media_type: Some("text/plain".into()),
                    content: crate::parts::FileContent::Bytes("bm90ZXM=".into()),
                }),
            ],
            task_id: TaskId::parse("si-1").ok(),
            deadline_secs: Some(3600),
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            webhook: None,
            context_id: None,
        };
        let body = serde_json::to_value(&start).unwrap_or_default();
        assert_eq!(StartRequest::parse(&body), Ok(start));
        let reply = ReplyRequest {
            text: "autumn".into(),
            parts: vec![InputPart::File(crate::parts::InputFile {
                name: None,
                media_type: None,
                content: crate::parts::FileContent::Url("https://x.test/leaf.png".into()),
            })],
            reply_id: ReplyId::parse("r-1").ok(),
        };
        let body = serde_json::to_value(&reply).unwrap_or_default();
        assert_eq!(ReplyRequest::parse(&body), Ok(reply));
        let cancel = CancelRequest::default();
        let body = serde_json::to_value(&cancel).unwrap_or_default();
        assert_eq!(body, json!({}));
        assert_eq!(
            CancelRequest::parse(&body).map(|c| c.reason().to_owned()),
            Ok(CancelRequest::DEFAULT_REASON.into())
        );
    }

    #[test]
    fn a_reply_or_cancel_names_what_is_wrong() {
        assert_eq!(
            refused(ReplyRequest::parse(&json!({}))),
            "text: is required"
        );
        assert_eq!(
            refused(ReplyRequest::parse(&json!({"text": "t", "reply_id": 1}))),
            ReplyId::RULE
        );
        assert_eq!(
            refused(ReplyRequest::parse(
                &json!({"text": "t", "reply_id": "a b"})
            )),
            ReplyId::RULE
        );
        let long = "r".repeat(MAX_REASON_BYTES + 1);
        assert_eq!(
            refused(CancelRequest::parse(&json!({"reason": long}))),
            format!(
                "reason: must be at most {MAX_REASON_BYTES} bytes, got {}",
                MAX_REASON_BYTES + 1
            )
        );
        assert_eq!(
            refused(CancelRequest::parse(&json!({"reason": ["x"]}))),
            "reason: must be a string, got [\"x\"]"
        );
    }
}
