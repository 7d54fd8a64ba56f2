//! The registry in memory, for tests of the catalog and the control API.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{BoxFuture, Page, Registry, RegistryError};

/// Entries by id; clones share them, so a test can look behind the catalog's cache.
#[derive(Clone, Default)]
pub struct MemoryRegistry {
    entries: Arc<Mutex<BTreeMap<String, String>>>,
}

impl MemoryRegistry {
    pub fn entry(&self, id: &str) -> Option<String> {
        self.entries.lock().ok()?.get(id).cloned()
    }

    /// Writes behind the catalog's back, as another function's edit would.
    pub fn set(&self, id: &str, entry: Option<&str>) {
        if let Ok(mut entries) = self.entries.lock() {
            match entry {
                Some(text) => entries.insert(id.to_owned(), text.to_owned()),
                None => entries.remove(id),
            };
        }
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut BTreeMap<String, String>) -> T,
    ) -> Result<T, RegistryError> {
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| RegistryError::Unavailable("poisoned".into()))?;
        Ok(f(&mut entries))
    }
}

impl Registry for MemoryRegistry {
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, RegistryError>> {
        Box::pin(async move { self.with(|e| e.get(id).cloned()) })
    }

    fn put<'a>(&'a self, id: &'a str, entry: &'a str) -> BoxFuture<'a, Result<(), RegistryError>> {
        Box::pin(async move {
            self.with(|e| {
                e.insert(id.to_owned(), entry.to_owned());
            })
        })
    }

    fn put_all<'a>(
        &'a self,
        entries: &'a [(String, String)],
    ) -> BoxFuture<'a, Result<(), RegistryError>> {
        Box::pin(async move {
            self.with(|e| {
                for (id, entry) in entries {
                    e.insert(id.clone(), entry.clone());
                }
            })
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, RegistryError>> {
        Box::pin(async move { self.with(|e| e.remove(id).is_some()) })
    }

    fn list<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, RegistryError>> {
        Box::pin(async move {
            self.with(|e| {
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                let mut page: Vec<(&String, &String)> = e
                    .iter()
                    .filter(|(id, _)| after.is_none_or(|a| id.as_str() > a))
                    .take(limit + 1)
                    .collect();
                let next = (page.len() > limit).then(|| {
                    page.truncate(limit);
                    page.last().map(|(id, _)| (*id).clone()).unwrap_or_default()
                });
                (
                    page.into_iter().map(|(_, text)| text.clone()).collect(),
                    next,
                )
            })
        })
    }
}
