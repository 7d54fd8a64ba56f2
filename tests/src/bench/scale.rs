//! The scale of one account: what one stand-in uses of each AWS quota an hour, from the
//! benchmark's measured counts (a heard change) and the stand-in's own park decisions
//! (an idle hour), and so how many stand-ins one account serves under default quotas,
//! which quota binds first and what raising it buys.

use serde_json::{Value, json};

/// One regional quota: a rate per second, a count, or concurrent executions, at its
/// default in US East (N. Virginia), US West (Oregon) and Europe (Ireland).
pub struct Quota {
    pub key: &'static str,
    pub name: &'static str,
    pub limit: f64,
    pub unit: &'static str,
}

pub const QUOTAS: &[Quota] = &[
    Quota {
        key: "state_transitions",
        name: "Step Functions state transitions (Standard)",
        limit: 1_500.0,
        unit: "/s refill",
    },
    Quota {
        key: "start_execution",
        name: "Step Functions StartExecution",
        limit: 300.0,
        unit: "/s refill",
    },
    Quota {
        key: "send_task_success",
        name: "Step Functions SendTaskSuccess",
        limit: 500.0,
        unit: "/s refill",
    },
    Quota {
        key: "send_task_heartbeat",
        name: "Step Functions SendTaskHeartbeat",
        limit: 500.0,
        unit: "/s refill",
    },
    Quota {
        key: "open_executions",
        name: "Step Functions open executions",
        limit: 1_000_000.0,
        unit: "executions",
    },
    Quota {
        key: "lambda_concurrency",
        name: "Lambda concurrent executions",
        limit: 1_000.0,
        unit: "executions",
    },
    Quota {
        key: "dynamodb_writes",
        name: "DynamoDB on-demand writes per table",
        limit: 40_000.0,
        unit: "WRU/s",
    },
    Quota {
        key: "dynamodb_reads",
        name: "DynamoDB on-demand reads per table",
        limit: 40_000.0,
        unit: "RRU/s",
    },
    Quota {
        key: "sqs_sends",
        name: "SQS FIFO high throughput, sends per queue",
        limit: 70_000.0,
        unit: "/s",
    },
    Quota {
        key: "apigateway",
        name: "API Gateway requests",
        limit: 10_000.0,
        unit: "/s",
    },
    Quota {
        key: "eventbridge",
        name: "EventBridge PutEvents",
        limit: 10_000.0,
        unit: "/s",
    },
];

/// The fleet the table is for: a third of the stand-ins on each watch, each told of
/// this many changes an hour (the rest of the time parked).
pub const CHANGES_PER_HOUR: f64 = 12.0;

/// What one stand-in uses an hour, per quota key (a count an hour, or for concurrency
/// and open executions the average held).
pub type Use = std::collections::BTreeMap<&'static str, f64>;

fn per_change(watch: &Value) -> Use {
    let c = &watch["per_change"];
    // A follower's time is what it holds idle (the idle profile's share of one), not a
    // change's: it would be counted twice.
    let follower_ms = c["lambda"]["follow"]["billed_ms"].as_f64().unwrap_or(0.0);
    let r = |op: &str| c["aws_requests"][op].as_f64().unwrap_or(0.0);
    let mut u = Use::new();
    u.insert(
        "state_transitions",
        watch["state_entries_per_change"].as_f64().unwrap_or(0.0),
    );
    u.insert("send_task_success", r("stepfunctions.SendTaskSuccess"));
    u.insert("send_task_heartbeat", r("stepfunctions.SendTaskHeartbeat"));
    u.insert(
        "lambda_concurrency",
        (c["lambda_billed_ms"].as_f64().unwrap_or(0.0) - follower_ms) / 1000.0 / 3600.0,
    );
    u.insert(
        "dynamodb_writes",
        r("dynamodb.UpdateItem") + r("dynamodb.PutItem") + 4.0 * r("dynamodb.TransactWriteItems"),
    );
    u.insert(
        "dynamodb_reads",
        r("dynamodb.GetItem") + r("dynamodb.Query") + r("dynamodb.BatchGetItem"),
    );
    u.insert(
        "sqs_sends",
        r("sqs.SendMessage") + r("sqs.SendMessageBatch"),
    );
    u.insert("apigateway", r("apigateway.request"));
    u.insert("eventbridge", r("events.PutEvents"));
    u
}

