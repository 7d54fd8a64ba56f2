//! The subset of A2A 1.0 (ProtoJSON: camelCase, SCREAMING_SNAKE enums) the stand-in reads
//! and writes. Parsing is lenient where the wire is: unknown fields are ignored, unknown
//! enum values become `Unspecified`, and `""` / `[]` count as absent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A task's state by its ProtoJSON name. Unknown names read as `Unspecified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum WireState {
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED", other)]
    Unspecified,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Role {
    #[serde(rename = "ROLE_USER")]
    User,
    #[serde(rename = "ROLE_AGENT")]
    Agent,
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED", other)]
    Unspecified,
}

/// A part is a oneof; only `text` matters to the stand-in, the rest is carried as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct WirePart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A file's bytes, base64 (or, when collected, the mark of where they were stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

impl WirePart {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A parent's part in 1.0's form: a file is its `url` or its `raw` bytes. None for an
    /// upload the turn did not hand over as a link (it always does): its id means
    /// nothing to the agent, and a file part with no content is not A2A.
    pub fn from_input(part: &standin_wire::InputPart) -> Option<Self> {
        use standin_wire::{FileContent, InputPart};
        Some(match part {
            InputPart::Text { text } => Self::text(text.clone()),
            InputPart::Data { data } => Self {
                data: Some(Value::Object(data.clone())),
                ..Self::default()
            },
            InputPart::File(file) => {
                let (url, raw) = match &file.content {
                    FileContent::Url(url) => (Some(url.clone()), None),
                    FileContent::Bytes(bytes) => (None, Some(bytes.clone())),
                    FileContent::Upload(_) => return None,
                };
                Self {
                    url,
                    raw,
                    media_type: file.media_type.clone(),
                    filename: file.name.clone(),
                    ..Self::default()
                }
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub task_id: Option<String>,
    #[serde(default)]
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<WirePart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl Message {
    /// A user turn. A follow-up names both the task and its context: the Python SDK makes
    /// up a fresh context when only the task id is sent.
    pub fn from_turn(turn: &crate::model::Turn) -> Self {
        Self {
            message_id: turn.message_id.clone(),
            context_id: turn.follow_up.as_ref().map(|f| f.context_id.clone()),
            task_id: turn.follow_up.as_ref().map(|f| f.task_id.clone()),
            role: Role::User,
            parts: std::iter::once(WirePart::text(turn.text.clone()))
                .chain(turn.parts.iter().filter_map(WirePart::from_input))
                .collect(),
            metadata: None,
        }
    }

    /// The text parts, joined by newlines; other parts carry no status text.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    #[serde(default)]
    pub state: WireState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default)]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub parts: Vec<WirePart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default)]
    pub context_id: String,
    #[serde(default)]
    pub status: TaskStatus,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    #[serde(default)]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    pub task_id: String,
    #[serde(default)]
    pub context_id: String,
    #[serde(default)]
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    pub task_id: String,
    #[serde(default)]
    pub context_id: String,
    #[serde(default)]
    pub artifact: Artifact,
    #[serde(default)]
    pub append: bool,
    #[serde(default)]
    pub last_chunk: bool,
}

/// A stream item and a push body: exactly one member is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct StreamResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_update: Option<TaskStatusUpdateEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_update: Option<TaskArtifactUpdateEvent>,
}

impl StreamResponse {
    /// The remote task this item is about, from whichever member is set.
    pub fn remote_task_id(&self) -> Option<&str> {
        let id = if let Some(t) = &self.task {
            Some(t.id.as_str())
        } else if let Some(s) = &self.status_update {
            Some(s.task_id.as_str())
        } else if let Some(a) = &self.artifact_update {
            Some(a.task_id.as_str())
        } else {
            self.message.as_ref().and_then(|m| m.task_id.as_deref())
        };
        id.filter(|id| !id.is_empty())
    }
}

/// The answer to SendMessage: a task, or (for agents that answer directly) a message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResult {
    Task(Task),
    Message(Message),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub task_id: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

