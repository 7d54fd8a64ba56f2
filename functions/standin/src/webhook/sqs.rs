//! The webhook queue on SQS: the control API adds deliveries to it, and a failed
//! delivery's delay is its message's visibility.

use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::DisplayErrorContext;

use super::Redelivery;

/// The webhook queue. A deduplication id is at most 128 characters: the group (at most
/// 72) and `why` (a short kind and a number).
pub struct SqsDeliveryQueue {
    client: Client,
    queue_url: String,
}

impl SqsDeliveryQueue {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

impl Redelivery for SqsDeliveryQueue {
    async fn redeliver_in(&self, receipt: &str, delay: Duration) {
        let changed = self
            .client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt)
            .visibility_timeout(i32::try_from(delay.as_secs()).unwrap_or(i32::MAX))
            .send()
            .await;
        // Unchanged, the message comes back after the queue's own visibility timeout.
        if let Err(err) = changed {
            tracing::warn!(error = %DisplayErrorContext(&err),
                "webhook retry delay not set; the queue's own applies");
        }
    }
}

impl super::DeliveryQueue for SqsDeliveryQueue {
    fn queue<'a>(
        &'a self,
        task_id: &'a str,
        why: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let group = crate::outbox::sqs::group_id(task_id);
            self.client
                .send_message()
                .queue_url(&self.queue_url)
                .message_group_id(&group)
                .message_deduplication_id(format!("{group}:{why}"))
                .message_body(serde_json::json!({ "task_id": task_id }).to_string())
                .send()
                .await
                .map(|_| ())
                .map_err(|e| DisplayErrorContext(&e).to_string())
        })
    }
}
