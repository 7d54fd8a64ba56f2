//! HTTP in and out for the push receiver, which decides in the library
//! (`push::receiver`); this only carries the request and the answer. The control API is
//! the control plane's (`standin_control_plane`).

use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::Error;

use super::deps::PushDeps;
use crate::push::receiver;

pub(super) async fn push(
    deps: &'static PushDeps,
    request: Request,
) -> Result<Response<Body>, Error> {
    let params = request.path_parameters();
    let task_id = params.first("task_id").unwrap_or_default().to_owned();
    let body: &[u8] = match request.body() {
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => &[],
    };
    let (store, bell, headers) = (&deps.rows.store, &deps.rows.bell, request.headers());
    let answer = match &deps.hearer {
        Some(hearer) => receiver::receive_heard(store, bell, hearer, &task_id, headers, body).await,
        None => receiver::receive(store, bell, &task_id, headers, body).await,
    };
    let mut response = Response::builder().status(answer.status);
    if !answer.body.is_empty() {
        response = response.header("content-type", "application/json");
    }
    Ok(response.body(Body::from(answer.body))?)
}