/// An idle re-check (push's backstop, a poll): TimedOut, Wake (GetTask), Route, Park;
/// the wake and park invocations, the drain's and park's writes and the wake's reads.
fn recheck() -> Use {
    Use::from([
        ("state_transitions", 4.0),
        ("lambda_concurrency", 0.15 / 3600.0),
        ("dynamodb_writes", 3.0),
        ("dynamodb_reads", 3.0),
    ])
}

fn scaled(u: &Use, by: f64) -> Use {
    u.iter().map(|(k, v)| (*k, v * by)).collect()
}

fn add(a: &mut Use, b: &Use) {
    for (k, v) in b {
        *a.entry(k).or_default() += v;
    }
}

/// One stand-in-hour per watch, parked between its changes, and per heard change, from
/// the benchmark's results `j`; `rechecks` and `polls` are a push stand-in's re-checks
/// and a polled one's GetTasks that hear nothing in an hour of `CHANGES_PER_HOUR`
/// changes, `follow` the followed one's idle hour.
pub fn profiles(j: &Value, rechecks: f64, polls: f64, follow: super::FollowIdle) -> Value {
    let mut follow_between = Use::from([
        ("state_transitions", follow.state_transitions()),
        // Its share of a full follower, which holds many streams at once.
        ("lambda_concurrency", follow.share()),
        ("send_task_heartbeat", follow.heartbeats()),
        // A beat reads the row once a minute, for a ring that failed.
        ("dynamodb_reads", follow.row_reads()),
        ("dynamodb_writes", follow.row_writes()),
    ]);
    follow_between.insert("open_executions", 1.0);
    let mut push_between = scaled(&recheck(), rechecks);
    push_between.insert("open_executions", 1.0);
    let mut poll_between = scaled(&recheck(), polls);
    poll_between.insert("open_executions", 1.0);
    json!({
        "push_between_changes": push_between,
        "follow_between_changes": follow_between,
        "poll_between_changes": poll_between,
        "push_change": per_change(&j["watches"]["push"]),
        "follow_change": per_change(&j["watches"]["follow"]),
    })
}

