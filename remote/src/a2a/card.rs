//! The agent card: where it is read, which interface of it the stand-in talks to, and in
//! which dialect (1.0 from `supportedInterfaces`, else 0.3 from `url` and
//! `preferredTransport`).

use reqwest::Url;
use reqwest::header::HeaderMap;
use serde::Deserialize as _;

use super::binding::Binding;
use super::dialect::Dialect;
use super::http::{Timeouts, read_capped, send_authorized, timeout_or};
use super::limits::{MAX_CARD_BYTES, bounded_message};
use super::types::AgentCard;
use crate::auth::Credentials;
use crate::error::RemoteError;

pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// Where 0.3 servers before 0.3.0 (and many still) serve the card.
pub const OLD_CARD_PATH: &str = "/.well-known/agent.json";

/// What the stand-in takes from an agent card.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedAgent {
    pub endpoint: Url,
    pub binding: Binding,
    pub dialect: Dialect,
    /// The interface's tenant (1.0): a param of every JSON-RPC call, a path prefix over
    /// HTTP+JSON.
    pub tenant: Option<String>,
    pub streaming: bool,
    pub push_notifications: bool,
    /// Sent as `A2A-Extensions`: the ones the operator named for this agent.
    pub extensions: Vec<String>,
}

/// A 0.3 card's bindings: its gRPC is an older proto the stand-in does not speak.
fn binding_named(name: &str) -> Option<Binding> {
    match name {
        "JSONRPC" => Some(Binding::JsonRpc),
        "HTTP+JSON" => Some(Binding::HttpJson),
        _ => None,
    }
}

/// A 1.0 interface's bindings: the two HTTP ones and a2a.proto's gRPC.
fn binding_named_v1(name: &str) -> Option<Binding> {
    match name {
        "GRPC" => Some(Binding::Grpc),
        other => binding_named(other),
    }
}

/// A gRPC interface's address is `host:port` (a2a.proto says so); it is reached over TLS
/// when the card was read over TLS, as the card's own origin shows how the agent serves.
fn grpc_address(url: &str, card_url: &Url) -> String {
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("{}://{url}", card_url.scheme())
    }
}

fn is_one_point_x(version: &str) -> bool {
    version == "1" || version.starts_with("1.")
}

/// A card's 0.3 reading applies when it lists no 1.0 interface: `protocolVersion` 0.3
/// (or 0.2, whose wire 0.3 kept) or none at all beside a `url`.
fn is_legacy(card: &AgentCard) -> bool {
    match card.protocol_version.as_deref() {
        Some(v) => v.starts_with("0.3") || v.starts_with("0.2"),
        None => card.url.is_some(),
    }
}

/// The interface to talk to: `(url, binding, dialect, tenant)`. Among the 1.x ones the
/// stand-in speaks: the entry's `preferred` binding if the card offers it, else the
/// first over HTTP (JSON-RPC or HTTP+JSON) in the card's order, else gRPC. gRPC waits
/// to be preferred or to be the only way: its port is usually another origin the entry
/// must allow, and a card that adds it beside JSON-RPC keeps working as it did.
fn choose(
    card: &AgentCard,
    preferred: Option<Binding>,
) -> Result<(String, Binding, Dialect, Option<String>), RemoteError> {
    let spoken: Vec<_> = card
        .supported_interfaces
        .iter()
        .filter(|i| is_one_point_x(&i.protocol_version))
        .filter_map(|i| binding_named_v1(&i.protocol_binding).map(|b| (i, b)))
        .collect();
    let chosen = preferred
        .and_then(|p| spoken.iter().find(|(_, b)| *b == p))
        .or_else(|| spoken.iter().find(|(_, b)| *b != Binding::Grpc))
        .or_else(|| spoken.first());
    if let Some((interface, binding)) = chosen {
        let tenant = interface.tenant.clone().filter(|t| !t.is_empty());
        return Ok((interface.url.clone(), *binding, Dialect::V1, tenant));
    }
    if card.supported_interfaces.is_empty() && is_legacy(card) {
        let main = card.url.as_ref().map(|url| {
            (
                url,
                card.preferred_transport.as_deref().unwrap_or("JSONRPC"),
            )
        });
        let others = card
            .additional_interfaces
            .iter()
            .map(|i| (&i.url, i.transport.as_str()));
        let offered: Vec<_> = main
            .into_iter()
            .chain(others)
            .filter_map(|(url, transport)| binding_named(transport).map(|b| (url, b)))
            .collect();
        return preferred
            .and_then(|p| offered.iter().find(|(_, b)| *b == p))
            .or_else(|| offered.first())
            .map(|(url, b)| ((*url).clone(), *b, Dialect::V03, None))
            .ok_or_else(|| {
                RemoteError::Card(
                    "the 0.3 card offers neither JSONRPC nor HTTP+JSON (url, preferredTransport, additionalInterfaces)"
                        .into(),
                )
            });
    }
    if card.supported_interfaces.is_empty() {
        let version = card.protocol_version.as_deref().unwrap_or("none");
        return Err(RemoteError::Card(format!(
            "supportedInterfaces is empty and protocolVersion {version:?} is not 0.3"
        )));
    }
    Err(RemoteError::Card(
        "no supportedInterfaces entry at protocolVersion 1.0 with binding JSONRPC, HTTP+JSON or GRPC"
            .into(),
    ))
}

