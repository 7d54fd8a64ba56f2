//! The agents document: which remote agents a deployment may delegate to. Parsed
//! strictly; every error names the field (`agents[1].follow_interval`).

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Updates {
    #[default]
    Auto,
    Follow,
    /// GetTask at growing intervals, waiting in Step Functions.
    Poll,
    Off,
}

/// How the agent gets a file the parent uploaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileDelivery {
    /// A link that reads it for an hour, which the agent fetches.
    #[default]
    Link,
    /// The file itself, in the message, for an agent that cannot fetch (at most
    /// [`MAX_DELIVERED_BYTES`]).
    Bytes,
}

/// The largest upload an agent that takes files as bytes is given.
pub const MAX_DELIVERED_BYTES: u64 = 4 * 1024 * 1024;

pub const DEFAULT_FOLLOW_INTERVAL: Duration = Duration::from_secs(5);
pub const MIN_FOLLOW_INTERVAL: Duration = Duration::from_secs(1);
/// The longest wait between two polls, when `poll_max_interval` is not set: an hour and
/// a half, so that a polled stand-in left idle costs what one on push does (its backoff,
/// from 2 s, reaches it after about two hours; a change sets it back to 2 s).
pub const DEFAULT_POLL_MAX_INTERVAL: Duration = Duration::from_secs(5400);
/// How long an agent may stay unreachable before its stand-in ends, unless its entry says
/// (`max_unreachable`): a day, so an agent's maintenance window does not end its tasks.
pub const DEFAULT_MAX_UNREACHABLE: Duration = Duration::from_secs(24 * 3600);
/// The most `max_duration` and `max_unreachable` may be: a year (a stand-in lives at
/// most the stack's `MaxStandInSecs` whatever its entry says).
pub const MAX_ENTRY_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// The first wait of a poll, and the least `poll_max_interval`.
pub const POLL_FIRST_INTERVAL: Duration = Duration::from_secs(2);
/// The most `poll_max_interval`: a day (a polled stand-in asks its agent at least daily).
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// Headers the stand-in writes itself, or that HTTP keeps for the connection.
const RESERVED_HEADERS: [&str; 15] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "accept",
    "accept-encoding",
    "a2a-version",
    "a2a-extensions",
    "x-participant-id",
];
/// Parts of a header name that say it carries a credential. The entry is stored in plain
/// text (the registry, the Agents parameter, every row's snapshot) and shown by
/// `GET /agents`: a credential has no place in it.
const CREDENTIAL_WORDS: [&str; 7] = [
    "auth",
    "token",
    "secret",
    "password",
    "key",
    "cookie",
    "credential",
];

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
    /// The card's full URL (path and query) when it is not under `url`.
    pub card_url: Option<String>,
    /// Static headers sent on every call, by lowercase name.
    pub headers: Vec<(String, String)>,
    /// A header that carries the stand-in's own stable session id on every call.
    pub session_header: Option<String>,
    /// Extensions announced in `A2A-Extensions`; a card that requires another is refused.
    pub extensions: Vec<String>,
    /// The longest wait between two polls of a polled stand-in.
    pub poll_max_interval: Duration,
    /// How the stand-in authenticates to the agent (a secret's name, never a secret).
    pub auth: Option<crate::auth::AuthSpec>,
    /// How long its stand-ins live when their start asks nothing (at most the stack's
    /// `MaxStandInSecs`, which is also the default).
    pub max_duration: Option<Duration>,
    /// How long the agent may stay unreachable, or refuse fresh credentials, before its
    /// stand-in ends failed.
    pub max_unreachable: Duration,
    pub file_delivery: FileDelivery,
    /// The keys the agent's card must be signed with (a JWKS URL or public keys).
    pub card_signing: Option<standin_remote::CardSigning>,
    /// The binding to speak when the card offers it (else the card's first over HTTP).
    pub preferred_binding: Option<standin_remote::PreferredBinding>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentsConfig {
    pub agents: Vec<AgentSpec>,
}

