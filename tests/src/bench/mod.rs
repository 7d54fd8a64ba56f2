//! `make bench`: push against follow against the floor, in one run on LocalStack; what a
//! heard change and an idle hour cost; cold starts against Python; the push receiver's
//! CPU against its floor. Writes `results.json` and `latency.svg`, prints a table.

pub mod cold;
pub mod cost;
pub mod latency;
pub mod rounds;
pub mod scale;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::stack::Stack;
use latency::Heard;

pub struct Options {
    pub stack: String,
    pub floor_stack: String,
    /// WORKING changes heard per watch (and one final per five).
    pub changes: usize,
    pub cold_runs: usize,
    /// Cold starts measured earlier (`bench --cold-only`), on a quiet machine.
    pub cold_from: Option<PathBuf>,
    /// The functions' binaries: cargo's release directory (`<dir>/standin-<name>`) or a
    /// SAM build directory (`<dir>/<Name>Function/bootstrap`).
    pub binaries: PathBuf,
    pub python: PathBuf,
    /// Where criterion wrote the receiver benchmark (`<target>/criterion`).
    pub criterion: PathBuf,
    pub localstack_log: PathBuf,
    pub out: PathBuf,
}

/// The soak personas' agents: the benchmark runs alone, never beside the soak.
const PUSH: (&str, u16) = ("soak-push-a", 27150);
const FOLLOW: (&str, u16) = ("soak-follow-a", 27153);
/// A second push persona, for the stand-in whose final push is lost.
const PUSH_LOST: (&str, u16) = ("soak-push-b", 27151);

pub struct Results {
    pub json: Value,
    pub svg: String,
    pub table: String,
}

