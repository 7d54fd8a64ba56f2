//! The follow queue on SQS (standard): the state machine sends a request per followed
//! park (`sqs:sendMessage.waitForTaskToken`), the event source mapping starts followers
//! with a batch, and followers take more and hand parks back here.

use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, SendMessageBatchRequestEntry};
use tracing::warn;

use super::follower::{FollowRequests, RequestsError};

#[derive(Clone)]
pub struct SqsFollowRequests {
    client: Client,
    queue_url: String,
}

impl SqsFollowRequests {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// Deletes taken requests: a take's, and those the event source mapping invoked the
    /// follower with (one in flight for the whole window would look old to the queue's age
    /// metric, and come back after the visibility timeout should the follower die).
    pub async fn delete_batch(&self, receipt_handles: Vec<String>) {
        for chunk in receipt_handles.chunks(SQS_BATCH) {
            let entries: Vec<_> = chunk
                .iter()
                .enumerate()
                .filter_map(|(i, handle)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(handle)
                        .build()
                        .ok()
                })
                .collect();
            if let Err(err) = self
                .client
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                warn!(error = %DisplayErrorContext(err), "deleting taken follow requests failed");
            }
        }
    }

    /// Sends up to ten requests; those SQS did not take.
    async fn send_batch<'a>(&self, requests: &[&'a String]) -> Vec<&'a String> {
        let entries: Vec<_> = requests
            .iter()
            .enumerate()
            .filter_map(|(i, body)| {
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(*body)
                    .build()
                    .ok()
            })
            .collect();
        match self
            .client
            .send_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(entries))
            .send()
            .await
        {
            Ok(answer) => answer
                .failed
                .iter()
                .filter_map(|f| f.id.parse::<usize>().ok())
                .filter_map(|i| requests.get(i).copied())
                .collect(),
            Err(err) => {
                warn!(error = %DisplayErrorContext(err), "SendMessageBatch of follow requests failed");
                requests.to_vec()
            }
        }
    }
}

/// SQS's most per ReceiveMessage, SendMessageBatch and DeleteMessageBatch.
const SQS_BATCH: usize = 10;
/// SQS's longest long poll.
const LONGEST_WAIT: Duration = Duration::from_secs(20);

impl FollowRequests for SqsFollowRequests {
    async fn take(&self, at_most: usize, wait: Duration) -> Result<Vec<String>, RequestsError> {
        let wait_secs = wait.min(LONGEST_WAIT).as_secs();
        let received = self
            .client
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(at_most.clamp(1, SQS_BATCH) as i32)
            .wait_time_seconds(wait_secs as i32)
            .send()
            .await
            .map_err(|e| RequestsError(format!("ReceiveMessage: {}", DisplayErrorContext(e))))?;
        let messages = received.messages.unwrap_or_default();
        // A request whose delete fails comes back after the visibility timeout: by then
        // its park is over (a heartbeat timeout), or its hand-on is claimed, which fences
        // a second follow (`Parks::claim_follow`).
        let handles = messages.iter().filter_map(|m| m.receipt_handle.clone());
        self.delete_batch(handles.collect()).await;
        Ok(messages.into_iter().filter_map(|m| m.body).collect())
    }

    async fn hand_back(&self, requests: Vec<String>) -> usize {
        let mut failed = 0;
        for chunk in requests.chunks(SQS_BATCH) {
            // Entries SQS did not take are sent once more: a park not handed back waits
            // for its heartbeat timeout (30 s) to be followed again.
            let mut pending: Vec<&String> = chunk.iter().collect();
            for attempt in 0..2 {
                pending = self.send_batch(&pending).await;
                if pending.is_empty() {
                    break;
                }
                if attempt == 1 {
                    warn!(
                        count = pending.len(),
                        "handing back follow requests failed; their heartbeat timeouts will re-follow them"
                    );
                }
            }
            failed += pending.len();
        }
        failed
    }
}
