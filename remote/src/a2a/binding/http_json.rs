//! HTTP+JSON: each call a resource under the endpoint (`POST /message:send`,
//! `GET /tasks/{id}`, …), its answer the body, an error the status with `{"error"}` (or,
//! in 0.3, only `{"message"}`).

use reqwest::header::CONTENT_TYPE;
use reqwest::{Client, RequestBuilder, Url};
use serde_json::Value;

use super::over_http::Envelope;
use crate::a2a::call::Call;
use crate::a2a::limits::bounded_message;
use crate::a2a::v03;
use crate::error::RemoteError;

pub struct HttpJson;

impl Envelope for HttpJson {
    fn request(
        &self,
        http: &Client,
        endpoint: &Url,
        call: &Call,
    ) -> Result<RequestBuilder, RemoteError> {
        let mut url = endpoint.clone();
        {
            let mut segments = url.path_segments_mut().map_err(|_| {
                RemoteError::Card("HTTP+JSON interface url cannot take a path".into())
            })?;
            segments.pop_if_empty();
            segments.extend(call.rest_path.iter());
        }
        if let Some((k, v)) = call.rest_query {
            url.query_pairs_mut().append_pair(k, v);
        }
        let builder = http.request(call.rest_method.clone(), url);
        Ok(match &call.rest_body {
            Some(body) => builder
                .header(CONTENT_TYPE, "application/a2a+json")
                .body(body.to_string()),
            None => builder,
        })
    }

    fn result(&self, value: Value, status: u16, _nothing: bool) -> Result<Value, RemoteError> {
        if (200..300).contains(&status) {
            Ok(value)
        } else {
            Err(error(&value, status))
        }
    }

    fn item(&self, value: Value) -> Result<Value, RemoteError> {
        match value.get("error") {
            Some(error) => Err(crate::a2a::error::from_error_object(error)),
            None => Ok(value),
        }
    }

    fn v03_item(&self, item: &Value) -> Value {
        v03::proto_v1(item)
    }
}

fn error(value: &Value, status: u16) -> RemoteError {
    match value.get("error") {
        Some(error) => crate::a2a::error::from_error_object(error),
        // 0.3's HTTP+JSON says only `{"message": …}` and the status.
        None => match (status, value.get("message").and_then(Value::as_str)) {
            (404, Some(message)) => RemoteError::TaskNotFound(bounded_message(message)),
            _ => RemoteError::Http { status },
        },
    }
}
