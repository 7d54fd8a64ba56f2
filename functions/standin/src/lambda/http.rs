//! HTTP in and out for the push receiver, which decides in the library
//! (`push::receiver`); this only carries the request and the answer. The control API is
//! its own router (`control::http`).

use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::Error;

use super::deps::Rows;
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
