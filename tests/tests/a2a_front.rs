//! Stand-in as an A2A agent: the official a2a-sdk 1.3 client (tests/a2a_parent/
//! conversation.py), a parent that speaks only A2A, delegates through the control API's
//! `/a2a/{agent}` front to a scripted agent on the LocalStack stack. It reads the front's
//! card, is asked a question, answers, reads the task back with its artifact, lists it,
//! and cancels a second task; an unknown task is the SDK's own TaskNotFound. And ADK's own
//! remote-agent tool delegates through the front to the official SDK agent.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;

use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent, parent_said};
use standin_integration::e2e::{COMPLETED, INPUT_REQUIRED};
use standin_integration::stack::{Stack, unique};

/// A scripted agent on `port` that asks which colour, then paints, added to the
/// registry at run time as a parent's operator would; with its id.
async fn registered_agent(stack: &Stack, port: u16, prefix: &str) -> (TestAgent, String) {
    let agent = TestAgent::start(port, Behaviour::default()).await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which colour?")]);
    agent.script_turn(&[(COMPLETED, "Painted blue")]);
    let id = unique(prefix);
    let url = format!("http://127.0.0.1:{port}");
    let (status, body) = stack
        .control(
            "PUT",
            &format!("/agents/{id}"),
            Some(json!({"url": url, "follow_interval": 1})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    (agent, id)
}

/// The official a2a-sdk 1.3's Python, and a script of `tests/a2a_parent/`.
fn sdk_python(script: &str) -> (PathBuf, PathBuf) {
    let python = PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"))
        .join("venv-a2a-sdk/bin/python");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    (python, root.join("tests/a2a_parent").join(script))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_client_delegates_through_the_front_answers_reads_lists_and_cancels() {
    let stack = Stack::under_test().await;
    let (agent, id) = registered_agent(&stack, 27147, "front").await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which colour this time?")]);
    let (python, script) = sdk_python("conversation.py");
    let front = stack.api_url("ControlApiId", &format!("/a2a/{id}"));
    let parent = tokio::process::Command::new(python)
        .arg(script)
        .args(["--url", &front])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    // While the agent waits for the answer, it makes the painting.
    agent
        .make_while_asked("widget.svg", "<svg>a blue widget</svg>")
        .await;
    let run = parent.wait_with_output().await.expect("python ends");
    let seen = parent_said(&run);

    // The card is the agent's own words, at the front's address, offering what it does.
    assert_eq!(
        seen["card"],
        json!({"name": "Stand-in test agent", "skills": ["scripted"], "streaming": false}),
        "{seen}"
    );
    assert_eq!(
        seen["asked"],
        json!({"state": "TASK_STATE_INPUT_REQUIRED", "text": "Which colour?"}),
        "{seen}"
    );
    let task_id = seen["done"]["id"].as_str().unwrap();
    assert_eq!(
        (&seen["done"]["state"], &seen["done"]["text"]),
        (&json!("TASK_STATE_COMPLETED"), &json!("Painted blue")),
        "{seen}"
    );
    assert_eq!(seen["done"]["artifacts"], json!(["widget.svg"]), "{seen}");
    // The stand-in is the task: the control API knows it by the same id.
    let row = stack.row_status(task_id).await;
    assert_eq!(row["agent"], id.as_str(), "{row}");
    assert_eq!(seen["got"]["state"], "TASK_STATE_COMPLETED");
    // Both sides of the conversation, in the order the agent had them: the parent's
    // start, the agent's question, the parent's answer (the final note is the status).
    let history = seen["got"]["history"].as_array().unwrap();
    let said_by = |role: &str, text: &str| {
        history
            .iter()
            .position(|m| m[0] == role && m[1] == text)
            .unwrap_or_else(|| panic!("{role} {text:?} in the history: {seen}"))
    };
    let start = said_by("ROLE_USER", "Please paint the widget");
    let question = said_by("ROLE_AGENT", "Which colour?");
    let answer = said_by("ROLE_USER", "blue");
    assert!(start < question && question < answer, "{seen}");
    assert_eq!(
        seen["got"]["artifact_text"],
        json!(["<svg>a blue widget</svg>"])
    );
    assert!(
        seen["listed"].as_array().unwrap().contains(&json!(task_id)),
        "{seen}"
    );
    // At once: before the agent asked (a blocking send would have waited for the question).
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
            .contains(&seen["second_at_once"].as_str().unwrap()),
        "{seen}"
    );
    assert_eq!(seen["canceled"], "TASK_STATE_CANCELED", "{seen}");
    assert_eq!(seen["unknown"], "TaskNotFoundError", "{seen}");
}

/// A framework's own remote-agent tool as the parent: ADK's `RemoteA2aAgent`
/// (tests/adk_parent/delegate.py) delegates through the front to the official a2a-sdk
/// 1.3 agent, and answers its question as the same task, as ADK resumes one by itself;
/// the blocking answer is the agent's end, its artifact what ADK shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adk_parent_delegates_through_the_front_to_the_official_sdk_agent() {
    let stack = Stack::under_test().await;
    let python = PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"))
        .join("venv-peer-adk/bin/python");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let front = stack.api_url("ControlApiId", "/a2a/sdk-push");
    let run = tokio::process::Command::new(python)
        .arg(root.join("tests/adk_parent/delegate.py"))
        .args(["--url", &front])
        .kill_on_drop(true)
        .output()
        .await
        .expect("python runs");
    let seen = parent_said(&run);
    assert_eq!(
        (&seen["asked"]["state"], &seen["asked"]["said"]),
        (
            &json!(INPUT_REQUIRED),
            &json!("What colour should the widget be?")
        ),
        "{seen}"
    );
    let task_id = seen["task_id"].as_str().unwrap();
    assert!(task_id.starts_with("a2a-"), "{seen}");
    assert_eq!(
        seen["same_task"], task_id,
        "ADK answered the question as the same task"
    );
    // Within the blocking call's bound, the agent finished: ADK shows its artifact.
    assert_eq!(seen["answered"]["state"], COMPLETED, "{seen}");
    assert!(
        seen["answered"]["heard"]
            .as_str()
            .unwrap()
            .contains("widget(colour=blue)"),
        "{seen}"
    );
    // The stand-in the task was is closed, as the control API shows it.
    let started = std::time::Instant::now();
    let row = loop {
        let row = stack.row_status(task_id).await;
        if row["closed"] == true || started.elapsed() > std::time::Duration::from_secs(120) {
            break row;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    };
    assert_eq!(
        (&row["state"], &row["agent"]),
        (&json!(COMPLETED), &json!("sdk-push")),
        "{row}"
    );
}

/// A parent that hears by webhook (tests/a2a_parent/webhook.py): the a2a-sdk 1.3 client
/// sets a push notification config with its start, a second webhook is set through the
/// control API for every note from the first, and the first is down for a minute while
/// the task ends. Each webhook gets every note of the note log, in order, with its own
/// token or authorization; the down one gets the rest once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_s_webhooks_hear_every_note_in_order_even_after_being_down_a_minute() {
    let stack = Stack::under_test().await;
    let (agent, id) = registered_agent(&stack, 27184, "hooked").await;
    let (python, script) = sdk_python("webhook.py");
    let parent = tokio::process::Command::new(python)
        .arg(script)
        .args([
            "--url",
            &stack.api_url("ControlApiId", &format!("/a2a/{id}")),
        ])
        .args(["--control", &stack.api_url("ControlApiId", "")])
        .args(["--port", "27160", "--audit-port", "27168"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    agent
        .make_while_asked("widget.svg", "<svg>a blue widget</svg>")
        .await;
    let run = parent.wait_with_output().await.expect("python ends");
    let seen = parent_said(&run);
    let task_id = seen["task_id"].as_str().unwrap();
    assert_eq!(seen["heard_question"], true, "{seen}");
    assert_eq!(seen["audit_set"]["status"], 200, "{seen}");
    assert_eq!(
        seen["audit_set"]["body"]["has_authorization"], true,
        "{seen}"
    );
    assert_eq!(seen["configs"], json!([task_id, "audit"]), "{seen}");
    assert_eq!(
        seen["config"],
        json!({"url": "http://127.0.0.1:27160/main", "token_shown": false}),
        "the token is never shown back"
    );
    assert_eq!(seen["answered"], COMPLETED, "{seen}");
    assert_eq!(
        seen["audit_heard_end"], true,
        "the other webhook was not held back"
    );
    assert_eq!(seen["main_heard_end"], true, "{seen}");
    assert_eq!(seen["configs_after_delete"], json!([task_id]), "{seen}");

    // The note log, as the control API gives it: what each webhook must have had.
    let (status, log) = stack
        .control("GET", &format!("/standins/{task_id}/notes"), None)
        .await;
    assert_eq!(status, 200, "{log}");
    let logged: Vec<u64> = log["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(logged.first(), Some(&1), "{log}");
    let received = seen["received"].as_array().unwrap();
    let token = seen["token"].as_str().unwrap();
    for (path, credential) in [("/main", "token"), ("/audit", "authorization")] {
        let posts: Vec<&serde_json::Value> =
            received.iter().filter(|r| r["path"] == path).collect();
        let expected = if path == "/main" {
            json!(token)
        } else {
            json!("Bearer audit-secret")
        };
        assert!(
            posts.iter().all(|r| r[credential] == expected),
            "{path}: {posts:?}"
        );
        let statuses: Vec<u64> = posts
            .iter()
            .filter(|r| r["kind"] == "statusUpdate")
            .map(|r| r["seq"].as_u64().unwrap())
            .collect();
        // At least once, in order: the notes' first arrivals are the log's order.
        let mut firsts: Vec<u64> = Vec::new();
        for seq in &statuses {
            if !firsts.contains(seq) {
                firsts.push(*seq);
            }
        }
        assert_eq!(
            firsts, logged,
            "{path}: every note of the log, in order: {statuses:?}"
        );
        let last = posts.last().unwrap();
        assert_eq!(last["state"], COMPLETED, "{path}: {posts:?}");
        assert!(
            posts
                .iter()
                .any(|r| r["kind"] == "artifactUpdate" && r["artifact"] == "widget.svg"),
            "{path}: the artifact came with its note: {posts:?}"
        );
    }
    // The parent's token is the parent's: not in what the API shows of the stand-in.
    let row = stack.row_status(task_id).await;
    assert!(!format!("{row}{log}").contains(token), "{row}");
}

/// The official @a2a-js/sdk 1.3 client as the parent (tests/peers/js-parent/
/// conversation.mjs): a start with a push config, a question answered, the task read back
/// and listed, its configs listed, a second task cancelled; its webhook hears every note
/// of the log, in order, with its token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_js_sdk_client_delegates_through_the_front_and_hears_by_webhook() {
    let stack = Stack::under_test().await;
    let (agent, id) = registered_agent(&stack, 27169, "js-front").await;
    agent.script_turn(&[(INPUT_REQUIRED, "Which colour this time?")]);
    let script = PathBuf::from(std::env::var("STANDIN_CACHE").expect("set by scripts/env.sh"))
        .join("peer-js-parent/conversation.mjs");
    let parent = tokio::process::Command::new("node")
        .arg(script)
        .args([
            "--url",
            &stack.api_url("ControlApiId", &format!("/a2a/{id}")),
        ])
        .args(["--port", "27170"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    agent
        .make_while_asked("widget.svg", "<svg>a blue widget</svg>")
        .await;
    let run = parent.wait_with_output().await.expect("node ends");
    let seen = parent_said(&run);
    let task_id = seen["asked"]["id"].as_str().unwrap();
    assert_eq!(
        (&seen["asked"]["state"], &seen["asked"]["text"]),
        (&json!(INPUT_REQUIRED), &json!("Which colour?")),
        "{seen}"
    );
    assert_eq!(
        seen["done"],
        json!({"state": COMPLETED, "text": "Painted blue", "artifacts": ["widget.svg"]}),
        "{seen}"
    );
    assert_eq!(
        (&seen["heard_question"], &seen["heard_end"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(seen["got"]["state"], COMPLETED, "{seen}");
    assert_eq!(seen["listed"], true, "{seen}");
    assert_eq!(seen["configs"], json!([task_id]), "{seen}");
    assert_eq!(seen["canceled"], "TASK_STATE_CANCELED", "{seen}");
    assert_ne!(seen["unknown"], "found", "{seen}");
    let token = seen["token"].as_str().unwrap();
    let received = seen["received"].as_array().unwrap();
    assert!(received.iter().all(|r| r["token"] == token), "{received:?}");
    let mut firsts: Vec<u64> = Vec::new();
    for seq in received.iter().filter_map(|r| r["seq"].as_u64()) {
        if !firsts.contains(&seq) {
            firsts.push(seq);
        }
    }
    let (_, log) = stack
        .control("GET", &format!("/standins/{task_id}/notes"), None)
        .await;
    let logged: Vec<u64> = log["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(firsts, logged, "every note, in order: {received:?}");
}

/// A parent process killed mid-task (tests/a2a_parent/resume.py): the task goes on at the
/// agent and in the stand-in; a new process finds it asking (GetTask), answers it as the
/// same task and sees it end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_killed_mid_task_is_followed_by_a_new_one_that_finds_and_ends_it() {
    use tokio::io::AsyncBufReadExt;
    let stack = Stack::under_test().await;
    let (_agent, id) = registered_agent(&stack, 27179, "resumed").await;
    let (python, script) = sdk_python("resume.py");
    let front = stack.api_url("ControlApiId", &format!("/a2a/{id}"));
    let mut first = tokio::process::Command::new(&python)
        .arg(&script)
        .args(["--url", &front, "--start"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    let mut lines = tokio::io::BufReader::new(first.stdout.take().unwrap()).lines();
    let started: serde_json::Value =
        serde_json::from_str(&lines.next_line().await.unwrap().expect("the task id")).unwrap();
    let task_id = started["task_id"].as_str().unwrap().to_owned();
    // Killed as a process dies: no goodbye.
    first.start_kill().unwrap();
    let killed = first.wait().await.unwrap();
    assert!(!killed.success(), "{killed:?}");
    let run = tokio::process::Command::new(&python)
        .arg(&script)
        .args(["--url", &front, "--resume", &task_id])
        .kill_on_drop(true)
        .output()
        .await
        .expect("python runs");
    let seen = parent_said(&run);
    assert_eq!(
        seen["found"],
        json!({"state": INPUT_REQUIRED, "text": "Which colour?"}),
        "the task went on without its parent"
    );
    assert_eq!(
        seen["done"],
        json!({"id": task_id, "state": COMPLETED, "text": "Painted blue"}),
        "{seen}"
    );
}

/// A parent that cannot sign, with a key the operator issued for one agent: the official
/// a2a-sdk 1.3 client (tests/a2a_parent/keyed.py) sends it for the bearer scheme the keyed
/// door's card declares, and completes a conversation through `/keyed/a2a/{agent}`. The
/// key opens no other agent, is refused once revoked, and is kept nowhere: not in the
/// keys table (only its digest), not in the functions' logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_with_a_key_delegates_through_the_keyed_door_and_only_there() {
    let stack = Stack::under_test().await;
    let (_agent, id) = registered_agent(&stack, 27181, "keyed").await;
    let (status, issued) = stack
        .control(
            "POST",
            "/keys",
            Some(json!({"name": "a parent that cannot sign", "agents": [id]})),
        )
        .await;
    assert_eq!(status, 201, "{issued}");
    let key = issued["key"].as_str().unwrap().to_owned();
    let key_id = issued["key_id"].as_str().unwrap().to_owned();
    let door = stack.api_url("ControlApiId", &format!("/keyed/a2a/{id}"));

    let (python, script) = sdk_python("keyed.py");
    let run = tokio::process::Command::new(python)
        .arg(script)
        .args(["--url", &door, "--key", &key])
        .kill_on_drop(true)
        .output()
        .await
        .expect("python runs");
    let seen = parent_said(&run);
    assert_eq!(
        seen["without_key"],
        json!({"status": 401, "challenge": "Bearer realm=\"standin\""}),
        "{seen}"
    );
    assert_eq!(seen["card"]["url"], door.as_str(), "{seen}");
    assert_eq!(seen["card"]["schemes"], json!(["standinKey"]), "{seen}");
    assert_eq!(seen["schemes_asked"], json!(["standinKey"]), "{seen}");
    assert_eq!(
        seen["asked"],
        json!({"state": "TASK_STATE_INPUT_REQUIRED", "text": "Which colour?"}),
        "{seen}"
    );
    assert_eq!(
        (&seen["done"]["state"], &seen["done"]["text"]),
        (&json!("TASK_STATE_COMPLETED"), &json!("Painted blue")),
        "{seen}"
    );
    assert_eq!(seen["got"], "TASK_STATE_COMPLETED", "{seen}");
    let task_id = seen["done"]["id"].as_str().unwrap();
    assert_eq!(stack.row_status(task_id).await["agent"], id.as_str());

    // The key opens its agent's door only, and nothing once revoked.
    let knock = |agent: &str| {
        let url = stack.api_url(
            "ControlApiId",
            &format!("/keyed/a2a/{agent}/.well-known/agent-card.json"),
        );
        let request = stack.http.get(url).bearer_auth(&key);
        async move { request.send().await.expect("an answer").status().as_u16() }
    };
    assert_eq!(knock("sdk-push").await, 403, "another agent");
    assert_eq!(knock(&id).await, 200);
    let (status, _) = stack
        .control("DELETE", &format!("/keys/{key_id}"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(knock(&id).await, 401, "revoked");

    // Kept nowhere: the table has its digest only, the logs never saw it.
    let secret = key.rsplit('_').next().unwrap().to_owned();
    let dynamo = aws_sdk_dynamodb::Client::new(&stack.config);
    let (status, again) = stack
        .control("POST", "/keys", Some(json!({"name": "kept"})))
        .await;
    assert_eq!(status, 201, "{again}");
    let other_secret = again["key"]
        .as_str()
        .unwrap()
        .rsplit('_')
        .next()
        .unwrap()
        .to_owned();
    let items = dynamo
        .scan()
        .table_name(stack.out("KeysTableName"))
        .send()
        .await
        .expect("the keys table reads");
    let table = format!("{:?}", items.items());
    assert!(table.contains(again["key_id"].as_str().unwrap()), "{table}");
    assert!(!table.contains(&other_secret), "a key is kept whole");
    // The logs name the key by its id (issued, and each request it let in): read once
    // they hold those lines, so an empty read cannot pass for a clean one.
    let mut logs = String::new();
    for _ in 0..60 {
        logs = stack.log_text(&stack.function_logs(), None).await.unwrap();
        if logs.contains("let in by key") && logs.contains(again["key_id"].as_str().unwrap()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert!(
        logs.lines()
            .any(|l| l.contains("let in by key") && l.contains(&key_id)),
        "each request let in is logged with its key's id"
    );
    for secret in [&secret, &other_secret] {
        assert!(!logs.contains(secret.as_str()), "a key is in the logs");
    }
    let (status, _) = stack
        .control(
            "DELETE",
            &format!("/keys/{}", again["key_id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 200);
}
