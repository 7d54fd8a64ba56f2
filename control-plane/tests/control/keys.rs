//! The A2A front's keys: issued once, listed without a secret, revoked, and the keyed door
//! that lets in only a key issued for the agent its path names.

use standin_control_plane::keys::KeyStore;
use standin_remote::front::KEY_SCHEME;

use super::*;

async fn issued(w: &World, body: Value) -> (String, String) {
    let answer = w.call(Call::KeyCreate { body: &body }).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let key = answer.body["key"].as_str().expect("the key").to_owned();
    let id = answer.body["key_id"].as_str().expect("its id").to_owned();
    (id, key)
}

#[tokio::test]
async fn a_key_is_shown_once_and_listed_without_its_secret() {
    let w = World::new();
    let (id, key) = issued(&w, json!({"name": "ci", "agents": ["writer"]})).await;
    let listed = w.call(Call::KeyList { after: None }).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["keys"][0]["key_id"], id.as_str());
    assert_eq!(listed.body["keys"][0]["agents"], json!(["writer"]));
    let secret = key.rsplit('_').next().expect("a secret");
    assert!(!listed.body.to_string().contains(secret), "{}", listed.body);
    // Nor is it kept: only its digest is.
    let kept = format!("{:?}", w.keys.list(None, 10).await.expect("read"));
    assert!(!kept.contains(secret), "{kept}");
    let revoked = w.call(Call::KeyRevoke { key_id: &id }).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let again = w.call(Call::KeyRevoke { key_id: &id }).await;
    assert_eq!(again.status, 404, "{}", again.body);
}

#[tokio::test]
async fn a_key_for_an_agent_the_deployment_does_not_know_is_refused() {
    let w = World::new();
    let answer = w
        .call(Call::KeyCreate {
            body: &json!({"agents": ["writer", "nobody"]}),
        })
        .await;
    assert_eq!(answer.status, 400);
    assert!(
        error(&answer).starts_with("agents[1]: no agent \"nobody\""),
        "{}",
        answer.body
    );
    let answer = w
        .call(Call::KeyCreate {
            body: &json!({"agents": []}),
        })
        .await;
    assert_eq!(answer.status, 400);
    assert!(error(&answer).starts_with("agents:"), "{}", answer.body);
    assert_eq!(
        w.call(Call::KeyList { after: None }).await.body["keys"],
        json!([])
    );
}

/// The status and the `WWW-Authenticate` header of a request to the keyed door.
async fn knock(router: &axum::Router, path: &str, key: Option<&str>) -> (u16, Option<String>) {
    use tower::ServiceExt;
    let mut request = http::Request::builder().method("GET").uri(path);
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let response = router
        .clone()
        .oneshot(request.body(axum::body::Body::empty()).unwrap())
        .await
        .unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (response.status().as_u16(), challenge)
}

#[tokio::test]
async fn the_keyed_door_lets_in_only_a_kept_key_for_the_agent_it_names() {
    let (w, router) = router();
    let (id, key) = issued(w, json!({"agents": ["writer"]})).await;
    let card = "/keyed/a2a/writer/.well-known/agent-card.json";
    let (status, challenge) = knock(&router, card, None).await;
    assert_eq!(status, 401);
    assert_eq!(challenge.as_deref(), Some("Bearer realm=\"standin\""));
    // A key of the right shape that was never issued, and one cut short.
    let made_up = format!("sik_{id}_{}", "0".repeat(64));
    for wrong in [made_up.as_str(), &key[..key.len() - 1]] {
        assert_eq!(knock(&router, card, Some(wrong)).await.0, 401, "{wrong}");
    }
    // Another agent, known or not: the key does not name it, and the caller learns no more.
    for other in ["critic", "nobody"] {
        let path = format!("/keyed/a2a/{other}/.well-known/agent-card.json");
        assert_eq!(knock(&router, &path, Some(&key)).await.0, 403, "{other}");
    }
    let (status, card_body) = request_with(
        &router,
        "GET",
        card,
        Value::Null,
        &[
            ("host", "api.example"),
            ("authorization", &format!("Bearer {key}")),
        ],
    )
    .await;
    assert_eq!(status, 200, "{card_body}");
    assert_eq!(
        card_body["supportedInterfaces"][0]["url"],
        "http://api.example/keyed/a2a/writer"
    );
    assert_eq!(
        card_body["securitySchemes"][KEY_SCHEME]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    // The door's JSON-RPC answers, too; the task it names is the control API's.
    let (status, answer) = request_with(
        &router,
        "POST",
        "/keyed/a2a/writer",
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "si-none"}}),
        &[("authorization", &format!("Bearer {key}"))],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert_eq!(w.call(Call::KeyRevoke { key_id: &id }).await.status, 200);
    assert_eq!(knock(&router, card, Some(&key)).await.0, 401, "revoked");
}