pub use crate::config_error::ConfigError;

fn err(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::new(field, problem)
}

/// The document as written; `AgentSpec` is an entry once checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an object with an \"agents\" list")]
struct Document {
    agents: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an agent: an object with an id and a url"
)]
struct Entry {
    id: String,
    url: String,
    version: Option<String>,
    #[serde(default)]
    updates: Updates,
    #[serde(default, deserialize_with = "present")]
    follow_interval: Option<f64>,
    participant: Option<String>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    card_url: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    session_header: Option<String>,
    #[serde(default)]
    extensions: Vec<String>,
    #[serde(default, deserialize_with = "present")]
    poll_max_interval: Option<f64>,
    auth: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    max_duration: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    max_unreachable: Option<f64>,
    #[serde(default)]
    file_delivery: FileDelivery,
    card_signing: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    preferred_binding: Option<standin_remote::PreferredBinding>,
}

/// A length of time an entry gives in whole seconds, from 1 s to a year.
fn whole_seconds(field: &str, secs: f64) -> Result<Duration, ConfigError> {
    let most = MAX_ENTRY_DURATION.as_secs();
    if secs.fract() != 0.0 || !(1.0..=most as f64).contains(&secs) {
        return Err(err(
            field,
            format!("must be a whole number of seconds from 1 to {most}, got {secs}"),
        ));
    }
    Ok(Duration::from_secs(secs as u64))
}

/// A value when the field is there (`null` is not one).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// serde's error as a field and a problem: the path it failed at (a missing field's own
/// name added), and its message without the line and column.
fn read_error(e: serde_path_to_error::Error<serde_json::Error>) -> ConfigError {
    let path = e.path().to_string();
    let message = e.inner().to_string();
    let problem = message
        .split(" at line ")
        .next()
        .unwrap_or(&message)
        .to_owned();
    let field = match problem
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        Some(name) if path == "." => name.to_owned(),
        Some(name) => format!("{path}.{name}"),
        None if path == "." => "agents document".to_owned(),
        None => path,
    };
    let problem = if e.inner().is_syntax() || e.inner().is_eof() {
        format!("not JSON: {message}")
    } else {
        problem
    };
    err(field, problem)
}

/// The session id a stand-in sends in its agent's `session_header` (72 characters): from
/// the deployment (`salt`, its stack name) and the stand-in's id, so the same for every
/// call and generation, and never shared by two deployments sharing an agent.
pub fn session_id(salt: &str, task_id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{salt}\n{task_id}").as_bytes());
    format!("standin-{}", hex::encode(digest))
}

/// The most bytes an entry takes, written as JSON: every row keeps a copy of its agent's
/// entry, and a row must leave room for its replies and notes in DynamoDB's 400 KB.
pub const MAX_ENTRY_BYTES: usize = 16 * 1024;
/// The longest URL an entry names (`url`, `card_url`, an extension).
pub const MAX_URL_BYTES: usize = 2048;
/// The longest short text an entry holds (`version`, `participant`, a header's value).
pub const MAX_SHORT_BYTES: usize = 1024;
/// At most this many `headers`, `allowed_origins` or `extensions` in an entry.
pub const MAX_ITEMS: usize = 16;

fn at_most(field: &str, text: &str, max: usize) -> Result<(), ConfigError> {
    if text.len() > max {
        return Err(err(
            field,
            format!("must be at most {max} bytes, got {}", text.len()),
        ));
    }
    Ok(())
}

/// The most characters of an agent id the registry takes: it is a path segment of the
/// control API and a DynamoDB key.
pub const MAX_AGENT_ID_CHARS: usize = 64;

/// Whether `id` may name an agent: 1 to [`MAX_AGENT_ID_CHARS`] of `[A-Za-z0-9._-]`.
pub fn is_agent_id(id: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    !id.is_empty() && id.chars().count() <= MAX_AGENT_ID_CHARS && id.chars().all(ok_char)
}

