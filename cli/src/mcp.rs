//! `standin mcp`: the MCP tools over stdio, each call signed with the caller's AWS
//! credentials as every other command's.

use serde_json::{Value, json};
use standin_mcp::{ControlAnswer, ControlApi};

use crate::{CliError, ControlClient};

impl ControlApi for ControlClient {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<ControlAnswer, String> {
        match ControlClient::call(self, method, &path, body.as_ref()).await {
            Ok(answer) => Ok(ControlAnswer {
                status: answer.status,
                body: answer.body,
            }),
            // Refused before it was sent, as the API would refuse it (a field missing or
            // of the wrong type): the model reads it like the API's own 400.
            Err(CliError::Refused(said)) => Ok(ControlAnswer {
                status: 400,
                body: json!({ "error": said }),
            }),
            Err(err) => Err(err.to_string()),
        }
    }
}