impl ResolvedAgent {
    /// Picks a 1.x interface this client speaks (`choose`), else a 0.3 one.
    /// `extensions` are the operator's for this agent: a card that requires another is
    /// refused, naming it.
    pub fn from_card(
        card: &AgentCard,
        card_url: &Url,
        extensions: &[String],
        preferred: Option<Binding>,
    ) -> Result<Self, RemoteError> {
        let (url, binding, dialect, tenant) = choose(card, preferred)?;
        let url = match binding {
            Binding::Grpc => grpc_address(&url, card_url),
            _ => url,
        };
        let endpoint = card_url.join(&url).map_err(|e| {
            RemoteError::Card(format!(
                "the card's interface url {url:?} is not a URL: {e}"
            ))
        })?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(RemoteError::Card(format!(
                "the card's interface url must be http or https, got {}",
                endpoint.scheme()
            )));
        }
        if let Some(missing) = card
            .capabilities
            .extensions
            .iter()
            .find(|e| e.required && !extensions.contains(&e.uri))
        {
            return Err(RemoteError::Card(bounded_message(&format!(
                "the agent requires the extension {:?}, which the stand-in does not speak; name it in the agent's extensions if the agent may be used without it",
                missing.uri
            ))));
        }
        Ok(Self {
            endpoint,
            binding,
            dialect,
            tenant,
            streaming: card.capabilities.streaming,
            push_notifications: card.capabilities.push_notifications,
            extensions: extensions.to_vec(),
        })
    }
}

/// The card URL for an agent's base URL, under its path as the SDK builds it
/// (`https://host/agents/x` reads `https://host/agents/x/.well-known/agent-card.json`).
pub fn card_url(base_url: &str) -> Result<Url, RemoteError> {
    under(base_url, CARD_PATH)
}

fn under(base_url: &str, path: &str) -> Result<Url, RemoteError> {
    let mut base = Url::parse(base_url)
        .map_err(|e| RemoteError::Card(format!("agent url {base_url:?} is not a URL: {e}")))?;
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.join(path.trim_start_matches('/'))
        .map_err(|e| RemoteError::Card(format!("cannot build the card URL: {e}")))
}

/// Where a card is read.
#[derive(Debug, Clone, Copy)]
pub enum CardAt<'a> {
    /// Under the agent's base URL: the current path, then (on a 404) the 0.3 one.
    Base(&'a str),
    /// Exactly here (path and query as configured).
    Exact(&'a str),
}

/// How a card is read: the client, the agent's extra headers, its credentials (an agent
/// that requires them may require them for its card too), the timeouts.
#[derive(Clone, Copy)]
pub struct CardRead<'a> {
    pub http: &'a reqwest::Client,
    pub headers: &'a HeaderMap,
    pub credentials: Option<&'a dyn Credentials>,
    pub timeouts: Timeouts,
}

/// A card as read: typed, where it was found, and as it came (its signatures sign that).
pub struct ReadCard {
    pub card: AgentCard,
    pub url: Url,
    pub json: serde_json::Value,
}

