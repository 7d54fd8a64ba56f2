//! `/keys`: the A2A front's keys, issued, listed and revoked by the operator (IAM, as
//! every other route but the keyed front). A key is shown once, in the answer that
//! issues it; only its digest is kept.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::{delete, post};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use standin_wire::{
    BodyError, IssuedKeyView, KEY_ID_RULE, KeyRequest, KeyView, KeysPage, is_key_id,
};

use crate::http_io::{Pairs, respond};
use crate::keys::{KEYS_PAGE, KeyRecord, MAX_KEY_AGENTS, issue};
use crate::{ApiAnswer, Call, Control, ControlError, Executions};
use standin::doorbell::Doorbell;
use standin::row::{RowStore, Webhooks};

fn view(record: KeyRecord) -> KeyView {
    KeyView {
        key_id: record.key_id,
        name: record.name,
        agents: record.agents,
        created_at: record.created_at,
    }
}

/// The answer where the deployment keeps no keys (the function runs outside a stack).
fn no_keys() -> ApiAnswer {
    ApiAnswer::error(
        404,
        "this deployment keeps no keys (its control function runs outside a stack)",
    )
}

impl<S: RowStore + Webhooks, D: Doorbell, E: Executions> Control<'_, S, D, E> {
    pub(crate) async fn create_key(&self, body: &Value) -> Result<ApiAnswer, ControlError> {
        let Some(keys) = self.keys else {
            return Ok(no_keys());
        };
        let request = match KeyRequest::parse(body, MAX_KEY_AGENTS) {
            Ok(request) => request,
            Err(BodyError(words)) => return Ok(ApiAnswer::error(400, words)),
        };
        // A key for an agent the deployment does not know would open nothing: the
        // operator learns of the typo now, not from a parent's 403.
        for (i, agent) in request.agents.iter().flatten().enumerate() {
            if self.agents.agent(agent).await?.is_none() {
                return Ok(ApiAnswer::error(
                    400,
                    format!("agents[{i}]: no agent {agent:?} (GET /agents lists them)"),
                ));
            }
        }
        let issued = issue(request.name, request.agents);
        keys.create(&issued.record).await?;
        tracing::info!(key_id = %issued.record.key_id, "a key was issued");
        let key = issued.key.expose_secret().to_owned();
        Ok(ApiAnswer::of(
            201,
            IssuedKeyView {
                view: view(issued.record),
                key,
            },
        ))
    }

    pub(crate) async fn list_keys(&self, after: Option<&str>) -> Result<ApiAnswer, ControlError> {
        let Some(keys) = self.keys else {
            return Ok(no_keys());
        };
        if let Some(after) = after.filter(|after| !is_key_id(after)) {
            return Ok(ApiAnswer::error(
                400,
                format!("after: {KEY_ID_RULE}, got {after:?}"),
            ));
        }
        let (records, next) = keys.list(after, KEYS_PAGE).await?;
        let keys = records.into_iter().map(view).collect();
        Ok(ApiAnswer::of(200, KeysPage { keys, next }))
    }

    pub(crate) async fn revoke_key(&self, key_id: &str) -> Result<ApiAnswer, ControlError> {
        let Some(keys) = self.keys else {
            return Ok(no_keys());
        };
        if keys.revoke(key_id).await? {
            tracing::info!(key_id, "a key was revoked");
            Ok(ApiAnswer::of(
                200,
                json!({"key_id": key_id, "revoked": true}),
            ))
        } else {
            Ok(ApiAnswer::error(
                404,
                format!("no key {key_id:?} (GET /keys lists them)"),
            ))
        }
    }
}

type Api<S, D, E> = State<Control<'static, S, D, E>>;

/// `/keys` and `/keys/{key_id}`.
pub(crate) fn routes<S, D, E>(control: Control<'static, S, D, E>) -> Router
where
    S: RowStore + Webhooks + 'static,
    D: Doorbell + 'static,
    E: Executions + 'static,
{
    Router::new()
        .route("/keys", post(create).get(list))
        .route("/keys/{key_id}", delete(revoke))
        .with_state(control)
}

async fn create<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    body: Bytes,
) -> Response {
    // An empty body is a key for every agent, with no name; a body that does not read is
    // refused, never taken as empty (its limits would be lost, opening every agent).
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(body) => body,
            Err(err) => {
                return respond(ApiAnswer::error(
                    400,
                    format!("the body: not JSON ({err}); send {{\"name\", \"agents\"}} or nothing"),
                ));
            }
        }
    };
    respond(control.handle(Call::KeyCreate { body: &body }).await)
}

async fn list<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    Query(pairs): Query<Pairs>,
) -> Response {
    let after = pairs.after();
    respond(control.handle(Call::KeyList { after }).await)
}

async fn revoke<S: RowStore + Webhooks, D: Doorbell, E: Executions>(
    State(control): Api<S, D, E>,
    key_id: Result<Path<String>, PathRejection>,
) -> Response {
    match key_id {
        Ok(Path(key_id)) => respond(control.handle(Call::KeyRevoke { key_id: &key_id }).await),
        Err(rejection) => respond(ApiAnswer::error(
            400,
            format!("the key id in the path does not read: {rejection}"),
        )),
    }
}
