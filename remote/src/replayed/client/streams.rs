//! Streams: byte-exact SSE, a terminal task, error events, turns that stop at a question,
//! streams left open.

use super::*;

#[tokio::test]
async fn subscribe_reads_a_byte_exact_crlf_stream_with_pings_in_odd_pieces() {
    for piece in [1, 7, 4096] {
        let (server, client) = client(
            vec![raw_stream("e_raw_sse_framing/subscribe_jsonrpc.raw", piece)],
            None,
        )
        .await;
        let events = collect(
            client
                .subscribe_to_task("afe1a18d-883a-433e-81ad-604fa49ed25d")
                .await
                .expect("stream"),
        )
        .await;
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e.as_ref().expect("event") {
                StreamResponse { task: Some(_), .. } => "task",
                StreamResponse {
                    status_update: Some(u),
                    ..
                } if u.status.state == WireState::Working => "working",
                StreamResponse {
                    status_update: Some(u),
                    ..
                } if u.status.state == WireState::Completed => "completed",
                StreamResponse {
                    artifact_update: Some(_),
                    ..
                } => "artifact",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            ["task", "working", "artifact", "completed"],
            "piece size {piece}"
        );
        let request = &server.requests()[1];
        assert_eq!(request.header("accept"), Some("text/event-stream"));
        assert_eq!(request.json()["method"], "SubscribeToTask");
    }
}

#[tokio::test]
async fn subscribe_to_a_terminal_task_is_a_plain_json_32004() {
    let (_server, client) = client(
        vec![captured(
            "a_jsonrpc_main/12_subscribe_to_terminal_task_error.json",
        )],
        None,
    )
    .await;
    let err = client.subscribe_to_task(TASK).await.err().expect("refused");
    assert!(err.is_terminal_task(), "{err}");
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn an_error_event_ends_the_stream_as_a_retryable_error() {
    let (_server, client) = client(
        vec![captured(
            "f_multiturn_and_failure/09_subscribe_during_crash.json",
        )],
        None,
    )
    .await;
    let events = collect(
        client
            .subscribe_to_task("e14114c0-58d0-4d2f-aee0-5711762d8257")
            .await
            .expect("stream"),
    )
    .await;
    assert_eq!(events.len(), 3);
    assert!(events[0].is_ok() && events[1].is_ok());
    let err = events[2].as_ref().err().expect("error event");
    assert_eq!(
        err,
        &RemoteError::Rpc {
            code: -32603,
            message: "probe agent crashed on purpose".into()
        }
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_turn_stream_that_ends_at_input_required_and_a_follow_up_that_runs_to_completion() {
    let (_server, client) = client(
        vec![
            captured(
                "b_jsonrpc_streaming/01_send_streaming_message_first_turn_inline_push_config.json",
            ),
            captured("b_jsonrpc_streaming/03_send_streaming_message_follow_up.json"),
        ],
        None,
    )
    .await;
    let mut turn = TurnReader::new();
    let mut stream = client
        .send_streaming_message(&user("widget", None))
        .await
        .expect("stream");
    while let Some(event) = stream.next().await {
        if turn.read(&event.expect("event")) {
            break;
        }
    }
    let context = turn
        .context_id()
        .map(str::to_owned)
        .expect("context from the first event");
    let first = turn.finish().expect("a state");
    assert_eq!(
        (first.state, first.is_final),
        (standin_wire::TaskState::InputRequired, false)
    );
    let mut turn = TurnReader::new();
    let mut stream = client
        .send_streaming_message(&user("blue", Some((&first.remote_task_id, &context))))
        .await
        .expect("stream");
    while let Some(event) = stream.next().await {
        if turn.read(&event.expect("event")) {
            break;
        }
    }
    let second = turn.finish().expect("a state");
    assert_eq!(
        (second.state, second.is_final),
        (standin_wire::TaskState::Completed, true)
    );
}

#[tokio::test]
async fn a_stream_that_stays_open_past_the_terminal_state_does_not_hold_the_reader() {
    let mut body =
        std::fs::read(fixture_path("e_raw_sse_framing/subscribe_jsonrpc.raw")).expect("raw");
    body.extend_from_slice(b": ping\r\n\r\n");
    let (_server, client) = client(
        vec![Reply::Sse {
            body,
            piece: 64,
            hold_open: true,
        }],
        None,
    )
    .await;
    let mut stream = client
        .subscribe_to_task("afe1a18d-883a-433e-81ad-604fa49ed25d")
        .await
        .expect("stream");
    let mut turn = TurnReader::new();
    let done = tokio::time::timeout(Duration::from_secs(3), async {
        while let Some(event) = stream.next().await {
            if turn.read(&event.expect("event")) && turn.last().is_some_and(|l| l.is_final) {
                return true;
            }
        }
        false
    })
    .await
    .expect("the reader stops at the terminal state without waiting for the close");
    assert!(done);
}
