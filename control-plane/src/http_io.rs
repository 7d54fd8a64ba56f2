//! What every router of the control API shares: an answer written as JSON, and a
//! query's pairs as they came.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::ApiAnswer;

/// The query's pairs in order; `after` is the first one of that name (a repeated one is
/// not an error, as it was not before the router).
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(super) struct Pairs(Vec<(String, String)>);

impl Pairs {
    pub(super) fn after(&self) -> Option<&str> {
        self.named("after")
    }

    pub(super) fn named(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(super) fn respond(answer: ApiAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        answer.body.to_string(),
    )
        .into_response()
}
