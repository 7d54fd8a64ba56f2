//! The registry on DynamoDB: one item per agent, keyed by `id`, the entry as JSON text.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};

use super::{BoxFuture, Page, Registry, RegistryError};

type Item = HashMap<String, AttributeValue>;

/// The table's key and the entry's attribute (the template names them too).
pub const ID: &str = "id";
pub const ENTRY: &str = "entry";
pub const UPDATED_AT: &str = "updated_at";

#[derive(Clone)]
pub struct DynamoRegistry {
    client: Client,
    table: String,
}

impl DynamoRegistry {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn unavailable(err: impl std::error::Error) -> RegistryError {
    RegistryError::Unavailable(aws_sdk_dynamodb::error::DisplayErrorContext(err).to_string())
}

fn key(id: &str) -> Item {
    HashMap::from([(ID.to_owned(), AttributeValue::S(id.to_owned()))])
}

fn entry_of(item: &Item) -> Option<String> {
    item.get(ENTRY)?.as_s().ok().cloned()
}

impl Registry for DynamoRegistry {
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, RegistryError>> {
        Box::pin(async move {
            let out = self
                .client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key(id)))
                .send()
                .await
                .map_err(unavailable)?;
            Ok(out.item.as_ref().and_then(entry_of))
        })
    }

    fn put<'a>(&'a self, id: &'a str, entry: &'a str) -> BoxFuture<'a, Result<(), RegistryError>> {
        Box::pin(async move {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(key(id)))
                .item(ENTRY, AttributeValue::S(entry.to_owned()))
                .item(UPDATED_AT, AttributeValue::S(crate::clock::now_rfc3339()))
                .send()
                .await
                .map_err(unavailable)?;
            Ok(())
        })
    }

    /// One transaction: DynamoDB writes every item or none.
    fn put_all<'a>(
        &'a self,
        entries: &'a [(String, String)],
    ) -> BoxFuture<'a, Result<(), RegistryError>> {
        Box::pin(async move {
            let at = crate::clock::now_rfc3339();
            let mut items = Vec::with_capacity(entries.len());
            for (id, entry) in entries {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(key(id)))
                    .item(ENTRY, AttributeValue::S(entry.clone()))
                    .item(UPDATED_AT, AttributeValue::S(at.clone()))
                    .build()
                    .map_err(|e| RegistryError::Unavailable(e.to_string()))?;
                items.push(TransactWriteItem::builder().put(put).build());
            }
            self.client
                .transact_write_items()
                .set_transact_items(Some(items))
                .send()
                .await
                .map_err(unavailable)?;
            Ok(())
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, RegistryError>> {
        Box::pin(async move {
            let out = self
                .client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key(id)))
                .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
                .send()
                .await
                .map_err(unavailable)?;
            Ok(out.attributes.is_some_and(|old| !old.is_empty()))
        })
    }

    fn list<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Page, RegistryError>> {
        Box::pin(async move {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .set_exclusive_start_key(after.map(key))
                .limit(i32::try_from(limit).unwrap_or(i32::MAX))
                .send()
                .await
                .map_err(unavailable)?;
            let entries = out.items().iter().filter_map(entry_of).collect();
            let next = out
                .last_evaluated_key()
                .and_then(|k| k.get(ID))
                .and_then(|v| v.as_s().ok())
                .cloned();
            Ok((entries, next))
        })
    }
}
