//! Keys in memory, for tests.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::{KeyPage, KeyRecord, KeyStore, KeyStoreError};
use standin::registry::BoxFuture;

#[derive(Default)]
pub struct MemoryKeys {
    records: Mutex<BTreeMap<String, KeyRecord>>,
}

impl MemoryKeys {
    fn records(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, KeyRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl KeyStore for MemoryKeys {
    fn create<'a>(&'a self, record: &'a KeyRecord) -> BoxFuture<'a, Result<(), KeyStoreError>> {
        Box::pin(async move {
            let mut records = self.records();
            if records.contains_key(&record.key_id) {
                return Err(KeyStoreError::Unavailable(format!(
                    "key {} is kept already",
                    record.key_id
                )));
            }
            records.insert(record.key_id.clone(), record.clone());
            Ok(())
        })
    }

    fn get<'a>(
        &'a self,
        key_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<KeyRecord>, KeyStoreError>> {
        Box::pin(async move { Ok(self.records().get(key_id).cloned()) })
    }

    fn revoke<'a>(&'a self, key_id: &'a str) -> BoxFuture<'a, Result<bool, KeyStoreError>> {
        Box::pin(async move { Ok(self.records().remove(key_id).is_some()) })
    }

    fn list<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<KeyPage, KeyStoreError>> {
        Box::pin(async move {
            let records = self.records();
            let page: Vec<KeyRecord> = records
                .values()
                .filter(|r| after.is_none_or(|a| r.key_id.as_str() > a))
                .take(limit as usize)
                .cloned()
                .collect();
            let next = (page.len() == limit as usize)
                .then(|| page.last().map(|r| r.key_id.clone()))
                .flatten();
            Ok((page, next))
        })
    }
}
