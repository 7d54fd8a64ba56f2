//! `POST /uploads`: a link to put a large file through, its rules, and a start or a
//! reply that names an upload whose file was never put refused, naming the part.

use super::*;
use standin::artifacts::Blobs;

#[tokio::test]
async fn an_upload_gives_a_link_that_puts_exactly_its_size_under_its_own_key() {
    let w = World::new();
    let answer = w
        .call(Call::Upload(
            &json!({"size": 200000, "media_type": "text/csv"}),
        ))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let id = answer.body["upload_id"].as_str().unwrap();
    assert!(standin_wire::UploadId::parse(id).is_ok(), "{id}");
    let url = answer.body["url"].as_str().unwrap();
    assert!(
        url.contains(&format!("uploads/{id}")) && url.contains("put=200000"),
        "{url}"
    );
    assert_eq!(answer.body["headers"]["content-type"], "text/csv");
    // Each upload is its own.
    let again = w.call(Call::Upload(&json!({"size": 1}))).await;
    assert_ne!(again.body["upload_id"], answer.body["upload_id"]);
}

#[tokio::test]
async fn an_upload_s_size_and_media_type_are_held_to_their_rules() {
    let w = World::new();
    for (body, field) in [
        (json!({}), "size: is required"),
        (json!({"size": 0}), "size: must be"),
        (json!({"size": 104_857_601u64}), "size: must be"),
        (
            json!({"size": 3, "media_type": "csv"}),
            "media_type: must be",
        ),
    ] {
        let refused = w.call(Call::Upload(&body)).await;
        assert_eq!(refused.status, 400, "{body}: {}", refused.body);
        assert!(
            error(&refused).starts_with(field),
            "{body}: {}",
            refused.body
        );
    }
}

#[tokio::test]
async fn a_part_naming_an_upload_with_no_file_put_is_refused_naming_it() {
    let w = World::new();
    let link = w.call(Call::Upload(&json!({"size": 5}))).await;
    let id = link.body["upload_id"].as_str().unwrap().to_owned();
    let start = |task_id: &str| {
        json!({"agent": "writer", "message": "go", "task_id": task_id, "parts": [
            {"kind": "data", "data": {"a": "b"}},
            {"kind": "file", "name": "big.csv", "upload_id": id}]})
    };
    let refused = w.start(start("u1")).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        error(&refused).starts_with(&format!("parts[1].upload_id: no file was put for {id}")),
        "{}",
        refused.body
    );
    assert_eq!(w.executions.started(), 0);
    let reply = |task_id: &'static str| Call::Reply {
        task_id,
        body: Box::leak(Box::new(
            json!({"text": "here", "parts": [{"kind": "file", "upload_id": id}]}),
        )),
    };
    // The stand-in first: an unknown one is a 404, whatever its parts.
    let unknown = w.call(reply("nobody")).await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    w.store.create(&Row::new("asks", "writer")).await.unwrap();
    let refused = w.call(reply("asks")).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(error(&refused).starts_with("parts[0].upload_id: no file was put"));

    // Once the file is put, the same start goes, the upload named in the execution's input.
    w.blobs
        .put(&format!("uploads/{id}"), b"hello".to_vec())
        .await
        .unwrap();
    let started = w.start(start("u1")).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let input: Value = serde_json::from_str(&w.executions.input_of("u1").unwrap()).unwrap();
    assert_eq!(input["parts"][1]["upload_id"], id.as_str());
    // A malformed id is refused by the parser, naming the field.
    let bad = w
        .start(json!({"agent": "writer", "message": "go", "parts": [
            {"kind": "file", "upload_id": "uploads/../x"}]}))
        .await;
    assert_eq!(bad.status, 400);
    assert!(
        error(&bad).starts_with("parts[0].upload_id: must be an upload_id"),
        "{}",
        bad.body
    );
}

#[tokio::test]
async fn an_upload_too_large_for_an_agent_that_takes_bytes_is_refused_at_the_start() {
    let w = World::new();
    let body = json!({"url": "https://reader.example", "file_delivery": "bytes"});
    let put = w
        .call(Call::AgentPut {
            id: "reader",
            body: &body,
        })
        .await;
    assert_eq!(put.status, 200, "{}", put.body);
    let link = w.call(Call::Upload(&json!({"size": 5_000_000}))).await;
    let id = link.body["upload_id"].as_str().unwrap().to_owned();
    w.blobs
        .put(&format!("uploads/{id}"), vec![b'x'; 5_000_000])
        .await
        .unwrap();
    let start = |agent: &str, task_id: &str| {
        json!({"agent": agent, "message": "go", "task_id": task_id,
            "parts": [{"kind": "file", "upload_id": id}]})
    };
    let refused = w.start(start("reader", "b1")).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        error(&refused).starts_with("parts[0].upload_id: the agent takes files as bytes"),
        "{}",
        refused.body
    );
    // An agent that fetches links takes it.
    let started = w.start(start("writer", "b2")).await;
    assert_eq!(started.status, 200, "{}", started.body);

    // The bound is the message's, all its files together, and holds for a reply too.
    let (one, two) = (put_file(&w, 3_000_000).await, put_file(&w, 3_000_000).await);
    let started = w
        .start(json!({"agent": "reader", "message": "go", "task_id": "b3", "parts": [one.clone()]}))
        .await;
    assert_eq!(
        started.status, 200,
        "one file within the bound: {}",
        started.body
    );
    let refused = w
        .call(Call::Reply {
            task_id: "b3",
            body: &json!({"text": "and these", "parts": [one, two]}),
        })
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        error(&refused).starts_with("parts[1].upload_id: the agent takes files as bytes"),
        "{}",
        refused.body
    );
}

/// A file of `bytes` bytes put through an upload: its file part.
async fn put_file(w: &World, bytes: usize) -> Value {
    let link = w.call(Call::Upload(&json!({"size": bytes}))).await;
    let id = link.body["upload_id"].as_str().unwrap().to_owned();
    w.blobs
        .put(&format!("uploads/{id}"), vec![b'y'; bytes])
        .await
        .unwrap();
    json!({"kind": "file", "upload_id": id})
}
