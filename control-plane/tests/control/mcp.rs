//! The MCP tools at the control API's `/mcp`, over Streamable HTTP with no session: each
//! request stands alone, and each tool calls the API's own routes.

use super::*;

/// One JSON-RPC message POSTed to `/mcp` as an MCP client sends it: its status, its
/// content type and its body.
async fn mcp(router: &axum::Router, message: Value) -> (u16, String, Value) {
    use tower::ServiceExt;
    let request = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        // As API Gateway hands it on: its own name.
        .header("host", "abc123.execute-api.eu-west-1.amazonaws.com")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(axum::body::Body::from(message.to_string()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        kind,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

#[tokio::test]
async fn the_tools_are_served_at_mcp_each_request_on_its_own() {
    let (w, router) = router();
    let (status, kind, initialized) = mcp(
        &router,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
    )
    .await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "application/json"),
        "{initialized}"
    );
    assert!(
        initialized["result"]["capabilities"]["tools"].is_object(),
        "{initialized}"
    );
    let (status, _, _) = mcp(
        &router,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);

    let (_, _, listed) = mcp(
        &router,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "artifacts",
            "cancel",
            "delegate",
            "list_agents",
            "reply",
            "status",
            "wait"
        ]
    );

    let (_, _, agents) = mcp(&router, call(3, "list_agents", json!({}))).await;
    let ids: Vec<&str> = agents["result"]["structuredContent"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| agent["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["writer", "critic"], "{agents}");

    let (_, _, delegated) = mcp(
        &router,
        call(
            4,
            "delegate",
            json!({"agent": "writer", "message": "go", "task_id": "m-1",
            "data": {"pages": "2"}}),
        ),
    )
    .await;
    let out = &delegated["result"]["structuredContent"];
    assert_eq!(out["task_id"], "m-1", "{delegated}");
    assert_eq!(
        out["trace_id"].as_str().map(str::len),
        Some(32),
        "{delegated}"
    );
    let input: Value = serde_json::from_str(&w.executions.input_of("m-1").unwrap()).unwrap();
    assert_eq!(
        input["parts"],
        json!([{"kind": "data", "data": {"pages": "2"}}])
    );

    // A refusal is the API's own, as a tool error.
    let (_, _, refused) = mcp(
        &router,
        call(5, "reply", json!({"task_id": "nobody", "text": "hi"})),
    )
    .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let said = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.contains("(404)") && said.contains("no stand-in"),
        "{said}"
    );
}

#[tokio::test]
async fn a_wait_over_http_ends_within_api_gateway_s_timeout() {
    let (w, router) = router();
    w.store.create(&Row::new("quiet", "writer")).await.unwrap();
    // Virtual time: the wait's second-apart reads pass at once.
    tokio::time::pause();
    let began = tokio::time::Instant::now();
    let (_, _, waited) = mcp(
        &router,
        call(1, "wait", json!({"task_id": "quiet", "timeout_secs": 55})),
    )
    .await;
    let waited_for = began.elapsed();
    assert_eq!(
        waited["result"]["structuredContent"]["notes"],
        json!([]),
        "{waited}"
    );
    assert!(
        waited_for >= std::time::Duration::from_secs(10)
            && waited_for < std::time::Duration::from_secs(15),
        "asked for 55 s, waited {waited_for:?}: API Gateway gives up at 29 s"
    );
}
