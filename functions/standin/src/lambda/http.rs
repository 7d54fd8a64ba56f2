//! HTTP in and out for the push receiver, which decides in the library
//! (`push::receiver`); this only carries the request and the answer. The control API is
//! its own router (`control::http`).

use lambda_http::request::RequestContext;
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

/// The request with its path as the control API's document writes it (API Gateway's
/// resource, the id filled in), whatever the URL's stage or base path; a request without
/// a resource (not from API Gateway REST) keeps its own.
pub(super) fn by_resource(mut request: Request) -> Request {
    let resource = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(context)) => context.resource_path.clone(),
        _ => None,
    };
    let Some(resource) = resource else {
        return request;
    };
    let params = request.path_parameters();
    let filled: Vec<(&str, &str)> = crate::control::http::PATH_PARAMETERS
        .iter()
        .filter_map(|name| params.first(name).map(|value| (*name, value)))
        .collect();
    let path = crate::control::http::document_path(&resource, &filled);
    let uri = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    if let Ok(uri) = uri.parse() {
        *request.uri_mut() = uri;
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API Gateway REST proxy event for `resource`, reached at `path` (a stage, and
    /// a custom domain's base path, in front of the document's path).
    fn event(resource: &str, path: &str, task_id: Option<&str>, query: &str) -> Request {
        let params = task_id.map(|id| serde_json::json!({ "task_id": id }));
        let query: serde_json::Value = if query.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::json!({ "after": query })
        };
        let event = serde_json::json!({
            "resource": resource,
            "path": path,
            "httpMethod": "GET",
            "headers": {},
            "multiValueHeaders": {},
            "queryStringParameters": query,
            "multiValueQueryStringParameters": null,
            "pathParameters": params,
            "stageVariables": null,
            "requestContext": {
                "resourcePath": resource,
                "httpMethod": "GET",
                "stage": "Prod",
                "path": path,
                "accountId": "000000000000",
                "requestId": "r",
                "identity": {}
            },
            "body": null,
            "isBase64Encoded": false
        });
        lambda_http::request::from_str(&event.to_string())
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_router_sees_the_documents_path_whatever_the_url() {
        let request = event(
            "/standins/{task_id}/notes",
            "/api/standins/job%2F1/notes",
            Some("job/1"),
            "3",
        );
        assert!(
            request.uri().path().starts_with("/Prod/"),
            "lambda_http adds the stage"
        );
        let routed = by_resource(request);
        assert_eq!(routed.uri().path(), "/standins/job%2F1/notes");
        assert_eq!(routed.uri().query(), Some("after=3"));
        let list = by_resource(event("/standins", "/standins", None, ""));
        assert_eq!(list.uri().path(), "/standins");
    }
}
