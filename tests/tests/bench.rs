//! The benchmark, reduced, so it cannot rot: a few changes per watch, a few cold starts,
//! the receiver's criterion results from `scripts/test`'s quick run. What it asserts is
//! what the benchmark counts, not how fast anything was (timing goals live in
//! `make bench`): every change heard and timed in every watch (poll's among them), the
//! state entries per heard change, the cost and cold-start figures present.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;

use standin_integration::bench::{Options, cold, run};

fn cache(path: &str) -> PathBuf {
    PathBuf::from(std::env::var("STANDIN_CACHE").expect("STANDIN_CACHE is set by scripts/env.sh"))
        .join(path)
}

#[tokio::test]
async fn the_benchmark_measures_every_watch_the_floor_costs_and_cold_starts() {
    let target = PathBuf::from(
        std::env::var("CARGO_TARGET_DIR").expect("CARGO_TARGET_DIR is set by scripts/env.sh"),
    );
    let stack = standin_integration::stack::under_test();
    let options = Options {
        // The one build every test stack is deployed from (scripts/test).
        binaries: cache("sam-build/standin"),
        stack,
        floor_stack: "standin-floor".into(),
        changes: 5,
        cold_runs: 2,
        cold_from: None,
        python: cache("venv-tools/bin/python"),
        criterion: target.join("criterion"),
        localstack_log: cache("localstack-run/localstack.log"),
        out: cache("bench-test"),
    };
    let results = run(&options).await.expect("the benchmark ran");
    // Seen with --nocapture: the reduced run's table, as `make bench` prints it.
    println!("{}", results.table);
    let j = &results.json;
    for watch in [
        "push",
        "follow",
        "poll",
        "floor",
        "in_place",
        "to_hearer",
        "to_hearer_hinted",
        "to_hearer_async",
    ] {
        assert_eq!(
            j["watches"][watch]["heard_ms"]["count"], 5,
            "{watch}: every change timed: {j:#}"
        );
    }
    assert_eq!(
        j["watches"]["push"]["final_ms"]["count"], 1,
        "one stand-in, one final note"
    );
    // A change heard by the visit of another (the turn's window, or a wake that found
    // two) costs no visit of its own: a change never costs more than its three states.
    // But a push the door rang rather than heard (on a loaded machine: its hearing not
    // claimed, or past the door's wait) can cost a Wake, Route, Park more: the push
    // function logs each ring, and only those may add to the count.
    let per_change = |watch: &str| j["watches"][watch]["state_entries_per_change"].as_f64();
    let rung = j["watches"]["push"]["rung_by_the_door"]
        .as_u64()
        .expect("push counts the pushes its door rang") as f64;
    // Those are the exception: a door that rang every push would hear none.
    assert!(
        rung < options.changes as f64,
        "the door rang {rung} of {} pushes instead of hearing them",
        options.changes
    );
    let most = 3.0 + 3.0 * rung / options.changes as f64;
    assert!(
        per_change("push").is_some_and(|n| (2.0..=most).contains(&n)),
        "a push-heard change is Wake, Route, Park ({rung} pushes rung by the door): {:?}",
        per_change("push")
    );
    assert_eq!(
        j["watches"]["push"]["state_entries_example"], "Wake → Route → Park",
        "a push-heard change's visit"
    );
    assert_eq!(
        j["watches"]["floor"]["state_entries_per_change"], 2.0,
        "the floor is Note, Park"
    );
    assert!(
        per_change("follow").is_some_and(|n| (2.0..=3.0).contains(&n)),
        "a follow-heard change ends the follow: Wake, Route, Follow: {:?}",
        per_change("follow")
    );
    assert_eq!(
        j["watches"]["follow"]["state_entries_example"], "Wake → Route → Follow",
        "a follow-heard change's visit"
    );
    // A polled change is heard by the poll whose wait it came in: its park's timeout,
    // then the check, at least; a poll that heard nothing is its change's cost too.
    assert!(
        per_change("poll").is_some_and(|n| n >= 4.0),
        "a poll-heard change is TimedOut, Wake, Route, Park: {:?}",
        per_change("poll")
    );
    assert_eq!(
        j["watches"]["poll"]["state_entries_example"], "TimedOut → Wake → Route → Park",
        "a poll-heard change's visit"
    );
    for watch in ["push", "follow", "poll"] {
        let per_change = &j["watches"][watch]["per_change"];
        assert!(
            per_change["lambda_invocations"].as_f64().unwrap() > 0.0,
            "{watch}: {per_change:#}"
        );
        assert!(
            per_change["dollars"]["total"].as_f64().unwrap() > 0.0,
            "{watch}: {per_change:#}"
        );
        assert!(
            per_change["aws_requests"]["dynamodb.TransactWriteItems"]
                .as_f64()
                .unwrap()
                > 0.0,
            "{watch}: {per_change:#}"
        );
    }
    // Where the time goes: every change's carrying visit found, every point timed, in
    // the order the change passes them. The floor writes the note in a state entered
    // after the change (Note); push, in the hear function before any state; a follow, in
    // the Follow that was running, and it answers no push.
    for (watch, step) in [
        ("push", "the hear function"),
        ("follow", "Follow"),
        ("poll", "Wake"),
        ("floor", "Note"),
    ] {
        let path = &j["watches"][watch]["path_ms"];
        assert_eq!(path["step"], step, "{watch}: {path:#}");
        assert_eq!(path["unmatched"], 0, "{watch}: {path:#}");
        let at = |k: &str| {
            path[k]
                .as_i64()
                .unwrap_or_else(|| panic!("{watch}.{k}: {path:#}"))
        };
        assert!(
            at("sqs_took_the_note") <= at("parent_has_it"),
            "{watch}: {path:#}"
        );
        if watch == "push" {
            // Told by the hear function before the push is answered: no state entered.
            assert!(path["step_entered"].is_null(), "{path:#}");
            assert!(at("push_answered") > 0, "{path:#}");
        } else if watch == "follow" {
            assert!(path["step_entered"].is_null() && path["push_answered"].is_null());
            assert!(at("step_done") >= 0, "{path:#}");
        } else if watch == "poll" {
            assert!(path["push_answered"].is_null(), "no push: {path:#}");
            assert!(
                at("step_entered") <= at("sqs_took_the_note"),
                "the poll's Wake sent it: {path:#}"
            );
        } else {
            assert!(
                at("step_entered") <= at("step_done")
                    && at("step_entered") <= at("sqs_took_the_note"),
                "{watch}: {path:#}"
            );
            assert!(at("push_answered") > 0, "{watch}: {path:#}");
        }
    }
    let functions = j["cold_start_ms"]["functions"].as_object().unwrap();
    let started: std::collections::BTreeSet<&str> = functions.keys().map(String::as_str).collect();
    let every = std::collections::BTreeSet::from(cold::FUNCTIONS);
    assert_eq!(started, every, "every function started: {functions:?}");
    assert!(j["cold_start_ms"]["python_equivalent"].as_f64().is_some());
    for body in ["small", "60KB"] {
        assert!(
            j["receiver_ns"][body]["ratio"].as_f64().is_some(),
            "criterion's results for {body}: {j:#}"
        );
    }
    assert!(
        results.svg.contains("<polyline"),
        "the picture has its curves"
    );
    assert!(results.table.contains("| push |"), "{}", results.table);
}
