//! From an agent's configured reach to a connected client: the card read once per
//! process (every step would otherwise fetch it again), the interface it prefers, and
//! the reach check on where that interface points.

use std::collections::HashMap;
use std::sync::Mutex;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::a2a::card::{CardAt, ResolvedAgent, fetch_card};
use crate::a2a::client::{AgentClient, Timeouts};
use crate::a2a::reach::{check_interface, check_target};
use crate::error::RemoteError;

/// Where an agent is, how far the stand-in may follow its card, and what goes with
/// every call.
#[derive(Debug, Clone, Copy)]
pub struct Reach<'a> {
    /// The agent's base URL (its card is under it, unless `card_url` says where).
    pub url: &'a str,
    /// The card's full URL (path and query), when it is not under `url`.
    pub card_url: Option<&'a str>,
    /// Origins besides the URL's own that the card's interface may point at.
    pub allowed_origins: &'a [String],
    /// Sent as `X-Participant-Id` on every call when set.
    pub participant: Option<&'a str>,
    /// Static headers sent on every call, the card's fetch included.
    pub headers: &'a [(String, String)],
    /// A header and the stand-in's own session id, sent on every call.
    pub session: Option<(&'a str, &'a str)>,
    /// Extensions to announce (`A2A-Extensions`); a card requiring another is refused.
    pub extensions: &'a [String],
    /// Whether the agent (its card, its interface) may be on a private or loopback
    /// address: the deployment's choice (`AllowPrivateAgents`).
    pub allow_private: bool,
}

impl Reach<'_> {
    /// Every header a call carries, checked.
    fn headers(&self) -> Result<HeaderMap, RemoteError> {
        let mut map = HeaderMap::new();
        let pairs = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .chain(self.participant.map(|p| ("x-participant-id", p)))
            .chain(self.session);
        for (name, value) in pairs {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| RemoteError::Card(format!("{name:?} is not a header name")))?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                RemoteError::Card(format!("the value of {name} is not a header value"))
            })?;
            map.insert(header, value);
        }
        Ok(map)
    }
}

pub struct Connector {
    http: reqwest::Client,
    cards: Mutex<HashMap<String, ResolvedAgent>>,
}

impl Connector {
    /// `http` is the agent client (see [`crate::tls::Roots`]).
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            cards: Mutex::default(),
        }
    }

    /// Connects to agent `key` (JSON-RPC or HTTP+JSON, 1.0 or 0.3, whichever its card
    /// prefers). `key` names the agent's configuration: a changed one reads the card again.
    pub async fn connect(&self, key: &str, reach: Reach<'_>) -> Result<AgentClient, RemoteError> {
        let headers = reach.headers()?;
        let cached = self.cards.lock().ok().and_then(|c| c.get(key).cloned());
        let resolved = match cached {
            Some(resolved) => resolved,
            None => {
                // The card's own address first: an agent added at run time could name
                // the function's neighbours.
                let first = reach.card_url.unwrap_or(reach.url);
                let first = reqwest::Url::parse(first)
                    .map_err(|e| RemoteError::Card(format!("{first:?} is not a URL: {e}")))?;
                check_target(&first, "the agent's card", reach.allow_private).await?;
                let at = reach
                    .card_url
                    .map_or(CardAt::Base(reach.url), CardAt::Exact);
                let (card, url) = fetch_card(&self.http, at, &headers, Timeouts::default()).await?;
                let resolved = ResolvedAgent::from_card(&card, &url, reach.extensions)?;
                check_interface(
                    reach.url,
                    reach.allowed_origins,
                    &resolved.endpoint,
                    reach.allow_private,
                )
                .await?;
                if let Ok(mut cards) = self.cards.lock() {
                    cards.insert(key.to_owned(), resolved.clone());
                }
                resolved
            }
        };
        AgentClient::new(self.http.clone(), resolved, headers, Timeouts::default())
    }
}
