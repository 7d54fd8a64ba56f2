//! A parent's webhook on a stand-in: `PUT /standins/{task_id}/webhooks/{webhook_id}` sets
//! one, `GET /standins/{task_id}/webhooks` lists them, `DELETE …/{webhook_id}` removes one.
//! Every note of the stand-in after `after` is POSTed to it, in order, as A2A 1.0
//! `StreamResponse`s (the A2A front's push notifications).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::control::{BodyError, field_refused};

/// The longest webhook URL.
pub const MAX_WEBHOOK_URL_CHARS: usize = 2048;
/// The longest token or `Authorization` value.
pub const MAX_WEBHOOK_SECRET_CHARS: usize = 1024;

/// The body of a `PUT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRequest {
    pub url: String,
    /// Sent as `X-A2A-Notification-Token` with every POST.
    pub token: Option<String>,
    /// Sent as `Authorization` with every POST (`Bearer abc`, say).
    pub authorization: Option<String>,
    /// The notes after this number are sent; absent, the notes from now on.
    pub after: Option<u64>,
}

fn optional_text(body: &Value, field: &str, most: usize) -> Result<Option<String>, BodyError> {
    match &body[field] {
        Value::Null => Ok(None),
        Value::String(text) if text.chars().count() > most => Err(field_refused(
            field,
            format!("must be at most {most} characters, got {}", text.chars().count()),
        )),
        // A header value: visible ASCII and spaces only.
        Value::String(text) if text.chars().any(|c| !(' '..='~').contains(&c)) => Err(
            field_refused(field, "must be printable ASCII (it is sent as a header)"),
        ),
        Value::String(text) => Ok(Some(text.clone())),
        _ => Err(field_refused(field, "must be a string")),
    }
}

impl WebhookRequest {
    pub fn parse(body: &Value) -> Result<Self, BodyError> {
        if !body.is_object() {
            return Err(BodyError(
                "the body must be a JSON object with url (and token, authorization, after)".into(),
            ));
        }
        let url = match &body["url"] {
            Value::String(url) if url.chars().count() > MAX_WEBHOOK_URL_CHARS => {
                return Err(field_refused(
                    "url",
                    format!("must be at most {MAX_WEBHOOK_URL_CHARS} characters"),
                ));
            }
            Value::String(url) => match url::Url::parse(url) {
                Ok(parsed) if matches!(parsed.scheme(), "https" | "http") => url.clone(),
                _ => return Err(field_refused("url", "must be an http(s) URL")),
            },
            Value::Null => return Err(field_refused("url", "is required")),
            _ => return Err(field_refused("url", "must be a string")),
        };
        let after = match &body["after"] {
            Value::Null => None,
            other => Some(
                other
                    .as_u64()
                    .ok_or_else(|| field_refused("after", format!("must be a whole number ≥ 0, got {other}")))?,
            ),
        };
        Ok(Self {
            url,
            token: optional_text(body, "token", MAX_WEBHOOK_SECRET_CHARS)?,
            authorization: optional_text(body, "authorization", MAX_WEBHOOK_SECRET_CHARS)?,
            after,
        })
    }
}

/// A webhook as the API shows it: never its token or `Authorization`, only whether it
/// has them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookView {
    pub webhook_id: String,
    pub url: String,
    /// Every note up to this number has been delivered (or was before the webhook).
    pub through: u64,
    pub has_token: bool,
    pub has_authorization: bool,
}

/// `GET /standins/{task_id}/webhooks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}