pub async fn run(o: &Options) -> Result<Results, String> {
    let stack = Stack::load(&o.stack).await;
    let floor_stack = Stack::load(&o.floor_stack).await;
    eprintln!("  follow: {} changes", o.changes);
    let follow = latency::stand_in(&stack, FOLLOW, "follow", o.changes).await?;
    eprintln!("  poll: {} changes", o.changes);
    let poll = latency::polled(&stack, o.changes).await?;
    eprintln!(
        "  the floor, push and the push sketches (D77), in rounds: {} pushes each",
        o.changes
    );
    let rounds::Rounds {
        floor,
        push,
        sketches,
    } = rounds::in_rounds(&floor_stack, &stack, PUSH, o.changes).await?;
    eprintln!("  backstop: a final push lost on the way");
    let lost_ms = latency::lost_final_push(&stack, PUSH_LOST.0, PUSH_LOST.1).await?;
    // Lambda writes REPORT lines when an invocation ends; give the last ones a moment.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;

    eprintln!("  cost: histories, REPORT lines, request log");
    let log = std::fs::read_to_string(&o.localstack_log)
        .map_err(|e| format!("{}: {e}", o.localstack_log.display()))?;
    let prefix = format!("/aws/lambda/{}-", o.stack);
    let mut watches = serde_json::Map::new();
    for (name, heard, park, carrier) in [
        ("push", &push, "Park", Carrier::Hearer),
        ("follow", &follow, "Follow", Carrier::During("Follow")),
        ("poll", &poll, "Park", Carrier::Polled("Wake")),
    ] {
        let histories = cost::state_entries(&stack, &heard.standins).await;
        let runs = cost::per_change(&histories, park, name == "poll");
        let working_runs: Vec<&Vec<String>> = runs
            .iter()
            .filter(|r| r.last().is_some_and(|l| l == park))
            .collect();
        let changes = heard.working_ms.len().max(1) as f64;
        let entries = working_runs.iter().map(|r| r.len()).sum::<usize>() as f64 / changes;
        // Only the windows of WORKING changes count: starting and ending a stand-in are
        // not a heard change's cost, and the benchmark's own row reads are taken out.
        let mut calls: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut requests: BTreeMap<String, u64> = BTreeMap::new();
        for (from, to) in &heard.windows {
            for (f, (n, ms)) in cost::invocations(&stack, &prefix, *from, *to).await? {
                let e = calls.entry(f).or_default();
                e.0 += n;
                e.1 += ms;
            }
            for (op, n) in cost::requests(&log, *from, *to) {
                *requests.entry(op).or_default() += n;
            }
        }
        if let Some(reads) = requests.get_mut("dynamodb.GetItem") {
            *reads = reads.saturating_sub(heard.own_row_reads);
        }
        let invocations: u64 = calls.values().map(|(n, _)| n).sum();
        let billed: u64 = calls.values().map(|(_, ms)| ms).sum();
        let per_request: BTreeMap<String, f64> = requests
            .iter()
            .map(|(k, v)| (k.clone(), *v as f64 / changes))
            .collect();
        let mut watch = json!({
            "heard_ms": spread_json(&heard.working_ms),
            "path_ms": path(&stack, heard, carrier).await?,
            "final_ms": spread_json(&heard.final_ms),
            // From one park's end to the next park, per WORKING change.
            "state_entries_per_change": entries,
            "state_entries_example": working_runs.first().map(|r| r.join(" → ")),
            "per_change": {
                "lambda": calls.iter().map(|(f, (n, ms))| (f.clone(), json!({"invocations": *n as f64 / changes, "billed_ms": *ms as f64 / changes}))).collect::<serde_json::Map<_, _>>(),
                "lambda_invocations": invocations as f64 / changes,
                "lambda_billed_ms": billed as f64 / changes,
                "aws_requests": per_request,
                "dollars": cost::dollars(entries, invocations as f64 / changes, billed as f64 / changes, &per_request),
            },
        });
        if name == "push" {
            // A push the door rang rather than heard (no hearing claimed, one that told
            // nothing, or one past its wait) can find the next park and cost a wake.
            let mut rings = 0;
            for (from, to) in &heard.windows {
                rings += cost::door_rings(&stack, &prefix, *from, *to).await?;
            }
            watch["rung_by_the_door"] = rings.into();
        }
        watches.insert(name.into(), watch);
    }
    let floor_runs = cost::per_change(
        &cost::state_entries(&floor_stack, &floor.standins).await,
        "Park",
        false,
    );
    watches.insert("floor".into(), json!({
        "heard_ms": spread_json(&floor.working_ms),
        "path_ms": path(&floor_stack, &floor, Carrier::After("Note")).await?,
        // Per visit: the warm-up round's is one of them.
        "state_entries_per_change": floor_runs.iter().map(Vec::len).sum::<usize>() as f64 / floor_runs.len().max(1) as f64,
        "state_entries_example": floor_runs.first().map(|r| r.join(" → ")),
    }));
    // No state runs between a push and its note in the sketches.
    for ((name, _), heard) in rounds::SKETCHES.iter().zip(&sketches) {
        watches.insert(
            (*name).into(),
            json!({
                "heard_ms": spread_json(&heard.working_ms),
                "state_entries_per_change": 0.0,
            }),
        );
    }

    let cold = match &o.cold_from {
        Some(file) => std::fs::read_to_string(file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| format!("{}: no cold-start results", file.display()))?,
        None => cold_starts(o).await?,
    };
    let receiver = receiver_results(&o.criterion);
    let mut json = json!({
        "machine": machine(),
        "changes_per_watch": o.changes,
        "watches": watches,
        // The deployed test stack's idle re-check is 90 s; the first re-check (30 s after
        // the task last moved) is the same at every setting.
        "lost_final_push_heard_ms": lost_ms,
        "cold_start_ms": cold,
        "receiver_ns": receiver,
    });
    price(&mut json);
    let mut series = vec![
        ("floor", &floor),
        ("push", &push),
        ("follow", &follow),
        ("poll", &poll),
    ];
    series.extend(
        rounds::SKETCHES
            .iter()
            .map(|(name, _)| *name)
            .zip(&sketches),
    );
    let svg = svg(&series);
    let table = table(&json);
    Ok(Results { json, svg, table })
}

