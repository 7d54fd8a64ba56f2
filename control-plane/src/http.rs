//! The control API's routes (axum): method and path to a [`Call`], its [`ApiAnswer`] back as
//! JSON, refusals included. The paths are the OpenAPI document's: the function routes on
//! [`document_path`], API Gateway's resource with its parameter filled in, so no stage
//! and no custom domain's base path is in the way.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;

use standin_wire::TraceContext;

use super::http_io::{Pairs, respond};
use super::{ApiAnswer, Call, Control, Executions};
use standin::doorbell::Doorbell;
use standin::row::{RowStore, Webhooks};

/// The document's path parameters.
pub const PATH_PARAMETERS: [&str; 5] =
    ["task_id", "agent_id", "artifact_id", "webhook_id", "key_id"];

/// The path the document names for a request API Gateway matched to `resource`
/// (`/standins/{task_id}/reply`): the resource with each parameter filled in, encoded as
/// one path segment.
pub fn document_path(resource: &str, params: &[(&str, &str)]) -> String {
    params
        .iter()
        .fold(resource.to_owned(), |path, (name, value)| {
            path.replace(&format!("{{{name}}}"), &standin_wire::path_segment(value))
        })
}

/// A path the router cannot read (an escape that is not UTF-8): the API's own 400.
fn unreadable(rejection: PathRejection) -> Response {
    respond(ApiAnswer::error(
        400,
        format!("the stand-in id in the path does not read: {rejection}"),
    ))
}

/// A body that is not JSON reads as `null`: each call says which field it lacks.
fn json(body: &Bytes) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

/// Every route of `api/control.openapi.json`, the MCP tools' `/mcp` among them; anything
/// else is a 404 naming it.
pub fn router<S, D, E>(control: Control<'static, S, D, E>) -> Router
where
    S: RowStore + Webhooks + 'static,
    D: Doorbell + 'static,
    E: Executions + 'static,
{
    let routes = Router::new()
        .route("/standins", post(start).get(list))
        .route("/uploads", post(upload))
        .route("/standins/{task_id}", get(status))
        .route("/standins/{task_id}/reply", post(reply))
        .route("/standins/{task_id}/cancel", post(cancel))
        .route("/standins/{task_id}/webhooks", get(webhook_list))
        .route(
            "/standins/{task_id}/webhooks/{webhook_id}",
            axum::routing::put(webhook_set).delete(webhook_delete),
        )
        .route("/standins/{task_id}/notes", get(notes))
        .route("/standins/{task_id}/turns", get(turns))
        .route("/standins/{task_id}/artifacts", get(artifacts))
        .route("/standins/{task_id}/artifacts/{artifact_id}", get(artifact))
        .route("/agents", get(agent_list).put(agents_put))
        .route(
            "/agents/{agent_id}",
            get(agent_show).put(agent_put).delete(agent_remove),
        )
        .fallback(no_route)
        .method_not_allowed_fallback(no_route)
        .with_state(control);
    let api = super::in_process::InProcess::new(routes.clone());
    // The MCP tools, over the routes above (docs/mcp.md).
    let routes = routes.route_service("/mcp", standin_mcp::http_service(api.clone()));
    // The A2A front, over the same routes (docs/a2a-front.md), and its keys.
    routes
        .merge(super::front::routes(control, api))
        .merge(crate::keys::routes::routes(control))
}

type Api<S, D, E> = State<Control<'static, S, D, E>>;

async fn start<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut body = json(&body);
    if let Err(refused) = trace_from_header(&headers, &mut body) {
        return respond(refused);
    }
    respond(control.handle(Call::Start(&body)).await)
}

/// A start's trace may come as the W3C `traceparent` header, as tracing libraries send
/// it, or as the body's field. The body's wins: a tracing library's header names its own
/// client span, the body the span the parent chose; both must name the same trace. A
/// header that does not read is ignored, as W3C asks of a receiver (the body's field is
/// refused instead: the parent wrote it).
fn trace_from_header(headers: &HeaderMap, body: &mut Value) -> Result<(), ApiAnswer> {
    let Some(header) = headers
        .get("traceparent")
        .and_then(|given| given.to_str().ok())
        .and_then(|given| TraceContext::parse("traceparent", given).ok())
    else {
        return Ok(());
    };
    let Some(fields) = body.as_object_mut() else {
        return Ok(());
    };
    match fields.get("traceparent") {
        None | Some(Value::Null) => {
            fields.insert("traceparent".into(), Value::String(header.header()));
            Ok(())
        }
        Some(Value::String(field)) => match TraceContext::parse("traceparent", field) {
            Ok(field) if field.trace_id() != header.trace_id() => Err(ApiAnswer::error(
                400,
                format!(
                    "traceparent: the header names trace {} and the body's field trace {}; give one",
                    header.trace_id(),
                    field.trace_id()
                ),
            )),
            // The same trace, or a field the start refuses with its own words.
            _ => Ok(()),
        },
        // Not a string: the start refuses it, naming the field.
        Some(_) => Ok(()),
    }
}

async fn upload<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    body: Bytes,
) -> Response {
    respond(control.handle(Call::Upload(&json(&body))).await)
}

async fn list<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Query(pairs): Query<Pairs>,
) -> Response {
    respond(
        control
            .handle(Call::List {
                after: pairs.after(),
                agent: pairs.named("agent"),
            })
            .await,
    )
}

