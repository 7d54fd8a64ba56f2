//! The agents people run, as real servers (tests/peers/, installed pinned and started by
//! `scripts/test`): the official a2a-sdk 0.3 (JSON-RPC and HTTP+JSON) and @a2a-js/sdk 0.3
//! servers in a two-turn conversation heard by push, by follow and by poll, and the
//! frameworks' own servers (Strands' `A2AServer`, ADK's `to_a2a`, Pydantic AI's FastA2A,
//! LangGraph's API server, Mastra's A2A routes) on scripted models, and the official
//! a2a-sdk 1.3 server over gRPC. Each conversation ends with the right final note and text. Their agents are the
//! registry's (tests/registry-agents.json), beside the 1.0 stand-ins of the other tests.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use serde_json::{Value, json};
use standin_integration::e2e::{
    COMPLETED, INPUT_REQUIRED, SOON, WORKING, assert_asked_worked_completed, reply, sdk_agent,
    start_as, start_on_entry, wait_final, wait_parked,
};
use standin_integration::stack::{Stack, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);

/// Asks, is answered "blue", works past the turn window (heard by `watch`), completes.
async fn widget_conversation(persona: &str, first_watch: &str, later_watch: &str) {
    let stack = Stack::load(&STACK).await;
    let id = unique(persona);
    start_as(&stack, persona, &id).await;
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(
        (notes[0]["state"].as_str(), notes[0]["text"].as_str()),
        (
            Some(INPUT_REQUIRED),
            Some("Which colour should the widget be?")
        ),
        "{notes:#?}"
    );
    wait_parked(&stack, &id, first_watch).await;
    assert_eq!(reply(&stack, &id, "blue").await, 202);
    let notes = stack.wait_notes(&id, 3, SOON).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_asked_worked_completed(&notes, persona);
    assert_eq!(notes[1]["text"], "Building a blue widget...");
    assert_eq!(notes[2]["text"], "Your blue widget is ready.");
    let row = stack.row_status(&id).await;
    assert_eq!(row["watch"], later_watch, "{row}");
}

/// One turn that completes: the final note carries the framework's answer.
async fn one_answer(persona: &str, text: &str) {
    let stack = Stack::load(&STACK).await;
    let id = unique(persona);
    start_as(&stack, persona, &id).await;
    // The framework streams its answer as WORKING first: told as the turn reads it.
    let notes = wait_final(&stack, &id).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert!(
        notes[..notes.len() - 1]
            .iter()
            .all(|n| n["state"] == WORKING && n["final"] == false),
        "{persona}: only progress before the end: {notes:#?}"
    );
    let last = notes.last().unwrap();
    assert_eq!(
        (
            last["state"].as_str(),
            last["text"].as_str(),
            last["final"].as_bool()
        ),
        (Some(COMPLETED), Some(text), Some(true)),
        "{persona}: {notes:#?}"
    );
}

#[tokio::test]
async fn a2a_sdk_0_3_over_json_rpc_heard_by_push() {
    widget_conversation("sdk03-push", "push", "push").await;
}

/// a2a-sdk 0.3 answers a resubscribe to an input-required task "not found": the follow
/// turns into a poll, which hears the rest.
#[tokio::test]
async fn a2a_sdk_0_3_followed_falls_back_to_a_poll() {
    widget_conversation("sdk03-follow", "poll", "poll").await;
}

#[tokio::test]
async fn a2a_sdk_0_3_heard_by_poll() {
    widget_conversation("sdk03-poll", "poll", "poll").await;
}

/// 0.3's HTTP+JSON binding, its card read at the configured `card_url` (with a query, as
/// LangGraph's `?assistant_id=`).
#[tokio::test]
async fn a2a_sdk_0_3_over_http_json_heard_by_push() {
    widget_conversation("sdk03-rest", "push", "push").await;
}

#[tokio::test]
async fn the_javascript_sdk_0_3_heard_by_push() {
    widget_conversation("js03-push", "push", "push").await;
}