// The token must never reach a log line, so Debug leaves it out.
impl std::fmt::Debug for TaskPushNotificationConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskPushNotificationConfig")
            .field("id", &self.id)
            .field("task_id", &self.task_id)
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub protocol_binding: String,
    #[serde(default)]
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    #[serde(default)]
    pub uri: String,
    /// The agent refuses clients that do not speak it.
    #[serde(default)]
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default)]
    pub streaming: bool,
    #[serde(default)]
    pub push_notifications: bool,
    #[serde(default)]
    pub extensions: Vec<AgentExtension>,
    /// 1.0: an authenticated caller may read a fuller card (GetExtendedAgentCard).
    #[serde(default, deserialize_with = "null_default")]
    pub extended_agent_card: bool,
}

/// A 0.3 card's other interfaces (`additionalInterfaces`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LegacyInterface {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub transport: String,
}

/// One of the card's skills (the same fields in 0.3 and 1.0).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}

impl AgentSkill {
    /// Whatever of a skill reads: a field of another type is absent, a tag that is not
    /// text is left out.
    fn lenient(value: &Value) -> Self {
        let text = |key: &str| value[key].as_str().unwrap_or_default().to_owned();
        Self {
            id: text("id"),
            name: text("name"),
            description: text("description"),
            tags: value["tags"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .take(super::limits::MAX_TAGS)
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// A text field, or empty when it is anything else.
fn lenient_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => text,
        _ => String::new(),
    })
}

/// The first [`super::limits::MAX_SKILLS`] skills, each read leniently; the rest are
/// skipped unread, and a `skills` that is not a list is none.
fn first_skills<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<AgentSkill>, D::Error> {
    struct FirstSkills;
    impl<'de> serde::de::Visitor<'de> for FirstSkills {
        type Value = Vec<AgentSkill>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of skills")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut skills = Vec::new();
            while skills.len() < super::limits::MAX_SKILLS {
                match seq.next_element::<Value>()? {
                    Some(skill) => skills.push(AgentSkill::lenient(&skill)),
                    None => return Ok(skills),
                }
            }
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(skills)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            Ok(Vec::new())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }
    deserializer.deserialize_any(FirstSkills)
}

/// A card of either version: 1.0's `supportedInterfaces`, or 0.3's `url`,
/// `preferredTransport`, `additionalInterfaces` and `protocolVersion`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default)]
    pub name: String,
    /// Read leniently: what a parent is shown, never what a call needs, so a card whose
    /// description or skills are malformed is still a card.
    #[serde(default, deserialize_with = "lenient_text")]
    pub description: String,
    /// The first skills only (a 256 KiB card could list tens of thousands), read leniently.
    #[serde(default, deserialize_with = "first_skills")]
    pub skills: Vec<AgentSkill>,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_transport: Option<String>,
    #[serde(default)]
    pub additional_interfaces: Vec<LegacyInterface>,
    /// The schemes the requirements name, each in its version's form (`security`).
    #[serde(default, deserialize_with = "null_default")]
    pub security_schemes: std::collections::BTreeMap<String, Value>,
    /// 1.0's requirements: `[{"schemes": {name: {"list": scopes}}}]`.
    #[serde(default, deserialize_with = "null_default")]
    pub security_requirements: Vec<Value>,
    /// 0.3's requirements: `[{name: scopes}]`.
    #[serde(default, deserialize_with = "null_default")]
    pub security: Vec<Value>,
    /// 0.3's flag for the authenticated extended card.
    #[serde(default, deserialize_with = "null_default")]
    pub supports_authenticated_extended_card: bool,
}

fn is_blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

/// A field a card may write as `null` (some servers do for what they leave unset): its
/// default, rather than a card refused whole.
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use standin_wire::{FileContent, InputFile, InputPart, UploadId};

    /// An upload id means nothing to the agent, and a file part with neither link nor
    /// bytes is not A2A: one the turn did not hand over is left out.
    #[test]
    fn an_upload_not_handed_over_is_left_out_of_the_message() {
        let file = |content| {
            InputPart::File(InputFile {
                name: Some("a.csv".into()),
                media_type: None,
                content,
            })
        };
        let turn = crate::model::Turn::with_id("m-1", "here", None).with_parts(vec![
            file(FileContent::Upload(UploadId::from_random([1; 16]))),
            file(FileContent::Url("https://x.test/a.csv".into())),
        ]);
        let message = Message::from_turn(&turn);
        assert_eq!(message.parts.len(), 2, "{message:?}");
        assert_eq!(message.parts[0].text.as_deref(), Some("here"));
        assert_eq!(
            message.parts[1].url.as_deref(),
            Some("https://x.test/a.csv")
        );
    }
}