fn use_of(v: &Value) -> Use {
    v.as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| {
                    QUOTAS
                        .iter()
                        .find(|q| q.key == k)
                        .map(|q| (q.key, v.as_f64().unwrap_or(0.0)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The mixed fleet's use per stand-in: a third on each watch, `CHANGES_PER_HOUR` changes
/// each (a polled stand-in's change costs what a followed one's does: a check that
/// finds it), and one start an hour (a stand-in lives an hour).
pub fn mix(profiles: &Value) -> Use {
    let mut u = Use::new();
    for between in [
        "push_between_changes",
        "follow_between_changes",
        "poll_between_changes",
    ] {
        add(&mut u, &scaled(&use_of(&profiles[between]), 1.0 / 3.0));
    }
    add(
        &mut u,
        &scaled(&use_of(&profiles["push_change"]), CHANGES_PER_HOUR / 3.0),
    );
    add(
        &mut u,
        &scaled(
            &use_of(&profiles["follow_change"]),
            2.0 * CHANGES_PER_HOUR / 3.0,
        ),
    );
    *u.entry("start_execution").or_default() += 1.0;
    u
}

/// For each quota: the fleet at which the mix reaches it, in order, the first binding.
pub fn fleet(mix: &Use) -> Vec<(&'static Quota, f64)> {
    let mut out: Vec<(&Quota, f64)> = QUOTAS
        .iter()
        .filter_map(|q| {
            let per_standin = mix.get(q.key).copied().unwrap_or(0.0);
            // Rates are an hour's count per stand-in; concurrency and open executions
            // are held, not counted.
            let per_unit = match q.unit {
                "executions" => per_standin,
                _ => per_standin / 3600.0,
            };
            (per_unit > 0.0).then(|| (q, q.limit / per_unit))
        })
        .collect();
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    out
}

pub fn results(profiles: Value) -> Value {
    let mix = mix(&profiles);
    let fleet = fleet(&mix);
    json!({
        "changes_per_hour": CHANGES_PER_HOUR,
        "profiles": profiles,
        "mix_per_standin_hour": mix,
        "fleet": fleet.iter().map(|(q, n)| json!({"quota": q.name, "limit": q.limit, "unit": q.unit, "standins": n.floor()})).collect::<Vec<_>>(),
    })
}

/// The table `make bench` prints and `docs/scale.md` quotes.
pub fn table(scale: &Value) -> String {
    let p = &scale["profiles"];
    let mut t = format!(
        "\none stand-in's use of each quota (an hour parked between its changes, or per heard change), and the fleet one account serves (a third on each watch, {} changes an hour each):\n\n| quota (default) | push, between changes (an hour) | follow, between changes | poll, between changes | push change | follow change | fleet at the limit |\n|---|---|---|---|---|---|---|\n",
        scale["changes_per_hour"]
    );
    let fleet = scale["fleet"].as_array().cloned().unwrap_or_default();
    for q in QUOTAS {
        let cell = |profile: &str| {
            p[profile][q.key]
                .as_f64()
                .filter(|v| *v > 0.0)
                .map_or("–".to_owned(), |v| format!("{v:.3}"))
        };
        let at = fleet
            .iter()
            .find(|f| f["quota"] == q.name)
            .and_then(|f| f["standins"].as_f64())
            .map_or("–".to_owned(), |n| format!("{n:.0}"));
        t.push_str(&format!(
            "| {} ({} {}) | {} | {} | {} | {} | {} | {} |\n",
            q.name,
            q.limit,
            q.unit,
            cell("push_between_changes"),
            cell("follow_between_changes"),
            cell("poll_between_changes"),
            cell("push_change"),
            cell("follow_change"),
            at
        ));
    }
    if let (Some(first), Some(second)) = (fleet.first(), fleet.get(1)) {
        t.push_str(&format!(
            "\nbinds first: {} at {} stand-ins; raised, the next is {} at {}\n",
            first["quota"].as_str().unwrap_or("?"),
            first["standins"],
            second["quota"].as_str().unwrap_or("?"),
            second["standins"]
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Value {
        json!({"watches": {
            "push": {"state_entries_per_change": 3.0, "per_change": {"lambda_billed_ms": 360.0,
                "aws_requests": {"stepfunctions.SendTaskSuccess": 1.0, "sqs.SendMessage": 1.0, "apigateway.request": 1.0}}},
            "follow": {"state_entries_per_change": 3.0, "per_change": {"lambda_billed_ms": 360.0,
                "aws_requests": {"stepfunctions.SendTaskSuccess": 1.0, "sqs.SendMessage": 1.0}}}
        }})
    }

    #[test]
    fn a_full_follower_shares_a_function_and_heartbeats_bind_first() {
        let follow = crate::bench::FollowIdle::default();
        let scale = results(profiles(&measured(), 1.0, 60.0, follow));
        let fleet = scale["fleet"].as_array().unwrap();
        // A third followed, each beating every 10 s: 120 heartbeats a stand-in-hour
        // against 500 a second, 15,000 stand-ins; a function per hundred followed is far
        // from the concurrency quota.
        assert_eq!(fleet[0]["quota"], "Step Functions SendTaskHeartbeat");
        assert_eq!(fleet[0]["standins"].as_f64(), Some(15_000.0));
        let concurrency = fleet
            .iter()
            .find(|f| f["quota"] == "Lambda concurrent executions")
            .unwrap();
        assert!(
            concurrency["standins"].as_f64().unwrap() > 100_000.0,
            "{concurrency}"
        );
    }

    #[test]
    fn a_follower_holding_one_stand_in_is_the_concurrency_bound_again() {
        let one_each = crate::bench::FollowIdle {
            per_function: 1.0,
            ..Default::default()
        };
        let scale = results(profiles(&measured(), 1.0, 60.0, one_each));
        let fleet = scale["fleet"].as_array().unwrap();
        assert_eq!(fleet[0]["quota"], "Lambda concurrent executions");
        let n = fleet[0]["standins"].as_f64().unwrap();
        assert!((2_900.0..3_000.0).contains(&n), "{n}");
    }

    #[test]
    fn a_quota_nothing_uses_is_not_a_limit() {
        let mut u = Use::new();
        u.insert("state_transitions", 3600.0);
        let fleet = fleet(&u);
        assert_eq!(fleet.len(), 1);
        assert_eq!(fleet[0].1, 1_500.0);
    }
}
