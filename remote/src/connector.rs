//! From an agent's configured reach to a connected client: the card read once per
//! process (every step would otherwise fetch it again), the interface it prefers, and
//! the reach check on where that interface points.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::a2a::client::{AgentClient, ResolvedAgent, Timeouts, fetch_card};
use crate::a2a::reach::check_interface;
use crate::error::RemoteError;

/// Where an agent is and how far the stand-in may follow its card.
#[derive(Debug, Clone, Copy)]
pub struct Reach<'a> {
    /// The agent's base URL (its card is under it).
    pub url: &'a str,
    /// Origins besides the URL's own that the card's interface may point at.
    pub allowed_origins: &'a [String],
    /// Sent as `X-Participant-Id` on every call when set.
    pub participant: Option<&'a str>,
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

    /// Connects to agent `key` (JSON-RPC or HTTP+JSON, whichever its card prefers).
    pub async fn connect(&self, key: &str, reach: Reach<'_>) -> Result<AgentClient, RemoteError> {
        let cached = self.cards.lock().ok().and_then(|c| c.get(key).cloned());
        let resolved = match cached {
            Some(resolved) => resolved,
            None => {
                let (card, url) = fetch_card(&self.http, reach.url, Timeouts::default()).await?;
                let resolved = ResolvedAgent::from_card(&card, &url)?;
                check_interface(reach.url, reach.allowed_origins, &resolved.endpoint).await?;
                if let Ok(mut cards) = self.cards.lock() {
                    cards.insert(key.to_owned(), resolved.clone());
                }
                resolved
            }
        };
        AgentClient::new(
            self.http.clone(),
            resolved,
            reach.participant,
            Timeouts::default(),
        )
    }
}
