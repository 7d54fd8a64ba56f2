//! A parent's webhook on a stand-in: `PUT /standins/{task_id}/webhooks/{webhook_id}` sets
//! one (or a start's `webhook`), `GET /standins/{task_id}/webhooks` lists them, `DELETE
//! …/{webhook_id}` removes one. Every note of the stand-in after `after` is POSTed to it,
//! in order, as A2A 1.0 `StreamResponse`s (the A2A front's push notifications).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::body_error::{BodyError, field_refused};

/// The longest webhook URL. A stand-in's webhooks are on its row, and every write of the
/// row pays for their size: 4 webhooks at these bounds add under 8 KiB.
pub const MAX_WEBHOOK_URL_CHARS: usize = 1024;
/// The longest token or `Authorization` value.
pub const MAX_WEBHOOK_SECRET_CHARS: usize = 512;
/// The longest webhook id.
pub const MAX_WEBHOOK_ID_CHARS: usize = 64;

/// Whether `id` may name a webhook: 1 to 64 letters, digits, `.`, `_`, `-` or `:`.
pub fn is_webhook_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_WEBHOOK_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
}

/// The rule [`is_webhook_id`] checks, as a refusal says it.
pub const WEBHOOK_ID_RULE: &str = "must be 1 to 64 letters, digits, '.', '_', '-' or ':'";

/// The body of a `PUT`, or a start's `webhook`. Its `Debug` leaves out the token and the
/// authorization.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookRequest {
    /// A start's webhook only (a `PUT` names it in its path): absent, the stand-in's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_id: Option<String>,
    pub url: String,
    /// Sent as `X-A2A-Notification-Token` with every POST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Sent as `Authorization` with every POST (`Bearer abc`, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<String>,
    /// The notes after this number are sent. Absent: a `PUT`'s, the notes from now on;
    /// a start's, every note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
}

impl std::fmt::Debug for WebhookRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookRequest")
            .field("webhook_id", &self.webhook_id)
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("authorization", &self.authorization.as_ref().map(|_| "…"))
            .field("after", &self.after)
            .finish()
    }
}

fn optional_text(
    body: &Value,
    at: &str,
    field: &str,
    most: usize,
) -> Result<Option<String>, BodyError> {
    let name = format!("{at}{field}");
    match &body[field] {
        Value::Null => Ok(None),
        Value::String(text) if text.chars().count() > most => Err(field_refused(
            &name,
            format!(
                "must be at most {most} characters, got {}",
                text.chars().count()
            ),
        )),
        // A header value: visible ASCII and spaces only.
        Value::String(text) if text.chars().any(|c| !(' '..='~').contains(&c)) => Err(
            field_refused(&name, "must be printable ASCII (it is sent as a header)"),
        ),
        Value::String(text) => Ok(Some(text.clone())),
        _ => Err(field_refused(&name, "must be a string")),
    }
}

impl WebhookRequest {
    /// A `PUT`'s body.
    pub fn parse(body: &Value) -> Result<Self, BodyError> {
        Self::parse_at(body, "")
    }

    /// `body` read with its fields named under `at` (`webhook.` for a start's).
    pub fn parse_at(body: &Value, at: &str) -> Result<Self, BodyError> {
        if !body.is_object() {
            return Err(BodyError(format!(
                "{}must be a JSON object with url (and token, authorization, after)",
                if at.is_empty() {
                    "the body: ".to_owned()
                } else {
                    format!("{}: ", at.trim_end_matches('.'))
                }
            )));
        }
        let url = match &body["url"] {
            Value::String(url) if url.chars().count() > MAX_WEBHOOK_URL_CHARS => {
                return Err(field_refused(
                    &format!("{at}url"),
                    format!("must be at most {MAX_WEBHOOK_URL_CHARS} characters"),
                ));
            }
            Value::String(url) => match url::Url::parse(url) {
                // A user or password in the URL would be shown back with it: the
                // credentials go in `token` or `authorization`, which never are.
                Ok(parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
                    return Err(field_refused(
                        &format!("{at}url"),
                        "must hold no user or password: put the credential in token or authorization",
                    ));
                }
                Ok(parsed) if matches!(parsed.scheme(), "https" | "http") => url.clone(),
                _ => return Err(field_refused(&format!("{at}url"), "must be an http(s) URL")),
            },
            Value::Null => return Err(field_refused(&format!("{at}url"), "is required")),
            _ => return Err(field_refused(&format!("{at}url"), "must be a string")),
        };
        let after = match &body["after"] {
            Value::Null => None,
            other => Some(other.as_u64().ok_or_else(|| {
                field_refused(
                    &format!("{at}after"),
                    format!("must be a whole number ≥ 0, got {other}"),
                )
            })?),
        };
        let webhook_id = match &body["webhook_id"] {
            Value::Null => None,
            Value::String(id) if is_webhook_id(id) => Some(id.clone()),
            _ => return Err(field_refused(&format!("{at}webhook_id"), WEBHOOK_ID_RULE)),
        };
        Ok(Self {
            webhook_id,
            url,
            token: optional_text(body, at, "token", MAX_WEBHOOK_SECRET_CHARS)?,
            authorization: optional_text(body, at, "authorization", MAX_WEBHOOK_SECRET_CHARS)?,
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
