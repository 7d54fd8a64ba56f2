//! Every followed stand-in is followed at once, by a few followers rather than one
//! function each: fifty stand-ins park at their question and each holds its own
//! subscription to the agent, held by at most ten follow functions (a batch of the follow
//! queue starts one, and batches run at once as AWS runs them; each follower takes more
//! of the queue while it has room). Before follow was multiplexed each held a function;
//! before LocalStack ran asynchronous invocations as AWS does, only six were held at all.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::stack::{Stack, unique};

/// The floor for one follower.
const CROWD: usize = 50;

/// The test stack's follow function processes (LocalStack runs one per invocation that
/// runs at once; they are ours, started for this run).
fn follow_processes(stack: &str) -> usize {
    let name = format!("AWS_LAMBDA_FUNCTION_NAME={stack}-FollowFunction-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|kv| kv.starts_with(name.as_bytes()))
            })
        })
        .count()
}

#[tokio::test]
async fn every_followed_stand_in_holds_its_own_subscription() {
    let stack = Stack::under_test().await;
    let agent = TestAgent::start(27173, Behaviour::default()).await;
    let mut ids = Vec::new();
    for _ in 0..CROWD {
        agent.script_turn(&[("TASK_STATE_INPUT_REQUIRED", "What colour?")]);
        let id = unique("crowd");
        let (status, body) = stack
            .control(
                "POST",
                "/standins",
                Some(json!({"agent": "crowd", "message": "go", "task_id": id})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        ids.push(id);
    }
    for id in &ids {
        let notes = stack.wait_notes(id, 1, Duration::from_secs(180)).await;
        assert_eq!(notes[0]["state"], "TASK_STATE_INPUT_REQUIRED");
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut most, mut functions) = (0, 0);
    while Instant::now() < deadline {
        let open = agent.open_subscriptions();
        if open > most {
            most = open;
            functions = follow_processes(&stack.name);
        }
        if most >= CROWD {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        most >= CROWD,
        "{CROWD} followed stand-ins parked, but at most {most} subscriptions were open at once"
    );
    assert!(
        (1..=CROWD / 5).contains(&functions),
        "{most} subscriptions were held by {functions} follow functions"
    );
    // Each is still heard: a change to every task reaches its stand-in's parent.
    for remote in agent.task_ids() {
        agent
            .change(&remote, "TASK_STATE_WORKING", "mixing paint", false)
            .await;
    }
    for id in &ids {
        let notes = stack.wait_notes(id, 2, Duration::from_secs(90)).await;
        assert_eq!(notes[1]["state"], "TASK_STATE_WORKING", "{id}");
    }
    for id in &ids {
        let (status, body) = stack
            .control("POST", &format!("/standins/{id}/cancel"), Some(json!({})))
            .await;
        assert_eq!(status, 202, "{body}");
    }
}
