//! The front's push notifications: a parent's `TaskPushNotificationConfig` is a webhook
//! of the stand-in (the control API's `/standins/{id}/webhooks`), to which the webhook
//! function POSTs every note, in order, as `StreamResponse`s (`webhook.rs`). Its token
//! and `authentication` are kept for the POSTs and never shown back.

use serde_json::{Value, json};

use super::rpc::{RpcError, field};

/// What a parent's config asks, in the control API's terms.
pub struct Asked {
    /// The configuration's id: the task's own when the parent names none (as the
    /// official SDK does).
    pub id: Option<String>,
    pub body: Value,
}

/// Reads a `TaskPushNotificationConfig` (CreateTaskPushNotificationConfig's params, or
/// SendMessage's `configuration.taskPushNotificationConfig`).
pub fn read(config: &Value) -> Result<Asked, RpcError> {
    let url = field(config, "url")
        .as_str()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| RpcError::invalid_params("url: the webhook's URL is required"))?;
    let mut body = json!({"url": url});
    if let Some(token) = field(config, "token").as_str().filter(|t| !t.is_empty()) {
        body["token"] = token.into();
    }
    let authentication = field(config, "authentication");
    let scheme = field(authentication, "scheme").as_str().unwrap_or_default();
    let credentials = field(authentication, "credentials")
        .as_str()
        .unwrap_or_default();
    if !scheme.is_empty() && !credentials.is_empty() {
        body["authorization"] = format!("{scheme} {credentials}").into();
    }
    Ok(Asked {
        id: field(config, "id")
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_owned),
        body,
    })
}

/// A webhook of the control API as A2A's config (no token: it is never shown back).
pub(super) fn config(task_id: &str, view: &Value) -> Value {
    json!({"taskId": task_id, "id": view["webhook_id"], "url": view["url"]})
}

pub(super) fn not_offered() -> RpcError {
    RpcError::push_not_supported("this deployment delivers no push notifications")
}
