//! The parent's webhooks: every note of a stand-in with webhooks is POSTed to each of
//! them, in order and at least once. The outbox only queues the stand-in on the webhook
//! queue (an outlet like the parent's queue, `outbox/deliver.rs`); the webhook function
//! takes it from there, so a webhook that is slow or down holds back no outlet and no
//! other stand-in:
//!
//! - `deliver.rs`: each webhook (side by side) POSTed the note log after its mark, one
//!   note at a time, the mark moved after each;
//! - `queue.rs`: the queue's batch, one delivery per stand-in: a failed one retried with a
//!   growing delay, given up after [`GIVE_UP_AFTER`] (counted, logged; its mark stays, so
//!   the stand-in's next note tries again from there), one out of time at once;
//! - `http.rs`: the POST, through the agents' client and reach rules;
//! - `sqs.rs`: the queue on SQS (deliveries added, delays set).

mod deliver;
pub mod http;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
mod queue;
pub mod sqs;

use std::future::Future;

use futures_util::future::BoxFuture;
use std::time::Duration;

pub use deliver::{Delivered, deliver};
pub use queue::{GIVE_UP_AFTER, WEBHOOK_MARGIN, delay_after, handle};

use crate::row::Webhook;
use standin_wire::ParentNote;

/// Where a note is POSTed.
pub trait WebhookPoster: Send + Sync {
    /// POSTs `note` of a task in the parent's `context` (if its start named one) to
    /// `hook`; the error says why, without the webhook's secrets or path.
    fn post(
        &self,
        hook: &Webhook,
        context: Option<&str>,
        note: &ParentNote,
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// The webhook queue, as the control API adds to it: a webhook set late gets the notes
/// already written after its `after` without waiting for the next one.
pub trait DeliveryQueue: Send + Sync {
    /// Queues a delivery of `task_id`'s webhooks; `why` tells this request from others
    /// (the queue deduplicates on it).
    fn queue<'a>(&'a self, task_id: &'a str, why: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// The webhook queue's messages, tried again later.
pub trait Redelivery: Send + Sync {
    /// The message of `receipt` comes back after `delay`.
    fn redeliver_in(&self, receipt: &str, delay: Duration) -> impl Future<Output = ()> + Send;
}
