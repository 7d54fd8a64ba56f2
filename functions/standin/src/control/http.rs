//! The control API's routes (axum): method and path to a [`Call`], its [`Answer`] back as
//! JSON. The paths are the OpenAPI document's, without the stage (the control function
//! runs with `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;

use super::{Answer, Call, Control, Executions};
use crate::doorbell::Doorbell;
use crate::row::RowStore;

#[derive(Debug, Deserialize)]
struct Page {
    after: Option<String>,
}

/// A body that is not JSON reads as `null`: each call says which field it lacks.
fn json(body: &Bytes) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

fn respond(answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        answer.body.to_string(),
    )
        .into_response()
}

/// Every route of `api/control.openapi.json`; anything else is a 404 naming it.
pub fn router<S, D, E>(control: Control<'static, S, D, E>) -> Router
where
    S: RowStore + 'static,
    D: Doorbell + 'static,
    E: Executions + 'static,
{
    Router::new()
        .route("/standins", post(start).get(list))
        .route("/standins/{task_id}", get(status))
        .route("/standins/{task_id}/reply", post(reply))
        .route("/standins/{task_id}/cancel", post(cancel))
        .route("/standins/{task_id}/notes", get(notes))
        .fallback(no_route)
        .method_not_allowed_fallback(no_route)
        .with_state(control)
}

type Api<S, D, E> = State<Control<'static, S, D, E>>;

async fn start<S: RowStore, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    body: Bytes,
) -> Response {
    respond(control.handle(Call::Start(&json(&body))).await)
}

async fn list<S: RowStore, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Query(page): Query<Page>,
) -> Response {
    let after = page.after;
    respond(
        control
            .handle(Call::List {
                after: after.as_deref(),
            })
            .await,
    )
}

async fn status<S: RowStore, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Path(task_id): Path<String>,
) -> Response {
    respond(control.handle(Call::Status { task_id: &task_id }).await)
}

async fn reply<S: RowStore, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Path(task_id): Path<String>,
    body: Bytes,
) -> Response {
    let body = json(&body);
    respond(
        control
            .handle(Call::Reply {
                task_id: &task_id,
                body: &body,
            })
            .await,
    )
}

async fn cancel<S: RowStore, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Path(task_id): Path<String>,
    body: Bytes,
) -> Response {
    let body = json(&body);
    respond(
        control
            .handle(Call::Cancel {
                task_id: &task_id,
                body: &body,
            })
            .await,
    )
}

async fn notes<S: RowStore, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Path(task_id): Path<String>,
    Query(page): Query<Page>,
) -> Response {
    let after = page.after;
    respond(
        control
            .handle(Call::Notes {
                task_id: &task_id,
                after: after.as_deref(),
            })
            .await,
    )
}

async fn no_route(method: Method, uri: Uri) -> Response {
    let path = uri.path().trim_end_matches('/');
    respond(Answer::error(404, format!("no route {method} {path}")))
}
