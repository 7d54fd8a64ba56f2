//! Where a request to the control API came from, as API Gateway's context tells it: the
//! base the A2A front's card names for itself, and the document's path whatever the
//! stage or a custom domain's base path.

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use standin::lambda::ApiUrlForm;

use crate::front::PublicBase;

/// Where the control API is reached from outside, read from API Gateway's context:
/// the domain the client called and the path before the document's (the stage, or a
/// custom domain's base path). None for a request not from API Gateway REST.
pub(super) fn public_base(request: &Request, form: ApiUrlForm) -> Option<PublicBase> {
    let Some(RequestContext::ApiGatewayV1(context)) = request.request_context_ref() else {
        return None;
    };
    let domain = context.domain_name.as_deref()?;
    if form == ApiUrlForm::LocalStack {
        let (api, stage) = (context.apiid.as_deref()?, context.stage.as_deref()?);
        return Some(PublicBase(format!(
            "http://{domain}/_aws/execute-api/{api}/{stage}"
        )));
    }
    let full = context.path.as_deref()?;
    let resource = context.resource_path.as_deref()?;
    // The document's path as the client wrote it: API Gateway's context path is not
    // decoded, and the ids that name a front (agents') are sent as they are.
    let params = request.path_parameters();
    let own = crate::http::PATH_PARAMETERS
        .iter()
        .fold(resource.to_owned(), |path, name| match params.first(name) {
            Some(value) => path.replace(&format!("{{{name}}}"), value),
            None => path,
        });
    let before = full.strip_suffix(&own)?;
    Some(PublicBase(format!("https://{domain}{before}")))
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
    let filled: Vec<(&str, &str)> = crate::http::PATH_PARAMETERS
        .iter()
        .filter_map(|name| params.first(name).map(|value| (*name, value)))
        .collect();
    let path = crate::http::document_path(&resource, &filled);
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

    /// An A2A front's card request, as API Gateway sends it for `domain` at `path`.
    fn card_request(domain: &str, path: &str) -> Request {
        let resource = "/a2a/{agent_id}/.well-known/agent-card.json";
        let event = serde_json::json!({
            "resource": resource, "path": "/a2a/billing.v2/.well-known/agent-card.json",
            "httpMethod": "GET", "headers": {"Host": domain}, "multiValueHeaders": {},
            "queryStringParameters": null, "multiValueQueryStringParameters": null,
            "pathParameters": {"agent_id": "billing.v2"}, "stageVariables": null,
            "requestContext": {
                "resourcePath": resource, "httpMethod": "GET", "stage": "Prod",
                "path": path, "domainName": domain, "apiId": "abc123",
                "accountId": "000000000000", "requestId": "r", "identity": {}
            },
            "body": null, "isBase64Encoded": false
        });
        lambda_http::request::from_str(&event.to_string())
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The front's card names where a client reaches it: the stage, or a custom domain's
    /// base path, kept; LocalStack's form when the stack is there.
    #[test]
    fn the_public_base_is_where_the_client_called() {
        let base = |domain: &str, path: &str, form| {
            public_base(&card_request(domain, path), form).map(|PublicBase(base)| base)
        };
        assert_eq!(
            base(
                "abc123.execute-api.us-east-1.amazonaws.com",
                "/Prod/a2a/billing.v2/.well-known/agent-card.json",
                ApiUrlForm::Aws
            ),
            Some("https://abc123.execute-api.us-east-1.amazonaws.com/Prod".to_owned())
        );
        assert_eq!(
            base(
                "agents.example.com",
                "/delegate/a2a/billing.v2/.well-known/agent-card.json",
                ApiUrlForm::Aws
            ),
            Some("https://agents.example.com/delegate".to_owned())
        );
        assert_eq!(
            base(
                "127.0.0.1:4566",
                "/Prod/a2a/billing.v2/.well-known/agent-card.json",
                ApiUrlForm::LocalStack
            ),
            Some("http://127.0.0.1:4566/_aws/execute-api/abc123/Prod".to_owned())
        );
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
