//! The A2A front's keys, for parents that cannot sign their requests (SigV4): the operator
//! issues one (`POST /keys`, `standin keys create`), hands it over once, and the parent
//! sends it as `Authorization: Bearer …` to `/keyed/a2a/{agent_id}`. Only its SHA-256 is
//! kept, so the table holds nothing a caller could present; a key may be limited to some
//! agents, and revoking it takes effect at the next request.
//!
//! A key reads `sik_{key_id}_{secret}`: the id finds the stored digest with one read, the
//! 256-bit secret is what the digest is checked against, in constant time.

pub mod dynamo;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
pub(crate) mod routes;

use rand::Rng;
use secrecy::{ExposeSecret, SecretString};

use standin_wire::is_key_id;

use standin::digest::TokenDigest;
use standin::registry::BoxFuture;

/// What every key begins with, so a leaked one is recognised for what it is.
pub const KEY_PREFIX: &str = "sik_";
/// Keys per page of `GET /keys`.
pub const KEYS_PAGE: u32 = 100;
/// The most agents one key may be limited to.
pub const MAX_KEY_AGENTS: usize = 100;

/// A page of keys' records, and the key id the next page starts after.
pub type KeyPage = (Vec<KeyRecord>, Option<String>);

/// A key as kept: never the key, only its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub key_id: String,
    pub name: String,
    /// The agents the key may reach; `None`, every agent of the deployment.
    pub agents: Option<Vec<String>>,
    pub digest: TokenDigest,
    pub created_at: String,
}

impl KeyRecord {
    pub fn allows(&self, agent: &str) -> bool {
        self.agents
            .as_ref()
            .is_none_or(|agents| agents.iter().any(|a| a == agent))
    }
}

/// A key just made: its record, and the key itself, shown to the operator once.
pub struct IssuedKey {
    pub record: KeyRecord,
    pub key: SecretString,
}

/// A fresh key named `name`, for `agents` (every agent when `None`).
pub fn issue(name: String, agents: Option<Vec<String>>) -> IssuedKey {
    let mut id = [0u8; 8];
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut id);
    rand::rng().fill_bytes(&mut secret);
    let key_id = hex::encode(id);
    let key = SecretString::from(format!("{KEY_PREFIX}{key_id}_{}", hex::encode(secret)));
    let record = KeyRecord {
        key_id,
        name,
        agents,
        digest: TokenDigest::of(key.expose_secret()),
        created_at: standin::clock::now_rfc3339(),
    };
    IssuedKey { record, key }
}

/// The key id a presented key names, when it has a key's shape.
fn key_id_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(KEY_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let secret_fits = secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit());
    (is_key_id(id) && secret_fits).then_some(id)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyStoreError {
    #[error("the keys table did not answer: {0}")]
    Unavailable(String),
}

/// Where the keys' records live.
pub trait KeyStore: Send + Sync {
    /// Keeps a new record (its id is fresh: one already kept is an error).
    fn create<'a>(&'a self, record: &'a KeyRecord) -> BoxFuture<'a, Result<(), KeyStoreError>>;
    fn get<'a>(
        &'a self,
        key_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<KeyRecord>, KeyStoreError>>;
    /// Whether there was a key to revoke.
    fn revoke<'a>(&'a self, key_id: &'a str) -> BoxFuture<'a, Result<bool, KeyStoreError>>;
    /// A page of records, and the key id the next page starts after.
    fn list<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<KeyPage, KeyStoreError>>;
}

/// Why a request to the keyed front is turned away. The words never repeat the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "no key: send Authorization: Bearer <key> (the operator issues one with standin keys create)"
    )]
    NoKey,
    #[error("the key is not one this deployment keeps (revoked, mistyped or another's)")]
    Unknown,
    #[error("key {key_id} is not for agent {agent:?}: ask the operator for a key that names it")]
    NotForAgent { key_id: String, agent: String },
    /// The keys could not be read: nobody is let in, and the caller may try again.
    #[error(transparent)]
    Store(#[from] KeyStoreError),
}

/// The record of the key `authorization` (the request's `Authorization` header) carries,
/// if it is one kept and it may reach `agent`.
pub async fn check(
    store: &dyn KeyStore,
    authorization: Option<&str>,
    agent: &str,
) -> Result<KeyRecord, Refusal> {
    let key = authorization.and_then(bearer).ok_or(Refusal::NoKey)?;
    let key_id = key_id_of(key).ok_or(Refusal::Unknown)?;
    let record = store.get(key_id).await?.ok_or(Refusal::Unknown)?;
    if !record.digest.matches(&TokenDigest::of(key)) {
        return Err(Refusal::Unknown);
    }
    if !record.allows(agent) {
        return Err(Refusal::NotForAgent {
            key_id: record.key_id,
            agent: agent.to_owned(),
        });
    }
    Ok(record)
}

/// The credentials of a `Bearer` header (the scheme in any case, as RFC 9110 allows, and
/// any run of spaces or tabs after it).
fn bearer(header: &str) -> Option<&str> {
    let (scheme, credentials) = header.trim().split_once([' ', '\t'])?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim())
}

#[cfg(test)]
mod tests;
