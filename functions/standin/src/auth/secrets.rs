//! Where the agents' secrets are read (a port: Secrets Manager in a function, a map in a
//! test), and the short cache in front of it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use secrecy::ExposeSecret;

/// A secret's value: `secrecy`'s string, whose `Debug` never shows it and whose memory is
/// zeroed when dropped. `expose_secret` is the one door.
pub type SecretValue = secrecy::SecretString;

/// A secret that could not be read; the message names its id, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("the secret {0:?} does not exist (or this function may not read it)")]
    NotFound(String),
    #[error(
        "the secret {0:?} may not be read by this function: it must be under the deployment's secret prefix"
    )]
    Denied(String),
    #[error("the secret {0:?} holds no text (SecretString)")]
    NotText(String),
    #[error("the secret {id:?} could not be read: {problem}")]
    Unavailable { id: String, problem: String },
}

pub trait SecretStore: Send + Sync {
    fn read<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SecretValue, SecretError>>;
}

/// How long a secret read is used: a rotation reaches every function within this, and at
/// once where the agent refuses the old value (a 401 forgets it).
pub const SECRET_CACHE_TTL: Duration = Duration::from_secs(300);
/// Secrets kept at once, past which the cache starts again.
const MAX_CACHED_SECRETS: usize = 256;

/// The store with a short cache in front.
pub struct Secrets {
    store: Box<dyn SecretStore>,
    ttl: Duration,
    cached: Mutex<HashMap<String, (Instant, SecretValue)>>,
}

impl Secrets {
    pub fn new(store: impl SecretStore + 'static) -> Self {
        Self {
            store: Box::new(store),
            ttl: SECRET_CACHE_TTL,
            cached: Mutex::default(),
        }
    }

    #[cfg(test)]
    fn with_ttl(store: impl SecretStore + 'static, ttl: Duration) -> Self {
        Self {
            ttl,
            ..Self::new(store)
        }
    }

    pub async fn read(&self, id: &str) -> Result<SecretValue, SecretError> {
        let fresh = self.cached.lock().ok().and_then(|cached| {
            cached
                .get(id)
                .filter(|(at, _)| at.elapsed() < self.ttl)
                .map(|(_, value)| value.clone())
        });
        if let Some(value) = fresh {
            return Ok(value);
        }
        let value = self.store.read(id).await?;
        super::held::remember(value.expose_secret());
        if let Ok(mut cached) = self.cached.lock() {
            if cached.len() >= MAX_CACHED_SECRETS {
                cached.clear();
            }
            cached.insert(id.to_owned(), (Instant::now(), value.clone()));
        }
        Ok(value)
    }

    /// Every value this process holds, and each string inside a JSON one (a password, a
    /// PEM key): what an agent could echo back into an artifact.
    pub fn held_values(&self) -> Vec<String> {
        self.cached
            .lock()
            .map(|c| {
                c.values()
                    .flat_map(|(_, v)| super::held::with_members(v.expose_secret()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The agent refused what was read: the next read asks the store.
    pub fn forget(&self, id: &str) {
        if let Ok(mut cached) = self.cached.lock() {
            cached.remove(id);
        }
    }
}

/// Secrets in memory, for tests: `set` is a rotation.
#[cfg(any(test, feature = "test-support"))]
#[derive(Default)]
pub struct MemorySecrets {
    values: Mutex<HashMap<String, String>>,
    pub reads: std::sync::atomic::AtomicUsize,
}

#[cfg(any(test, feature = "test-support"))]
impl MemorySecrets {
    pub fn set(&self, id: &str, value: &str) {
        if let Ok(mut values) = self.values.lock() {
            values.insert(id.to_owned(), value.to_owned());
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
impl SecretStore for std::sync::Arc<MemorySecrets> {
    fn read<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SecretValue, SecretError>> {
        Box::pin(async move {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let values = self.values.lock().map_err(|_| SecretError::Unavailable {
                id: id.to_owned(),
                problem: "poisoned".into(),
            })?;
            values
                .get(id)
                .map(|v| SecretValue::from(v.clone()))
                .ok_or_else(|| SecretError::NotFound(id.to_owned()))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    #[tokio::test]
    async fn a_secret_is_read_once_until_forgotten_or_stale() {
        let store = Arc::new(MemorySecrets::default());
        store.set("s", "v1");
        let secrets = Secrets::new(store.clone());
        assert_eq!(secrets.read("s").await.expect("read").expose_secret(), "v1");
        store.set("s", "v2");
        assert_eq!(
            secrets.read("s").await.expect("cached").expose_secret(),
            "v1"
        );
        assert_eq!(store.reads.load(Ordering::SeqCst), 1);
        secrets.forget("s");
        assert_eq!(
            secrets.read("s").await.expect("read again").expose_secret(),
            "v2"
        );
        let stale = Secrets::with_ttl(store.clone(), Duration::ZERO);
        store.set("s", "v3");
        assert_eq!(stale.read("s").await.expect("read").expose_secret(), "v3");
    }

    #[test]
    fn a_secret_value_never_shows_in_debug() {
        let shown = format!("{:?}", SecretValue::from("hunter2"));
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