impl AgentSpec {
    /// Parses one entry as the registry takes it (`PUT /agents/{id}`): the fields of an
    /// entry of the agents document, errors naming the field (`url`), an [`is_agent_id`].
    pub fn parse_entry(json: &str) -> Result<Self, ConfigError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| err("agent entry", format!("not JSON: {e}")))?;
        if !value.is_object() {
            return Err(err("agent entry", "must be an object with an id and a url"));
        }
        let entry: Entry = serde_path_to_error::deserialize(value).map_err(read_error)?;
        if !is_agent_id(&entry.id) {
            return Err(err(
                "id",
                format!(
                    "must be 1 to {MAX_AGENT_ID_CHARS} letters, digits, '.', '_' or '-', got {:?}",
                    entry.id
                ),
            ));
        }
        check_agent("", entry).map_err(|mut e| {
            e.field = e.field.trim_start_matches('.').to_owned();
            e
        })
    }

    /// The entry as the agents document writes it: what the registry stores, the row's
    /// snapshot keeps and `GET /agents/{id}` shows. [`AgentSpec::parse_entry`] reads it
    /// back to an equal spec.
    pub fn to_entry(&self) -> serde_json::Value {
        let headers: serde_json::Map<String, serde_json::Value> = self
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.clone().into()))
            .collect();
        let listed = |items: &Vec<String>| (!items.is_empty()).then_some(items.clone());
        let (poll, unreachable) = (self.poll_max_interval, self.max_unreachable);
        crate::auth::spec::written(serde_json::json!({
            "id": self.id,
            "url": self.url,
            "updates": self.updates,
            "follow_interval": self.follow_interval.as_secs_f64(),
            "version": self.version,
            "participant": self.participant,
            "allowed_origins": listed(&self.allowed_origins),
            "card_url": self.card_url,
            "headers": (!headers.is_empty()).then_some(headers),
            "session_header": self.session_header,
            "extensions": listed(&self.extensions),
            "poll_max_interval": (poll != DEFAULT_POLL_MAX_INTERVAL).then_some(poll.as_secs_f64()),
            "auth": self.auth.as_ref().map(crate::auth::AuthSpec::to_entry),
            "max_duration": self.max_duration.map(|d| d.as_secs()),
            "max_unreachable":
                (unreachable != DEFAULT_MAX_UNREACHABLE).then_some(unreachable.as_secs()),
            "file_delivery": Some(self.file_delivery).filter(|d| *d != FileDelivery::default()),
            "card_signing": self.card_signing.as_ref().map(standin_remote::CardSigning::to_entry),
            "preferred_binding": self.preferred_binding,
        }))
    }
}

