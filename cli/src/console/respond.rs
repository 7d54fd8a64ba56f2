//! A page, or what went wrong reading it, as the browser's answer.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::Console;
use super::views::ErrorPage;
use crate::CliError;

pub(crate) fn render(page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the page did not render: {err}"),
        )
            .into_response(),
    }
}

/// What went wrong reading, as a page: the CLI's own one-line error, which says what to do.
pub(crate) fn failed(console: &Console, title: &str, err: &CliError) -> Response {
    let status = match err {
        CliError::UnknownStandIn { .. } => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_GATEWAY,
    };
    let page = ErrorPage {
        stack: console.stack.clone(),
        title: title.to_owned(),
        message: err.to_string(),
    };
    (status, render(&page)).into_response()
}