#[tokio::test]
async fn the_javascript_sdk_0_3_followed() {
    widget_conversation("js03-follow", "follow", "follow").await;
}

/// Strands streams its answer in pieces as progress, then the whole as an artifact, and
/// completes with no status message: the final note's text is the artifact's, the whole
/// answer, not the last piece.
#[tokio::test]
async fn strands_agents_a2a_server_answers() {
    one_answer(
        "strands",
        "Looking into it. Drafting the answer. The answer is 42.",
    )
    .await;
}

/// Pydantic AI's FastA2A answers SendMessage with the task at SUBMITTED whatever it is
/// asked, streams the answer only as artifact chunks (the first already `append`) and
/// completes with no status message: the final note's text is its artifact's.
#[tokio::test]
async fn pydantic_ai_fasta2a_answers_through_its_artifact() {
    one_answer("pydantic", "Pydantic AI says: the answer is 42.").await;
}

/// A framework's agent that asks "Which colour?" and builds "blue widget done": the
/// question's note (returned, with the row's remote task id) and the final note's text.
async fn asks_then_builds(persona: &str, parked_by: &str) -> (serde_json::Value, String) {
    let stack = Stack::load(&STACK).await;
    let id = unique(persona);
    start_as(&stack, persona, &id).await;
    let deadline = std::time::Instant::now() + SOON;
    let question = loop {
        let notes = stack.notes(&id);
        if let Some(asked) = notes.iter().find(|n| n["state"] == INPUT_REQUIRED) {
            break asked.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{persona}: {notes:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(question["text"], "Which colour?", "{persona}: {question:#}");
    assert_eq!(
        question["parts"][0]["kind"], "data",
        "{persona}: {question:#}"
    );
    wait_parked(&stack, &id, parked_by).await;
    assert_eq!(reply(&stack, &id, "blue").await, 202);
    let notes = wait_final(&stack, &id).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    let last = notes.last().unwrap();
    assert_eq!(
        (last["state"].as_str(), last["text"].as_str()),
        (Some(COMPLETED), Some("blue widget done")),
        "{persona}: {notes:#?}"
    );
    let remote = stack.row_status(&id).await["remote_task_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (question, remote)
}

/// LangGraph's API server: each turn a run of its own (task ids `context:run`), a 1.0
/// stream that goes on in 0.3's flat events, a question with no status message (only an
/// `Interrupt` artifact's data), no SubscribeToTask (the follow turns into a poll), and
/// an answer only in an artifact.
#[tokio::test]
async fn langgraph_api_server_asks_then_answers() {
    let (question, remote) = asks_then_builds("langgraph", "poll").await;
    assert_eq!(
        question["parts"][0]["data"]["value"], "Which colour?",
        "the interrupt's data: {question:#}"
    );
    assert!(
        remote.contains(':'),
        "a run's task id, context:run: {remote}"
    );
}

/// Mastra asks with a text part and a data part (its tool's suspend payload), advertises
/// push but sends none to a private address (heard by the turn's stream instead), and
/// answers only in an artifact streamed in appended chunks.
#[tokio::test]
async fn mastra_a2a_routes_ask_then_answer() {
    let (question, _) = asks_then_builds("mastra", "push").await;
    assert_eq!(
        question["parts"][0]["data"]["suspendPayload"]["suspendPayload"]["message"],
        "Which colour?",
        "the suspend payload: {question:#}"
    );
}

#[tokio::test]
async fn google_adk_to_a2a_answers() {
    one_answer("adk", "ADK says: the answer is 42.").await;
}

/// A 0.3 agent pushes the whole task, history included: a genuine push of 200 KiB,
/// through API Gateway and the push function, rings the stand-in (204), and the change
/// is heard by the GetTask that follows. A stranger's oversized push is still a 413.
#[tokio::test]
async fn a_genuine_push_of_200_kib_is_heard_not_refused() {
    use serde_json::json;
    use standin_integration::agent::{Behaviour, TestAgent};
    use standin_integration::e2e::wait_heard;
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27146, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "What colour?")]);
    let id = unique("bigpush");
    start_as(&stack, "bigpush", &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(&stack, &id, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    agent.change_and_lose_the_push(&remote, WORKING, "Building it");
    let history = "x".repeat(200 * 1024);
    let whole_task = json!({"kind": "task", "id": remote, "contextId": "c",
        "status": {"state": "working"},
        "history": [{"kind": "message", "messageId": "m", "role": "agent",
            "parts": [{"kind": "text", "text": history}]}]});
    agent.push(&remote, &whole_task).await;
    let pushes = agent.pushes_sent();
    assert_eq!(
        pushes.last().map(|(_, status)| *status),
        Some(204),
        "{pushes:?}"
    );
    wait_heard(&stack, &id, 2).await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    assert_eq!(notes[1]["text"], "Building it");
    // Without the token the same body is refused before anything is read.
    let url = pushes.last().unwrap().0.clone();
    let refused = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("x-a2a-notification-token", "x".repeat(43))
        .body(whole_task.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 413);
}

/// What the agent at `log` (its `--received` file, under `STANDIN_RECEIVED_DIR`) received
/// in the message whose first part is `text`.
fn received(log: &str, first_text: &str) -> Option<serde_json::Value> {
    let dir =
        std::env::var("STANDIN_RECEIVED_DIR").expect("STANDIN_RECEIVED_DIR (set by scripts/test)");
    let lines = std::fs::read_to_string(std::path::Path::new(&dir).join(log)).unwrap_or_default();
    lines
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|message| message["parts"][0]["text"] == first_text)
        .map(|message| message["parts"].clone())
}

/// Puts `bytes` through `POST /uploads` as a parent does; the upload's id.
async fn upload(stack: &Stack, bytes: &[u8], media_type: &str) -> String {
    let (status, link) = stack
        .control(
            "POST",
            "/uploads",
            Some(serde_json::json!({"size": bytes.len(), "media_type": media_type})),
        )
        .await;
    assert_eq!(status, 200, "{link}");
    let mut put = reqwest::Client::new()
        .put(link["url"].as_str().unwrap())
        .body(bytes.to_vec());
    for (name, value) in link["headers"].as_object().unwrap() {
        put = put.header(name.as_str(), value.as_str().unwrap());
    }
    let again = put.try_clone().unwrap();
    let put = put.send().await.unwrap();
    assert!(put.status().is_success(), "the PUT: {}", put.status());
    // The link writes once: the file the API checks is the file the agent reads.
    let again = again.send().await.unwrap();
    assert_eq!(
        again.status().as_u16(),
        412,
        "a second PUT through the same link"
    );
    link["upload_id"].as_str().unwrap().to_owned()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// Data, a file's bytes and a file's link, on the start and on the reply, reach the SDK's
/// own server as its parts: the data as given, the bytes checked by SHA-256, the link with
/// its name and media type.
async fn parts_reach(persona: &str, log: &str) {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::json;
    let stack = Stack::load(&STACK).await;
    let id = unique(persona);
    // Every byte value, so a lossy text decoding anywhere would show.
    let contract: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 256) as u8).collect();
    // Too large to go inline: put through POST /uploads.
    let dataset: Vec<u8> = (0..200_000u32).map(|i| (i * 13 % 251) as u8).collect();
    let upload_id = upload(&stack, &dataset, "application/octet-stream").await;
    let message = format!("Review the contract ({id})");
    // Strings, not numbers: a protobuf Struct (1.x, 0.3 over HTTP+JSON) reads 1 as 1.0.
    let start = json!({"agent": persona, "message": message, "task_id": id, "parts": [
        {"kind": "data", "data": {"rows": ["a", "b"], "id": id}},
        {"kind": "file", "name": "contract.bin", "media_type": "application/octet-stream",
         "bytes": STANDARD.encode(&contract)},
        {"kind": "file", "name": "terms.pdf", "media_type": "application/pdf",
         "url": "https://example.com/terms.pdf"},
        {"kind": "file", "name": "dataset.bin", "media_type": "application/octet-stream",
         "upload_id": upload_id},
    ]});
    let (status, body) = stack.control("POST", "/standins", Some(start)).await;
    assert_eq!(status, 200, "{body}");
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(notes[0]["state"], INPUT_REQUIRED, "{notes:#?}");
    let mut first = received(log, &message).expect("the agent logged the first message");
    let uploaded = first.as_array_mut().unwrap().pop().unwrap();
    assert_eq!(
        first,
        json!([
            {"text": message},
            {"data": {"rows": ["a", "b"], "id": id}},
            {"filename": "contract.bin", "media_type": "application/octet-stream", "sha256": sha256(&contract)},
            {"filename": "terms.pdf", "media_type": "application/pdf", "url": "https://example.com/terms.pdf"},
        ]),
        "{persona}: the first message as the agent read it"
    );
    // The upload, as a link the agent fetches: it reads the very bytes put.
    assert_eq!(
        (&uploaded["filename"], &uploaded["media_type"]),
        (&json!("dataset.bin"), &json!("application/octet-stream")),
        "{persona}: {uploaded}"
    );
    let link = uploaded["url"].as_str().expect("a link");
    let fetched = reqwest::get(link).await.unwrap();
    assert_eq!(fetched.status().as_u16(), 200, "{persona}: {link}");
    assert_eq!(
        sha256(&fetched.bytes().await.unwrap()),
        sha256(&dataset),
        "{persona}: the upload's link reads the file put"
    );

    wait_parked(&stack, &id, "push").await;
    let answer = format!("blue ({id})");
    let swatch = b"a blue swatch\n";
    let reply = json!({"text": answer, "parts": [
        {"kind": "data", "data": {"colour": "blue"}},
        {"kind": "file", "name": "swatch.txt", "media_type": "text/plain", "bytes": STANDARD.encode(swatch)},
    ]});
    let (status, body) = stack
        .control("POST", &format!("/standins/{id}/reply"), Some(reply))
        .await;
    assert_eq!(status, 202, "{body}");
    let notes = wait_final(&stack, &id).await;
    assert_eq!(notes.last().unwrap()["state"], COMPLETED, "{notes:#?}");
    assert_eq!(
        received(log, &answer),
        Some(json!([
            {"text": answer},
            {"data": {"colour": "blue"}},
            {"filename": "swatch.txt", "media_type": "text/plain", "sha256": sha256(swatch)},
        ])),
        "{persona}: the reply as the agent read it"
    );
}

#[tokio::test]
async fn data_and_files_reach_a2a_sdk_1_x_on_start_and_reply() {
    parts_reach("sdk-push", "sdk.jsonl").await;
}

#[tokio::test]
async fn data_and_files_reach_a2a_sdk_0_3_over_json_rpc() {
    parts_reach("sdk03-push", "sdk03.jsonl").await;
}

#[tokio::test]
async fn data_and_files_reach_a2a_sdk_0_3_over_http_json() {
    parts_reach("sdk03-rest", "sdk03-rest.jsonl").await;
}

/// The requests the a2a-sdk 1.x agent on 127.0.0.1:27110 logged (its `--calls` file) whose
/// JSON-RPC params name any of `needles`.
fn calls_naming(needles: &[&str]) -> Vec<serde_json::Value> {
    let dir =
        std::env::var("STANDIN_RECEIVED_DIR").expect("STANDIN_RECEIVED_DIR (set by scripts/test)");
    let log = std::path::Path::new(&dir).join("sdk-calls.jsonl");
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|call| {
            let params = call["params"].to_string();
            needles.iter().any(|needle| params.contains(needle))
        })
        .collect()
}

