//! The A2A front (docs/a2a-front.md): each agent the deployment knows, served as an A2A
//! 1.0 agent at `/a2a/{agent_id}`, its card at `/a2a/{agent_id}/.well-known/agent-card.json`.
//! The remote crate reads and writes A2A (`standin_remote::front`); each call it makes
//! goes to the control API's own routes in this process, as the MCP tools' do.
//!
//! Two doors lead to it: `/a2a/…` behind IAM (API Gateway checks the caller's SigV4, as on
//! every other route), and `/keyed/a2a/…`, open at API Gateway, where this function lets
//! in only a request with a key the operator issued for that agent (`crate::keys`).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;
use standin_remote::front::{Answered, ControlCalls, Door, Front, front_card};

use super::ApiAnswer;
use super::http_io::respond;
use super::in_process::InProcess;
use super::{Control, Executions};
use crate::keys::Refusal;
use standin::doorbell::Doorbell;
use standin::row::{RowStore, Webhooks};

/// Where the control API is reached from outside (its stage or base path included), as
/// the composition root read it from the request: the front's card names its own URL.
#[derive(Debug, Clone)]
pub struct PublicBase(pub String);

struct FrontState<S: 'static, D: 'static, E: 'static> {
    control: Control<'static, S, D, E>,
    api: InProcess,
}

type Fronts<S, D, E> = State<Arc<FrontState<S, D, E>>>;

/// The front's routes, answering through `api` (the control API's own routes).
pub(super) fn routes<S, D, E>(control: Control<'static, S, D, E>, api: InProcess) -> Router
where
    S: RowStore + Webhooks + 'static,
    D: Doorbell + 'static,
    E: Executions + 'static,
{
    Router::new()
        .route("/a2a/{agent_id}", post(rpc))
        .route("/a2a/{agent_id}/.well-known/agent-card.json", get(card))
        .route("/keyed/a2a/{agent_id}", post(keyed_rpc))
        .route(
            "/keyed/a2a/{agent_id}/.well-known/agent-card.json",
            get(keyed_card),
        )
        .with_state(Arc::new(FrontState { control, api }))
}

impl ControlCalls for InProcess {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<Answered, String> {
        let (status, body) = self.route(method, &path, body).await?;
        Ok(Answered { status, body })
    }
}

/// The agent the path names, or the answer that there is none.
async fn known<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    front: &FrontState<S, D, E>,
    id: Result<Path<String>, PathRejection>,
) -> Result<(String, standin::agents::AgentSpec), Response> {
    let no_agent = |id: &str| {
        respond(ApiAnswer::error(
            404,
            format!("no agent {id:?}: GET /agents lists them"),
        ))
    };
    let Ok(Path(id)) = id else {
        return Err(no_agent(""));
    };
    match front.control.agents.agent(&id).await {
        Ok(Some((spec, _))) => Ok((id, spec)),
        Ok(None) => Err(no_agent(&id)),
        Err(err) => {
            tracing::error!(error = %err, "the agent registry did not answer");
            Err(respond(ApiAnswer::error(
                503,
                "the agent registry did not answer; try again",
            )))
        }
    }
}

async fn rpc<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(front): Fronts<S, D, E>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer_rpc(&front, id, &headers, &body).await
}

async fn keyed_rpc<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(front): Fronts<S, D, E>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match let_in(&front, &id, &headers).await {
        Ok(()) => answer_rpc(&front, id, &headers, &body).await,
        Err(refused) => refused,
    }
}

async fn answer_rpc<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    front: &FrontState<S, D, E>,
    id: Result<Path<String>, PathRejection>,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let (id, _) = match known(front, id).await {
        Ok(known) => known,
        Err(refused) => return refused,
    };
    let version = headers.get("a2a-version").and_then(|v| v.to_str().ok());
    let said = Front::new(&front.api, &id).answer(body, version).await;
    // JSON-RPC answers its errors, too, with HTTP 200.
    respond(ApiAnswer::of(200, said))
}

/// Whether the keyed door lets the request in: a key the operator issued, for the agent
/// the path names. Checked before the agent is looked up, so a caller without one learns
/// nothing of which agents there are.
async fn let_in<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    front: &FrontState<S, D, E>,
    id: &Result<Path<String>, PathRejection>,
    headers: &HeaderMap,
) -> Result<(), Response> {
    let Some(keys) = front.control.keys else {
        return Err(respond(ApiAnswer::error(
            404,
            "this deployment keeps no keys: call /a2a/{agent_id} with IAM credentials",
        )));
    };
    let agent = id.as_ref().map(|Path(id)| id.as_str()).unwrap_or_default();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let refused = match crate::keys::check(keys, authorization, agent).await {
        Ok(record) => {
            tracing::info!(key_id = %record.key_id, agent, "let in by key");
            return Ok(());
        }
        Err(refused) => refused,
    };
    Err(match refused {
        Refusal::NotForAgent { .. } => respond(ApiAnswer::error(403, refused.to_string())),
        Refusal::NoKey | Refusal::Unknown => {
            let mut answer = respond(ApiAnswer::error(401, refused.to_string()));
            answer.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"standin\""),
            );
            answer
        }
        Refusal::Store(err) => {
            tracing::error!(error = %err, "the keys table did not answer");
            respond(ApiAnswer::error(
                503,
                "the keys table did not answer; try again",
            ))
        }
    })
}

async fn card<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(front): Fronts<S, D, E>,
    id: Result<Path<String>, PathRejection>,
    base: Option<axum::Extension<PublicBase>>,
    headers: HeaderMap,
) -> Response {
    answer_card(&front, id, base, &headers, Door::Signed).await
}

async fn keyed_card<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(front): Fronts<S, D, E>,
    id: Result<Path<String>, PathRejection>,
    base: Option<axum::Extension<PublicBase>>,
    headers: HeaderMap,
) -> Response {
    match let_in(&front, &id, &headers).await {
        Ok(()) => answer_card(&front, id, base, &headers, Door::Keyed).await,
        Err(refused) => refused,
    }
}

async fn answer_card<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    front: &FrontState<S, D, E>,
    id: Result<Path<String>, PathRejection>,
    base: Option<axum::Extension<PublicBase>>,
    headers: &HeaderMap,
    door: Door,
) -> Response {
    let (id, spec) = match known(front, id).await {
        Ok(known) => known,
        Err(refused) => return refused,
    };
    let profile = match front.control.cards {
        Some(cards) => cards.describe(&[&spec]).await.pop().and_then(Result::ok),
        None => None,
    };
    let base = match base {
        Some(axum::Extension(PublicBase(base))) => base,
        // Not behind API Gateway (a test's router): the host the client named.
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("localhost");
            format!("http://{host}")
        }
    };
    let url = format!("{}{}/{id}", base.trim_end_matches('/'), door.path());
    let push = front.control.webhooks.is_some();
    respond(ApiAnswer::of(
        200,
        front_card(&id, &url, profile.as_ref(), push, door),
    ))
}
