//! The outbox's sent marks, kept on the row (`sent_through`): the port, and on DynamoDB
//! read for a whole stream batch in one BatchGetItem and raised with one conditional
//! UpdateItem.

use std::collections::HashMap;
use std::future::Future;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use super::StoreError;
use super::dynamo::attr::{SENT_THROUGH, TASK_ID};
use super::dynamo::{DynamoRowStore, backend};

/// How far each stand-in's notes have reached the parent: every note up to a stand-in's
/// mark was taken (or refused for good). A step sends its note at once only when the one
/// before it is marked, and the outbox passes over marked notes, so the two paths keep
/// a stand-in's notes in order and send each once (the queue's deduplication covers
/// the moment between a send and its mark).
pub trait SentMarks: Send + Sync {
    /// The marks of these stand-ins; one without a mark (or without a row) is absent.
    fn sent_through(
        &self,
        task_ids: &[&str],
    ) -> impl Future<Output = Result<HashMap<String, u64>, StoreError>> + Send;
    /// Notes up to `seq` reached the parent. A mark never goes back; marking a row that
    /// is gone does nothing.
    fn mark_sent(
        &self,
        task_id: &str,
        seq: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// BatchGetItem's most keys per call.
const KEYS_PER_READ: usize = 100;

impl SentMarks for DynamoRowStore {
    async fn sent_through(&self, task_ids: &[&str]) -> Result<HashMap<String, u64>, StoreError> {
        let mut marks = HashMap::new();
        for ids in task_ids.chunks(KEYS_PER_READ) {
            let keys = ids
                .iter()
                .map(|id| HashMap::from([Self::key(id)]))
                .collect::<Vec<_>>();
            let wanted = KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .projection_expression("#id, #sent")
                .expression_attribute_names("#id", TASK_ID)
                .expression_attribute_names("#sent", SENT_THROUGH)
                // A mark written just before must be seen, or its note is sent twice.
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::Backend(format!("build read: {e}")))?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, wanted)
                .send()
                .await
                .map_err(|e| backend(&e))?;
            // Keys left unprocessed count as unmarked: their notes are sent again, which
            // the queue deduplicates.
            let items = out.responses.and_then(|mut r| r.remove(&self.table));
            for item in items.into_iter().flatten() {
                let id = item.get(TASK_ID).and_then(|v| v.as_s().ok());
                let sent = item.get(SENT_THROUGH).and_then(|v| v.as_n().ok());
                if let (Some(id), Some(Ok(sent))) = (id, sent.map(|n| n.parse::<u64>())) {
                    marks.insert(id.clone(), sent);
                }
            }
        }
        Ok(marks)
    }

    async fn mark_sent(&self, task_id: &str, seq: u64) -> Result<(), StoreError> {
        let (k, v) = Self::key(task_id);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(k, v)
            .update_expression("SET #sent = :seq")
            .condition_expression(
                "attribute_exists(#id) AND (attribute_not_exists(#sent) OR #sent < :seq)",
            )
            .expression_attribute_names("#id", TASK_ID)
            .expression_attribute_names("#sent", SENT_THROUGH)
            .expression_attribute_values(":seq", AttributeValue::N(seq.to_string()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Marked as far already, or the row is gone: nothing to do either way.
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), UpdateItemError::ConditionalCheckFailedException(_)) =>
            {
                Ok(())
            }
            Err(err) => Err(backend(&err)),
        }
    }
}