/// A widget conversation heard by `watch`, in trace `trace_id`: every note names the
/// trace, and every call the agent received about the task carried it.
async fn conversation_in_trace(
    stack: &Stack,
    id: &str,
    message: &str,
    watch: &str,
    trace_id: &str,
) {
    let notes = stack.wait_notes(id, 1, SOON).await;
    assert_eq!(notes[0]["state"], INPUT_REQUIRED, "{notes:#?}");
    wait_parked(stack, id, watch).await;
    assert_eq!(reply(stack, id, &format!("blue ({id})")).await, 202);
    let notes = wait_final(stack, id).await;
    assert_eq!(notes.last().unwrap()["state"], COMPLETED, "{notes:#?}");
    for note in &notes {
        assert_eq!(note["trace_id"], trace_id, "{note}");
    }
    let remote = notes[0]["remote_task_id"].as_str().unwrap();
    let calls = calls_naming(&[remote, message]);
    let methods: Vec<&str> = calls.iter().filter_map(|c| c["method"].as_str()).collect();
    let sends = methods
        .iter()
        .filter(|m| m.contains("SendMessage") || m.contains("SendStreamingMessage"))
        .count();
    assert!(sends >= 2, "the first message and the reply: {methods:?}");
    let watched = if watch == "push" {
        "CreateTaskPushNotificationConfig"
    } else {
        "SubscribeToTask"
    };
    assert!(methods.contains(&watched), "{watch}: {methods:?}");
    for call in &calls {
        let carried = call["traceparent"].as_str().unwrap_or_default();
        assert!(
            carried.starts_with(&format!("00-{trace_id}-")),
            "{watch}: a call without the trace: {call}"
        );
    }
}

