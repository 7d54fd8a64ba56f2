//! A follow whose function process dies is replaced, and the change is still heard. In its
//! own test binary: it kills every running follow process of its stack, so nothing else
//! may follow on that stack at the same time (a lane of `make test` runs its binaries one
//! after another).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::stack::{Stack, unique};

/// The follow function's processes, found by their Lambda environment (LocalStack runs
/// them as host processes for this test run; they are ours to stop).
fn follow_processes(stack: &str) -> Vec<i32> {
    let name = format!("AWS_LAMBDA_FUNCTION_NAME={stack}-FollowFunction-");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let is_follow = environ
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(name.as_bytes()));
        if is_follow {
            pids.push(pid);
        }
    }
    pids
}

#[tokio::test]
async fn a_killed_follow_is_replaced_and_the_change_is_heard() {
    let stack = Stack::under_test().await;
    let agent = TestAgent::start(27114, Behaviour::default()).await;
    agent.script_turn(&[("TASK_STATE_INPUT_REQUIRED", "What colour?")]);
    let id = unique("killed");
    let (status, body) = stack
        .control(
            "POST",
            "/standins",
            Some(json!({"agent": "killed", "message": "go", "task_id": id})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    stack.wait_notes(&id, 1, Duration::from_secs(60)).await;
    // Wait for the follow to be subscribed, then kill its process.
    let deadline = Instant::now() + Duration::from_secs(60);
    while agent.count("SubscribeToTask") == 0 {
        assert!(Instant::now() < deadline, "the follow never subscribed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let victims = follow_processes(&stack.name);
    assert!(!victims.is_empty(), "a follow process runs");
    for pid in &victims {
        let status = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let subscribed_before = agent.count("SubscribeToTask");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let remote = agent.task_ids().pop().unwrap();
    agent
        .change(&remote, "TASK_STATE_WORKING", "still working", false)
        .await;
    // The park's heartbeat timeout (30 s) starts a new follow, whose request the next
    // follower takes; it subscribes and sees the change.
    let notes = stack.wait_notes(&id, 2, Duration::from_secs(120)).await;
    assert_eq!(notes[1]["state"], "TASK_STATE_WORKING");
    assert!(
        agent.count("SubscribeToTask") > subscribed_before,
        "a new follow subscribed"
    );
    assert_eq!(
        stack.execution_status(&id).await.as_deref(),
        Some("RUNNING"),
        "the stand-in lives on"
    );
    let (status, _) = stack
        .control("POST", &format!("/standins/{id}/cancel"), Some(json!({})))
        .await;
    assert_eq!(status, 202);
    stack
        .wait_execution(&id, "SUCCEEDED", Duration::from_secs(60))
        .await;
}
