//! The router: every operation of the API document, and a 404 naming an unknown route.

use super::*;

#[tokio::test]
async fn requests_are_routed_by_method_path_and_parameter() {
    let (w, router) = router();
    let mut row = Row::new("a", "writer");
    row.remote_task_id = Some("r".into());
    w.store.create(&row).await.unwrap();
    let (status, started) = request(
        &router,
        "POST",
        "/standins",
        json!({"agent": "writer", "message": "go", "task_id": "b"}),
    )
    .await;
    assert_eq!(
        (status, &started["task_id"]),
        (200, &json!("b")),
        "{started}"
    );
    let (status, replied) = request(
        &router,
        "POST",
        "/standins/a/reply",
        json!({"text": "more"}),
    )
    .await;
    assert_eq!(status, 202, "{replied}");
    assert_eq!(w.store.snapshot("a").unwrap().pending.replies, ["more"]);
    let (status, notes) = request(&router, "GET", "/standins/a/notes?after=0", json!(null)).await;
    assert_eq!(
        (status, notes["task_id"].as_str()),
        (200, Some("a")),
        "{notes}"
    );
    let (status, cancelled) = request(
        &router,
        "POST",
        "/standins/a/cancel",
        json!({"reason": "enough"}),
    )
    .await;
    assert_eq!(status, 202, "{cancelled}");
    assert!(w.store.snapshot("a").unwrap().pending.cancel.is_some());
    let (status, listed) = request(&router, "GET", "/standins", json!(null)).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["standins"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    let (status, _) = request(&router, "GET", "/standins/notes", json!(null)).await;
    assert_eq!(
        status, 404,
        "a stand-in may be called notes: its status, not found"
    );
    let (status, refused) = request(&router, "DELETE", "/standins/a", json!(null)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (404, Some("no route DELETE /standins/a"))
    );
    let (status, refused) = request(&router, "POST", "/standins/", json!(null)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (404, Some("no route POST /standins/")),
        "the path as it came"
    );
    let (status, refused) = request(&router, "GET", "/elsewhere", json!(null)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (404, Some("no route GET /elsewhere"))
    );
}

/// The document and the router agree: every documented operation reaches its handler.
#[tokio::test]
async fn every_operation_of_the_document_is_routed() {
    let (_, router) = router();
    let ops = operations().unwrap();
    assert_eq!(ops.len(), 26);
    for op in ops {
        if op.template == "/mcp" {
            continue; // the MCP service's own: mcp.rs
        }
        let method = op.method.to_ascii_uppercase();
        let path = op
            .template
            .replace("{task_id}", "job-1")
            .replace("{agent_id}", "agent-1")
            .replace("{artifact_id}", "report")
            .replace("{webhook_id}", "hook-1")
            .replace("{key_id}", "0123456789abcdef");
        let (status, body) = request(&router, &method, &path, json!({})).await;
        assert!(
            !body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("no route")),
            "{method} {path}: {status} {body}"
        );
    }
}

#[tokio::test]
async fn an_unknown_route_is_a_404_naming_it() {
    let w = World::new();
    let answer = w
        .call(Call::NoRoute {
            method: "PUT",
            path: "/x",
        })
        .await;
    assert_eq!((answer.status, error(&answer)), (404, "no route PUT /x"));
}
