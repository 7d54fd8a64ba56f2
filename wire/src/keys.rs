//! The A2A front's keys: `POST /keys` issues one (the key shown once, in the answer),
//! `GET /keys` lists them (never a key or its digest), `DELETE /keys/{key_id}` revokes one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::body_error::{BodyError, field_refused};

/// The longest name a key may have.
pub const MAX_KEY_NAME_CHARS: usize = 64;

/// Whether `id` has the shape of a key's id (16 lower-case hex digits), as the stack
/// issues them and `GET /keys` shows them.
pub fn is_key_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The rule [`is_key_id`] checks, as a refusal says it.
pub const KEY_ID_RULE: &str =
    "must be a key's id: the 16 hex digits `GET /keys` (standin keys list) shows";

/// The body of `POST /keys`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyRequest {
    /// What the operator calls it (who holds it, say); empty when not given.
    pub name: String,
    /// The agents the key may reach; `None`, every one.
    pub agents: Option<Vec<String>>,
}

impl KeyRequest {
    /// The body, or the field it gets wrong. `most_agents` bounds `agents`.
    pub fn parse(body: &Value, most_agents: usize) -> Result<Self, BodyError> {
        let body = match body {
            Value::Null => return Ok(Self::default()),
            Value::Object(_) => body,
            _ => {
                return Err(BodyError(
                    "the body: must be a JSON object (name, agents) or empty".into(),
                ));
            }
        };
        let name = match &body["name"] {
            Value::Null => String::new(),
            Value::String(name) if name.chars().count() > MAX_KEY_NAME_CHARS => {
                return Err(field_refused(
                    "name",
                    format!("must be at most {MAX_KEY_NAME_CHARS} characters"),
                ));
            }
            Value::String(name) if name.chars().any(char::is_control) => {
                return Err(field_refused("name", "must hold no control characters"));
            }
            Value::String(name) => name.clone(),
            _ => return Err(field_refused("name", "must be a string")),
        };
        let agents = match &body["agents"] {
            Value::Null => None,
            Value::Array(list) if list.is_empty() || list.len() > most_agents => {
                return Err(field_refused(
                    "agents",
                    format!(
                        "must name 1 to {most_agents} agents (leave it out for every agent), got {}",
                        list.len()
                    ),
                ));
            }
            Value::Array(list) => {
                let mut agents: Vec<String> = Vec::with_capacity(list.len());
                for (i, agent) in list.iter().enumerate() {
                    match agent.as_str() {
                        Some(id) if !agents.iter().any(|a| a == id) => agents.push(id.to_owned()),
                        Some(_) => {}
                        None => {
                            return Err(field_refused(
                                &format!("agents[{i}]"),
                                "must be an agent's id",
                            ));
                        }
                    }
                }
                Some(agents)
            }
            _ => return Err(field_refused("agents", "must be a list of agent ids")),
        };
        Ok(Self { name, agents })
    }
}

/// A key as `GET /keys` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyView {
    pub key_id: String,
    pub name: String,
    /// Absent: every agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    pub created_at: String,
}

/// The answer to `POST /keys`: the key itself, shown this once.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedKeyView {
    #[serde(flatten)]
    pub view: KeyView,
    pub key: String,
}

impl std::fmt::Debug for IssuedKeyView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedKeyView")
            .field("view", &self.view)
            .field("key", &"…")
            .finish()
    }
}

/// `GET /keys`: a page, and the key id the next starts after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeysPage {
    pub keys: Vec<KeyView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused(body: Value) -> String {
        match KeyRequest::parse(&body, 3) {
            Err(BodyError(words)) => words,
            Ok(read) => panic!("{body} was taken: {read:?}"),
        }
    }

    #[test]
    fn a_key_request_names_what_it_gets_wrong() {
        assert_eq!(
            KeyRequest::parse(&Value::Null, 3),
            Ok(KeyRequest::default())
        );
        let read = KeyRequest::parse(&json!({"name": "ci", "agents": ["a", "b", "a"]}), 3);
        assert_eq!(
            read,
            Ok(KeyRequest {
                name: "ci".into(),
                agents: Some(vec!["a".into(), "b".into()])
            })
        );
        assert!(refused(json!({"name": 3})).starts_with("name:"));
        assert!(refused(json!({"name": "a\nb"})).starts_with("name:"));
        assert!(refused(json!({"name": "x".repeat(65)})).starts_with("name:"));
        assert!(refused(json!({"agents": []})).starts_with("agents:"));
        assert!(refused(json!({"agents": ["a", "b", "c", "d"]})).contains("1 to 3"));
        assert!(refused(json!({"agents": [1]})).starts_with("agents[0]:"));
        assert!(refused(json!({"agents": "a"})).starts_with("agents:"));
        assert!(refused(json!([1])).starts_with("the body:"));
    }

    #[test]
    fn an_issued_key_is_never_debug_printed() {
        let issued = IssuedKeyView {
            view: KeyView {
                key_id: "k".into(),
                name: String::new(),
                agents: None,
                created_at: "t".into(),
            },
            key: "sik_secret".into(),
        };
        assert!(!format!("{issued:?}").contains("sik_secret"));
    }
}