/// What the results compute rather than measure, from their measured watches and the
/// code's own model: the idle hour of each watch, the fleet the quotas serve, the
/// prices. `make bench` prices what it measured; `bench --reprice FILE` prices a
/// results file again when the model or a price changed since it ran.
pub fn price(results: &mut Value) {
    use standin::row::WatchMode;
    // The fleet's stand-ins are told of a change every few minutes: their quiet asks are
    // those between changes, not an idle hour's.
    let gap = (3600.0 / scale::CHANGES_PER_HOUR) as u64;
    let profiles = scale::profiles(
        &json!({"watches": &results["watches"]}),
        quiet_asks_an_hour(WatchMode::Push, gap),
        quiet_asks_an_hour(WatchMode::Poll, gap),
        FollowIdle::default(),
    );
    results["idle_hour"] = idle_hour();
    results["scale"] = scale::results(profiles);
    results["prices"] = cost::PRICES
        .iter()
        .map(|(n, p, what)| json!({"name": n, "usd": p, "what": what}))
        .collect();
}

/// Which state of the path a change's note is written in, and so which visit of it
/// carries the change.
#[derive(Debug, Clone, Copy)]
enum Carrier {
    /// A state entered after the change, that writes the note before SQS has it: the
    /// stand-in's Wake for a push, the floor's Note.
    After(&'static str),
    /// The state that is running when the change comes, or the next one to run, and
    /// writes the note itself: the stand-in's Follow (the Wake after it only drains the
    /// follow's report). The row looks parked again from the follow's report until the
    /// wake drains it, so a change may come between one Follow and the next; the next
    /// one finds it.
    During(&'static str),
    /// A poll's Wake: the one that began after the change or, when the change came just
    /// as a Wake began (the park's timeout can run out before the bench sees its token
    /// stored), the one running then, whose GetTask came after the change.
    Polled(&'static str),
    /// No state: the hear function tells the change before the push is answered and
    /// before the park is rung (D77), so no visit carries it.
    Hearer,
}

/// Where a heard change's time goes: the median milliseconds from the change to each
/// point on its way. A change whose carrying visit cannot be told apart (no SQS time, or
/// no visit that fits) is left out and counted in `unmatched`. Points a watch does not
/// pass (a follow answers no push; its Follow began before the change) are null.
async fn path(stack: &Stack, heard: &Heard, carrier: Carrier) -> Result<Value, String> {
    let state = match carrier {
        Carrier::After(s) | Carrier::During(s) | Carrier::Polled(s) => s,
        Carrier::Hearer => "the hear function",
    };
    let mut visits: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for m in &heard.marks {
        if !visits.contains_key(m.standin.as_str()) && !matches!(carrier, Carrier::Hearer) {
            visits.insert(&m.standin, stack.state_visits_all(&m.standin, state).await?);
        }
    }
    let since = |at: u64, changed: u64| at as i64 - changed as i64;
    let (mut answered, mut entered, mut done, mut sent, mut received) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut unmatched = 0;
    for m in &heard.marks {
        let Some(sqs) = m.sent else {
            unmatched += 1;
            continue;
        };
        if matches!(carrier, Carrier::Hearer) {
            sent.push(since(sqs, m.changed));
            received.push(since(m.received, m.changed));
            if let Some(a) = m.answered {
                answered.push(since(a, m.changed));
            }
            continue;
        }
        let mine = &visits[m.standin.as_str()];
        // After: the last visit that began between the change and SQS taking the note.
        // During: the visit that was running when the change came.
        let began_after = || {
            mine.iter()
                .rfind(|(from, _)| *from >= m.changed && *from <= sqs)
        };
        let visit = match carrier {
            Carrier::After(_) => began_after(),
            Carrier::During(_) => mine
                .iter()
                .find(|(from, to)| *to >= m.changed && *from <= sqs),
            // Timed above, with no visit.
            Carrier::Hearer => None,
            Carrier::Polled(_) => began_after().or_else(|| {
                mine.iter()
                    .find(|(from, to)| *from <= m.changed && *to >= m.changed)
            }),
        };
        let Some(&(from, to)) = visit else {
            unmatched += 1;
            continue;
        };
        if !matches!(carrier, Carrier::During(_)) {
            entered.push(since(from, m.changed));
        }
        done.push(since(to, m.changed));
        sent.push(since(sqs, m.changed));
        received.push(since(m.received, m.changed));
        if let Some(a) = m.answered {
            answered.push(since(a, m.changed));
        }
    }
    let median = |mut v: Vec<i64>| -> Value {
        v.sort_unstable();
        v.get(v.len() / 2).map_or(Value::Null, |m| json!(m))
    };
    Ok(json!({
        "step": state,
        "matched": heard.marks.len() - unmatched,
        "unmatched": unmatched,
        "push_answered": median(answered),
        "step_entered": median(entered),
        "step_done": median(done),
        "sqs_took_the_note": median(sent),
        "parent_has_it": median(received),
    }))
}

/// Cold starts of every function and of the Python equivalent: medians in ms.
pub async fn cold_starts(o: &Options) -> Result<Value, String> {
    eprintln!("  cold starts: {} runs per function", o.cold_runs);
    let mut functions = serde_json::Map::new();
    for function in cold::FUNCTIONS {
        let binary = cold::binary(&o.binaries, function);
        let runs = cold::measure(&binary, &[], o.cold_runs).await?;
        functions.insert(function.into(), json!(cold::median(&runs)));
    }
    let python = cold::measure(&o.python, &["-c", cold::PYTHON_FUNCTION], o.cold_runs).await?;
    Ok(json!({"functions": functions, "python_equivalent": cold::median(&python)}))
}

fn spread_json(values: &[u64]) -> Value {
    let mut v = values.to_vec();
    v.sort_unstable();
    let q = |p: f64| {
        v.get(((v.len() as f64 - 1.0) * p).round() as usize)
            .copied()
    };
    json!({"count": v.len(), "p50": q(0.5), "p95": q(0.95), "max": v.last()})
}

/// A push stand-in's idle re-checks in its first idle hour and in each later one, walked
/// through the stand-in's own decisions (`steps/next.rs`) at the deployed default
/// (`IdleRecheckSecs` an hour): the backstop starts 30 s after the task last moved and
/// doubles while nothing does.
fn backstop_rechecks() -> (f64, f64) {
    idle_asks(standin::row::WatchMode::Push)
}

/// A polled stand-in's GetTasks in its first idle hour and in each later one (of its
/// first day), walked through its own decisions at the default pacing: the wait doubles
/// from 2 s to the agent's `poll_max_interval`.
fn idle_polls() -> (f64, f64) {
    idle_asks(standin::row::WatchMode::Poll)
}

/// A stand-in's asks of the agent on `mode` while nothing moves: in its first hour, and
/// on average in each of the day's 23 later hours.
fn idle_asks(mode: standin::row::WatchMode) -> (f64, f64) {
    use standin::steps::next::{self, Cursor, Next, Pacing, Woke};
    let pacing = Pacing::default();
    let quiet = standin::state::remote_out("r", standin_wire::TaskState::Working, "");
    let mut cursor = Cursor::default();
    let mut park = next::park_for(&mut cursor, mode, pacing);
    let (day, mut at, mut first, mut later) = (24 * 3600, 0, 0.0, 0.0);
    while let Next::Park { timeout_secs, .. } = park {
        at += timeout_secs;
        if at > day {
            break;
        }
        if at <= 3600 {
            first += 1.0;
        } else {
            later += 1.0;
        }
        next::after_wake(&mut cursor, "agent", mode, Woke::TimedOut, None, pacing);
        park = next::after_check(&mut cursor, mode, Some(&quiet), false, pacing);
    }
    (first, later / 23.0)
}

/// The asks of the agent that hear nothing, in an hour of a stand-in on `mode` told of a
/// change every `gap_secs`, walked through its own decisions at the default pacing over a
/// day: a push is heard as it comes (and the backstop starts again from its first wait),
/// a poll hears a change when the wait it came in ends (and polls again after 2 s).
fn quiet_asks_an_hour(mode: standin::row::WatchMode, gap_secs: u64) -> f64 {
    use standin::row::{WakeEvent, WatchMode};
    use standin::steps::next::{self, Cursor, Next, Pacing, Woke};
    use standin_wire::TaskState;
    let pacing = Pacing::default();
    let out = |text: &str| standin::state::remote_out("r", TaskState::Working, text);
    let day = 24 * 3600;
    let mut cursor = Cursor::default();
    let mut park = next::park_for(&mut cursor, mode, pacing);
    let (mut at, mut change_at, mut changes, mut quiet) = (0, gap_secs, 0, 0.0);
    while let Next::Park { timeout_secs, .. } = park {
        if mode == WatchMode::Push && change_at <= at + timeout_secs {
            at = change_at;
            change_at += gap_secs;
            changes += 1;
            let push = WakeEvent::Push {
                claimed: Some(TaskState::Working),
            };
            next::after_wake(&mut cursor, "agent", mode, Woke::Rung, Some(push), pacing);
            let heard = out(&format!("change {changes}"));
            park = next::after_check(&mut cursor, mode, Some(&heard), true, pacing);
            continue;
        }
        at += timeout_secs;
        if at > day {
            break;
        }
        next::after_wake(&mut cursor, "agent", mode, Woke::TimedOut, None, pacing);
        let changed = change_at <= at;
        if changed {
            changes += 1;
            while change_at <= at {
                change_at += gap_secs;
            }
        } else {
            quiet += 1.0;
        }
        let seen = out(&format!("change {changes}"));
        park = next::after_check(&mut cursor, mode, Some(&seen), changed, pacing);
    }
    quiet / 24.0
}

/// An idle hour parked, from the deployed defaults: each push or off re-check is
/// TimedOut, Wake, Route, Park (a wake with GetTask and a park invocation), 6 of them in
/// the first idle hour and one in each later one. A followed stand-in's hour: its share
/// of a full follower (`FollowIdle`), the follow park's timeout once an hour (TimedOut,
/// Wake, Route, Follow, and the request it sends), a heartbeat every
/// `FOLLOW_HEARTBEAT_SECS`, a row read every `ROW_READ_EVERY`, and a hand-back at each
/// follower window's end.
fn idle_hour() -> Value {
    let (first_rechecks, later_rechecks) = backstop_rechecks();
    let recheck = 4.0 * cost::price("state_transition")
        + 2.0 * cost::price("lambda_request")
        + 0.1 * 0.125 * cost::price("lambda_gb_second")
        + 3.0 * cost::price("dynamodb_write")
        + cost::price("dynamodb_read");
    let push_first = first_rechecks * recheck;
    let push_day = (first_rechecks + 23.0 * later_rechecks) * recheck;
    let push_transitions = 4.0 * later_rechecks;
    let push = later_rechecks * recheck;
    // A poll is a re-check whose wait is the poll's: TimedOut, Wake (GetTask), Route, Park.
    let (first_polls, later_polls) = idle_polls();
    let poll_day = (first_polls + 23.0 * later_polls) * recheck;
    let f = FollowIdle::default();
    let follow = f.state_transitions() * cost::price("state_transition")
        + (f.share() * f.windows() + 1.0) * cost::price("lambda_request")
        + 3600.0 * f.share() * f.memory_gb * cost::price("lambda_gb_second")
        + f.row_reads() * cost::price("dynamodb_read")
        + f.row_writes() * cost::price("dynamodb_write")
        + f.queue_requests() * cost::price("sqs_standard_request");
    json!({
        "push": {"state_transitions": push_transitions, "dollars": push,
                 "first_hour": {"rechecks": first_rechecks, "state_transitions": 4.0 * first_rechecks, "dollars": push_first},
                 "dollars_per_1000_standins_a_day": push_day * 1000.0},
        "poll": {"polls": later_polls, "state_transitions": 4.0 * later_polls, "dollars": later_polls * recheck,
                 "first_hour": {"polls": first_polls, "state_transitions": 4.0 * first_polls, "dollars": first_polls * recheck},
                 "dollars_per_1000_standins_a_day": poll_day * 1000.0},
        "follow": {"state_transitions": f.state_transitions(), "dollars": follow,
                   "concurrency": f.share(),
                   "follows_per_function": f.per_function,
                   "dollars_per_1000_standins_a_day": follow * 24.0 * 1000.0},
    })
}

/// A followed stand-in's idle hour, from the template's defaults.
#[derive(Debug, Clone, Copy)]
pub struct FollowIdle {
    /// `FollowsPerFunction`: a full follower's parks.
    pub per_function: f64,
    /// `FollowWindowSecs`: a follower's window.
    pub window_secs: f64,
    /// The follow park's own timeout (`FOLLOW_PARK_SECS`).
    pub park_secs: f64,
    /// `FOLLOW_HEARTBEAT_SECS`.
    pub heartbeat_secs: f64,
    /// The follow function's memory, GB.
    pub memory_gb: f64,
}

impl Default for FollowIdle {
    fn default() -> Self {
        Self {
            per_function: 100.0,
            window_secs: 600.0,
            park_secs: 3600.0,
            heartbeat_secs: 10.0,
            memory_gb: 0.25,
        }
    }
}

impl FollowIdle {
    /// The follow functions one followed stand-in holds: its share of a full follower.
    pub fn share(&self) -> f64 {
        1.0 / self.per_function
    }
    pub fn windows(&self) -> f64 {
        3600.0 / self.window_secs
    }
    /// TimedOut, Wake, Route, Follow at each park timeout.
    pub fn state_transitions(&self) -> f64 {
        4.0 * 3600.0 / self.park_secs
    }
    pub fn heartbeats(&self) -> f64 {
        3600.0 / self.heartbeat_secs
    }
    /// The row read every `ROW_READ_EVERY` and at each resume; the wake's at the timeout.
    pub fn row_reads(&self) -> f64 {
        3600.0 / standin::follow::ROW_READ_EVERY.as_secs_f64()
            + self.windows()
            + 3600.0 / self.park_secs
    }
    /// The park, and the wake's drain, at each park timeout.
    pub fn row_writes(&self) -> f64 {
        3.0 * 3600.0 / self.park_secs
    }
    /// The park's request (SendMessage); each hand-back's send, take and delete, ten to
    /// a call.
    pub fn queue_requests(&self) -> f64 {
        3600.0 / self.park_secs + 3.0 * self.windows() / 10.0
    }
}

/// Median nanoseconds per push from criterion's estimates, receiver and floor, per body.
fn receiver_results(criterion: &Path) -> Value {
    let read = |what: &str, body: &str| -> Option<f64> {
        let path = criterion
            .join("push")
            .join(what)
            .join(body)
            .join("new/estimates.json");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        v["median"]["point_estimate"].as_f64()
    };
    let mut out = serde_json::Map::new();
    for body in ["small", "60KB"] {
        let (r, f) = (read("receiver", body), read("floor", body));
        out.insert(
            body.into(),
            json!({"receiver": r, "floor": f,
            "ratio": r.zip(f).map(|(r, f)| r / f)}),
        );
    }
    Value::Object(out)
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_owned())
    });
    json!({"cpu": cpu, "cores": std::thread::available_parallelism().map(|n| n.get()).ok()})
}

