//! Keys on DynamoDB: one item per key, keyed by `key_id`, with its digest (never the key).

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::{KeyPage, KeyRecord, KeyStore, KeyStoreError};
use standin::digest::TokenDigest;
use standin::registry::BoxFuture;

/// The table's key (the template names it too).
pub const KEY_ID: &str = "key_id";
const NAME: &str = "name";
const AGENTS: &str = "agents";
const DIGEST: &str = "digest";
const CREATED_AT: &str = "created_at";

pub struct DynamoKeys {
    client: Client,
    table: String,
}

impl DynamoKeys {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn unavailable(err: impl std::fmt::Display) -> KeyStoreError {
    KeyStoreError::Unavailable(err.to_string())
}

fn text(item: &HashMap<String, AttributeValue>, name: &str) -> Option<String> {
    item.get(name)?.as_s().ok().cloned()
}

/// A record read back; an item missing its id or digest is no key, and so is one whose
/// agents do not read as a list of ids (an edit by hand, say): read as no limit, it
/// would open every agent.
fn record_of(item: &HashMap<String, AttributeValue>) -> Option<KeyRecord> {
    let agents = match item.get(AGENTS) {
        None => None,
        Some(AttributeValue::L(list)) => Some(
            list.iter()
                .map(|v| v.as_s().ok().cloned())
                .collect::<Option<Vec<String>>>()?,
        ),
        Some(_) => return None,
    };
    Some(KeyRecord {
        key_id: text(item, KEY_ID)?,
        name: text(item, NAME).unwrap_or_default(),
        agents,
        digest: TokenDigest::from_stored(text(item, DIGEST)?),
        created_at: text(item, CREATED_AT).unwrap_or_default(),
    })
}

impl KeyStore for DynamoKeys {
    fn create<'a>(&'a self, record: &'a KeyRecord) -> BoxFuture<'a, Result<(), KeyStoreError>> {
        Box::pin(async move {
            let mut put = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(KEY_ID, AttributeValue::S(record.key_id.clone()))
                .item(NAME, AttributeValue::S(record.name.clone()))
                .item(DIGEST, AttributeValue::S(record.digest.as_str().to_owned()))
                .item(CREATED_AT, AttributeValue::S(record.created_at.clone()))
                .condition_expression("attribute_not_exists(#id)")
                .expression_attribute_names("#id", KEY_ID);
            if let Some(agents) = &record.agents {
                let list = agents.iter().cloned().map(AttributeValue::S).collect();
                put = put.item(AGENTS, AttributeValue::L(list));
            }
            put.send()
                .await
                .map_err(|e| unavailable(DisplayErrorContext(e)))?;
            Ok(())
        })
    }

    fn get<'a>(
        &'a self,
        key_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<KeyRecord>, KeyStoreError>> {
        Box::pin(async move {
            let out = self
                .client
                .get_item()
                .table_name(&self.table)
                .key(KEY_ID, AttributeValue::S(key_id.to_owned()))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| unavailable(DisplayErrorContext(e)))?;
            Ok(out.item.as_ref().and_then(record_of))
        })
    }

    fn revoke<'a>(&'a self, key_id: &'a str) -> BoxFuture<'a, Result<bool, KeyStoreError>> {
        Box::pin(async move {
            let out = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key(KEY_ID, AttributeValue::S(key_id.to_owned()))
                .return_values(ReturnValue::AllOld)
                .send()
                .await
                .map_err(|e| unavailable(DisplayErrorContext(e)))?;
            Ok(out.attributes.is_some_and(|old| !old.is_empty()))
        })
    }

    fn list<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<KeyPage, KeyStoreError>> {
        Box::pin(async move {
            let start = after
                .map(|id| HashMap::from([(KEY_ID.to_owned(), AttributeValue::S(id.to_owned()))]));
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .set_exclusive_start_key(start)
                .limit(i32::try_from(limit).unwrap_or(i32::MAX))
                .send()
                .await
                .map_err(|e| unavailable(DisplayErrorContext(e)))?;
            let records = out.items().iter().filter_map(record_of).collect();
            let next = out
                .last_evaluated_key()
                .and_then(|k| k.get(KEY_ID))
                .and_then(|v| v.as_s().ok())
                .cloned();
            Ok((records, next))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(agents: Option<AttributeValue>) -> HashMap<String, AttributeValue> {
        let mut item = HashMap::from([
            (
                KEY_ID.to_owned(),
                AttributeValue::S("0123456789abcdef".into()),
            ),
            (DIGEST.to_owned(), AttributeValue::S("00".into())),
        ]);
        if let Some(agents) = agents {
            item.insert(AGENTS.to_owned(), agents);
        }
        item
    }

    #[test]
    fn agents_that_do_not_read_as_a_list_of_ids_make_no_key_not_an_open_one() {
        let listed = AttributeValue::L(vec![AttributeValue::S("billing".into())]);
        let read = record_of(&item(Some(listed))).map(|r| r.agents);
        assert_eq!(read, Some(Some(vec!["billing".to_owned()])));
        assert_eq!(record_of(&item(None)).map(|r| r.agents), Some(None));
        for odd in [
            AttributeValue::Ss(vec!["billing".into()]),
            AttributeValue::Null(true),
            AttributeValue::L(vec![AttributeValue::N("1".into())]),
        ] {
            assert!(record_of(&item(Some(odd.clone()))).is_none(), "{odd:?}");
        }
    }
}
