//! The control API's routes, called in the same process: the parents that speak another
//! protocol (the MCP tools at `/mcp`, the A2A front at `/a2a/…`) ask the API through it,
//! so they check nothing the routes do not, and answer with the same words.

use axum::Router;
use axum::body::Body;
use serde_json::Value;
use tower::ServiceExt;

/// The largest answer read from a route (an artifacts page is about 1 MiB).
const MAX_ANSWER_BYTES: usize = 8 << 20;

#[derive(Clone)]
pub struct InProcess {
    routes: Router,
}

impl InProcess {
    pub fn new(routes: Router) -> Self {
        Self { routes }
    }

    /// The route's status and JSON body (null when it has none).
    pub async fn route(
        &self,
        method: &'static str,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), String> {
        let request = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header(axum::http::header::CONTENT_TYPE, "application/json")
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
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ))
    }
}
