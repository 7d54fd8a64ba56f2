//! JSON-RPC 2.0: every call a POST of `{"method", "params"}` to the one endpoint, every
//! answer `{"result"}` or `{"error"}`.

use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::header::CONTENT_TYPE;
use reqwest::{Client, RequestBuilder, Url};
use serde_json::{Value, json};

use super::over_http::Envelope;
use crate::a2a::call::Call;
use crate::a2a::v03;
use crate::error::RemoteError;

#[derive(Default)]
pub struct JsonRpc {
    next_id: AtomicU64,
}

impl Envelope for JsonRpc {
    fn request(
        &self,
        http: &Client,
        endpoint: &Url,
        call: &Call,
    ) -> Result<RequestBuilder, RemoteError> {
        let id = format!(
            "standin-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed) + 1
        );
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": call.rpc_method,
            "params": call.params,
        });
        Ok(http
            .post(endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .json(&body))
    }

    fn result(&self, value: Value, _status: u16, nothing: bool) -> Result<Value, RemoteError> {
        if nothing && value.get("error").is_none() {
            return Ok(value.get("result").cloned().unwrap_or(Value::Null));
        }
        result(value)
    }

    fn item(&self, value: Value) -> Result<Value, RemoteError> {
        result(value)
    }

    fn v03_item(&self, item: &Value) -> Value {
        v03::kinded_v1(item)
    }
}

fn result(mut value: Value) -> Result<Value, RemoteError> {
    if let Some(error) = value.get("error") {
        return Err(crate::a2a::error::from_error_object(error));
    }
    match value.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(RemoteError::InvalidResponse(
            "JSON-RPC response has neither result nor error".into(),
        )),
    }
}
