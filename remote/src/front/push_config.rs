//! The front's push notifications: a parent's `TaskPushNotificationConfig` is a webhook
//! of the stand-in (the control API's `/standins/{id}/webhooks`), to which the webhook
//! function POSTs every note, in order, as `StreamResponse`s (`webhook.rs`). Its token
//! and `authentication` are kept for the POSTs and never shown back.

use serde_json::{Value, json};

use super::rpc::{self, RpcError, field};
use super::{ControlCalls, Front};

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
fn config(task_id: &str, view: &Value) -> Value {
    json!({"taskId": task_id, "id": view["webhook_id"], "url": view["url"]})
}

impl<C: ControlCalls> Front<'_, C> {
    /// Sets the config `asked` on `task_id`, for the notes after `after` (None: from now).
    pub(super) async fn set_push(
        &self,
        task_id: &str,
        asked: Asked,
        after: Option<u64>,
    ) -> Result<Value, RpcError> {
        self.stand_in(task_id).await?;
        let id = asked.id.unwrap_or_else(|| task_id.to_owned());
        let mut body = asked.body;
        if let Some(after) = after {
            body["after"] = after.into();
        }
        let path = format!(
            "/standins/{}/webhooks/{}",
            rpc::task_segment(task_id)?,
            rpc::segment(&id)?
        );
        let answer = self.call("PUT", path, Some(body)).await?;
        match answer.status {
            200 => Ok(config(task_id, &answer.body)),
            409 => Err(RpcError::invalid_params(
                answer.body["error"].as_str().unwrap_or_default(),
            )),
            501 => Err(not_offered()),
            _ => Err(rpc::refused(&answer, task_id)),
        }
    }

    pub(super) async fn push_configs(&self, task_id: &str) -> Result<Vec<Value>, RpcError> {
        self.stand_in(task_id).await?;
        let path = format!("/standins/{}/webhooks", rpc::task_segment(task_id)?);
        let answer = self.call("GET", path, None).await?;
        if answer.status != 200 {
            return Err(rpc::refused(&answer, task_id));
        }
        Ok(answer.body["webhooks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|view| config(task_id, view))
            .collect())
    }

    pub(super) async fn push_config(&self, task_id: &str, id: &str) -> Result<Value, RpcError> {
        self.push_configs(task_id)
            .await?
            .into_iter()
            .find(|config| config["id"] == id)
            .ok_or_else(|| RpcError::not_found(task_id))
    }

    pub(super) async fn delete_push(&self, task_id: &str, id: &str) -> Result<Value, RpcError> {
        self.stand_in(task_id).await?;
        let path = format!(
            "/standins/{}/webhooks/{}",
            rpc::task_segment(task_id)?,
            rpc::segment(id)?
        );
        let answer = self.call("DELETE", path, None).await?;
        match answer.status {
            200 => Ok(json!({})),
            _ => Err(rpc::refused(&answer, task_id)),
        }
    }
}

pub(super) fn not_offered() -> RpcError {
    RpcError::push_not_supported("this deployment delivers no push notifications")
}