impl AgentsConfig {
    pub fn agent(&self, id: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.id == id)
    }

    /// Parses `{"agents": [...]}`.
    pub fn parse(json: &str) -> Result<Self, ConfigError> {
        let reader = &mut serde_json::Deserializer::from_str(json);
        let doc: Document = serde_path_to_error::deserialize(&mut *reader).map_err(read_error)?;
        // One document: anything after it is a mistake, not something to ignore.
        reader
            .end()
            .map_err(|e| err("agents document", format!("not JSON: {e}")))?;
        let mut seen = HashSet::new();
        let mut agents = Vec::with_capacity(doc.agents.len());
        for (i, entry) in doc.agents.into_iter().enumerate() {
            let at = format!("agents[{i}]");
            let spec = check_agent(&at, entry)?;
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

/// What the types cannot say: a non-empty id, an http(s) URL, an interval of a second
/// or more, bare origins.
fn check_agent(at: &str, entry: Entry) -> Result<AgentSpec, ConfigError> {
    if entry.id.trim().is_empty() {
        return Err(err(format!("{at}.id"), "must not be empty"));
    }
    for (name, text, max) in [
        ("url", Some(&entry.url), MAX_URL_BYTES),
        ("card_url", entry.card_url.as_ref(), MAX_URL_BYTES),
        ("version", entry.version.as_ref(), MAX_SHORT_BYTES),
        ("participant", entry.participant.as_ref(), MAX_SHORT_BYTES),
    ] {
        if let Some(text) = text {
            at_most(&format!("{at}.{name}"), text, max)?;
        }
    }
    for (name, count) in [
        ("headers", entry.headers.len()),
        ("allowed_origins", entry.allowed_origins.len()),
        ("extensions", entry.extensions.len()),
    ] {
        if count > MAX_ITEMS {
            return Err(err(
                format!("{at}.{name}"),
                format!("must have at most {MAX_ITEMS} items, got {count}"),
            ));
        }
    }
    for (name, value) in &entry.headers {
        at_most(&format!("{at}.headers.{name}"), value, MAX_SHORT_BYTES)?;
    }
    for (i, origin) in entry.allowed_origins.iter().enumerate() {
        at_most(&format!("{at}.allowed_origins[{i}]"), origin, MAX_URL_BYTES)?;
    }
    for (i, uri) in entry.extensions.iter().enumerate() {
        at_most(&format!("{at}.extensions[{i}]"), uri, MAX_URL_BYTES)?;
    }
    http_url(&format!("{at}.url"), &entry.url)?;
    let follow_interval = match entry.follow_interval {
        None => Ok(DEFAULT_FOLLOW_INTERVAL),
        Some(secs) if secs >= MIN_FOLLOW_INTERVAL.as_secs_f64() => {
            Duration::try_from_secs_f64(secs)
                .map_err(|_| format!("must be a number of seconds a duration can hold, got {secs}"))
        }
        Some(secs) => Err(format!("must be at least 1 second, got {secs}")),
    }
    .map_err(|problem| err(format!("{at}.follow_interval"), problem))?;
    let allowed_origins: Vec<String> = entry
        .allowed_origins
        .iter()
        .enumerate()
        .map(|(i, text)| bare_origin(&format!("{at}.allowed_origins[{i}]"), text))
        .collect::<Result<_, _>>()?;
    let card_url = entry
        .card_url
        .map(|text| {
            card_at(
                &format!("{at}.card_url"),
                &text,
                &entry.url,
                &allowed_origins,
            )
        })
        .transpose()?;
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in entry.headers {
        let field = format!("{at}.headers.{name}");
        let (lower, value) = header(&field, &name, &value)?;
        if CREDENTIAL_WORDS.iter().any(|word| lower.contains(word)) {
            return Err(err(
                field,
                format!(
                    "{name} looks like a credential; headers are stored and shown in plain text"
                ),
            ));
        }
        if headers.iter().any(|(known, _)| *known == lower) {
            return Err(err(
                field,
                format!("{name} is given twice (header names ignore case)"),
            ));
        }
        headers.push((lower, value));
    }
    let session_header = entry
        .session_header
        .map(|name| {
            let field = format!("{at}.session_header");
            let (lower, _) = header(&field, &name, "x")?;
            if headers.iter().any(|(known, _)| *known == lower) {
                return Err(err(field, format!("{name} is also in headers")));
            }
            Ok(lower)
        })
        .transpose()?;
    for (i, uri) in entry.extensions.iter().enumerate() {
        http_url(&format!("{at}.extensions[{i}]"), uri)?;
    }
    let (least, most) = (POLL_FIRST_INTERVAL.as_secs(), MAX_POLL_INTERVAL.as_secs());
    let poll_max_interval = match entry.poll_max_interval {
        None => DEFAULT_POLL_MAX_INTERVAL,
        Some(secs) if (least as f64..=most as f64).contains(&secs) => Duration::from_secs_f64(secs),
        Some(secs) => {
            return Err(err(
                format!("{at}.poll_max_interval"),
                format!("must be {least} to {most} seconds, got {secs}"),
            ));
        }
    };
    let max_duration = entry
        .max_duration
        .map(|secs| whole_seconds(&format!("{at}.max_duration"), secs))
        .transpose()?;
    let max_unreachable = match entry.max_unreachable {
        None => DEFAULT_MAX_UNREACHABLE,
        Some(secs) => whole_seconds(&format!("{at}.max_unreachable"), secs)?,
    };
    let auth = entry
        .auth
        .map(|value| {
            let field = format!("{at}.auth");
            at_most(&field, &value.to_string(), MAX_SHORT_BYTES * 4)?;
            crate::auth::AuthSpec::parse(&field, value)
        })
        .transpose()?;
    let card_signing = entry
        .card_signing
        .map(|value| {
            standin_remote::CardSigning::parse(&value).map_err(|e| {
                let dot = if e.member.is_empty() { "" } else { "." };
                err(format!("{at}.card_signing{dot}{}", e.member), e.problem)
            })
        })
        .transpose()?;
    let spec = AgentSpec {
        auth,
        id: entry.id,
        url: entry.url,
        version: entry.version,
        updates: entry.updates,
        follow_interval,
        participant: entry.participant,
        allowed_origins,
        card_url,
        headers,
        session_header,
        extensions: entry.extensions,
        poll_max_interval,
        max_duration,
        max_unreachable,
        file_delivery: entry.file_delivery,
        card_signing,
        preferred_binding: entry.preferred_binding,
    };
    let size = spec.to_entry().to_string().len();
    if size > MAX_ENTRY_BYTES {
        let field = if at.is_empty() { "agent entry" } else { at };
        return Err(err(
            field,
            format!("must be at most {MAX_ENTRY_BYTES} bytes written as JSON, got {size}"),
        ));
    }
    Ok(spec)
}

fn http_url(field: &str, text: &str) -> Result<reqwest::Url, ConfigError> {
    let url = reqwest::Url::parse(text).map_err(|e| err(field, format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(err(field, "must be an http:// or https:// URL with a host"));
    }
    Ok(url)
}

/// A card URL: http(s), on the agent URL's origin or one of `allowed_origins` (a card
/// elsewhere would let an entry point the stand-in anywhere).
fn card_at(field: &str, text: &str, url: &str, allowed: &[String]) -> Result<String, ConfigError> {
    let card = http_url(field, text)?.origin().ascii_serialization();
    if crate::auth::agentcore::origin_of(url).as_ref() != Some(&card) && !allowed.contains(&card) {
        return Err(err(
            field,
            format!("{card} is neither the url's origin nor in allowed_origins"),
        ));
    }
    Ok(text.to_owned())
}

/// A header the stand-in may send: a valid name it does not write itself, and a value
/// of visible ASCII. The name is kept lowercase.
fn header(field: &str, name: &str, value: &str) -> Result<(String, String), ConfigError> {
    let lower = name.to_ascii_lowercase();
    if http::HeaderName::from_bytes(lower.as_bytes()).is_err() {
        return Err(err(field, format!("{name:?} is not a header name")));
    }
    if RESERVED_HEADERS.contains(&lower.as_str()) {
        return Err(err(field, format!("{name} is the stand-in's to send")));
    }
    if http::HeaderValue::from_str(value).is_err() || value.trim().is_empty() {
        return Err(err(
            field,
            "must be a non-empty header value of visible ASCII",
        ));
    }
    Ok((lower, value.to_owned()))
}

/// An origin (`scheme://host[:port]`): no path, query or fragment.
fn bare_origin(field: &str, text: &str) -> Result<String, ConfigError> {
    let url = reqwest::Url::parse(text).map_err(|e| err(field, format!("not a URL: {e}")))?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && !text.trim_end_matches('/').ends_with(':');
    if !bare {
        return Err(err(
            field,
            format!("must be an origin like https://agents.example.com:8443, got {text:?}"),
        ));
    }
    Ok(url.origin().ascii_serialization())
}

#[cfg(test)]
mod tests;