#[tokio::test]
async fn a_key_for_every_agent_opens_each_and_the_signed_door_declares_no_scheme() {
    let (w, router) = router();
    let (_, key) = issued(w, Value::Null).await;
    for agent in ["writer", "critic"] {
        let path = format!("/keyed/a2a/{agent}/.well-known/agent-card.json");
        assert_eq!(knock(&router, &path, Some(&key)).await.0, 200, "{agent}");
    }
    let path = "/keyed/a2a/nobody/.well-known/agent-card.json";
    assert_eq!(knock(&router, path, Some(&key)).await.0, 404);
    let (_, card) = request(
        &router,
        "GET",
        "/a2a/writer/.well-known/agent-card.json",
        Value::Null,
    )
    .await;
    assert!(card.get("securitySchemes").is_none(), "{card}");
}

#[tokio::test]
async fn a_body_that_does_not_read_issues_no_key_and_a_bad_page_start_is_refused() {
    let (w, router) = router();
    use tower::ServiceExt;
    let malformed = http::Request::builder()
        .method("POST")
        .uri("/keys")
        .body(axum::body::Body::from(r#"{"agents": ["writer"],}"#))
        .unwrap();
    let response = router.clone().oneshot(malformed).await.unwrap();
    assert_eq!(
        response.status(),
        400,
        "a limit lost would open every agent"
    );
    assert_eq!(
        w.call(Call::KeyList { after: None }).await.body["keys"],
        json!([])
    );
    let (status, refused) = request(&router, "GET", "/keys?after=..%2Fx", Value::Null).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().starts_with("after: "),
        "{refused}"
    );
}

/// A key for the writer reaches the writer's tasks only: another agent's task is
/// TaskNotFound through the writer's door, as through the signed one.
#[tokio::test]
async fn a_keyed_caller_reaches_no_task_of_another_agent() {
    let (w, router) = router();
    let (_, key) = issued(w, json!({"agents": ["writer"]})).await;
    let bearer = format!("Bearer {key}");
    let started = w
        .start(json!({"agent": "critic", "message": "Review it", "task_id": "critic-1"}))
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    for method in ["GetTask", "CancelTask"] {
        let (status, answer) = request_with(
            &router,
            "POST",
            "/keyed/a2a/writer",
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": "critic-1"}}),
            &[("authorization", &bearer)],
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["error"]["code"], -32001, "{method}: {answer}");
    }
    assert!(
        w.store
            .snapshot("critic-1")
            .unwrap()
            .pending
            .cancel
            .is_none()
    );
}

/// Exactly the keyed door's two operations are open at the gateway: a route added
/// without IAM by mistake fails here.
#[test]
fn only_the_keyed_door_is_open_at_the_gateway() {
    let document: Value =
        serde_json::from_str(include_str!("../../../api/control.openapi.json")).unwrap();
    let mut open = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation["security"] != json!([{"sigv4": []}]) {
                open.push(format!("{method} {path}"));
            }
        }
    }
    open.sort();
    assert_eq!(
        open,
        [
            "get /keyed/a2a/{agent_id}/.well-known/agent-card.json",
            "post /keyed/a2a/{agent_id}"
        ]
    );
}
