//! The front's push notification calls, each one call of the control API's webhooks
//! (`push_config.rs` reads a parent's config).

use serde_json::{Value, json};

use super::push_config::{Asked, config, not_offered};
use super::rpc::{self, RpcError};
use super::{ControlCalls, Front};

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