fn ratio(a: &Value, b: &Value) -> String {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

fn table(j: &Value) -> String {
    let w = &j["watches"];
    let f = &w["floor"]["heard_ms"];
    let mut t = String::new();
    t.push_str("| watch | heard p50 | p95 | max | p50 / floor | p95 / floor | final p50 | state entries per change | invocations per change | $ per change |\n|---|---|---|---|---|---|---|---|---|---|\n");
    // A results file from before a watch was measured has no row for it.
    let measured: Vec<&str> = ["floor", "push", "follow", "poll"]
        .into_iter()
        .filter(|name| !w[*name].is_null())
        .collect();
    let sketched = rounds::SKETCHES
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| !w[*name].is_null());
    for name in measured.iter().copied().chain(sketched) {
        let x = &w[name];
        let h = &x["heard_ms"];
        t.push_str(&format!(
            "| {name} | {} ms | {} ms | {} ms | {} | {} | {} | {} | {} | {} |\n",
            h["p50"],
            h["p95"],
            h["max"],
            ratio(&h["p50"], &f["p50"]),
            ratio(&h["p95"], &f["p95"]),
            x["final_ms"]["p50"]
                .as_u64()
                .map_or("–".into(), |v| format!("{v} ms")),
            match (
                x["state_entries_per_change"].as_f64(),
                x["state_entries_example"].as_str()
            ) {
                (Some(n), Some(e)) => format!("{n:.1} ({e})"),
                (Some(n), None) => format!("{n:.1}"),
                _ => "–".into(),
            },
            x["per_change"]["lambda_invocations"]
                .as_f64()
                .map_or("–".into(), |v| format!("{v:.1}")),
            x["per_change"]["dollars"]["total"]
                .as_f64()
                .map_or("–".into(), |v| format!("${v:.7}")),
        ));
    }
    t.push_str("\nwhere the time goes (median ms after the change; the step is the state that writes the note):\n\n| watch | push answered | step entered | step done | SQS took the note | the parent has it |\n|---|---|---|---|---|---|\n");
    for &name in &measured {
        let p = &w[name]["path_ms"];
        let cell = |k: &str| p[k].as_i64().map_or("–".into(), |v| format!("{v}"));
        t.push_str(&format!(
            "| {name} ({}) | {} | {} | {} | {} | {} |\n",
            p["step"].as_str().unwrap_or("?"),
            cell("push_answered"),
            cell("step_entered"),
            cell("step_done"),
            cell("sqs_took_the_note"),
            cell("parent_has_it"),
        ));
    }
    let c = &j["cold_start_ms"];
    let fastest_slowest = c["functions"].as_object().map(|o| {
        let v: Vec<f64> = o.values().filter_map(Value::as_f64).collect();
        (
            v.iter().copied().fold(f64::MAX, f64::min),
            v.iter().copied().fold(0.0, f64::max),
        )
    });
    if let (Some((lo, hi)), Some(py)) = (fastest_slowest, c["python_equivalent"].as_f64()) {
        t.push_str(&format!("\ncold start: functions {lo:.1}–{hi:.1} ms (median each), Python equivalent {py:.1} ms ({:.0}× the slowest)\n", py / hi));
    }
    for body in ["small", "60KB"] {
        let r = &j["receiver_ns"][body];
        if let (Some(rv), Some(fv)) = (r["receiver"].as_f64(), r["floor"].as_f64()) {
            t.push_str(&format!(
                "receiver CPU per push ({body}): {:.1} µs, floor {:.1} µs ({:.2}×)\n",
                rv / 1000.0,
                fv / 1000.0,
                rv / fv
            ));
        }
    }
    if let Some(ms) = j["lost_final_push_heard_ms"].as_u64() {
        t.push_str(&format!(
            "a final push lost: heard by the backstop's re-check in {:.1} s\n",
            ms as f64 / 1000.0
        ));
    }
    for (name, asks) in [("push", "re-checks"), ("poll", "polls")] {
        let first = &j["idle_hour"][name]["first_hour"];
        t.push_str(&format!(
            "first idle hour on {name}: {} {asks}, {} state transitions, ${:.6}\n",
            first[if name == "push" { "rechecks" } else { "polls" }],
            first["state_transitions"],
            first["dollars"].as_f64().unwrap_or(0.0)
        ));
    }
    for name in ["push", "poll", "follow"] {
        let i = &j["idle_hour"][name];
        t.push_str(&format!("idle hour parked on {name}: {:.1} state transitions, ${:.6} (${:.2} per 1,000 stand-ins a day)\n",
            i["state_transitions"].as_f64().unwrap_or(0.0), i["dollars"].as_f64().unwrap_or(0.0), i["dollars_per_1000_standins_a_day"].as_f64().unwrap_or(0.0)));
    }
    let follow = &j["idle_hour"]["follow"];
    t.push_str(&format!(
        "follow concurrency: {} follow functions per followed stand-in ({} per follower), so 1,000 followed idle hold {:.0}\n",
        follow["concurrency"],
        follow["follows_per_function"],
        (1000.0 * follow["concurrency"].as_f64().unwrap_or(0.0)).ceil()
    ));
    t.push_str(&scale::table(&j["scale"]));
    t
}

