//! The artifacts a parent reads, a page at a time.

use super::*;

/// A manifest whose artifacts together pass a page is answered a page at a time, each
/// under Lambda's 6 MB, every artifact once and in order; an `after` that names no
/// artifact is refused, naming it.
#[tokio::test]
async fn the_artifacts_come_a_page_at_a_time_each_under_6_mb() {
    use standin::artifacts::Blobs;
    let w = World::new();
    w.start(json!({"task_id": "si-pages", "agent": "writer", "message": "go"}))
        .await;
    let text = "t".repeat(7000);
    let artifacts: Vec<Value> = (0..3)
        .map(|a| {
            let parts: Vec<Value> = (0..150)
                .map(|n| {
                    json!({"view": {"kind": "text", "size": 7000, "sha256": format!("{a}-{n}"),
                                         "text": text, "stored": true},
                                "key": format!("si-pages/parts/{a}-{n}")})
                })
                .collect();
            json!({"artifact_id": format!("a{a}"), "complete": true, "version": 1, "noted": 1,
                   "parts": parts})
        })
        .collect();
    let manifest = json!({"stored_bytes": 0, "artifacts": artifacts});
    w.blobs
        .put("si-pages/manifest.json", manifest.to_string().into_bytes())
        .await
        .unwrap();
    let (mut after, mut seen) = (None, Vec::new());
    loop {
        let page = w
            .call(Call::Artifacts {
                task_id: "si-pages",
                after: after.as_deref(),
            })
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.body.to_string().len() < 6_000_000);
        for artifact in page.body["artifacts"].as_array().unwrap() {
            seen.push(artifact["artifact_id"].as_str().unwrap().to_owned());
        }
        match page.body["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
        assert!(seen.len() < 10, "pages end");
    }
    assert_eq!(seen, ["a0", "a1", "a2"]);
    assert!(after.is_some(), "more than one page");
    let refused = w
        .call(Call::Artifacts {
            task_id: "si-pages",
            after: Some("nope"),
        })
        .await;
    assert_eq!(refused.status, 400);
    assert!(error(&refused).contains("\"nope\""), "{}", refused.body);
}

#[tokio::test]
async fn a_parent_reads_the_artifacts_and_a_link_per_stored_part() {
    use standin::artifacts::Blobs;
    let w = World::new();
    w.start(json!({"task_id": "si-art", "agent": "writer", "message": "go"}))
        .await;
    let manifest = json!({"stored_bytes": 9, "artifacts": [{
        "artifact_id": "report", "name": "report.md", "complete": true, "version": 1, "noted": 1,
        "parts": [
            {"view": {"kind": "text", "size": 9, "sha256": "ab", "text": "# Report\n", "stored": true},
             "key": "si-art/parts/p1"},
            {"view": {"kind": "url", "url": "https://files.example/x.pdf"}}]}]});
    w.blobs
        .put("si-art/manifest.json", manifest.to_string().into_bytes())
        .await
        .unwrap();
    let page = w
        .call(Call::Artifacts {
            task_id: "si-art",
            after: None,
        })
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.body["artifacts"][0]["artifact_id"], "report");
    assert_eq!(page.body["artifacts"][0]["parts"][0]["text"], "# Report\n");
    assert!(
        page.body["artifacts"][0].get("version").is_none(),
        "no bookkeeping shown"
    );
    assert!(
        page.body["artifacts"][0]["parts"][0].get("key").is_none(),
        "no bucket key shown"
    );
    let one = w
        .call(Call::Artifact {
            task_id: "si-art",
            artifact_id: "report",
        })
        .await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert!(
        one.body["links"][0]
            .as_str()
            .is_some_and(|l| l.contains("si-art/parts/p1"))
    );
    assert_eq!(
        one.body["links"][1],
        Value::Null,
        "a URL part has nothing stored"
    );
    let missing = w
        .call(Call::Artifact {
            task_id: "si-art",
            artifact_id: "nope",
        })
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(
        w.call(Call::Artifacts {
            task_id: "si-none",
            after: None
        })
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn the_artifact_routes_are_served_with_their_ids_in_the_path() {
    let (w, router) = router();
    w.start(json!({"task_id": "si-r", "agent": "writer", "message": "go"}))
        .await;
    for (uri, status) in [
        ("/standins/si-r/artifacts", 200),
        ("/standins/si-r/artifacts/a%20b", 404),
    ] {
        let request = axum::http::Request::builder()
            .uri(uri)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = tower::ServiceExt::oneshot(router.clone(), request)
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "{uri}");
    }
}
