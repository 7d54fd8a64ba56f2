//! What the end-to-end tests share: the states they expect, and the steps every
//! scenario takes (start a stand-in, wait until it is parked, reply, read its notes).

use std::time::Duration;

use serde_json::{Value, json};
use standin_wire::{ParentNote, StartRequest, TaskId};

use crate::stack::{Stack, unique};

/// How long a test waits for anything the stand-in should do at once.
pub const SOON: Duration = Duration::from_secs(60);

pub const INPUT_REQUIRED: &str = "TASK_STATE_INPUT_REQUIRED";
pub const WORKING: &str = "TASK_STATE_WORKING";
pub const COMPLETED: &str = "TASK_STATE_COMPLETED";
pub const CANCELED: &str = "TASK_STATE_CANCELED";
pub const FAILED: &str = "TASK_STATE_FAILED";
pub const AUTH_REQUIRED: &str = "TASK_STATE_AUTH_REQUIRED";

/// (seq, state, final) of each note, to compare a whole conversation at once. Each
/// note is read as the wire's `ParentNote`, so a note a parent could not read fails here.
pub fn states(notes: &[Value]) -> Vec<(u64, String, bool)> {
    notes
        .iter()
        .map(|n| {
            let note: ParentNote = serde_json::from_value(n.clone())
                .unwrap_or_else(|e| panic!("not a parent note ({e}): {n}"));
            (note.seq, note.state.as_str().to_owned(), note.is_final)
        })
        .collect()
}

/// Starts a stand-in on `persona` (an agent of `tests/agents.json`) under `id`.
pub async fn start_as(stack: &Stack, persona: &str, id: &str) {
    let (status, body) = stack
        .control(
            "POST",
            "/standins",
            Some(
                serde_json::to_value(StartRequest {
                    agent: persona.into(),
                    message: "Please build me a widget".into(),
                    parts: Vec::new(),
                    task_id: Some(TaskId::parse(id).unwrap()),
                    deadline_secs: None,
                    traceparent: None,
                    webhook: None,
                    context_id: None,
                })
                .unwrap(),
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["task_id"], id);
}

/// Registers `entry` under a fresh agent id (the registry: no redeploy) and starts a
/// stand-in on it, with `start` merged into the request; returns the agent's id and the
/// stand-in's.
pub async fn start_on_entry(
    stack: &Stack,
    name: &str,
    entry: Value,
    start: Value,
) -> (String, String) {
    let agent_id = unique(name);
    let (status, body) = stack
        .control("PUT", &format!("/agents/{agent_id}"), Some(entry))
        .await;
    assert_eq!(status, 200, "{body}");
    let id = unique(name);
    let mut request =
        json!({"agent": agent_id, "message": "Please build me a widget", "task_id": id});
    if let (Some(request), Some(start)) = (request.as_object_mut(), start.as_object()) {
        request.extend(start.clone());
    }
    let (status, body) = stack.control("POST", "/standins", Some(request)).await;
    assert_eq!(status, 200, "{body}");
    (agent_id, id)
}

/// Notes that say the agent asked (1), worked (2) and completed (3, the final one).
pub fn assert_asked_worked_completed(notes: &[Value], context: &str) {
    assert_eq!(
        states(notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, COMPLETED.into(), true)
        ],
        "{context}: {notes:#?}"
    );
}

/// Starts a stand-in on `persona` under a new id, and returns the id.
pub async fn start(stack: &Stack, persona: &str) -> String {
    let id = unique(persona);
    start_as(stack, persona, &id).await;
    id
}

/// Waits until the stand-in watches by `watch` and a park is live (its token stored, its
/// wake not yet run).
pub async fn wait_parked(stack: &Stack, id: &str, watch: &str) {
    let deadline = std::time::Instant::now() + SOON;
    loop {
        let row = stack.row_status(id).await;
        if row["watch"] == watch && row["parked"] == true {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{id}: {row}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Waits until the stand-in has written note `seq` (heard that many changes), whether or
/// not the parent has it yet: a test that makes changes one after another waits on this
/// so that each is heard alone instead of coalesced with the next.
pub async fn wait_heard(stack: &Stack, id: &str, seq: u64) {
    let deadline = std::time::Instant::now() + SOON;
    loop {
        let row = stack.row_status(id).await;
        if row["seq"].as_u64().is_some_and(|heard| heard >= seq) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{id}: note {seq} not heard: {row}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The parent's reply; the control API's status.
pub async fn reply(stack: &Stack, id: &str, text: &str) -> u16 {
    stack
        .control(
            "POST",
            &format!("/standins/{id}/reply"),
            Some(json!({"text": text})),
        )
        .await
        .0
}

/// Waits until the parent has the stand-in's final note; returns every note.
pub async fn wait_final(stack: &Stack, id: &str) -> Vec<Value> {
    let deadline = std::time::Instant::now() + SOON;
    loop {
        let notes = stack.notes(id);
        if notes.iter().any(|n| n["final"] == true) {
            return notes;
        }
        assert!(std::time::Instant::now() < deadline, "{notes:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every step function the execution ran returned: none died (a crash, a timeout, an
/// out-of-memory shows in the history as a failed Lambda task). Parks that time out are
/// normal (`TaskTimedOut`) and not counted.
pub async fn assert_no_step_died(stack: &Stack, execution: &str) {
    let sfn = aws_sdk_sfn::Client::new(&stack.config);
    let mut events = sfn
        .get_execution_history()
        .execution_arn(stack.execution_arn(execution))
        .into_paginator()
        .items()
        .send();
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        let kind = event.r#type().as_str().to_owned();
        let park_ran_its_time = event
            .task_timed_out_event_details()
            .is_some_and(|d| d.resource().ends_with(".waitForTaskToken"));
        if park_ran_its_time {
            continue;
        }
        assert!(
            !matches!(
                kind.as_str(),
                "LambdaFunctionFailed" | "LambdaFunctionTimedOut" | "TaskFailed" | "TaskTimedOut"
            ),
            "{execution}: {kind} {:?}",
            event.task_failed_event_details()
        );
    }
}

/// The stand-in ended at its deadline: its final note CANCELED saying so, the agent's
/// task cancelled once, the execution done.
pub async fn assert_ended_at_deadline(
    stack: &Stack,
    id: &str,
    agent: &crate::agent::TestAgent,
) -> Vec<Value> {
    let notes = wait_final(stack, id).await;
    let last = notes.last().expect("a final note");
    assert_eq!(last["state"], CANCELED, "{notes:#?}");
    assert!(
        last["text"]
            .as_str()
            .is_some_and(|t| t.contains("deadline")),
        "{last}"
    );
    assert_eq!(agent.count("CancelTask"), 1, "the remote task is cancelled");
    stack.wait_execution(id, "SUCCEEDED", SOON).await;
    notes
}

/// The official SDK's widget agent (tests/sdk_agent/server.py) on `port`, with `args`,
/// once its card answers; it stops when dropped.
pub async fn sdk_agent(port: u16, args: &[&str]) -> tokio::process::Child {
    let python =
        std::path::PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"))
            .join("venv-a2a-sdk/bin/python");
    let server = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sdk_agent/server.py");
    let agent = tokio::process::Command::new(python)
        .arg(server)
        .args(["--port", &port.to_string()])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the SDK agent starts");
    let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    let up = std::time::Instant::now() + SOON;
    while reqwest::get(&card)
        .await
        .map_or(true, |r| !r.status().is_success())
    {
        assert!(
            std::time::Instant::now() < up,
            "the SDK agent never answered"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    agent
}
