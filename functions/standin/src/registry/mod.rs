//! The agent registry: agents added, changed and removed at run time (`/agents`), beside
//! the stack's own (the template's `Agents` parameter). The stack's entries belong to
//! its deployments and the registry's to the API: an id is in one or the other, so a
//! deploy never undoes an edit and an edit never fights a deploy.
//!
//! The [`Registry`] port stores each entry as the text [`AgentSpec::to_entry`] writes;
//! the [`Catalog`] reads both sources, checks every entry with the document's parser and
//! keeps what it read for [`CATALOG_TTL`], so an edit reaches every function within it.

pub mod dynamo;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::agent_rules::EntryRules;
use crate::agents::{AgentSpec, AgentsConfig, ConfigError};

/// How long a function keeps an entry (or its absence) before reading the registry again.
pub const CATALOG_TTL: Duration = Duration::from_secs(30);
/// The most entries a function keeps at once: past it the cache starts over, so names
/// asked about once (unknown ones included) cannot grow it without bound.
pub const CATALOG_ENTRIES: usize = 1024;
/// The most entries one `PUT /agents` document puts (one DynamoDB transaction's items).
pub const DOCUMENT_ENTRIES: usize = 100;
/// Entries per page of `GET /agents`.
pub const AGENTS_PAGE: u32 = 100;

pub type Page = (Vec<String>, Option<String>);

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("the agent registry did not answer: {0}")]
    Unavailable(String),
}

pub trait Registry: Send + Sync {
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, RegistryError>>;
    fn put<'a>(&'a self, id: &'a str, entry: &'a str) -> BoxFuture<'a, Result<(), RegistryError>>;
    /// Puts every `(id, entry)` or none of them (at most [`DOCUMENT_ENTRIES`]).
    fn put_all<'a>(
        &'a self,
        entries: &'a [(String, String)],
    ) -> BoxFuture<'a, Result<(), RegistryError>>;
    /// Whether there was an entry to remove.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, RegistryError>>;
    /// A page of entries (in the store's order), and the id the next page starts after.
    fn list<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, RegistryError>>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The template's `Agents` parameter: changed by a deploy.
    Stack,
    /// `PUT /agents/{id}`.
    Registry,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    #[error("{0}")]
    Invalid(ConfigError),
    #[error(
        "agent {0:?} is the stack's (the template's Agents parameter): change it with a deploy"
    )]
    StackOwned(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// The agents a function may delegate to: the stack's, then the registry's.
pub struct Catalog {
    stack: AgentsConfig,
    registry: Option<Box<dyn Registry>>,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Option<AgentSpec>)>>,
    /// What the deployment lets an entry name: an entry breaking them is refused at
    /// `put`, naming the field, and ignored when read back.
    rules: EntryRules,
}

impl Catalog {
    /// The stack's agents and, when the function has one, the registry.
    pub fn new(stack: AgentsConfig, registry: Option<Box<dyn Registry>>) -> Self {
        Self {
            stack,
            registry,
            ttl: CATALOG_TTL,
            rules: EntryRules::default(),
            cache: Mutex::default(),
        }
    }

    #[cfg(test)]
    pub fn with_ttl(
        stack: AgentsConfig,
        registry: Option<Box<dyn Registry>>,
        ttl: Duration,
    ) -> Self {
        Self {
            ttl,
            ..Self::new(stack, registry)
        }
    }

    /// The agent `id`, from the stack or the registry (cached). A stored entry that no
    /// longer passes the checks is logged and treated as absent.
    pub async fn agent(&self, id: &str) -> Result<Option<(AgentSpec, Source)>, RegistryError> {
        let cached = self.cache.lock().ok().and_then(|cache| {
            cache
                .get(id)
                .filter(|(at, _)| at.elapsed() < self.ttl)
                .map(|(_, spec)| spec.clone())
        });
        self.find(id, cached).await
    }

    /// The agent `id` as stored now, for whoever asks to see it: a cached copy could be
    /// one another function has since changed or removed. What is read is kept.
    pub async fn agent_now(&self, id: &str) -> Result<Option<(AgentSpec, Source)>, RegistryError> {
        self.find(id, None).await
    }

    /// The stack's agent `id`, else the registry's: `cached`, or read (and kept) now.
    async fn find(
        &self,
        id: &str,
        cached: Option<Option<AgentSpec>>,
    ) -> Result<Option<(AgentSpec, Source)>, RegistryError> {
        if let Some(spec) = self.stack.agent(id) {
            return Ok(Some((spec.clone(), Source::Stack)));
        }
        let Some(registry) = &self.registry else {
            return Ok(None);
        };
        let spec = match cached {
            Some(spec) => spec,
            None => {
                let text = registry.get(id).await?;
                let spec = text.and_then(|text| read_stored(id, &text, &self.rules));
                self.remember(id, spec.clone());
                spec
            }
        };
        Ok(spec.map(|spec| (spec, Source::Registry)))
    }

