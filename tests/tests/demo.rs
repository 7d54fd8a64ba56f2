//! The README's first command, as CI runs it: `scripts/demo --ci` on its own stack (the
//! LocalStack `make test` started is reused and left running), judged by its JSON summary.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::process::Command;

use serde_json::Value;

#[test]
fn the_demo_runs_both_watches_and_reports_each_change_with_its_latency() {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run this test with `make test`");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let summary_path =
        std::env::temp_dir().join(format!("standin-demo-{}.json", std::process::id()));
    // A stale pid file, as a crash or a reboot leaves it: one pid is gone, the other now
    // belongs to another process, which the demo must neither take for its agent nor stop. (Skipped when a
    // `make up` left the demo's agents running: that file is not stale.)
    let pids = std::path::PathBuf::from(std::env::var("STANDIN_CACHE").expect("STANDIN_CACHE"))
        .join("demo-run/agents.pids");
    let agents_running = std::fs::read_to_string(&pids).is_ok_and(|f| {
        f.lines().any(|pid| {
            std::fs::read(format!("/proc/{}/cmdline", pid.trim()))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("demo-agent"))
        })
    });
    /// Stopped however the test ends.
    struct Bystander(std::process::Child);
    impl Drop for Bystander {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut bystander = (!agents_running).then(|| {
        let child = Command::new("sleep")
            .arg("600")
            .spawn()
            .expect("sleep starts");
        let mut gone = Command::new("true").spawn().expect("true starts");
        gone.wait().unwrap();
        std::fs::create_dir_all(pids.parent().unwrap()).unwrap();
        std::fs::write(&pids, format!("{}\n{}\n", child.id(), gone.id())).unwrap();
        Bystander(child)
    });
    /// What `--keep` left running (the demo's agents) is stopped however the test ends,
    /// as `make down` stops it; the LocalStack `make test` started is not the demo's.
    struct KeptDemo(std::path::PathBuf);
    impl Drop for KeptDemo {
        fn drop(&mut self) {
            let _ = Command::new("bash")
                .arg(self.0.join("scripts/demo"))
                .arg("--stop")
                .env("STANDIN_STACK", "standin-demo")
                .output();
        }
    }
    let kept = KeptDemo(root.clone());
    let out = Command::new("bash")
        .arg(root.join("scripts/demo"))
        .args(["--ci", "--keep", "--summary"])
        .arg(&summary_path)
        .env("STANDIN_STACK", "standin-demo")
        .output()
        .expect("scripts/demo runs");
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(bystander) = bystander.as_mut() {
        let still_running = bystander.0.try_wait().unwrap().is_none();
        assert!(
            still_running,
            "the demo stopped a process it did not start:\n{log}"
        );
        assert!(
            log.contains("pid file is stale"),
            "the demo says it found a stale pid file:\n{log}"
        );
    }
    assert!(out.status.success(), "scripts/demo failed:\n{log}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(&summary_path).expect("the demo wrote its summary"),
    )
    .expect("the summary is JSON");
    let _ = std::fs::remove_file(&summary_path);

    assert_eq!(summary["ok"], true, "{summary:#}");
    assert_eq!(summary["stack"], "standin-demo");
    let scenarios = summary["scenarios"].as_array().expect("scenarios");
    let watches: Vec<&str> = scenarios
        .iter()
        .map(|s| s["watch"].as_str().unwrap())
        .collect();
    assert_eq!(watches, ["push", "follow"], "one stand-in per watch");
    for s in scenarios {
        let watch = s["watch"].as_str().unwrap();
        assert_eq!(s["ok"], true, "{watch}: {s:#}");
        assert_eq!(s["replied"], true, "{watch}: the orchestrator answered");
        assert_eq!(s["final_state"], "TASK_STATE_COMPLETED", "{watch}");
        let notes = s["notes"].as_array().unwrap();
        let seqs: Vec<u64> = notes.iter().map(|n| n["seq"].as_u64().unwrap()).collect();
        let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "{watch}: notes once each, in order");
        // The first turn's progress, told as the turn read it, then its question.
        let texts: Vec<(&str, &str)> = notes
            .iter()
            .map(|n| (n["state"].as_str().unwrap(), n["text"].as_str().unwrap()))
            .collect();
        assert_eq!(
            texts[..2],
            [
                ("TASK_STATE_WORKING", "Reading the brief"),
                (
                    "TASK_STATE_INPUT_REQUIRED",
                    "Which format should the report be in: Markdown or PDF?"
                )
            ],
            "{watch}: progress within the first turn, then the question"
        );
        assert!(
            notes.iter().any(|n| n["state"] == "TASK_STATE_WORKING"
                && n["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("Collecting sources")),
            "{watch}: progress heard between turns: {notes:#?}"
        );
        let last = notes.last().unwrap();
        assert_eq!(last["final"], true, "{watch}");
        assert!(
            last["text"]
                .as_str()
                .unwrap()
                .starts_with("Report ready: report.md (Markdown"),
            "{watch}"
        );
        for n in notes {
            assert!(
                n["latency_ms"].is_u64(),
                "{watch}: every note has its latency: {n}"
            );
        }
        assert!(s["latency_ms"]["max"].as_u64() >= s["latency_ms"]["median"].as_u64());
    }
    assert!(log.contains("demo passed"), "{log}");
    the_readme_loop_runs_as_written(&root);
    drop(kept);
}

/// The README's loop after `make up`, as written, on what the demo left running.
fn the_readme_loop_runs_as_written(root: &std::path::Path) {
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let after = readme
        .split("`make up` leaves it running")
        .nth(1)
        .expect("the README's make up paragraph");
    let block = after
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("its sh block");
    let dir = std::env::temp_dir().join(format!("standin-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Bounded: a command in the block that never returns (a server) fails the test, not CI.
    let out = Command::new("timeout")
        .args(["--kill-after=5", "180", "bash", "-c"])
        .arg(format!(
            "set -euo pipefail\nshopt -s expand_aliases\n{block}"
        ))
        .current_dir(&dir)
        .env("STANDIN_STACK", "standin-demo")
        .output()
        .expect("bash runs");
    let said = String::from_utf8_lossy(&out.stdout);
    let complained = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the README's loop: {said}\n{complained}"
    );
    let asked = said.find("Which format").expect("the question printed");
    let ended = said.find("COMPLETED").expect("the end printed");
    assert!(asked < ended, "{said}");
    let saved: Vec<_> = walk(&dir.join("results"));
    assert!(
        saved
            .iter()
            .any(|p| p.to_string_lossy().ends_with("report.md")),
        "the report saved: {saved:?}\n{said}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
