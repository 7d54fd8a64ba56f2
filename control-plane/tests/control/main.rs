//! The parent's control API over the in-memory ports: routing, every refusal and its
//! status, idempotent starts, an id whose execution outlived its row, replies named and
//! unnamed, status across rolls, the note log's pages, and no secret in any answer.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use serde_json::{Value, json};
use standin::agents::AgentsConfig;
use standin::doorbell::memory::MemoryDoorbell;
use standin::push::token::PushToken;
use standin::registry::Catalog;
use standin::registry::memory::MemoryRegistry;
use standin::row::memory::MemoryStore;
use standin::row::{Notes, Parks, StandIns};
use standin::row::{Row, Watch, WatchMode};
use standin::state::remote_out;
use standin_control_plane::ExecutionError;
use standin_control_plane::memory::MemoryExecutions;
use standin_control_plane::{ApiAnswer, Call, Control, NOTES_PAGE};
use standin_wire::TaskState;
use standin_wire::openapi::{check_response, operations};

struct World {
    store: MemoryStore,
    bell: MemoryDoorbell,
    executions: MemoryExecutions,
    agents: Catalog,
    registry: MemoryRegistry,
    blobs: standin::artifacts::memory::MemoryBlobs,
    cards: standin_control_plane::cards::Cards,
    deliveries: standin::webhook::memory::MemoryDeliveryQueue,
    keys: standin_control_plane::keys::memory::MemoryKeys,
    turns: standin_control_plane::turns::memory::MemoryTurns,
}

/// Cards as a deployment reads them: the writer's says what it does, the others' do not
/// read.
struct Cards;

impl standin_control_plane::cards::CardReader for Cards {
    fn read<'a>(
        &'a self,
        spec: &'a standin::agents::AgentSpec,
    ) -> standin::registry::BoxFuture<'a, Result<standin_remote::Profile, String>> {
        Box::pin(async move {
            if spec.id != "writer" {
                return Err(format!("{} answered HTTP 404 Not Found", spec.url));
            }
            Ok(standin_remote::Profile {
                name: "Writer".into(),
                description: "Drafts prose".into(),
                skills: vec![standin_remote::Skill {
                    id: "draft".into(),
                    name: "Draft".into(),
                    description: "A first draft from notes".into(),
                    tags: vec!["prose".into()],
                }],
            })
        })
    }
}

impl World {
    fn new() -> Self {
        let stack = AgentsConfig::parse(
            r#"{"agents":[{"id":"writer","url":"http://127.0.0.1:9"},{"id":"critic","url":"http://127.0.0.1:9"}]}"#,
        )
        .unwrap();
        let registry = MemoryRegistry::default();
        Self {
            store: MemoryStore::new(),
            bell: MemoryDoorbell::new(),
            executions: MemoryExecutions::new(),
            agents: Catalog::new(stack, Some(Box::new(registry.clone()))),
            registry,
            blobs: Default::default(),
            cards: standin_control_plane::cards::Cards::new(Box::new(Cards)),
            deliveries: Default::default(),
            keys: Default::default(),
            turns: Default::default(),
        }
    }

