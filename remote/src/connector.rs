//! From an agent's configured reach to a connected client: the card read once per
//! process (every step would otherwise fetch it again), the interface it prefers, and
//! the reach check on where that interface points.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use sha2::{Digest, Sha256};

use crate::a2a::binding::Binding;
use crate::a2a::card::{CardAt, CardRead, ReadCard, ResolvedAgent, fetch_card};
use crate::a2a::client::{AgentClient, Timeouts};
use crate::a2a::profile;
use crate::a2a::reach::{check_interface, check_target};
use crate::a2a::security;
use crate::a2a::signature;
use crate::auth::Credentials;
use crate::card_signing::CardSigning;
use crate::error::RemoteError;
use crate::model::Profile;
use crate::tls::Roots;

/// Where an agent is, how far the stand-in may follow its card, and what goes with
/// every call.
#[derive(Clone)]
pub struct Reach<'a> {
    /// The agent's id, for the errors that name it.
    pub agent: &'a str,
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
    /// The stand-in's W3C `traceparent`, sent on every call, over any header of the
    /// same name the entry sets.
    pub traceparent: Option<&'a str>,
    /// Extensions to announce (`A2A-Extensions`); a card requiring another is refused.
    pub extensions: &'a [String],
    /// Whether the agent (its card, its interface) may be on a private or loopback
    /// address: the deployment's choice (`AllowPrivateAgents`).
    pub allow_private: bool,
    /// What every call presents, the card's fetch included, when the agent requires it.
    pub credentials: Option<Arc<dyn Credentials>>,
    /// The keys the card must be signed with, when the entry pins them.
    pub card_signing: Option<&'a CardSigning>,
    /// The binding to speak when the card offers it.
    pub preferred_binding: Option<crate::preferred_binding::PreferredBinding>,
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
            .chain(self.session)
            .chain(self.traceparent.map(|t| ("traceparent", t)));
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
    roots: Roots,
    http: reqwest::Client,
    cards: Mutex<HashMap<String, ResolvedAgent>>,
    /// One client per client certificate in use (mTLS), by the SHA-256 of its PEM: a
    /// rotated certificate gets a client of its own.
    identified: Mutex<HashMap<[u8; 32], reqwest::Client>>,
    /// The client for gRPC without TLS (h2c), built on first use.
    h2c: std::sync::OnceLock<reqwest::Client>,
}

/// Client certificates in use at once, past which the oldest clients are dropped.
const MAX_IDENTIFIED_CLIENTS: usize = 64;

impl Connector {
    /// `http` is the agent client built on `roots` (see [`crate::tls::Roots`]); a
    /// client that presents a certificate is built on the same roots.
    pub fn new(roots: Roots, http: reqwest::Client) -> Self {
        Self {
            roots,
            http,
            cards: Mutex::default(),
            identified: Mutex::default(),
            h2c: std::sync::OnceLock::new(),
        }
    }

    /// The client that presents the credentials' certificate, if they have one.
    async fn client_for(
        &self,
        credentials: Option<&dyn Credentials>,
    ) -> Result<reqwest::Client, RemoteError> {
        let Some(identity) = (match credentials {
            Some(credentials) => credentials.identity().await?,
            None => None,
        }) else {
            return Ok(self.http.clone());
        };
        let digest: [u8; 32] = Sha256::digest(&identity.pem).into();
        if let Some(client) = self
            .identified
            .lock()
            .ok()
            .and_then(|c| c.get(&digest).cloned())
        {
            return Ok(client);
        }
        let client = self
            .roots
            .agent_http_client_presenting(&identity.pem)
            .map_err(|e| RemoteError::Credentials(e.problem))?;
        if let Ok(mut clients) = self.identified.lock() {
            if clients.len() >= MAX_IDENTIFIED_CLIENTS {
                clients.clear();
            }
            clients.insert(digest, client.clone());
        }
        Ok(client)
    }

    /// Connects to agent `key` (JSON-RPC or HTTP+JSON, 1.0 or 0.3, whichever its card
    /// prefers). `key` names the agent's configuration: a changed one reads the card again.
    pub async fn connect(&self, key: &str, reach: Reach<'_>) -> Result<AgentClient, RemoteError> {
        let headers = reach.headers()?;
        let credentials = reach.credentials.clone();
        let http = self.client_for(credentials.as_deref()).await?;
        let cached = self.cards.lock().ok().and_then(|c| c.get(key).cloned());
        let resolved = match cached {
            Some(resolved) => resolved,
            None => {
                let resolved = self.resolve(&http, &headers, &reach).await?;
                if let Ok(mut cards) = self.cards.lock() {
                    if cards.len() >= MAX_CARDS {
                        cards.clear();
                    }
                    cards.insert(key.to_owned(), resolved.clone());
                }
                resolved
            }
        };
        let http = self.speaking(http, &resolved)?;
        Ok(
            AgentClient::new(http, resolved, headers, Timeouts::default())?
                .with_credentials(credentials),
        )
    }

