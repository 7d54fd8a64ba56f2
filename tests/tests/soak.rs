//! The reduced soak: two dozen stand-ins at once, every watch, every agent misbehaviour,
//! one window of AWS faults and a killed follow, judged by the soak's oracle. `make soak`
//! runs the full one; this keeps the oracle guarding every change. In its own test binary:
//! its fault window and follow kills must not touch other tests.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;
use std::time::Duration;

use standin_integration::soak::{Options, Soak};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reduced_soak_keeps_every_promise_under_faults() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::env::var("STANDIN_CACHE")
        .map_or_else(|_| std::env::temp_dir(), PathBuf::from)
        .join("soak-reduced");
    let seed = std::env::var("STANDIN_SOAK_SEED").map_or(7, |s| s.parse().unwrap());
    let options = Options {
        standins: 24,
        concurrency: 24,
        duration: Some(Duration::from_secs(60)),
        gap: (Duration::from_millis(500), Duration::from_secs(4)),
        seed,
        profile: Some(root.join("tests/soak/faults-ci.json")),
        kill_follow_every: Some(Duration::from_secs(30)),
        patience: Duration::from_secs(150),
        out: out.clone(),
        ..Options::default()
    };
    let report = Soak::prepare(options).await.unwrap().run().await.unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("soak-report.json"), report.json.to_string()).unwrap();
    std::fs::write(out.join("soak-latency.svg"), &report.svg).unwrap();
    println!("{}", report.summary());
    assert!(report.passed(), "{}", report.summary());
    // The faults were really there: every kind the profile names was injected, the agents
    // misbehaved, and a follow died.
    let faults = &report.json["faults"];
    for kind in ["error", "throttle", "delay", "drop", "lose_answer"] {
        assert!(
            faults["aws_faults"][kind].as_u64().unwrap() > 0,
            "no {kind} injected: {faults}"
        );
    }
    let deliveries = faults["agent_deliveries"].as_object().unwrap();
    assert!(
        deliveries.keys().filter(|k| *k != "normal").count() >= 4,
        "{deliveries:?}"
    );
    assert!(
        faults["follow_processes_killed"].as_u64().unwrap() >= 1,
        "{faults}"
    );
    assert_eq!(report.json["run"]["standins"], 24);
    // Every persona ran, and the new habits acted at least once each (a huge filename
    // asked with, a token echoed, a manifest past its bound, an agent dead), so their own
    // checks in the verdict had something to judge.
    for persona in standin_integration::soak::plan::PERSONAS {
        assert!(
            faults["personas"][persona.name].as_u64().unwrap_or(0) >= 1,
            "{} never ran: {faults}",
            persona.name
        );
    }
    for persona in ["soak-hugename", "soak-echo", "soak-hoard", "soak-dies"] {
        assert!(
            faults["habit_acts"][persona].as_u64().unwrap_or(0) >= 1,
            "{persona}'s habit never acted: {faults}"
        );
    }
    assert!(report.json["load"]["notes"].as_u64().unwrap() >= 24 * 2);
    // The path is measured from the functions' side too: the wakes' lines are all in
    // (a follower still running when the logs are read may not be, so follow is not
    // required here).
    let own = &report.json["heard_by_the_stand_in_ms"];
    assert!(own["push"]["count"].as_u64().unwrap_or(0) > 0, "{own}");
    // Each part of the machine is measured: LocalStack, DynamoDB Local, the functions and
    // the soak's agents all worked, and together they used no more than the machine did.
    let cpu = &report.json["cpu_seconds"];
    for component in [
        "localstack",
        "dynamodb_local",
        "functions",
        "soak_and_agents",
    ] {
        assert!(cpu[component].as_f64().unwrap() > 0.0, "{cpu}");
    }
    let ours: f64 = cpu
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    let machine = report.json["machine"]["busy_seconds"].as_f64().unwrap();
    assert!(
        ours <= machine + 5.0,
        "components {ours} s > machine {machine} s"
    );
}
