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
            // of the wrong type, held to the API's document): the model reads it like
            // the API's own 400, field first.
            Err(invalid @ CliError::Invalid { .. }) => Ok(ControlAnswer {
                status: 400,
                body: json!({ "error": invalid.to_string() }),
            }),
            Err(err) => Err(err.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request the API's document refuses is answered as the API's 400, naming the
    /// field, without a call: the client is built on an address nothing listens at.
    #[tokio::test]
    async fn a_request_the_document_refuses_reads_as_the_api_s_400() {
        let client = ControlClient::unsigned("http://127.0.0.1:9");
        let body = serde_json::json!({"agent": "a", "message": "m", "parts": [{"kind": "image"}]});
        let answer = ControlApi::call(&client, "POST", "/standins".into(), Some(body))
            .await
            .expect("answered without a call");
        assert_eq!(answer.status, 400);
        assert!(
            answer.body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("parts[0]")),
            "{}",
            answer.body
        );
        let unreachable = ControlApi::call(&client, "GET", "/standins".into(), None).await;
        assert!(unreachable.is_err(), "{unreachable:?}");
    }
}
