//! The MCP tools over Streamable HTTP at the control API's own `/mcp`: each tool's call
//! goes to the API's routes in the same process ([`InProcess`]).

use serde_json::Value;
use standin_mcp::{ControlAnswer, ControlApi};

use super::in_process::InProcess;

impl ControlApi for InProcess {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<ControlAnswer, String> {
        let (status, body) = self.route(method, &path, body).await?;
        Ok(ControlAnswer { status, body })
    }
}