    fn remember(&self, id: &str, spec: Option<AgentSpec>) {
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CATALOG_ENTRIES && !cache.contains_key(id) {
                cache.clear();
            }
            cache.insert(id.to_owned(), (Instant::now(), spec));
        }
    }

    /// The deployment's rules for what an entry (or a webhook) may name.
    pub fn rules(&self) -> &EntryRules {
        &self.rules
    }

    /// Entries are held to `rules` (the deployment's).
    pub fn with_rules(mut self, rules: EntryRules) -> Self {
        self.rules = rules;
        self
    }

    /// Adds or replaces a registry entry. `id` is the path's; an entry that names
    /// another is refused, one that names none takes it.
    pub async fn put(&self, id: &str, entry: &serde_json::Value) -> Result<AgentSpec, ChangeError> {
        let mut entry = entry.clone();
        match entry.get("id") {
            None if entry.is_object() => entry["id"] = id.into(),
            Some(named) if named != id => {
                let problem = format!("the entry names {named}, the path {id:?}");
                return Err(invalid("id", problem));
            }
            _ => {}
        }
        let spec = AgentSpec::parse_entry(&entry.to_string()).map_err(ChangeError::Invalid)?;
        self.rules.check("", &spec).map_err(ChangeError::Invalid)?;
        if self.stack.agent(id).is_some() {
            return Err(ChangeError::StackOwned(id.to_owned()));
        }
        let registry = self.registry_or_refuse()?;
        registry.put(id, &spec.to_entry().to_string()).await?;
        self.remember(id, Some(spec.clone()));
        Ok(spec)
    }

    /// Puts every entry of an agents document (`{"agents": [...]}`) or none: the whole
    /// document is checked first, and the first problem is named by its place
    /// (`agents[1].follow_interval`).
    pub async fn put_all(
        &self,
        document: &serde_json::Value,
    ) -> Result<Vec<AgentSpec>, ChangeError> {
        let Some(listed) = document.get("agents").and_then(serde_json::Value::as_array) else {
            let problem = "must be a list of agent entries ({\"agents\": [...]})";
            return Err(invalid("agents", problem));
        };
        if listed.len() > DOCUMENT_ENTRIES {
            let problem = format!(
                "must hold at most {DOCUMENT_ENTRIES} entries, got {}",
                listed.len()
            );
            return Err(invalid("agents", problem));
        }
        let mut specs: Vec<AgentSpec> = Vec::with_capacity(listed.len());
        for (i, entry) in listed.iter().enumerate() {
            let at = format!("agents[{i}]");
            let placed = |mut e: ConfigError| {
                e.field = if matches!(e.field.as_str(), "agent entry" | "agents document") {
                    at.clone()
                } else {
                    format!("{at}.{}", e.field)
                };
                ChangeError::Invalid(e)
            };
            let spec = AgentSpec::parse_entry(&entry.to_string()).map_err(placed)?;
            self.rules.check(&at, &spec).map_err(ChangeError::Invalid)?;
            if specs.iter().any(|s| s.id == spec.id) {
                let problem = format!("duplicate id {:?}", spec.id);
                return Err(invalid(format!("{at}.id"), problem));
            }
            if self.stack.agent(&spec.id).is_some() {
                return Err(ChangeError::StackOwned(spec.id));
            }
            specs.push(spec);
        }
        let stored: Vec<(String, String)> = specs
            .iter()
            .map(|spec| (spec.id.clone(), spec.to_entry().to_string()))
            .collect();
        if !stored.is_empty() {
            self.registry_or_refuse()?.put_all(&stored).await?;
        }
        for spec in &specs {
            self.remember(&spec.id, Some(spec.clone()));
        }
        Ok(specs)
    }

    /// Removes a registry entry; whether there was one. An entry a later deploy gave
    /// the stack too is never served (the stack's wins); removing it is allowed, and the
    /// stack's stays.
    pub async fn remove(&self, id: &str) -> Result<bool, ChangeError> {
        let removed = self.registry_or_refuse()?.remove(id).await?;
        if self.stack.agent(id).is_some() && !removed {
            return Err(ChangeError::StackOwned(id.to_owned()));
        }
        self.remember(id, None);
        Ok(removed)
    }

    /// A page of agents: the stack's first (on the first page), then the registry's.
    pub async fn list(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<(AgentSpec, Source)>, Option<String>), RegistryError> {
        let mut agents: Vec<(AgentSpec, Source)> = Vec::new();
        if after.is_none() {
            agents.extend(self.stack.agents.iter().map(|a| (a.clone(), Source::Stack)));
        }
        let Some(registry) = &self.registry else {
            return Ok((agents, None));
        };
        let (page, next) = registry.list(after, limit).await?;
        agents.extend(page.iter().filter_map(|text| {
            let entry: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
            let id = entry["id"].as_str().unwrap_or_default();
            // The stack's wins an id both have (a deploy that added it later).
            read_stored(id, text, &self.rules)
                .filter(|spec| self.stack.agent(&spec.id).is_none())
                .map(|spec| (spec, Source::Registry))
        }));
        Ok((agents, next))
    }

    fn registry_or_refuse(&self) -> Result<&dyn Registry, RegistryError> {
        self.registry
            .as_deref()
            .ok_or_else(|| RegistryError::Unavailable("this function has no registry".into()))
    }
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ChangeError {
    ChangeError::Invalid(ConfigError::new(field, problem))
}

/// A stored entry, checked again: the rules may have tightened since it was written.
fn read_stored(id: &str, text: &str, rules: &EntryRules) -> Option<AgentSpec> {
    let checked = AgentSpec::parse_entry(text).and_then(|spec| {
        rules.check("", &spec)?;
        Ok(spec)
    });
    match checked {
        Ok(spec) if spec.id == id => Some(spec),
        Ok(spec) => {
            tracing::error!(agent = id, stored = %spec.id, "registry entry names another id; ignored");
            None
        }
        Err(err) => {
            tracing::error!(agent = id, error = %err, "registry entry no longer valid; ignored");
            None
        }
    }
}

#[cfg(test)]
mod tests;
