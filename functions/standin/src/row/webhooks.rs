//! A parent's webhooks on the row: URLs every note of the stand-in is also POSTed to
//! (the A2A front's push notification configs), each with how far it has been delivered.
//! The deliverer (`crate::webhook`) moves `through`; the control API sets and deletes.

use std::future::Future;

use serde::{Deserialize, Serialize};

use super::{Row, StoreError};

pub const MAX_WEBHOOKS: usize = 4;

/// A value the parent's webhook checks (its token, its `Authorization`): sent with every
/// delivery, never logged (its `Debug` hides it) and never shown back.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(…)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Webhook {
    pub url: String,
    /// Sent as `X-A2A-Notification-Token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<WebhookSecret>,
    /// Sent as `Authorization` (scheme and credentials, as A2A's `authentication` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<WebhookSecret>,
    /// Every note up to this number has been delivered (or was before the webhook was
    /// set); the deliverer sends the ones after it, in order.
    pub through: u64,
    /// Chosen at random when the webhook is set: a delivery's mark for a webhook since
    /// replaced under the same id changes nothing.
    pub version: u64,
    /// Since when (epoch ms) its deliveries have failed with no note taken; cleared by
    /// the next note it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<u64>,
}

impl Webhook {
    pub fn new(url: impl Into<String>, through: u64) -> Self {
        Self {
            url: url.into(),
            token: None,
            authorization: None,
            through,
            version: rand::random(),
            failing_since: None,
        }
    }
}

/// The row's webhooks: set, deleted, delivered.
pub trait Webhooks: Send + Sync {
    /// Sets webhook `id` (new, or replacing the one of that id); `NotFound` without the
    /// row, `Refused` when the stand-in has [`MAX_WEBHOOKS`] others. Returns the row.
    fn set_webhook(
        &self,
        task_id: &str,
        id: &str,
        webhook: &Webhook,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Deletes webhook `id`; false when there was none of that id.
    fn delete_webhook(
        &self,
        task_id: &str,
        id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Records that a delivery to webhook `id` (of `version`) failed at `now_ms`; returns
    /// since when it has been failing (None: the webhook is gone or replaced).
    fn fail_webhook(
        &self,
        task_id: &str,
        id: &str,
        version: u64,
        now_ms: u64,
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;
    /// Marks webhook `id` delivered through `seq` (and failing no more), if it is still
    /// the one of `version` and not already as far; false when nothing changed.
    fn mark_webhook(
        &self,
        task_id: &str,
        id: &str,
        version: u64,
        seq: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}