async fn status<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
) -> Response {
    let task_id = match task_id {
        Ok(Path(id)) => id,
        Err(rejection) => return unreadable(rejection),
    };
    respond(control.handle(Call::Status { task_id: &task_id }).await)
}

async fn reply<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Response {
    ring(control, task_id, body, |task_id, body| Call::Reply {
        task_id,
        body,
    })
    .await
}

async fn cancel<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Response {
    ring(control, task_id, body, |task_id, body| Call::Cancel {
        task_id,
        body,
    })
    .await
}

/// A call on one stand-in with a JSON body (a reply, a cancel).
async fn ring<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    control: Control<'static, S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
    body: Bytes,
    call: impl for<'a> FnOnce(&'a str, &'a Value) -> Call<'a>,
) -> Response {
    let task_id = match task_id {
        Ok(Path(id)) => id,
        Err(rejection) => return unreadable(rejection),
    };
    let body = json(&body);
    respond(control.handle(call(&task_id, &body)).await)
}

async fn webhook_list<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
) -> Response {
    match task_id {
        Ok(Path(task_id)) => respond(
            control
                .handle(Call::WebhookList { task_id: &task_id })
                .await,
        ),
        Err(rejection) => unreadable(rejection),
    }
}

async fn webhook_set<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    ids: Result<Path<(String, String)>, PathRejection>,
    body: Bytes,
) -> Response {
    let (task_id, webhook_id) = match ids {
        Ok(Path(ids)) => ids,
        Err(rejection) => return unreadable(rejection),
    };
    let body = json(&body);
    respond(
        control
            .handle(Call::WebhookSet {
                task_id: &task_id,
                webhook_id: &webhook_id,
                body: &body,
            })
            .await,
    )
}

async fn webhook_delete<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    ids: Result<Path<(String, String)>, PathRejection>,
) -> Response {
    let (task_id, webhook_id) = match ids {
        Ok(Path(ids)) => ids,
        Err(rejection) => return unreadable(rejection),
    };
    respond(
        control
            .handle(Call::WebhookDelete {
                task_id: &task_id,
                webhook_id: &webhook_id,
            })
            .await,
    )
}

async fn notes<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
    Query(pairs): Query<Pairs>,
) -> Response {
    let task_id = match task_id {
        Ok(Path(id)) => id,
        Err(rejection) => return unreadable(rejection),
    };
    respond(
        control
            .handle(Call::Notes {
                task_id: &task_id,
                after: pairs.after(),
            })
            .await,
    )
}

async fn turns<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
) -> Response {
    match task_id {
        Ok(Path(task_id)) => respond(control.handle(Call::Turns { task_id: &task_id }).await),
        Err(rejection) => unreadable(rejection),
    }
}

async fn artifacts<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    task_id: Result<Path<String>, PathRejection>,
    Query(pairs): Query<Pairs>,
) -> Response {
    match task_id {
        Ok(Path(task_id)) => respond(
            control
                .handle(Call::Artifacts {
                    task_id: &task_id,
                    after: pairs.after(),
                })
                .await,
        ),
        Err(rejection) => unreadable(rejection),
    }
}

async fn artifact<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    ids: Result<Path<(String, String)>, PathRejection>,
) -> Response {
    match ids {
        Ok(Path((task_id, artifact_id))) => respond(
            control
                .handle(Call::Artifact {
                    task_id: &task_id,
                    artifact_id: &artifact_id,
                })
                .await,
        ),
        Err(rejection) => unreadable(rejection),
    }
}

async fn agent_list<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Query(pairs): Query<Pairs>,
) -> Response {
    let call = Call::AgentList {
        after: pairs.after(),
    };
    respond(control.handle(call).await)
}

async fn agents_put<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    body: Bytes,
) -> Response {
    respond(control.handle(Call::AgentsPut { body: &json(&body) }).await)
}

/// A call on one agent of the registry, by the id in its path.
async fn on_agent<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    control: Control<'static, S, D, E>,
    id: Result<Path<String>, PathRejection>,
    call: impl for<'a> FnOnce(&'a str) -> Call<'a>,
) -> Response {
    match id {
        Ok(Path(id)) => respond(control.handle(call(&id)).await),
        Err(rejection) => unreadable_agent(rejection),
    }
}

fn unreadable_agent(rejection: PathRejection) -> Response {
    respond(ApiAnswer::error(
        400,
        format!("the agent id in the path does not read: {rejection}"),
    ))
}

async fn agent_show<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    on_agent(control, id, |id| Call::AgentShow { id }).await
}

async fn agent_remove<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    on_agent(control, id, |id| Call::AgentRemove { id }).await
}

async fn agent_put<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    id: Result<Path<String>, PathRejection>,
    body: Bytes,
) -> Response {
    let body = json(&body);
    match id {
        Ok(Path(id)) => respond(
            control
                .handle(Call::AgentPut {
                    id: &id,
                    body: &body,
                })
                .await,
        ),
        Err(rejection) => unreadable_agent(rejection),
    }
}

async fn no_route<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    method: Method,
    uri: Uri,
) -> Response {
    let call = Call::NoRoute {
        method: method.as_str(),
        path: uri.path(),
    };
    respond(control.handle(call).await)
}
