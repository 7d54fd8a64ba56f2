//! The A2A front through the router, over the in-memory ports: the card is the agent's own
//! words at the front's address, a message starts a stand-in of the agent the path names,
//! and the task it answers is the stand-in the control API knows.

use super::*;

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

#[tokio::test]
async fn the_fronts_card_is_the_agents_words_at_its_own_address() {
    let (_w, router) = router();
    let (status, card) = request_with(
        &router,
        "GET",
        "/a2a/writer/.well-known/agent-card.json",
        Value::Null,
        &[("host", "api.example")],
    )
    .await;
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["name"], "Writer");
    assert_eq!(card["skills"][0]["id"], "draft");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "http://api.example/a2a/writer"
    );
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    // An agent whose card does not read is still served, under its id.
    let (_, card) = request(
        &router,
        "GET",
        "/a2a/critic/.well-known/agent-card.json",
        Value::Null,
    )
    .await;
    assert_eq!(card["name"], "critic");
    let (status, refused) = request(
        &router,
        "GET",
        "/a2a/nobody/.well-known/agent-card.json",
        Value::Null,
    )
    .await;
    assert_eq!(status, 404, "{refused}");
    let (status, _) = request(
        &router,
        "POST",
        "/a2a/nobody",
        rpc("GetTask", json!({"id": "x"})),
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_message_starts_a_stand_in_of_the_agent_the_path_names() {
    let (w, router) = router();
    let params = json!({
        "message": {"messageId": "m1", "role": "ROLE_USER",
                    "parts": [{"text": "Draft the intro"}, {"data": {"words": 200}}]},
        "configuration": {"returnImmediately": true}
    });
    let (status, answer) =
        request(&router, "POST", "/a2a/writer", rpc("SendMessage", params)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["id"], 7);
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{answer}");
    let task_id = task["id"].as_str().unwrap();
    let row = w.store.snapshot(task_id).expect("the stand-in's row");
    assert_eq!(row.agent, "writer");

    // The same task through GetTask; another agent's front does not know it.
    let (_, got) = request(
        &router,
        "POST",
        "/a2a/writer",
        rpc("GetTask", json!({"id": task_id})),
    )
    .await;
    assert_eq!(got["result"]["id"], task_id, "{got}");
    let (_, other) = request(
        &router,
        "POST",
        "/a2a/critic",
        rpc("GetTask", json!({"id": task_id})),
    )
    .await;
    assert_eq!(other["error"]["code"], -32001, "{other}");
}