/// Reads the card where `at` says (at a base URL: the 1.0 path, else 0.3's older one).
pub async fn fetch_card(read: CardRead<'_>, at: CardAt<'_>) -> Result<ReadCard, RemoteError> {
    match at {
        CardAt::Exact(url) => {
            let url = Url::parse(url)
                .map_err(|e| RemoteError::Card(format!("card_url {url:?} is not a URL: {e}")))?;
            read_card(read, url).await
        }
        CardAt::Base(base) => match read_card(read, card_url(base)?).await {
            Err(RemoteError::Card(why)) if why.ends_with("HTTP 404 Not Found") => {
                read_card(read, under(base, OLD_CARD_PATH)?)
                    .await
                    .map_err(|err| match err {
                        RemoteError::Card(old) => RemoteError::Card(format!("{why}; {old}")),
                        other => other,
                    })
            }
            other => other,
        },
    }
}

async fn read_card(read: CardRead<'_>, url: Url) -> Result<ReadCard, RemoteError> {
    let CardRead {
        http,
        headers,
        credentials,
        timeouts,
    } = read;
    let request = || {
        Ok(http
            .get(url.clone())
            .headers(headers.clone())
            .timeout(timeouts.call))
    };
    let response = send_authorized(http, credentials, request)
        .await
        .map_err(|e| e.or_timeout("GetAgentCard", timeouts.call))?;
    let status = response.status();
    if !status.is_success() {
        return Err(RemoteError::Card(format!("{url} answered HTTP {status}")));
    }
    let body = read_capped(response, MAX_CARD_BYTES)
        .await
        .map_err(|e| timeout_or("GetAgentCard", timeouts.call, e))?
        .ok_or(RemoteError::TooLarge {
            what: "the card",
            limit: MAX_CARD_BYTES,
        })?;
    let not_a_card = |e: serde_json::Error| {
        RemoteError::Card(bounded_message(&format!("{url} is not an agent card: {e}")))
    };
    let json: serde_json::Value = serde_json::from_slice(&body).map_err(not_a_card)?;
    let card = AgentCard::deserialize(&json).map_err(not_a_card)?;
    Ok(ReadCard { card, url, json })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn card(value: serde_json::Value) -> AgentCard {
        serde_json::from_value(value).expect("a card")
    }

    fn base() -> Url {
        Url::parse("http://127.0.0.1:9/.well-known/agent-card.json").expect("url")
    }

    #[test]
    fn the_card_url_keeps_the_agent_urls_path() {
        for (base, card) in [
            (
                "https://host/agents/x",
                "https://host/agents/x/.well-known/agent-card.json",
            ),
            (
                "https://host/agents/x/",
                "https://host/agents/x/.well-known/agent-card.json",
            ),
            (
                "http://127.0.0.1:9000",
                "http://127.0.0.1:9000/.well-known/agent-card.json",
            ),
        ] {
            assert_eq!(
                card_url(base).map(|u| u.to_string()),
                Ok(card.to_owned()),
                "{base}"
            );
        }
    }

    #[test]
    fn a_zero_point_three_card_is_read_from_url_and_preferred_transport() {
        let legacy = card(
            json!({"protocolVersion": "0.3.0", "url": "http://127.0.0.1:9/rpc",
            "preferredTransport": "GRPC",
            "additionalInterfaces": [{"url": "http://127.0.0.1:9/rest", "transport": "HTTP+JSON"}],
            "capabilities": {"streaming": true}}),
        );
        let agent = ResolvedAgent::from_card(&legacy, &base(), &[], None).expect("usable");
        assert_eq!(
            (agent.endpoint.as_str(), agent.binding, agent.dialect),
            ("http://127.0.0.1:9/rest", Binding::HttpJson, Dialect::V03)
        );
        let plain = card(json!({"protocolVersion": "0.3.0", "url": "http://127.0.0.1:9/"}));
        let agent = ResolvedAgent::from_card(&plain, &base(), &[], None).expect("usable");
        assert_eq!(
            (agent.binding, agent.dialect),
            (Binding::JsonRpc, Dialect::V03)
        );
    }

    #[test]
    fn a_one_point_zero_interface_wins_and_brings_its_tenant() {
        let both = card(
            json!({"protocolVersion": "0.3.0", "url": "http://127.0.0.1:9/old",
            "supportedInterfaces": [{"url": "http://127.0.0.1:9/new", "protocolBinding": "HTTP+JSON",
                "protocolVersion": "1.0", "tenant": "acme"}]}),
        );
        let agent = ResolvedAgent::from_card(&both, &base(), &[], None).expect("usable");
        assert_eq!(
            (
                agent.endpoint.path(),
                agent.dialect,
                agent.tenant.as_deref()
            ),
            ("/new", Dialect::V1, Some("acme"))
        );
    }

    #[test]
    fn grpc_is_spoken_when_it_is_the_only_way_or_preferred_and_its_address_takes_the_cards_scheme()
    {
        let grpc_first = card(json!({"supportedInterfaces": [
            {"url": "127.0.0.1:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://127.0.0.1:9/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://127.0.0.1:9/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]}));
        let chosen = |preferred| {
            let agent =
                ResolvedAgent::from_card(&grpc_first, &base(), &[], preferred).expect("usable");
            (agent.endpoint.to_string(), agent.binding)
        };
        assert_eq!(
            chosen(None),
            ("http://127.0.0.1:9/rpc".to_owned(), Binding::JsonRpc),
            "over HTTP, in the card's order, unless gRPC is preferred"
        );
        assert_eq!(
            chosen(Some(Binding::Grpc)),
            ("http://127.0.0.1:50051/".to_owned(), Binding::Grpc)
        );
        assert_eq!(chosen(Some(Binding::HttpJson)).1, Binding::HttpJson);
        let tls = Url::parse("https://agent.example/.well-known/agent-card.json").expect("url");
        let only = card(json!({"supportedInterfaces": [
            {"url": "grpc.agent.example:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]}));
        let agent = ResolvedAgent::from_card(&only, &tls, &[], None).expect("usable");
        assert_eq!(
            (agent.endpoint.as_str(), agent.binding),
            ("https://grpc.agent.example/", Binding::Grpc),
            "the only way, over TLS as the card was read"
        );
        let legacy = card(
            json!({"protocolVersion": "0.3.0", "url": "http://127.0.0.1:9/rpc",
            "additionalInterfaces": [{"url": "http://127.0.0.1:9/rest", "transport": "HTTP+JSON"}]}),
        );
        let agent = ResolvedAgent::from_card(&legacy, &base(), &[], Some(Binding::HttpJson))
            .expect("usable");
        assert_eq!(agent.endpoint.path(), "/rest", "a 0.3 card's too");
    }

    #[test]
    fn unusable_cards_say_why() {
        for (value, says) in [
            (
                json!({"protocolVersion": "0.1", "url": "http://x/"}),
                "is not 0.3",
            ),
            (
                json!({"name": "no interfaces"}),
                "supportedInterfaces is empty",
            ),
            (
                json!({"protocolVersion": "0.3.0", "url": "http://x/", "preferredTransport": "GRPC"}),
                "neither JSONRPC nor HTTP+JSON",
            ),
            (
                json!({"supportedInterfaces": [{"url": "http://x/", "protocolBinding": "KAFKA", "protocolVersion": "1.0"}]}),
                "binding JSONRPC, HTTP+JSON or GRPC",
            ),
        ] {
            let err = ResolvedAgent::from_card(&card(value.clone()), &base(), &[], None)
                .expect_err("refused");
            assert!(
                matches!(&err, RemoteError::Card(m) if m.contains(says)),
                "{value}: {err}"
            );
        }
    }

    #[test]
    fn a_required_extension_the_stand_in_lacks_is_named_unless_the_operator_names_it() {
        let requiring = card(
            json!({"supportedInterfaces": [{"url": "http://x/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"extensions": [{"uri": "https://ext.example/optional"}, {"uri": "https://ext.example/must", "required": true}]}}),
        );
        let err = ResolvedAgent::from_card(&requiring, &base(), &[], None).expect_err("refused");
        assert!(
            err.to_string().contains("https://ext.example/must"),
            "{err}"
        );
        let named = vec!["https://ext.example/must".to_owned()];
        let agent = ResolvedAgent::from_card(&requiring, &base(), &named, None).expect("usable");
        assert_eq!(
            agent.extensions, named,
            "only what the operator named is sent"
        );
    }
}
