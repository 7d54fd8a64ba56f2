//! The outbox's sent marks, kept on the row (`sent_through`): the port, and on DynamoDB
//! read for a whole stream batch in one BatchGetItem and raised with one conditional
//! UpdateItem.

use std::collections::HashMap;
use std::future::Future;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use super::StoreError;
use super::dynamo::attr::{SENT_THROUGH, TASK_ID};
use super::dynamo::{DynamoRowStore, backend, written};

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
            let wanted = KeysAndAttributes::builder()
                .set_keys(Some(ids.iter().map(|id| Self::key(id)).collect()))
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
                .map_err(backend)?;
            // Keys left unprocessed count as unmarked: their notes are sent again, which
            // the queue deduplicates.
            let items = out.responses.and_then(|mut r| r.remove(&self.table));
            marks.extend(items.into_iter().flatten().filter_map(|item| {
                let sent = item.get(SENT_THROUGH)?.as_n().ok()?.parse().ok()?;
                Some((item.get(TASK_ID)?.as_s().ok()?.clone(), sent))
            }));
        }
        Ok(marks)
    }

    async fn mark_sent(&self, task_id: &str, seq: u64) -> Result<(), StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(task_id)))
            .update_expression("SET #sent = :seq")
            .condition_expression(
                "attribute_exists(#id) AND (attribute_not_exists(#sent) OR #sent < :seq)",
            )
            .expression_attribute_names("#id", TASK_ID)
            .expression_attribute_names("#sent", SENT_THROUGH)
            .expression_attribute_values(":seq", AttributeValue::N(seq.to_string()))
            .send()
            .await;
        // Not written: marked as far already, or the row is gone; nothing to do either way.
        written(result).map(|_| ())
    }
}
