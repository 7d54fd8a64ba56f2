//! The MCP tools over Streamable HTTP at the control API's own `/mcp`: each tool's call
//! goes to the API's routes in the same process, so the tools check nothing the routes
//! do not, and answer with the same words.

use axum::Router;
use axum::body::Body;
use serde_json::Value;
use standin_mcp::{ControlAnswer, ControlApi};
use tower::ServiceExt;

/// The largest answer a tool reads from a route (an artifacts page is about 1 MiB).
const MAX_ANSWER_BYTES: usize = 8 << 20;

/// The control API's routes, called in process.
pub struct InProcess {
    routes: Router,
}

impl InProcess {
    pub fn new(routes: Router) -> Self {
        Self { routes }
    }
}

impl ControlApi for InProcess {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<ControlAnswer, String> {
        let request = http::Request::builder()
            .method(method)
            .uri(&path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.map_or_else(Body::empty, |body| Body::from(body.to_string())))
            .map_err(|err| format!("{method} {path} is not a request: {err}"))?;
        let answer = match self.routes.clone().oneshot(request).await {
            Ok(answer) => answer,
            Err(never) => match never {},
        };
        let status = answer.status().as_u16();
        let bytes = axum::body::to_bytes(answer.into_body(), MAX_ANSWER_BYTES)
            .await
            .map_err(|err| format!("{method} {path}: the answer did not read: {err}"))?;
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(ControlAnswer { status, body })
    }
}
