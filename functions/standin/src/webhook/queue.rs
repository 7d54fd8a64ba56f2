//! The webhook queue's batch (SQS FIFO, grouped by stand-in, so one delivery per
//! stand-in runs at a time): each stand-in delivered once however many of its messages
//! came, a failure tried again after a growing delay.

/// Time kept back from the function's deadline for the marks and the delays after the
/// last POST.
pub const WEBHOOK_MARGIN: Duration = Duration::from_secs(15);

use std::collections::BTreeMap;
use std::time::Duration;

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use tokio::time::Instant;

use super::{Delivered, Redelivery, WebhookPoster, deliver};
use crate::metrics::Metric;
use crate::row::{Notes, StandIns, Webhooks};

/// How long a webhook may fail with no note taken before its delivery is given up (a
/// delivery that only ran out of time is never given up).
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(8 * 60);
const FIRST_DELAY: Duration = Duration::from_secs(2);
const MOST_DELAY: Duration = Duration::from_secs(30);

/// The delay after the `tries`-th failed try: 2 s, doubling, at most 30 s.
pub fn delay_after(tries: u32) -> Duration {
    let doubled = FIRST_DELAY.saturating_mul(1 << tries.saturating_sub(1).min(8));
    doubled.min(MOST_DELAY)
}

fn task_of(message: &SqsMessage) -> Option<String> {
    let body: serde_json::Value = serde_json::from_str(message.body.as_deref()?).ok()?;
    body["task_id"].as_str().map(str::to_owned)
}

fn tries_of(message: &SqsMessage) -> u32 {
    message
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// Delivers each stand-in of the batch; the answer names the messages to try again.
pub async fn handle<S: StandIns + Notes + Webhooks, P: WebhookPoster, R: Redelivery>(
    store: &S,
    poster: &P,
    redelivery: &R,
    event: &SqsEvent,
    stop_at: Instant,
) -> SqsBatchResponse {
    let mut by_task: BTreeMap<String, Vec<&SqsMessage>> = BTreeMap::new();
    for message in &event.records {
        match task_of(message) {
            Some(task_id) => by_task.entry(task_id).or_default().push(message),
            None => tracing::error!(
                message_id = message.message_id.as_deref().unwrap_or_default(),
                "a webhook queue message that names no stand-in; dropped"
            ),
        }
    }
    let deliveries = by_task.iter().map(|(task_id, messages)| async move {
        let now = crate::clock::now_ms();
        let outcome = match deliver(store, poster, task_id, stop_at).await {
            Ok(outcome) => outcome,
            // Ours, not the webhook's: tried again, never given up for it.
            Err(err) => Delivered::Failed {
                why: err.to_string(),
                since: now,
            },
        };
        let tries = messages.iter().map(|m| tries_of(m)).max().unwrap_or(1);
        let delay = match outcome {
            Delivered::All => return Vec::new(),
            // Out of time, not failed: on at once.
            Delivered::More => Duration::ZERO,
            Delivered::Failed { why, since }
                if Duration::from_millis(now.saturating_sub(since)) >= GIVE_UP_AFTER =>
            {
                crate::metrics::record(Metric::WebhookGaveUp, 1.0, None, Some(task_id));
                tracing::error!(task_id = %task_id, tries, error = %why,
                    "webhook delivery given up; the stand-in's next note tries again");
                return Vec::new();
            }
            Delivered::Failed { .. } => delay_after(tries),
        };
        let mut failed = Vec::new();
        for message in messages {
            if let Some(receipt) = &message.receipt_handle {
                redelivery.redeliver_in(receipt, delay).await;
            }
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message.message_id.clone().unwrap_or_default();
            failed.push(failure);
        }
        failed
    });
    let failures = futures_util::future::join_all(deliveries).await;
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures.into_iter().flatten().collect();
    response
}
