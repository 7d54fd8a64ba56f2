//! The agents document: which remote agents a deployment may delegate to. Parsed
//! strictly; every error names the field (`agents[1].follow_interval`).

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Updates {
    Auto,
    Follow,
    Off,
}

pub const DEFAULT_FOLLOW_INTERVAL: Duration = Duration::from_secs(5);
pub const MIN_FOLLOW_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    pub id: String,
    pub url: String,
    pub version: Option<String>,
    pub updates: Updates,
    /// The pause before re-subscribing when a follow stream ends unchanged or fails.
    pub follow_interval: Duration,
    /// Sent as `X-Participant-Id` on every task-scoped call.
    pub participant: Option<String>,
    /// Origins (`scheme://host[:port]`) the card's interface may point at besides the
    /// configured URL's own.
    pub allowed_origins: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentsConfig {
    pub agents: Vec<AgentSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ConfigError {
    pub field: String,
    pub problem: String,
}

fn err(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        problem: problem.into(),
    }
}

const AGENT_FIELDS: [&str; 7] = [
    "id",
    "url",
    "version",
    "updates",
    "follow_interval",
    "participant",
    "allowed_origins",
];

impl AgentsConfig {
    pub fn agent(&self, id: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.id == id)
    }

    /// Parses `{"agents": [...]}`.
    pub fn parse(json: &str) -> Result<Self, ConfigError> {
        let doc: Value = serde_json::from_str(json)
            .map_err(|e| err("agents document", format!("not JSON: {e}")))?;
        let top = doc.as_object().ok_or_else(|| {
            err(
                "agents document",
                "must be a JSON object with an \"agents\" list",
            )
        })?;
        if let Some(unknown) = top.keys().find(|k| k.as_str() != "agents") {
            return Err(err(
                unknown.as_str(),
                "unknown field (expected only \"agents\")",
            ));
        }
        let list = top
            .get("agents")
            .ok_or_else(|| err("agents", "missing"))?
            .as_array()
            .ok_or_else(|| err("agents", "must be a list"))?;
        let mut seen = HashSet::new();
        let mut agents = Vec::with_capacity(list.len());
        for (i, value) in list.iter().enumerate() {
            let at = format!("agents[{i}]");
            let spec = parse_agent(&at, value)?;
            if !seen.insert(spec.id.clone()) {
                return Err(err(
                    format!("{at}.id"),
                    format!("duplicate id {:?}", spec.id),
                ));
            }
            agents.push(spec);
        }
        Ok(Self { agents })
    }
}

fn parse_agent(at: &str, value: &Value) -> Result<AgentSpec, ConfigError> {
    let obj = value
        .as_object()
        .ok_or_else(|| err(at, "must be an object"))?;
    if let Some(unknown) = obj.keys().find(|k| !AGENT_FIELDS.contains(&k.as_str())) {
        return Err(err(
            format!("{at}.{unknown}"),
            format!(
                "unknown field (expected one of {})",
                AGENT_FIELDS.join(", ")
            ),
        ));
    }
    let id = required_string(obj, at, "id")?;
    if id.trim().is_empty() {
        return Err(err(format!("{at}.id"), "must not be empty"));
    }
    let url = required_string(obj, at, "url")?;
    let parsed = reqwest::Url::parse(&url)
        .map_err(|e| err(format!("{at}.url"), format!("not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(err(
            format!("{at}.url"),
            "must be an http:// or https:// URL with a host",
        ));
    }
    let updates = match obj.get("updates") {
        None => Updates::Auto,
        Some(v) => match v.as_str() {
            Some("auto") => Updates::Auto,
            Some("follow") => Updates::Follow,
            Some("off") => Updates::Off,
            _ => {
                return Err(err(
                    format!("{at}.updates"),
                    format!("must be \"auto\", \"follow\" or \"off\", got {v}"),
                ));
            }
        },
    };
    let follow_interval = match obj.get("follow_interval") {
        None => DEFAULT_FOLLOW_INTERVAL,
        Some(v) => {
            let secs = v.as_f64().filter(|s| s.is_finite()).ok_or_else(|| {
                err(
                    format!("{at}.follow_interval"),
                    format!("must be a number of seconds, got {v}"),
                )
            })?;
            if secs < MIN_FOLLOW_INTERVAL.as_secs_f64() {
                return Err(err(
                    format!("{at}.follow_interval"),
                    format!("must be at least 1 second, got {secs}"),
                ));
            }
            Duration::from_secs_f64(secs)
        }
    };
    Ok(AgentSpec {
        id,
        url,
        version: optional_string(obj, at, "version")?,
        updates,
        follow_interval,
        participant: optional_string(obj, at, "participant")?,
        allowed_origins: allowed_origins(obj, at)?,
    })
}

