//! One trace across the hop: a start's `traceparent` (field or header), or one the
//! stand-in begins, goes with the execution, the row and the answer, and a start sent
//! again keeps it.

use super::*;

const GIVEN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const GIVEN_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// The trace a started stand-in carries: in its row, its execution's input, and the
/// trace its execution was started in.
fn carried(w: &World, task_id: &str) -> (Option<String>, Value, Option<String>) {
    let row = w.store.snapshot(task_id).unwrap().traceparent;
    let input: Value = serde_json::from_str(&w.executions.input_of(task_id).unwrap()).unwrap();
    (
        row,
        input["traceparent"].clone(),
        w.executions.trace_of(task_id),
    )
}

#[tokio::test]
async fn a_parent_s_traceparent_goes_with_the_execution_the_row_and_the_answer() {
    let w = World::new();
    let started = w
        .start(json!({"agent": "writer", "message": "go", "task_id": "t1", "traceparent": GIVEN}))
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    assert_eq!(started.body["trace_id"], GIVEN_TRACE);
    assert_eq!(
        carried(&w, "t1"),
        (Some(GIVEN.into()), json!(GIVEN), Some(GIVEN.into()))
    );
}

#[tokio::test]
async fn a_start_without_a_trace_begins_one_and_a_start_sent_again_keeps_it() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "go", "task_id": "t2"});
    let first = w.start(body.clone()).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let trace_id = first.body["trace_id"].as_str().unwrap().to_owned();
    assert_eq!(trace_id.len(), 32);
    let (row, input, execution) = carried(&w, "t2");
    let begun = row.unwrap();
    assert!(begun.starts_with(&format!("00-{trace_id}-")), "{begun}");
    assert_eq!((input, execution), (json!(begun), Some(begun.clone())));

    let again = w.start(body).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        again.body, first.body,
        "the same stand-in, in the same trace"
    );
    assert_eq!(w.executions.started(), 1);
    // A stand-in of its own begins a trace of its own.
    let other = w
        .start(json!({"agent": "writer", "message": "go", "task_id": "t3"}))
        .await;
    assert_ne!(other.body["trace_id"], first.body["trace_id"]);
}

#[tokio::test]
async fn a_malformed_traceparent_is_refused_naming_it_and_starts_nothing() {
    let w = World::new();
    for bad in [
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"),
        json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        json!(7),
    ] {
        let refused = w
            .start(json!({"agent": "writer", "message": "go", "traceparent": bad}))
            .await;
        assert_eq!(refused.status, 400, "{}", refused.body);
        assert!(
            error(&refused).starts_with("traceparent: must be"),
            "{}",
            refused.body
        );
    }
    assert_eq!(w.executions.started(), 0);
}

/// A start through the router with `traceparent` as a header.
async fn start_with_header(router: &axum::Router, body: Value, traceparent: &str) -> (u16, Value) {
    request_with(
        router,
        "POST",
        "/standins",
        body,
        &[("traceparent", traceparent)],
    )
    .await
}

#[tokio::test]
async fn the_traceparent_header_is_read_as_the_field_the_body_s_winning_within_one_trace() {
    let (w, router) = router();
    let (status, started) = start_with_header(
        &router,
        json!({"agent": "writer", "message": "go", "task_id": "h1"}),
        GIVEN,
    )
    .await;
    assert_eq!(
        (status, &started["trace_id"]),
        (200, &json!(GIVEN_TRACE)),
        "{started}"
    );
    assert_eq!(carried(w, "h1").0.as_deref(), Some(GIVEN));

    // A tracing library's header names its own client span; the body's span is kept.
    let body_span = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01";
    let (status, same) = start_with_header(
        &router,
        json!({"agent": "writer", "message": "go", "task_id": "h2", "traceparent": body_span}),
        GIVEN,
    )
    .await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(carried(w, "h2").0.as_deref(), Some(body_span));

    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let (status, refused) = start_with_header(
        &router,
        json!({"agent": "writer", "message": "go", "task_id": "h3", "traceparent": other}),
        GIVEN,
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .starts_with("traceparent: the header names trace")
    );
    assert!(w.executions.input_of("h3").is_none());

    // A header that does not read is ignored: the stand-in begins a trace of its own.
    let (status, begun) = start_with_header(
        &router,
        json!({"agent": "writer", "message": "go", "task_id": "h4"}),
        "not-a-trace",
    )
    .await;
    assert_eq!(status, 200, "{begun}");
    assert_eq!(begun["trace_id"].as_str().map(str::len), Some(32));
    assert_ne!(begun["trace_id"], GIVEN_TRACE);
}
