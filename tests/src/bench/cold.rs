//! Cold start: from the process's start to its first poll of the Lambda Runtime API
//! (`GET /2018-06-01/runtime/invocation/next`), which is when Lambda can hand it the
//! first event. Each function's binary as deployed, and a Python function doing the same
//! initialisation (boto3 clients for DynamoDB, Step Functions and SQS, an HTTP client),
//! each against a Runtime API stand-in on loopback that answers nothing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// The environment every function reads at start, as Lambda sets it (values need only
/// parse).
pub const ENV: &[(&str, &str)] = &[
    ("AWS_REGION", "us-east-1"),
    ("AWS_DEFAULT_REGION", "us-east-1"),
    ("AWS_ACCESS_KEY_ID", "test"),
    ("AWS_SECRET_ACCESS_KEY", "test"),
    ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
    ("AWS_LAMBDA_FUNCTION_NAME", "bench"),
    ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
    ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
    ("AWS_LAMBDA_LOG_STREAM_NAME", "bench"),
    ("AWS_LAMBDA_LOG_GROUP_NAME", "bench"),
    ("TABLE_NAME", "bench"),
    ("NOTES_TABLE_NAME", "bench-notes"),
    ("PARENT_QUEUE_URL", "http://127.0.0.1:9/queue/bench.fifo"),
    (
        "STATE_MACHINE_ARN",
        "arn:aws:states:us-east-1:000000000000:stateMachine:bench",
    ),
    ("AGENTS", r#"{"agents":[]}"#),
    ("AGENTS_TABLE_NAME", "bench-agents"),
    ("FOLLOW_QUEUE_URL", "http://127.0.0.1:9/queue/bench-follow"),
];

/// Every function, by its crate's name without `standin-`.
pub const FUNCTIONS: [&str; 10] = [
    "turn", "register", "wake", "end", "park", "follow", "push", "hear", "control", "notify",
];

/// A function's binary in cargo's release directory (`standin-wake`), else in a SAM
/// build directory (`WakeFunction/bootstrap`).
pub fn binary(dir: &Path, function: &str) -> PathBuf {
    let cargo = dir.join(format!("standin-{function}"));
    if cargo.exists() {
        return cargo;
    }
    // A SAM resource is the name with each dashed word capitalised (`notify` is NotifyFunction).
    let sam: String = function
        .split('-')
        .map(|word| {
            let mut word = word.to_owned();
            if let Some(first) = word.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            word
        })
        .collect();
    dir.join(format!("{sam}Function")).join("bootstrap")
}

/// Milliseconds from spawn to the first Runtime API poll, `runs` times.
pub async fn measure(program: &Path, args: &[&str], runs: usize) -> Result<Vec<f64>, String> {
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("no loopback port for the Runtime API: {e}"))?;
        let api = listener
            .local_addr()
            .map_err(|e| format!("the Runtime API's port: {e}"))?;
        let started = Instant::now();
        // Only the variables a function gets (and PATH): a host's SSL_CERT_FILE or
        // AWS profile would change what the start does.
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(ENV.iter().copied())
            .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{} did not start: {e}", program.display()))?;
        let polled = tokio::time::timeout(Duration::from_secs(30), async {
            let (mut socket, _) = listener.accept().await.ok()?;
            let mut head = [0u8; 64];
            let n = socket.read(&mut head).await.ok()?;
            let line = String::from_utf8_lossy(&head[..n]).into_owned();
            line.contains("/runtime/invocation/next").then(Instant::now)
        })
        .await;
        let _ = child.kill().await;
        match polled {
            Ok(Some(at)) => out.push(at.duration_since(started).as_secs_f64() * 1000.0),
            _ => {
                return Err(format!(
                    "{} never polled the Runtime API",
                    program.display()
                ));
            }
        }
    }
    Ok(out)
}

/// The Python equivalent, run by `python`: the same clients built at import time, then
/// the first poll.
pub const PYTHON_FUNCTION: &str = r#"
import os, boto3, urllib3
dynamodb = boto3.client("dynamodb")
sfn = boto3.client("stepfunctions")
sqs = boto3.client("sqs")
http = urllib3.PoolManager()
http.request("GET", "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2018-06-01/runtime/invocation/next", timeout=5, retries=False)
"#;

pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}