    /// Every answer is also held to the control API's document (`api/control.openapi.json`):
    /// its status is documented for the call's operation and its body fits the schema.
    async fn call(&self, call: Call<'_>) -> ApiAnswer {
        let operation = match &call {
            Call::Start(_) => Some(("POST", "/standins".to_owned())),
            Call::Upload(_) => Some(("POST", "/uploads".to_owned())),
            Call::Reply { task_id, .. } => Some(("POST", format!("/standins/{task_id}/reply"))),
            Call::Cancel { task_id, .. } => Some(("POST", format!("/standins/{task_id}/cancel"))),
            Call::Status { task_id } => Some(("GET", format!("/standins/{task_id}"))),
            Call::Notes { task_id, .. } => Some(("GET", format!("/standins/{task_id}/notes"))),
            Call::Turns { task_id } => Some(("GET", format!("/standins/{task_id}/turns"))),
            Call::Artifacts { task_id, .. } => {
                Some(("GET", format!("/standins/{task_id}/artifacts")))
            }
            Call::Artifact {
                task_id,
                artifact_id,
            } => Some((
                "GET",
                format!("/standins/{task_id}/artifacts/{artifact_id}"),
            )),
            Call::List { .. } => Some(("GET", "/standins".to_owned())),
            Call::WebhookSet {
                task_id,
                webhook_id,
                ..
            } => Some(("PUT", format!("/standins/{task_id}/webhooks/{webhook_id}"))),
            Call::WebhookList { task_id } => Some(("GET", format!("/standins/{task_id}/webhooks"))),
            Call::WebhookDelete {
                task_id,
                webhook_id,
            } => Some((
                "DELETE",
                format!("/standins/{task_id}/webhooks/{webhook_id}"),
            )),
            Call::AgentPut { id, .. } => Some(("PUT", format!("/agents/{id}"))),
            Call::AgentsPut { .. } => Some(("PUT", "/agents".to_owned())),
            Call::AgentShow { id } => Some(("GET", format!("/agents/{id}"))),
            Call::AgentRemove { id } => Some(("DELETE", format!("/agents/{id}"))),
            Call::AgentList { .. } => Some(("GET", "/agents".to_owned())),
            Call::KeyCreate { .. } => Some(("POST", "/keys".to_owned())),
            Call::KeyList { .. } => Some(("GET", "/keys".to_owned())),
            Call::KeyRevoke { key_id } => Some(("DELETE", format!("/keys/{key_id}"))),
            Call::NoRoute { .. } => None,
        };
        let answer = Control {
            store: &self.store,
            bell: &self.bell,
            executions: &self.executions,
            agents: &self.agents,
            cards: Some(&self.cards),
            artifacts: Some(&self.blobs),
            max_standin_secs: standin::steps::next::MAX_STANDIN_SECS,
            webhooks: Some(&self.deliveries),
            allow_private: true,
            keys: Some(&self.keys),
            turns: Some(&self.turns),
        }
        .handle(call)
        .await;
        if let Some((method, path)) = operation {
            check_response(method, &path, answer.status, &answer.body)
                .unwrap_or_else(|err| panic!("{err}: {}", answer.body));
        }
        answer
    }

    async fn start(&self, body: Value) -> ApiAnswer {
        self.call(Call::Start(&body)).await
    }
}

fn error(answer: &ApiAnswer) -> &str {
    answer.body["error"].as_str().unwrap_or_default()
}

/// The router over a fresh world (leaked: a router's state lives as long as the process).
fn router() -> (&'static World, axum::Router) {
    let w: &'static World = Box::leak(Box::new(World::new()));
    let router = standin_control_plane::http::router(Control {
        store: &w.store,
        bell: &w.bell,
        executions: &w.executions,
        agents: &w.agents,
        cards: Some(&w.cards),
        artifacts: Some(&w.blobs),
        max_standin_secs: standin::steps::next::MAX_STANDIN_SECS,
        webhooks: Some(&w.deliveries),
        allow_private: true,
        keys: Some(&w.keys),
        turns: Some(&w.turns),
    });
    (w, router)
}

/// A request through the router: its status and JSON body.
async fn request(router: &axum::Router, method: &str, path: &str, body: Value) -> (u16, Value) {
    request_with(router, method, path, body, &[]).await
}

/// `request`, with `headers`.
async fn request_with(
    router: &axum::Router,
    method: &str,
    path: &str,
    body: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    use tower::ServiceExt;
    let mut request = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

mod agents;
mod artifacts;
mod front;
mod keys;
mod mcp;
mod replies_and_status;
mod routes;
mod starts;
mod summary;
mod traces;
mod turns;
mod uploads;
mod webhooks;