/// Latency distributions per watch, as sorted curves (share of changes heard within x ms).
fn svg(series: &[(&str, &Heard)]) -> String {
    let (w, h, left, bottom) = (720.0, 360.0, 60.0, 40.0);
    let max = series
        .iter()
        .flat_map(|(_, s)| s.working_ms.iter())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let colours = [
        "#555555", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    ];
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>"#
    );
    out.push_str(&format!(r#"<text x="{left}" y="16">heard latency: share of changes heard within x ms (WORKING notes)</text>"#));
    let (pw, ph) = (w - left - 20.0, h - bottom - 30.0);
    out.push_str(&format!(
        r#"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="black"/>"#,
        h - bottom,
        left + pw,
        h - bottom
    ));
    out.push_str(&format!(
        r#"<line x1="{left}" y1="30" x2="{left}" y2="{}" stroke="black"/>"#,
        h - bottom
    ));
    for i in 0..=4 {
        let x = left + pw * i as f64 / 4.0;
        out.push_str(&format!(
            r#"<text x="{x}" y="{}" text-anchor="middle">{:.0} ms</text>"#,
            h - bottom + 16.0,
            max * i as f64 / 4.0
        ));
        let y = h - bottom - ph * i as f64 / 4.0;
        out.push_str(&format!(
            r#"<text x="{}" y="{y}" text-anchor="end">{}%</text>"#,
            left - 4.0,
            i * 25
        ));
    }
    for (k, (name, s)) in series.iter().enumerate() {
        let mut v = s.working_ms.clone();
        v.sort_unstable();
        let n = v.len().max(1) as f64;
        let points: Vec<String> = v
            .iter()
            .enumerate()
            .map(|(i, ms)| {
                format!(
                    "{:.1},{:.1}",
                    left + pw * *ms as f64 / max,
                    h - bottom - ph * (i as f64 + 1.0) / n
                )
            })
            .collect();
        let colour = colours[k % colours.len()];
        out.push_str(&format!(
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        ));
        out.push_str(&format!(
            r#"<text x="{}" y="{}" fill="{colour}">{name}</text>"#,
            left + pw - 60.0,
            50.0 + 16.0 * k as f64
        ));
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::FollowIdle;

    /// Poll's default backoff is priced like push's backstop: a thousand idle polled
    /// stand-ins cost at most $3 a day, and no more than a thousand on push, yet the
    /// first polls still come within seconds of the last change.
    #[test]
    fn a_thousand_idle_polled_stand_ins_cost_no_more_than_three_dollars_a_day() {
        let idle = super::idle_hour();
        let day = |watch: &str| idle[watch]["dollars_per_1000_standins_a_day"].as_f64();
        let (poll, push) = (day("poll").unwrap(), day("push").unwrap());
        assert!(poll <= 3.0, "${poll:.2} a day for 1,000 polled");
        assert!(poll <= push, "poll ${poll:.2}, push ${push:.2}");
        let (first_hour, _) = super::idle_polls();
        assert!(first_hour >= 10.0, "{first_hour} polls in the first hour");
    }

    /// A resource's or parameter's property as the template writes it (`key: value` on
    /// one line of its block).
    fn property(template: &str, name: &str, key: &str) -> Option<f64> {
        let mut lines = template.lines();
        lines.find(|l| *l == format!("  {name}:"))?;
        // The block ends where the next one starts (two spaces, then a capital).
        lines
            .take_while(|l| {
                !(l.starts_with("  ") && l[2..].starts_with(|c: char| c.is_ascii_uppercase()))
            })
            .find_map(|l| l.trim().strip_prefix(&format!("{key}: ")))
            .and_then(|v| v.trim().parse().ok())
    }

    #[test]
    fn the_idle_cost_prices_the_follower_the_template_deploys() {
        let template =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .unwrap_or_default();
        let f = FollowIdle::default();
        assert_eq!(
            property(&template, "FollowFunction", "MemorySize"),
            Some(f.memory_gb * 1024.0)
        );
        assert_eq!(
            property(&template, "FollowsPerFunction", "Default"),
            Some(f.per_function)
        );
        assert_eq!(
            property(&template, "FollowWindowSecs", "Default"),
            Some(f.window_secs)
        );
    }
}