    /// The client that speaks the chosen interface: gRPC without TLS needs HTTP/2 from
    /// the first byte (h2c); everything else goes as `http` does.
    fn speaking(
        &self,
        http: reqwest::Client,
        resolved: &ResolvedAgent,
    ) -> Result<reqwest::Client, RemoteError> {
        match (resolved.binding, resolved.endpoint.scheme()) {
            (Binding::Grpc, "http") => self.h2c(),
            _ => Ok(http),
        }
    }

    fn h2c(&self) -> Result<reqwest::Client, RemoteError> {
        if let Some(client) = self.h2c.get() {
            return Ok(client.clone());
        }
        let client = self
            .roots
            .agent_h2c_client()
            .map_err(|e| RemoteError::Transport(format!("{}: {}", e.field, e.problem)))?;
        Ok(self.h2c.get_or_init(|| client).clone())
    }

    /// What the agent's card says of it, read afresh (a listing shows what the agent
    /// says now, not what this process read first) with the reach's credentials, if any.
    pub async fn describe(&self, reach: Reach<'_>) -> Result<Profile, RemoteError> {
        let headers = reach.headers()?;
        let http = self.client_for(reach.credentials.as_deref()).await?;
        let read = read_card(&http, &self.http, &headers, &reach).await?;
        Ok(profile::of(&read.card))
    }

    /// Reads the card (with the credentials), checks that they meet what it requires,
    /// and, when it offers one, reads the extended card in its place.
    async fn resolve(
        &self,
        http: &reqwest::Client,
        headers: &HeaderMap,
        reach: &Reach<'_>,
    ) -> Result<ResolvedAgent, RemoteError> {
        let ReadCard { card, url, .. } = read_card(http, &self.http, headers, reach).await?;
        let configured = reach.credentials.as_ref().map(|c| c.scheme());
        if let Some(unmet) = security::requirements(&card).unmet(reach.agent, configured) {
            return Err(RemoteError::AuthNotConfigured(unmet));
        }
        let preferred = reach.preferred_binding.map(Binding::from);
        let resolved = ResolvedAgent::from_card(&card, &url, reach.extensions, preferred)?;
        check_interface(
            reach.url,
            reach.allowed_origins,
            &resolved.endpoint,
            reach.allow_private,
        )
        .await?;
        if reach.credentials.is_none() || !security::offers_extended_card(&card) {
            return Ok(resolved);
        }
        let public = AgentClient::new(
            self.speaking(http.clone(), &resolved)?,
            resolved.clone(),
            headers.clone(),
            Timeouts::default(),
        )?
        .with_credentials(reach.credentials.clone());
        let extended = match public.extended_card().await {
            Ok((extended, json)) => {
                // Pinned keys hold for every card the stand-in reads, this one too. An
                // agent that signs only its public card keeps that one, already verified.
                if let Err(err) = check_signature(&self.http, reach, &json).await {
                    tracing::warn!(agent = reach.agent, error = %err, "the extended card does not verify; using the public one");
                    return Ok(resolved);
                }
                extended
            }
            Err(err @ (RemoteError::Unauthorized { .. } | RemoteError::Credentials(_))) => {
                return Err(err);
            }
            Err(err) => {
                tracing::warn!(agent = reach.agent, error = %err, "the extended card does not read; using the public one");
                return Ok(resolved);
            }
        };
        // The extended card is read from the interface the public one chose: its
        // interface is held to the same reach rules.
        let fuller =
            ResolvedAgent::from_card(&extended, &resolved.endpoint, reach.extensions, preferred)?;
        check_interface(
            reach.url,
            reach.allowed_origins,
            &fuller.endpoint,
            reach.allow_private,
        )
        .await?;
        Ok(fuller)
    }
}

/// Reads the card where the reach says, its address checked first: an agent added at run
/// time could name the function's neighbours.
async fn read_card(
    http: &reqwest::Client,
    plain: &reqwest::Client,
    headers: &HeaderMap,
    reach: &Reach<'_>,
) -> Result<ReadCard, RemoteError> {
    let first = reach.card_url.unwrap_or(reach.url);
    let first = reqwest::Url::parse(first)
        .map_err(|e| RemoteError::Card(format!("{first:?} is not a URL: {e}")))?;
    check_target(&first, "the agent's card", reach.allow_private).await?;
    let at = reach
        .card_url
        .map_or(CardAt::Base(reach.url), CardAt::Exact);
    let read = CardRead {
        http,
        headers,
        credentials: reach.credentials.as_deref(),
        timeouts: Timeouts::default(),
    };
    let read = fetch_card(read, at).await?;
    check_signature(plain, reach, &read.json).await?;
    Ok(read)
}

