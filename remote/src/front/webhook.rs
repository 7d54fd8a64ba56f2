//! A parent's webhook, as an A2A agent's push sender calls it: each note of a task is
//! POSTed as A2A 1.0 `StreamResponse`s (an `artifactUpdate` per artifact it carries, then
//! its `statusUpdate`), with the parent's token in `X-A2A-Notification-Token` and its
//! `authentication` as `Authorization`, the way the official SDKs' senders do.

use std::time::Duration;

use serde_json::{Value, json};

use super::task;

/// How long one POST may take: a webhook that is slower is tried again later.
pub const POST_BOUND: Duration = Duration::from_secs(5);

/// The events that tell `note` (a note of the control API's note log, as JSON) of a task
/// in context `context` (the parent's, else the task's id).
pub fn events(note: &Value, context: Option<&str>) -> Vec<Value> {
    let task_id = note["task_id"].as_str().unwrap_or_default();
    let context = context.unwrap_or(task_id);
    let mut events: Vec<Value> = note["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|view| {
            json!({"artifactUpdate": {
                "taskId": task_id,
                "contextId": context,
                "artifact": task::artifact(view, &[]),
                "lastChunk": true,
            }})
        })
        .collect();
    events.push(json!({"statusUpdate": {
        "taskId": task_id,
        "contextId": context,
        "status": task::status_of(task_id, context, note),
        "metadata": {"seq": note["seq"]},
    }}));
    events
}

/// Why a POST to a webhook did not land.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("the webhook at {origin} answered HTTP {status}")]
    Status { origin: String, status: u16 },
    #[error("the webhook at {origin} could not be reached: {why}")]
    Unreachable { origin: String, why: String },
}

/// What a POST sends besides its body.
pub struct Credentials<'a> {
    pub token: Option<&'a str>,
    pub authorization: Option<&'a str>,
}

/// POSTs `event` to `url`; any 2xx is taken. `http` is the agents' client (no redirect
/// followed: a 307 would send the token on to wherever it points).
pub async fn post(
    http: &reqwest::Client,
    url: &str,
    credentials: &Credentials<'_>,
    event: &Value,
) -> Result<(), WebhookError> {
    let origin = reqwest::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|_| "(not a URL)".to_owned());
    let mut request = http.post(url).timeout(POST_BOUND).json(event);
    if let Some(token) = credentials.token {
        request = request.header("X-A2A-Notification-Token", token);
    }
    if let Some(authorization) = credentials.authorization {
        request = request.header(reqwest::header::AUTHORIZATION, authorization);
    }
    let answer = request
        .send()
        .await
        // The error's own text may quote the URL; the origin is enough to act on.
        .map_err(|e| WebhookError::Unreachable {
            origin: origin.clone(),
            why: if e.is_timeout() {
                format!("no answer within {POST_BOUND:?}")
            } else if e.is_connect() {
                "the connection was refused or failed".to_owned()
            } else {
                "the request failed".to_owned()
            },
        })?;
    let status = answer.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(WebhookError::Status {
            origin,
            status: status.as_u16(),
        })
    }
}
