//! Each function's binary, as built for the stack, refuses to start without a variable
//! its kind needs and says which: the cold start fails with the variable's name instead
//! of the first event failing later. A variable only other kinds read does not stop it.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use standin_integration::bench::cold;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

fn binaries() -> PathBuf {
    PathBuf::from(std::env::var("STANDIN_CACHE").expect("STANDIN_CACHE is set by scripts/env.sh"))
        .join("sam-build/standin")
}

enum Start {
    /// The process ended before polling for an event: its status and stderr.
    Refused(String),
    /// It asked the Runtime API for its first event.
    Polled,
}

/// Starts `function` with the environment Lambda would give it, less `missing`.
async fn start(function: &str, missing: &str) -> Start {
    let api = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut child = tokio::process::Command::new(cold::binary(&binaries(), function))
        .env_clear()
        .envs(
            cold::ENV
                .iter()
                .copied()
                .filter(|(name, _)| *name != missing),
        )
        .env(
            "AWS_LAMBDA_RUNTIME_API",
            api.local_addr().unwrap().to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{function}: {e} (built by scripts/test's sam build)"));
    let mut stderr = child.stderr.take().unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::select! {
            polled = api.accept() => { polled.unwrap(); Start::Polled }
            status = child.wait() => {
                let mut said = String::new();
                stderr.read_to_string(&mut said).await.unwrap();
                Start::Refused(format!("{}: {said}", status.unwrap()))
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{function} neither polled nor ended"));
    let _ = child.kill().await;
    outcome
}

#[tokio::test]
async fn a_missing_variable_fails_the_cold_start_naming_it() {
    const TABLES: &[&str] = &["TABLE_NAME", "NOTES_TABLE_NAME"];
    let needs: &[(&str, &[&str])] = &[
        ("turn", TABLES),
        ("register", TABLES),
        ("wake", TABLES),
        ("end", TABLES),
        // The follower takes more requests from the follow queue, and hands parks back.
        (
            "follow",
            &["TABLE_NAME", "NOTES_TABLE_NAME", "FOLLOW_QUEUE_URL"],
        ),
        ("park", TABLES),
        ("push", TABLES),
        (
            "control",
            &[
                "TABLE_NAME",
                "NOTES_TABLE_NAME",
                "STATE_MACHINE_ARN",
                "AGENTS_TABLE_NAME",
            ],
        ),
        // Notify marks the rows it sent notes of.
        ("notify", &["PARENT_QUEUE_URL", "TABLE_NAME"]),
    ];
    for (function, variables) in needs {
        for variable in *variables {
            match start(function, variable).await {
                Start::Refused(said) => assert!(
                    said.contains(&format!(
                        "configuration: {variable}: environment variable is not set"
                    )),
                    "{function} without {variable}: {said}"
                ),
                Start::Polled => panic!("{function} started without {variable}"),
            }
        }
    }
}

#[tokio::test]
async fn a_variable_only_other_kinds_read_does_not_stop_a_start() {
    for (function, variable) in [
        ("notify", "NOTES_TABLE_NAME"),
        ("notify", "STATE_MACHINE_ARN"),
        ("turn", "STATE_MACHINE_ARN"),
        ("turn", "PARENT_QUEUE_URL"),
        ("push", "PARENT_QUEUE_URL"),
        ("push", "STATE_MACHINE_ARN"),
        ("park", "STATE_MACHINE_ARN"),
        ("turn", "AGENTS_TABLE_NAME"),
        ("wake", "AGENTS_TABLE_NAME"),
        ("control", "PARENT_QUEUE_URL"),
    ] {
        if let Start::Refused(said) = start(function, variable).await {
            panic!("{function} without {variable} refused to start: {said}");
        }
    }
}