/// A W3C traceparent given as the start's header reaches every call to the agent, heard
/// by push; with none given, the stand-in begins one, names it in the start's answer, and
/// every call (heard by follow) carries it. Each note names its trace.
#[tokio::test]
async fn one_trace_runs_from_the_parent_through_every_call_to_the_agent() {
    use serde_json::json;
    let stack = Stack::load(&STACK).await;
    let given_id = unique("sdk-push");
    let trace_id = sha256(given_id.as_bytes())[..32].to_owned();
    let traceparent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let given_message = format!("Please build me a widget ({given_id})");
    let answer = stack
        .http
        .post(stack.api_url("ControlApiId", "/standins"))
        .header("traceparent", &traceparent)
        .json(&json!({"agent": "sdk-push", "message": given_message, "task_id": given_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let started: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(started["trace_id"], trace_id.as_str(), "{started}");

    let begun_id = unique("sdk-follow");
    let begun_message = format!("Please build me a widget ({begun_id})");
    let (status, started) = stack
        .control(
            "POST",
            "/standins",
            Some(json!({"agent": "sdk-follow", "message": begun_message, "task_id": begun_id})),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let begun = started["trace_id"].as_str().unwrap().to_owned();
    assert!(begun.len() == 32 && begun != trace_id, "{started}");

    tokio::join!(
        conversation_in_trace(&stack, &given_id, &given_message, "push", &trace_id),
        conversation_in_trace(&stack, &begun_id, &begun_message, "follow", &begun),
    );
}

/// An agent whose entry says it cannot fetch (`file_delivery: "bytes"`) gets an uploaded
/// file as its bytes, in the message, checked by SHA-256 on the SDK's side.
#[tokio::test]
async fn an_upload_reaches_an_agent_that_cannot_fetch_as_its_bytes() {
    use serde_json::json;
    let stack = Stack::load(&STACK).await;
    let id = unique("sdk-bytes");
    let dataset: Vec<u8> = (0..150_000u32).map(|i| (i * 31 % 256) as u8).collect();
    let upload_id = upload(&stack, &dataset, "application/octet-stream").await;
    let message = format!("Read the dataset ({id})");
    let start = json!({"agent": "sdk-bytes", "message": message, "task_id": id, "parts": [
        {"kind": "file", "name": "dataset.bin", "media_type": "application/octet-stream",
         "upload_id": upload_id}]});
    let (status, body) = stack.control("POST", "/standins", Some(start)).await;
    assert_eq!(status, 200, "{body}");
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(notes[0]["state"], INPUT_REQUIRED, "{notes:#?}");
    assert_eq!(
        received("sdk.jsonl", &message),
        Some(json!([
            {"text": message},
            {"filename": "dataset.bin", "media_type": "application/octet-stream", "sha256": sha256(&dataset)},
        ])),
        "the file itself, not a link"
    );
    let (status, body) = stack
        .control("POST", &format!("/standins/{id}/cancel"), None)
        .await;
    assert_eq!(status, 202, "{body}");
    let notes = wait_final(&stack, &id).await;
    assert_eq!(
        notes.last().unwrap()["state"],
        "TASK_STATE_CANCELED",
        "{notes:#?}"
    );
}

/// The official SDK's agent serving gRPC as well as JSON-RPC, its entry preferring gRPC:
/// the whole conversation goes over gRPC, heard by push in one stand-in and by
/// SubscribeToTask in another, and ends as it does over JSON-RPC (the SDK's streamed
/// artifact joined whole); the push config is set and deleted over gRPC too.
#[tokio::test]
async fn the_sdk_agents_grpc_interface_carries_the_whole_conversation() {
    let stack = Stack::load(&STACK).await;
    let calls = std::env::temp_dir().join(unique("grpc-calls"));
    let _agent = sdk_agent(
        27193,
        &["--grpc", "27194", "--calls", calls.to_str().unwrap()],
    )
    .await;
    // The gRPC interface is another origin than the card's: the entry allows it.
    let entry = json!({"url": "http://127.0.0.1:27193", "preferred_binding": "GRPC",
        "allowed_origins": ["http://127.0.0.1:27194"], "follow_interval": 1});
    let mut followed = entry.clone();
    followed["updates"] = json!("follow");
    tokio::join!(
        grpc_conversation(&stack, "grpc-push", entry, "push"),
        grpc_conversation(&stack, "grpc-follow", followed, "follow"),
    );
    let calls = std::fs::read_to_string(&calls).unwrap();
    let grpc: Vec<Value> = calls
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|call| call["binding"] == "grpc")
        .collect();
    let method = |name: &str| {
        let path = format!("/lf.a2a.v1.A2AService/{name}");
        grpc.iter().any(|call| call["path"] == path.as_str())
    };
    for used in [
        "SendStreamingMessage",
        "CreateTaskPushNotificationConfig",
        "SubscribeToTask",
        "DeleteTaskPushNotificationConfig",
    ] {
        assert!(method(used), "{used} went over gRPC: {calls}");
    }
    assert!(
        grpc.iter().all(|call| call["a2a_version"] == "1.0"),
        "{calls}"
    );
    assert!(
        !calls.contains("\"path\": \"/\""),
        "no call went to the JSON-RPC interface: {calls}"
    );
}

async fn grpc_conversation(stack: &Stack, name: &str, entry: Value, watch: &str) {
    let (_, id) = start_on_entry(stack, name, entry, json!({"deadline_secs": 120})).await;
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(
        (notes[0]["state"].as_str(), notes[0]["text"].as_str()),
        (
            Some(INPUT_REQUIRED),
            Some("What colour should the widget be?")
        ),
        "{name}: {notes:#?}"
    );
    wait_parked(stack, &id, watch).await;
    assert_eq!(reply(stack, &id, "teal").await, 202);
    let notes = wait_final(stack, &id).await;
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
    assert_asked_worked_completed(&notes, name);
    assert_eq!(notes[2]["text"], "Your teal widget is ready.", "{name}");
    let texts: Vec<&str> = notes[2]["artifacts"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(texts, ["widget(colour=teal)", " size=large"], "{name}");
}