/// Holds a card to the keys its entry pins: refused, naming the agent and the reason,
/// unless one of its signatures verifies. Without pinned keys a signed card is checked
/// against the key set its signature names (`jku`) and the result logged: nothing is
/// refused on keys the agent itself chose. Key sets are read with `plain`, a client that
/// presents no certificate of ours to a host the agent names.
async fn check_signature(
    plain: &reqwest::Client,
    reach: &Reach<'_>,
    card: &serde_json::Value,
) -> Result<(), RemoteError> {
    let agent = reach.agent;
    let Some(pinned) = reach.card_signing else {
        log_unpinned_signature(plain, reach, card).await;
        return Ok(());
    };
    let keys = match pinned {
        CardSigning::Keys(keys) => CardSigning::key_set(keys),
        CardSigning::JwksUrl(url) => signature::fetch_jwks(plain, url, reach.allow_private)
            .await
            .map_err(|why| {
                RemoteError::Card(format!("agent {agent:?}: card_signing.jwks_url {why}"))
            })?,
    };
    let kid = signature::verify(card, &keys)
        .map_err(|why| RemoteError::Card(format!("agent {agent:?}: its card {why}")))?;
    tracing::info!(
        agent,
        kid,
        "card signature verified against the pinned keys"
    );
    Ok(())
}

async fn log_unpinned_signature(
    plain: &reqwest::Client,
    reach: &Reach<'_>,
    card: &serde_json::Value,
) {
    let agent = reach.agent;
    let signed = signature::signatures(card);
    if signed.is_empty() {
        return;
    }
    let Some(jku) = signed.into_iter().find_map(|(header, _, _)| header.jku) else {
        tracing::info!(
            agent,
            "card signed, naming no key set (jku): not checked; pin its keys with card_signing"
        );
        return;
    };
    match signature::fetch_jwks(plain, &jku, reach.allow_private).await {
        Ok(keys) => match signature::verify(card, &keys) {
            Ok(kid) => tracing::info!(
                agent,
                kid,
                jku,
                "card signature verified against the keys it names"
            ),
            Err(why) => tracing::warn!(agent, jku, why, "card signature not verified"),
        },
        Err(why) => tracing::warn!(
            agent,
            jku,
            why,
            "card signature not checked: its keys did not read"
        ),
    }
}

/// Refuses `url` on a private, loopback or link-local address unless the deployment
/// allows private agents: the same rule as an agent's card and interface, for what else
/// the stand-in calls on an entry's word (an OAuth2 token endpoint).
pub async fn check_reach(url: &str, what: &str, allow_private: bool) -> Result<(), RemoteError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| RemoteError::Refused(format!("{what} is not a URL: {e}")))?;
    check_target(&parsed, what, allow_private).await
}

/// Agents' cards kept at once, past which the cache starts again.
const MAX_CARDS: usize = 1024;

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A card server on loopback answering every request with `status` and `body`, and
    /// keeping each request's head.
    async fn card_server(status: &'static str, body: String) -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let heads = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = vec![0u8; 4096];
                let read = socket.read(&mut request).await.unwrap_or(0);
                heads
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&request[..read]).into_owned());
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        (port, seen)
    }

    fn connector() -> Connector {
        let roots = Roots::built_in();
        let http = roots.agent_http_client().unwrap();
        Connector::new(roots, http)
    }

    /// A reach with nothing but its URL, for the tests of what reads a card.
    pub(crate) fn reach(url: &str, allow_private: bool) -> Reach<'_> {
        Reach {
            agent: "billing",
            url,
            card_url: None,
            allowed_origins: &[],
            participant: None,
            headers: &[],
            session: None,
            traceparent: None,
            extensions: &[],
            allow_private,
            credentials: None,
            card_signing: None,
            preferred_binding: None,
        }
    }

    #[tokio::test]
    async fn describe_reads_what_the_card_says_with_no_credentials() {
        let card = serde_json::json!({
            "name": "Billing", "description": "Answers billing questions",
            "supportedInterfaces": [], "skills": [{"id": "refund", "name": "Refunds"}]
        });
        let (port, seen) = card_server("200 OK", card.to_string()).await;
        let url = format!("http://127.0.0.1:{port}");
        let profile = connector().describe(reach(&url, true)).await.unwrap();
        assert_eq!(
            (profile.name.as_str(), profile.skills[0].id.as_str()),
            ("Billing", "refund")
        );
        let head = seen.lock().unwrap()[0].to_ascii_lowercase();
        assert!(
            head.starts_with("get /.well-known/agent-card.json"),
            "{head}"
        );
        assert!(!head.contains("authorization"), "{head}");
    }

    #[tokio::test]
    async fn a_card_that_refuses_or_an_address_not_allowed_is_said() {
        let (port, _) = card_server("401 Unauthorized", String::new()).await;
        let url = format!("http://127.0.0.1:{port}");
        let refused = connector().describe(reach(&url, true)).await.unwrap_err();
        assert!(refused.to_string().contains("401"), "{refused}");
        let private = connector().describe(reach(&url, false)).await.unwrap_err();
        assert!(
            private.to_string().contains("AllowPrivateAgents"),
            "{private}"
        );
    }
}
