//! Every followed stand-in is followed at once. More stand-ins park at their question
//! than LocalStack once ran asynchronous invocations at a time (six on two cores, a pool
//! of Python's default size): each must hold its own subscription to the agent, as on
//! AWS, where the follow function runs up to its concurrency. Before the fix six were
//! held and the rest waited in LocalStack's queue while their parks timed out.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::{Duration, Instant};

use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::stack::{Stack, unique};

/// Twice the six a two-core machine's default pool ran.
const CROWD: usize = 12;

#[tokio::test]
async fn every_followed_stand_in_holds_its_own_subscription() {
    let stack = Stack::load("standin").await;
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
        let notes = stack.wait_notes(id, 1, Duration::from_secs(90)).await;
        assert_eq!(notes[0]["state"], "TASK_STATE_INPUT_REQUIRED");
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut most = 0;
    while Instant::now() < deadline {
        most = most.max(agent.open_subscriptions());
        if most >= CROWD {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        most >= CROWD,
        "{CROWD} followed stand-ins parked, but at most {most} subscriptions were open at once"
    );
    // Each is still heard: a change to every task reaches its stand-in's parent.
    for remote in agent.task_ids() {
        agent
            .change(&remote, "TASK_STATE_WORKING", "mixing paint", false)
            .await;
    }
    for id in &ids {
        let notes = stack.wait_notes(id, 2, Duration::from_secs(60)).await;
        assert_eq!(notes[1]["state"], "TASK_STATE_WORKING", "{id}");
    }
    for id in &ids {
        let (status, body) = stack
            .control("POST", &format!("/standins/{id}/cancel"), Some(json!({})))
            .await;
        assert_eq!(status, 202, "{body}");
    }
}
