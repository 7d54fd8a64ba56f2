//! Stand-in's MCP tools driven by the official MCP Python SDK's client
//! (tests/mcp_client/conversation.py), against the LocalStack stack and a scripted agent:
//! a whole conversation, with a question, a reply, a file and data in, and an artifact
//! out, over stdio (`standin mcp`) and over Streamable HTTP (the control API's `/mcp`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};

use serde_json::json;
use standin_cli::{StackInfo, Target};
use standin_scripted_agent::{Behaviour, TestAgent, parent_said};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_over_stdio_delegates_replies_and_reads_the_artifacts() {
    let standin = env!("CARGO_BIN_EXE_standin");
    conversation(27133, "mcp", &["--standin", standin]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_over_http_delegates_replies_and_reads_the_artifacts() {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run this test with `make test`");
    let target = Target::LocalStack { endpoint };
    let config = target.sdk_config().await;
    let stack = StackInfo::load(&target, &config, "standin").await.unwrap();
    let url = format!("{}/mcp", stack.control_url);
    conversation(27139, "mcp-http", &["--url", &url]).await;
}

/// The client's conversation with agent `agent` (scripted, on `port`), reaching the tools
/// as `reach` says; judged by what the client saw and what the agent received.
async fn conversation(port: u16, agent_id: &str, reach: &[&str]) {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run this test with `make test`");
    let agent = TestAgent::start(port, Behaviour::default()).await;
    agent.script_turn(&[("TASK_STATE_INPUT_REQUIRED", "Which colour?")]);
    agent.script_turn(&[("TASK_STATE_COMPLETED", "Painted blue")]);
    let cache = PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sketch = std::env::temp_dir().join(format!("sketch-{}-{port}.txt", std::process::id()));
    std::fs::write(&sketch, "a round widget\n").unwrap();
    let client = tokio::process::Command::new(cache.join("venv-mcp-client/bin/python"))
        .arg(root.join("tests/mcp_client/conversation.py"))
        .args(reach)
        .args(["--agent", agent_id])
        .arg("--file")
        .arg(&sketch)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    // While the agent waits for the answer, it makes the painting.
    agent
        .make_while_asked("widget.svg", "<svg>a blue widget</svg>")
        .await;
    let run = client.wait_with_output().await.expect("python ends");
    let seen = parent_said(&run);

    assert_eq!(
        seen["tools"],
        json!([
            "artifacts",
            "cancel",
            "delegate",
            "list_agents",
            "reply",
            "status",
            "wait"
        ])
    );
    assert_eq!(seen["every_tool_has_an_output_schema"], true);
    assert!(
        seen["agents"]
            .as_array()
            .unwrap()
            .contains(&json!(agent_id)),
        "{seen}"
    );
    // What the agent's card says of it, read by the deployment as it lists.
    let listed = &seen["listed"];
    assert_eq!(listed["name"], "Stand-in test agent", "{seen}");
    assert!(
        listed["description"]
            .as_str()
            .unwrap()
            .starts_with("Scriptable A2A agent"),
        "{seen}"
    );
    assert_eq!(
        listed["skills"],
        json!([{"id": "scripted", "name": "Scripted turns", "tags": ["test"],
                "description": "Answers each turn as the test scripted it"}]),
        "{seen}"
    );
    assert_eq!(
        (&seen["question"]["state"], &seen["question"]["text"]),
        (&json!("TASK_STATE_INPUT_REQUIRED"), &json!("Which colour?"))
    );
    assert_eq!(
        (&seen["end"]["state"], &seen["end"]["final"]),
        (&json!("TASK_STATE_COMPLETED"), &json!(true)),
        "{seen}"
    );
    assert_eq!(seen["status"]["closed"], true, "{seen}");
    assert_eq!(seen["artifacts"][0]["name"], "widget.svg", "{seen}");
    assert_eq!(
        seen["artifact"]["artifacts"][0]["parts"][0]["text"], "<svg>a blue widget</svg>",
        "{seen}"
    );
    // A refusal is a tool error that says what is wrong, in the API's words.
    assert_eq!(seen["refused"]["is_error"], true);
    assert!(
        seen["refused"]["text"]
            .as_str()
            .unwrap()
            .contains("no stand-in"),
        "{seen}"
    );

    // What the agent received: the file and the data with the message, then the reply's.
    let messages = agent.messages();
    assert_eq!(
        messages[0]["parts"],
        json!([
            {"text": "Please paint the widget"},
            {"raw": "YSByb3VuZCB3aWRnZXQK", "filename": "sketch.txt", "mediaType": "text/plain"},
            {"data": {"size": "large"}},
        ])
    );
    assert_eq!(
        messages[1]["parts"],
        json!([{"text": "blue"}, {"data": {"shade": "navy"}}])
    );
    std::fs::remove_file(&sketch).ok();
}
