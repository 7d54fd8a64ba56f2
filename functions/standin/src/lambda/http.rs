//! HTTP in and out for the two APIs: the push receiver and the control API decide in the
//! library (`push::receiver`, `control`); this only carries requests and
//! answers.

use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::Error;
use serde_json::Value;

use super::deps::{ControlDeps, Rows};
use crate::control::{self, Control};
use crate::push::receiver;

pub(super) async fn push(deps: &'static Rows, request: Request) -> Result<Response<Body>, Error> {
    let params = request.path_parameters();
    let task_id = params.first("task_id").unwrap_or_default().to_owned();
    let body: &[u8] = match request.body() {
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => &[],
    };
    let answer =
        receiver::receive(&deps.store, &deps.bell, &task_id, request.headers(), body).await;
    let mut response = Response::builder().status(answer.status);
    if !answer.body.is_empty() {
        response = response.header("content-type", "application/json");
    }
    Ok(response.body(Body::from(answer.body))?)
}

pub(super) async fn control(
    deps: &'static ControlDeps,
    request: Request,
) -> Result<Response<Body>, Error> {
    let path = request.raw_http_path().trim_end_matches('/').to_owned();
    let params = request.path_parameters();
    let query = request.query_string_parameters();
    let body = match request.body() {
        Body::Text(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        Body::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let call = control::route(
        request.method().as_str(),
        &path,
        params.first("task_id"),
        query.first("after"),
        &body,
    );
    let answer = Control {
        store: &deps.rows.store,
        bell: &deps.rows.bell,
        executions: &deps.executions,
        agents: &deps.agents,
    }
    .handle(call)
    .await;
    Ok(Response::builder()
        .status(answer.status)
        .header("content-type", "application/json")
        .body(Body::from(answer.body.to_string()))?)
}
