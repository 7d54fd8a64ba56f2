//! What the agents say of themselves (their cards' names, descriptions and skills), for a
//! parent choosing one: `GET /agents` and MCP's `list_agents` show it beside each entry.
//!
//! Cards are read through the [`CardReader`] port when asked, all of a page at once and
//! each bounded by [`READ_BOUND`], and kept per entry for a while: a listing costs no
//! reads most of the time, and an agent that changed its card or an edited entry is seen
//! within [`KEPT_READ`]. A card that does not read is shown as why; one that failed
//! slowly (a listing would pay for it again) is asked again after [`KEPT_FAILURE`], one
//! that failed at once (an agent just down, since back up) at the next listing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use futures_util::future::join_all;
use standin_remote::Profile;

use standin::agents::AgentSpec;
use standin::registry::BoxFuture;

/// How long one card read may take before the listing shows it as not answering.
pub const READ_BOUND: Duration = Duration::from_secs(3);
/// How long a card read is kept.
pub const KEPT_READ: Duration = Duration::from_secs(10 * 60);
/// How long a card that did not read, slowly, is kept as such.
pub const KEPT_FAILURE: Duration = Duration::from_secs(60);
/// A failure quicker than this is not kept: reading it again costs the listing little.
pub const QUICK_FAILURE: Duration = Duration::from_millis(500);
/// The most entries kept at once: past it the cache starts over.
pub const KEPT_ENTRIES: usize = 1024;

/// Reads what an agent's card says of it, or says in words why it cannot.
pub trait CardReader: Send + Sync {
    fn read<'a>(&'a self, spec: &'a AgentSpec) -> BoxFuture<'a, Result<Profile, String>>;
}

/// What a card read gave: the agent's profile, or why there is none.
pub type Described = Result<Profile, String>;

pub struct Cards {
    reader: Box<dyn CardReader>,
    kept: Mutex<HashMap<String, (Instant, Described)>>,
}

impl Cards {
    pub fn new(reader: Box<dyn CardReader>) -> Self {
        Self {
            reader,
            kept: Mutex::default(),
        }
    }

    /// What each agent's card says, in the order given; the cards not kept are read at
    /// once, side by side.
    pub async fn describe(&self, specs: &[&AgentSpec]) -> Vec<Described> {
        join_all(specs.iter().map(|spec| self.one(spec))).await
    }

    async fn one(&self, spec: &AgentSpec) -> Described {
        let key = spec.to_entry().to_string();
        if let Some(kept) = self.kept(&key) {
            return kept;
        }
        let asked = Instant::now();
        let described = match tokio::time::timeout(READ_BOUND, self.reader.read(spec)).await {
            Ok(described) => described,
            Err(_) => Err(format!(
                "the agent's card did not answer within {} s",
                READ_BOUND.as_secs()
            )),
        };
        if described.is_err() && asked.elapsed() < QUICK_FAILURE {
            return described;
        }
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() >= KEPT_ENTRIES {
                kept.clear();
            }
            kept.insert(key, (Instant::now(), described.clone()));
        }
        described
    }

    fn kept(&self, key: &str) -> Option<Described> {
        let kept = self.kept.lock().ok()?;
        let (at, described) = kept.get(key)?;
        let lasts = if described.is_ok() {
            KEPT_READ
        } else {
            KEPT_FAILURE
        };
        (at.elapsed() < lasts).then(|| described.clone())
    }
}

#[cfg(test)]
mod tests;