/// `allowed_origins`: a list of bare origins (no path, query or fragment).
fn allowed_origins(obj: &Map<String, Value>, at: &str) -> Result<Vec<String>, ConfigError> {
    let field = format!("{at}.allowed_origins");
    let Some(value) = obj.get("allowed_origins") else {
        return Ok(Vec::new());
    };
    let list = value
        .as_array()
        .ok_or_else(|| err(&field, format!("must be a list of origins, got {value}")))?;
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let here = format!("{field}[{i}]");
            let text = v
                .as_str()
                .ok_or_else(|| err(&here, format!("must be a string, got {v}")))?;
            let url =
                reqwest::Url::parse(text).map_err(|e| err(&here, format!("not a URL: {e}")))?;
            let bare = matches!(url.scheme(), "http" | "https")
                && url.host_str().is_some()
                && url.path() == "/"
                && url.query().is_none()
                && url.fragment().is_none()
                && !text.trim_end_matches('/').ends_with(':');
            if !bare {
                return Err(err(
                    &here,
                    format!("must be an origin like https://agents.example.com:8443, got {text:?}"),
                ));
            }
            Ok(url.origin().ascii_serialization())
        })
        .collect()
}

fn required_string(obj: &Map<String, Value>, at: &str, key: &str) -> Result<String, ConfigError> {
    optional_string(obj, at, key)?.ok_or_else(|| err(format!("{at}.{key}"), "missing"))
}

fn optional_string(
    obj: &Map<String, Value>,
    at: &str,
    key: &str,
) -> Result<Option<String>, ConfigError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(err(
            format!("{at}.{key}"),
            format!("must be a string, got {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(json: &str) -> String {
        AgentsConfig::parse(json).expect_err("must fail").field
    }

    #[test]
    fn full_and_minimal_agents() {
        let cfg = AgentsConfig::parse(
            r#"{"agents":[
                {"id":"a","url":"http://127.0.0.1:9000","version":"1.0","updates":"follow","follow_interval":2.5,"participant":"p1"},
                {"id":"b","url":"https://b.example"}]}"#,
        )
        .expect("valid");
        let a = cfg.agent("a").expect("a");
        assert_eq!(a.updates, Updates::Follow);
        assert_eq!(a.follow_interval, Duration::from_millis(2500));
        assert_eq!(a.participant.as_deref(), Some("p1"));
        let b = cfg.agent("b").expect("b");
        assert_eq!(
            (b.updates, b.follow_interval),
            (Updates::Auto, DEFAULT_FOLLOW_INTERVAL)
        );
        assert!(cfg.agent("c").is_none());
    }

    #[test]
    fn allowed_origins_are_bare_origins_and_strict() {
        let cfg = AgentsConfig::parse(
            r#"{"agents":[{"id":"a","url":"https://a.example","allowed_origins":["https://rpc.a.example:8443","http://other.example/"]}]}"#,
        )
        .expect("valid");
        assert_eq!(
            cfg.agent("a").map(|a| a.allowed_origins.clone()),
            Some(vec![
                "https://rpc.a.example:8443".to_owned(),
                "http://other.example".to_owned()
            ])
        );
        for bad in [
            r#""https://x.example""#,
            r#"["https://x.example/path"]"#,
            r#"["ftp://x.example"]"#,
            r#"["https://x.example?q=1"]"#,
            r#"[42]"#,
        ] {
            let doc = format!(
                r#"{{"agents":[{{"id":"a","url":"https://a.example","allowed_origins":{bad}}}]}}"#
            );
            let field = field_of(&doc);
            assert!(
                field.starts_with("agents[0].allowed_origins"),
                "{bad}: {field}"
            );
        }
    }

    #[test]
    fn every_error_names_its_field() {
        assert_eq!(
            field_of(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":0.5}]}"#),
            "agents[0].follow_interval"
        );
        assert_eq!(
            field_of(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":"5s"}]}"#),
            "agents[0].follow_interval"
        );
        assert_eq!(
            field_of(
                r#"{"agents":[{"id":"a","url":"http://h"},{"id":"b","url":"http://h","updates":"push"}]}"#
            ),
            "agents[1].updates"
        );
        assert_eq!(
            field_of(r#"{"agents":[{"id":"a","url":"http://h","colour":"blue"}]}"#),
            "agents[0].colour"
        );
        assert_eq!(
            field_of(r#"{"agents":[{"url":"http://h"}]}"#),
            "agents[0].id"
        );
        assert_eq!(field_of(r#"{"agents":[{"id":"a"}]}"#), "agents[0].url");
        assert_eq!(
            field_of(r#"{"agents":[{"id":"a","url":"ftp://h"}]}"#),
            "agents[0].url"
        );
        assert_eq!(
            field_of(r#"{"agents":[{"id":"a","url":"http://h"},{"id":"a","url":"http://h"}]}"#),
            "agents[1].id"
        );
        assert_eq!(field_of(r#"{"agents":[],"extra":1}"#), "extra");
        assert_eq!(field_of(r#"{"agents":{}}"#), "agents");
        assert_eq!(
            field_of(r#"{"agents":[{"id":"a","url":"http://h","participant":3}]}"#),
            "agents[0].participant"
        );
        assert_eq!(field_of("not json"), "agents document");
    }

    #[test]
    fn one_second_is_the_least_interval() {
        assert!(
            AgentsConfig::parse(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":1}]}"#)
                .is_ok()
        );
    }
}
