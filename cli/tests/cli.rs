//! The `standin` binary as a user runs it: every error path is one line on stderr with a
//! non-zero exit, and a stand-in can be driven from start to end. The tests that name
//! `localstack()` need the stack `make test` deploys there (stack "standin", agent "cli").

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use standin_scripted_agent::{Behaviour, TestAgent};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn standin(endpoint: &str, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_standin"));
    command
        .args(args)
        .env("STANDIN_ENDPOINT", endpoint)
        .env_remove("STANDIN_STACK");
    run(command).await
}

async fn run(mut command: Command) -> Run {
    let out: Output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("standin runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn localstack() -> String {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run these tests with `make test`")
}

/// The error contract: exit 1, nothing on stdout, one line on stderr saying `expected`.
fn assert_one_line_error(run: &Run, expected: &str) {
    assert_eq!(run.code, 1, "exit code; stderr: {}", run.stderr);
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, got: {}", run.stderr);
    assert!(lines[0].starts_with("standin: "), "{}", lines[0]);
    assert!(
        lines[0].contains(expected),
        "{:?} does not say {expected:?}",
        lines[0]
    );
    assert!(!run.stderr.contains("panicked") && !run.stderr.contains("backtrace"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localstack_not_running_says_how_to_start_it() {
    // Port 1 on loopback: nothing listens there.
    let run = standin("http://127.0.0.1:1", &["list"]).await;
    assert_one_line_error(
        &run,
        "cannot reach LocalStack at http://127.0.0.1:1: start it with `make up`",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_2_and_name_the_missing_argument() {
    let run = standin("http://127.0.0.1:1", &["start", "--message", "hi"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--agent"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_stack_is_named_with_what_to_do() {
    let run = standin(&localstack(), &["--stack", "no-such-stack", "list"]).await;
    assert_one_line_error(&run, "no stack \"no-such-stack\" in LocalStack at");
    assert!(run.stderr.contains("deploy it first"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_stand_in_is_named_for_every_command() {
    let endpoint = localstack();
    for args in [
        vec!["status", "si-does-not-exist"],
        vec!["reply", "si-does-not-exist", "hello"],
        vec!["cancel", "si-does-not-exist"],
        vec!["notes", "si-does-not-exist"],
        vec!["status", "not/a/stand-in"],
    ] {
        let run = standin(&endpoint, &args).await;
        assert_one_line_error(&run, "no stand-in ");
        assert!(run.stderr.contains("`standin list`"), "{}", run.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_agent_lists_the_agents_the_stack_knows() {
    let run = standin(
        &localstack(),
        &["start", "--agent", "nobody", "--message", "hi"],
    )
    .await;
    assert_one_line_error(&run, "unknown agent \"nobody\": this stack knows ");
    assert!(
        run.stderr.contains("cli") && run.stderr.contains("push"),
        "{}",
        run.stderr
    );
}

/// Reads notes with `standin events --json` until `task_id` has `count` of them.
async fn notes_for(endpoint: &str, task_id: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut mine = Vec::new();
    while mine.len() < count {
        assert!(
            Instant::now() < deadline,
            "{task_id}: {mine:?} after 60 s, expected {count}"
        );
        let run = standin(endpoint, &["events", "--json", "--idle-secs", "3"]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        for line in run.stdout.lines() {
            let note: Value = serde_json::from_str(line).expect("each line is one JSON note");
            if note["task_id"] == task_id {
                mine.push(note);
            }
        }
    }
    mine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stand_in_driven_from_the_cli_start_to_end() {
    let endpoint = localstack();
    let agent = TestAgent::start(27117, Behaviour::default()).await;
    agent.script_turn(&[("TASK_STATE_INPUT_REQUIRED", "Which colour?")]);
    agent.script_turn(&[("TASK_STATE_COMPLETED", "Painted blue")]);
    let task_id = format!("cli-{}", std::process::id());

    let run = standin(
        &endpoint,
        &[
            "start",
            "--agent",
            "cli",
            "--message",
            "Paint it",
            "--task-id",
            &task_id,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), task_id, "start prints the local task id");

    let notes = notes_for(&endpoint, &task_id, 1).await;
    assert_eq!(notes[0]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(notes[0]["text"], "Which colour?");

    let run = standin(&endpoint, &["status", &task_id, "--json"]).await;
    let status: Value = serde_json::from_str(&run.stdout).expect("status --json");
    assert_eq!(status["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(status["agent"], "cli");
    assert_eq!(status["closed"], false);
    assert!(
        status["execution_arn"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{task_id}"))
    );
    assert_eq!(
        status["execution_status"], "RUNNING",
        "parked, waiting for the reply"
    );
    let human = standin(&endpoint, &["status", &task_id]).await.stdout;
    assert!(
        human.contains("INPUT_REQUIRED")
            && human.contains("Which colour?")
            && human.contains("(RUNNING)"),
        "{human}"
    );

    let listed = standin(&endpoint, &["list", "--json"]).await;
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).expect("list --json");
    let row = rows
        .iter()
        .find(|r| r["task_id"] == task_id.as_str())
        .expect("listed");
    assert_eq!(row["state"], "TASK_STATE_INPUT_REQUIRED");
    assert!(
        row["created_at"]
            .as_str()
            .is_some_and(|t| t.starts_with("20"))
    );

    let swatch = std::env::temp_dir().join(format!("swatch-{task_id}.csv"));
    std::fs::write(&swatch, "r,g,b\n0,0,255\n").expect("write");
    let swatch = swatch.display().to_string();
    // Too large to go inline: the command puts it through an upload.
    let photo_bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    let photo = std::env::temp_dir().join(format!("photo-{task_id}.png"));
    std::fs::write(&photo, &photo_bytes).expect("write");
    let photo = photo.display().to_string();
    let run = standin(
        &endpoint,
        &[
            "reply",
            &task_id,
            "Blue",
            "--data",
            r#"{"shade": "navy"}"#,
            "--file",
            &swatch,
            "--file",
            "https://example.com/palette.pdf",
            "--file",
            &photo,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let notes = notes_for(&endpoint, &task_id, 1).await;
    // The reply's files and data reached the agent beside its text.
    let mut parts = agent.messages()[1]["parts"].clone();
    let uploaded = parts.as_array_mut().unwrap().remove(3);
    assert_eq!(
        parts,
        serde_json::json!([
            {"text": "Blue"},
            {"raw": "cixnLGIKMCwwLDI1NQo=", "filename": format!("swatch-{task_id}.csv"), "mediaType": "text/csv"},
            {"url": "https://example.com/palette.pdf", "filename": "palette.pdf", "mediaType": "application/pdf"},
            {"data": {"shade": "navy"}},
        ])
    );
    // The large file, as a link the agent fetches, reads the bytes the command put.
    assert_eq!(
        (&uploaded["filename"], &uploaded["mediaType"]),
        (
            &serde_json::json!(format!("photo-{task_id}.png")),
            &serde_json::json!("image/png")
        ),
        "{uploaded}"
    );
    let fetched = reqwest::get(uploaded["url"].as_str().expect("a link"))
        .await
        .expect("the link answers");
    assert_eq!(fetched.status().as_u16(), 200);
    assert!(fetched.bytes().await.expect("read").as_ref() == photo_bytes.as_slice());
    assert_eq!(notes[0]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(notes[0]["final"], true);

    // The execution closes the row right after the final note; a moment may pass.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = standin(&endpoint, &["status", &task_id, "--json"]).await;
        let status: Value = serde_json::from_str(&run.stdout).expect("status --json");
        if status["closed"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "not closed: {status}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The note log: what the parent was sent, read back without touching the queue.
    let run = standin(&endpoint, &["notes", &task_id, "--json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one note per line"))
        .collect();
    let seqs: Vec<u64> = log.iter().map(|n| n["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2], "{log:#?}");
    assert_eq!(log[1]["state"], "TASK_STATE_COMPLETED");
    let run = standin(&endpoint, &["notes", &task_id, "--after", "1"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("Painted blue") && run.stdout.contains("(final)"),
        "{}",
        run.stdout
    );

    let run = standin(&endpoint, &["reply", &task_id, "Green"]).await;
    assert_one_line_error(&run, &format!("stand-in \"{task_id}\" has ended"));
    let run = standin(&endpoint, &["cancel", &task_id, "--reason", "too late"]).await;
    assert_one_line_error(&run, "has ended");
}

/// `--aws` with the usual settings missing: said before any call, in one line.
async fn standin_on_aws(env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_standin"));
    command.args(["--aws", "list"]);
    for var in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
    ] {
        command.env_remove(var);
    }
    command
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent/standin-test")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/standin-test")
        .envs(env.iter().copied());
    run(command).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_aws_a_missing_region_or_credentials_is_said_first() {
    let run = standin_on_aws(&[]).await;
    assert_one_line_error(&run, "no AWS region: set AWS_REGION");
    let run = standin_on_aws(&[("AWS_REGION", "eu-west-1")]).await;
    assert_one_line_error(&run, "no AWS credentials: none found");
    assert!(run.stderr.contains("AWS_PROFILE"), "{}", run.stderr);
}

/// `standin agents`: an entry put from a file is shown and listed as the registry's, a
/// bad one is refused naming its field, and the stack's own agents are left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_put_shown_listed_and_removed_from_the_cli() {
    let endpoint = localstack();
    let id = format!("cli-reg-{}", std::process::id());
    let dir = std::env::temp_dir().join(format!("standin-cli-agents-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, format!(r#"{{"id":"{id}","url":"ftp://h"}}"#)).unwrap();
    let run = standin(&endpoint, &["agents", "put", bad.to_str().unwrap()]).await;
    assert_one_line_error(&run, &format!("agent \"{id}\": url: "));
    let good = dir.join("good.json");
    std::fs::write(
        &good,
        format!(
            r#"{{"agents":[{{"id":"{id}","url":"http://127.0.0.1:27117","updates":"follow"}}]}}"#
        ),
    )
    .unwrap();
    let run = standin(&endpoint, &["agents", "put", good.to_str().unwrap()]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = standin(&endpoint, &["agents", "show", &id]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shown: Value = serde_json::from_str(&run.stdout).expect("show prints JSON");
    assert_eq!(
        (shown["source"].as_str(), shown["agent"]["updates"].as_str()),
        (Some("registry"), Some("follow"))
    );
    let run = standin(&endpoint, &["agents", "list"]).await;
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("registry")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("cli ") && l.contains("stack")),
        "{}",
        run.stdout
    );
    let run = standin(&endpoint, &["agents", "remove", "cli"]).await;
    assert_one_line_error(&run, "the template's Agents parameter");
    let run = standin(&endpoint, &["agents", "remove", &id]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = standin(&endpoint, &["agents", "show", &id]).await;
    assert_one_line_error(&run, &format!("no agent \"{id}\""));
    let run = standin(&endpoint, &["agents", "put", "/no/such/file.json"]).await;
    assert_one_line_error(&run, "cannot read /no/such/file.json");
    std::fs::remove_dir_all(&dir).ok();
}

/// A key for the A2A front's keyed door: printed once on create (alone on stdout), listed
/// without it, revoked; a key for an unknown agent, a whole key given where its id goes,
/// and a second revoke are each one line saying what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_created_listed_and_revoked_from_the_cli() {
    let endpoint = localstack();
    let run = standin(&endpoint, &["keys", "create", "--agent", "nobody-at-all"]).await;
    assert_one_line_error(&run, "agents[0]: no agent \"nobody-at-all\"");
    let run = standin(
        &endpoint,
        &["keys", "create", "--name", "cli test", "--agent", "cli"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let key = run.stdout.trim().to_owned();
    assert!(key.starts_with("sik_") && !key.contains(' '), "{key}");
    assert!(run.stderr.contains("shown only now"), "{}", run.stderr);
    let key_id = key.split('_').nth(1).unwrap().to_owned();
    let run = standin(&endpoint, &["keys", "list"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with(&key_id))
        .unwrap_or_else(|| panic!("{key_id} listed: {}", run.stdout));
    assert!(line.contains("cli test") && line.ends_with("cli"), "{line}");
    let secret = key.rsplit('_').next().unwrap();
    assert!(!run.stdout.contains(secret), "{}", run.stdout);
    let run = standin(&endpoint, &["keys", "revoke", &key]).await;
    assert_one_line_error(&run, "key id: must be the 16 hex digits");
    assert!(!run.stderr.contains(secret), "{}", run.stderr);
    let run = standin(&endpoint, &["keys", "revoke", &key_id]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = standin(&endpoint, &["keys", "revoke", &key_id]).await;
    assert_one_line_error(&run, &format!("no key \"{key_id}\": `standin keys list`"));
}

/// A document is put whole or not at all, and its refusals read as the API's do for any
/// field: the entry's place, the field, what was expected, what was got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_document_is_put_whole_or_not_at_all_in_one_error_style() {
    let endpoint = localstack();
    let (ok1, ok2) = (
        format!("cli-doc1-{}", std::process::id()),
        format!("cli-doc2-{}", std::process::id()),
    );
    let dir = std::env::temp_dir().join(format!("standin-cli-doc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let put = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    for (second, says) in [
        (
            r#""follow_interval":0.5"#,
            "standin: agents[1].follow_interval: must be at least 1 second, got 0.5",
        ),
        (r#""updates":"sometimes""#, "standin: agents[1].updates: "),
    ] {
        let half_bad = put(
            "half.json",
            format!(
                r#"{{"agents":[{{"id":"{ok1}","url":"http://127.0.0.1:27117"}},{{"id":"{ok2}","url":"http://127.0.0.1:27117",{second}}}]}}"#
            ),
        );
        let run = standin(&endpoint, &["agents", "put", &half_bad]).await;
        assert_one_line_error(&run, says);
        assert!(run.stderr.starts_with(says), "{}", run.stderr);
        assert!(
            !run.stderr.contains(" put"),
            "nothing was put: {}",
            run.stderr
        );
        let run = standin(&endpoint, &["agents", "show", &ok1]).await;
        assert_one_line_error(&run, &format!("no agent \"{ok1}\""));
    }
    let whole = put(
        "whole.json",
        format!(
            r#"{{"agents":[{{"id":"{ok1}","url":"http://127.0.0.1:27117"}},{{"id":"{ok2}","url":"http://127.0.0.1:27117"}}]}}"#
        ),
    );
    let run = standin(&endpoint, &["agents", "put", &whole]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    for id in [&ok1, &ok2] {
        assert!(
            run.stderr.contains(&format!("agent {id} put")),
            "{}",
            run.stderr
        );
        let run = standin(&endpoint, &["agents", "remove", id]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let run = standin(&endpoint, &["start", "--agent", "cli", "--message", ""]).await;
    assert_one_line_error(&run, "standin: message: must not be empty");
    std::fs::remove_dir_all(&dir).ok();
}

/// Every argument a user types says what it is in `--help`.
#[tokio::test]
async fn every_argument_of_start_and_reply_is_explained_in_help() {
    let help = |command: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_standin"))
            .args([command, "--help"])
            .output()
            .expect("standin runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let start = help("start");
    assert!(
        start.contains("--message <MESSAGE>") && start.contains("The task for the agent"),
        "{start}"
    );
    let reply = help("reply");
    for said in ["The stand-in's id", "The parent's answer"] {
        assert!(reply.contains(said), "{reply}");
    }
    let events = help("events");
    assert!(
        events.contains("until its question or its final note"),
        "{events}"
    );
}
