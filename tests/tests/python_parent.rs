//! `examples/parent.py`, the documented Python parent (boto3 only), run against the
//! deployed stack: it starts a stand-in, hears the question, replies, hears the end,
//! and saves the artifact the agent produced.
//! A test binary of its own: the other binaries' note collector would take its notes.
//! The agent is the CLI test's persona: `make test` runs both in one lane, one binary after
//! another.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;

use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{COMPLETED, INPUT_REQUIRED};
use standin_integration::stack::unique;

#[tokio::test]
async fn the_python_parent_starts_hears_replies_and_ends() {
    let agent = TestAgent::start(27117, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which colour?")]);
    agent.script_turn(&[(COMPLETED, "A blue widget")]);
    let python = PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"))
        .join("venv-tools/bin/python");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let id = unique("py-parent");
    let save = std::env::temp_dir().join(format!("standin-{id}"));
    std::fs::create_dir_all(&save).unwrap();
    let sketch = save.join("sketch.txt");
    std::fs::write(&sketch, "a round widget\n").unwrap();
    // Too large to go inline: parent.py puts it through an upload.
    let plan_bytes: Vec<u8> = (0..60_000u32).map(|i| (i % 241) as u8).collect();
    let plan = save.join("plan.pdf");
    std::fs::write(&plan, &plan_bytes).unwrap();
    // As docs/parents.md runs it: no AWS settings, LocalStack found as the CLI finds it.
    let parent = tokio::process::Command::new(python)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::var("HOME").unwrap_or_default())
        .arg(root.join("examples/parent.py"))
        .args([
            "--stack",
            &standin_integration::stack::under_test(),
            "--agent",
            "cli",
            "--task-id",
            &id,
        ])
        .args(["--message", "Please build me a widget", "--answer", "blue"])
        .args(["--data", r#"{"size": "large"}"#, "--file"])
        .arg(&sketch)
        .arg("--file")
        .arg(&plan)
        .args(["--timeout", "120", "--save"])
        .arg(&save)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    // While the agent waits for the answer, it produces the drawing.
    let remote = agent.some_task().await;
    agent
        .add_artifact(&remote, "widget.svg", "<svg>a blue widget</svg>")
        .await;
    let run = parent.wait_with_output().await.expect("python ends");
    let said = String::from_utf8_lossy(&run.stdout);
    let complained = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{}: {said}\n{complained}", run.status);
    let artifact = agent.task_artifacts(&remote).pop().expect("the artifact");
    let saved = save
        .join(&id)
        .join(artifact["artifactId"].as_str().unwrap())
        .join("0-widget.svg");
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines,
        [
            format!("started stand-in {id}").as_str(),
            "seq 1  INPUT_REQUIRED  'Which colour?'",
            "replying 'blue'",
            "seq 2  COMPLETED  'A blue widget' (final)",
            format!("saved {}", saved.display()).as_str(),
        ],
        "{complained}"
    );
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        "<svg>a blue widget</svg>"
    );
    // --file and --data went with the first message, in the agent's own form; the large
    // file as a link that reads the bytes put.
    let mut parts = agent.messages()[0]["parts"].clone();
    let uploaded = parts.as_array_mut().unwrap().remove(2);
    assert_eq!(
        parts,
        serde_json::json!([
            {"text": "Please build me a widget"},
            {"raw": "YSByb3VuZCB3aWRnZXQK", "filename": "sketch.txt", "mediaType": "text/plain"},
            {"data": {"size": "large"}},
        ])
    );
    assert_eq!(
        (&uploaded["filename"], &uploaded["mediaType"]),
        (
            &serde_json::json!("plan.pdf"),
            &serde_json::json!("application/pdf")
        ),
        "{uploaded}"
    );
    let fetched = reqwest::get(uploaded["url"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(
        fetched.bytes().await.unwrap().as_ref(),
        plan_bytes.as_slice()
    );
    assert_eq!(
        agent.count("SendStreamingMessage"),
        2,
        "the first message and the reply: {:?}",
        agent.calls()
    );
}

/// With nothing listening where LocalStack should be, it says so in one line, status 2.
#[tokio::test]
async fn the_python_parent_says_in_one_line_what_is_missing() {
    let python = PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"))
        .join("venv-tools/bin/python");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let run = tokio::process::Command::new(python)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .arg(root.join("examples/parent.py"))
        .args([
            "--endpoint",
            "http://127.0.0.1:9",
            "--agent",
            "cli",
            "--message",
            "hi",
        ])
        .output()
        .await
        .expect("python runs");
    let complained = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{complained}");
    assert_eq!(
        complained.trim_end(),
        "parent.py: cannot reach LocalStack at http://127.0.0.1:9: start it with `make up`, or pass --endpoint URL (or --aws)"
    );
    assert!(run.stdout.is_empty());
}
