//! The docs' walkthroughs, run as written: each `sh` block of the page, in order, in one
//! shell, with `standin` and the SDK's `python3` on the PATH as the page asks.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The page's `sh` blocks, in order.
fn shell_blocks(page: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in page.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), text) => {
                block.push_str(text);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A folder for the run: `examples` as the page's commands name it, and a PATH on which
/// `standin` is this build and `python3` has the SDK.
fn workspace(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("standin-{name}-{}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let _ = std::os::unix::fs::symlink(root().join("examples"), dir.join("examples"));
    let _ = std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_standin"), bin.join("standin"));
    let cache = PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"));
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        cache.join("venv-a2a-sdk/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

#[test]
fn your_own_agent_as_docs_own_agent_walks_through_it() {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run this test with `make test`");
    let page = std::fs::read_to_string(root().join("docs/own-agent.md")).unwrap();
    let blocks = shell_blocks(&page);
    assert_eq!(blocks.len(), 2, "the page's two blocks: {blocks:?}");
    let (dir, path) = workspace("own-agent");
    // The page's commands as written; the agent it starts is stopped however they end.
    let script = format!(
        "set -euo pipefail\ntrap 'kill %1 2>/dev/null || true' EXIT\n{}{}echo \"STAND-IN $id\"\n",
        blocks[0], blocks[1]
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .env("PATH", &path)
        .env_remove("STANDIN_STACK")
        .output()
        .expect("bash runs");
    let said = String::from_utf8_lossy(&out.stdout);
    let complained = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {said}\n{complained}", out.status);
    let id = said
        .lines()
        .find_map(|l| l.strip_prefix("STAND-IN "))
        .expect("the stand-in's id")
        .to_owned();
    let lines: Vec<&str> = said.lines().collect();
    let at = |text: &str| {
        lines
            .iter()
            .position(|l| l.contains(text))
            .unwrap_or_else(|| panic!("{text:?} not printed: {said}\n{complained}"))
    };
    // Each step the agent streams within its turn reaches the parent as its own note,
    // in order, before the final one.
    let order = [
        at("Whom should I greet?"),
        at("Looking Ada up..."),
        at("Choosing the words..."),
        at("Writing the greeting..."),
        at("Greeted Ada."),
    ];
    assert!(order.is_sorted(), "{order:?}: {said}");
    let saved = std::fs::read_dir(dir.join("results"))
        .expect("--out wrote ./results")
        .flatten()
        .flat_map(|artifact| std::fs::read_dir(artifact.path()).unwrap().flatten())
        .map(|f| f.path())
        .collect::<Vec<_>>();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(saved[0].ends_with("0-greeting.txt"), "{saved:?}");
    assert_eq!(std::fs::read_to_string(&saved[0]).unwrap(), "Hello, Ada!");

    // Heard as they happened: the notes were committed a second apart, not at the end.
    let notes = Command::new(env!("CARGO_BIN_EXE_standin"))
        .args(["notes", &id, "--json"])
        .env_remove("STANDIN_STACK")
        .output()
        .unwrap();
    let notes: Vec<Value> = String::from_utf8_lossy(&notes.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let millis = |text: &str| {
        let note = notes
            .iter()
            .find(|n| n["text"] == text)
            .unwrap_or_else(|| panic!("no note {text:?}: {notes:?}"));
        standin_wire::time::parse_rfc3339_ms(note["at"].as_str().unwrap()).unwrap()
    };
    assert!(
        millis("Greeted Ada.").saturating_sub(millis("Looking Ada up...")) >= 1_500,
        "the first step was told when it happened, not with the end: {notes:?}"
    );
    let removed = Command::new(env!("CARGO_BIN_EXE_standin"))
        .args(["agents", "remove", "greeter"])
        .env_remove("STANDIN_STACK")
        .status()
        .unwrap();
    assert!(removed.success());
    std::fs::remove_dir_all(&dir).ok();
}

/// Stopped however the test ends.
struct Agent(std::process::Child);
impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An a2a-sdk agent that streams three WORKING messages a second apart in its first
/// turn, then completes: the parent hears each before the final note, as it happens.
#[test]
fn progress_streamed_in_a_first_turn_reaches_the_parent_as_it_happens() {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run this test with `make test`");
    let (dir, path) = workspace("first-turn");
    let port = "27191";
    let _agent = Agent(
        Command::new("python3")
            .args(["examples/agent.py", "--port", port])
            .current_dir(&dir)
            .env("PATH", &path)
            .spawn()
            .expect("the example agent starts"),
    );
    let standin = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_standin"))
            .args(args)
            .env_remove("STANDIN_STACK")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "standin {args:?}: {said}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        said
    };
    let entry = dir.join("greeter.json");
    std::fs::write(
        &entry,
        format!(r#"{{"id": "greeter-first", "url": "http://127.0.0.1:{port}"}}"#),
    )
    .unwrap();
    standin(&["agents", "put", entry.to_str().unwrap()]);
    // The agent is up once its card reads.
    let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::process::Command::new("curl")
        .args(["-fsS", "--max-time", "1", "-o", "/dev/null", &card])
        .status()
        .map_or(true, |s| !s.success())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never served its card"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let id = standin(&[
        "start",
        "--agent",
        "greeter-first",
        "--message",
        "Greet Ada",
    ]);
    let id = id.trim();
    standin(&["events", id]);
    let notes: Vec<Value> = standin(&["notes", id, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let told: Vec<(&str, &str, bool, Vec<&str>)> = notes
        .iter()
        .map(|n| {
            let artifacts = n["artifacts"].as_array().map_or_else(Vec::new, |a| {
                a.iter().map(|a| a["name"].as_str().unwrap()).collect()
            });
            (
                n["state"].as_str().unwrap(),
                n["text"].as_str().unwrap(),
                n["final"].as_bool().unwrap(),
                artifacts,
            )
        })
        .collect();
    let working = |text| ("TASK_STATE_WORKING", text, false, vec![]);
    assert_eq!(
        told,
        [
            working("Looking Ada up..."),
            working("Choosing the words..."),
            working("Writing the greeting..."),
            // The greeting completed (lastChunk) a second before the task: told then.
            (
                "TASK_STATE_WORKING",
                "Writing the greeting...",
                false,
                vec!["greeting.txt"]
            ),
            (
                "TASK_STATE_COMPLETED",
                "Greeted Ada.",
                true,
                vec!["greeting.txt"]
            ),
        ],
        "each change of the first turn, once, in order"
    );
    let at =
        |i: usize| standin_wire::time::parse_rfc3339_ms(notes[i]["at"].as_str().unwrap()).unwrap();
    // Told with the next would be the same write, milliseconds apart; the agent's
    // changes are a second apart, and a loaded machine has brought two to 494 ms.
    for i in 0..4 {
        assert!(
            at(i + 1).saturating_sub(at(i)) >= 250,
            "note {} was told when it happened, not with the next: {notes:?}",
            i + 1
        );
    }
    standin(&["agents", "remove", "greeter-first"]);
    std::fs::remove_dir_all(&dir).ok();
}
