//! The parent queue on SQS FIFO: grouped by stand-in (order), deduplicated by its
//! sequence number (exactly once within the deduplication window).

use aws_sdk_sqs::Client;

use crate::ports::{ParentNote, ParentQueue, QueueError};

#[derive(Clone)]
pub struct SqsParentQueue {
    client: Client,
    queue_url: String,
}

impl SqsParentQueue {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

impl ParentQueue for SqsParentQueue {
    async fn send(&self, note: &ParentNote) -> Result<(), QueueError> {
        let body = serde_json::to_string(note).map_err(|e| QueueError(e.to_string()))?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_group_id(&note.task_id)
            .message_deduplication_id(format!("{}:{}", note.task_id, note.seq))
            .message_body(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| QueueError(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string()))
    }
}
