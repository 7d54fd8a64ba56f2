//! What a heard change costs, counted where it happens: state entries in the execution
//! histories, Lambda invocations and billed milliseconds in the functions' REPORT lines,
//! and AWS requests in LocalStack's request log, each over one phase of the benchmark.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::stack::Stack;

/// Published us-east-1 prices (USD), as of 2026; see each service's pricing page.
pub const PRICES: &[(&str, f64, &str)] = &[
    (
        "state_transition",
        0.025 / 1_000.0,
        "Step Functions Standard, per state transition",
    ),
    (
        "lambda_gb_second",
        0.000_016_666_7,
        "Lambda x86, per GB-second",
    ),
    ("lambda_request", 0.20 / 1_000_000.0, "Lambda, per request"),
    (
        "sqs_standard_request",
        0.40 / 1_000_000.0,
        "SQS standard, per request",
    ),
    (
        "dynamodb_write",
        0.625 / 1_000_000.0,
        "DynamoDB on-demand, per write request unit",
    ),
    (
        "dynamodb_read",
        0.125 / 1_000_000.0,
        "DynamoDB on-demand, per read request unit",
    ),
    ("sqs_request", 0.50 / 1_000_000.0, "SQS FIFO, per request"),
    (
        "apigateway_request",
        3.50 / 1_000_000.0,
        "API Gateway REST, per request",
    ),
];

pub fn price(name: &str) -> f64 {
    PRICES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map_or(0.0, |(_, p, _)| *p)
}

/// State entries per heard change: after the first park, every entry up to the End,
/// divided by the changes heard there.
pub async fn state_entries(stack: &Stack, standins: &[String]) -> Vec<String> {
    let mut all = vec![];
    for id in standins {
        all.push(stack.states_entered(id).await.join(","));
    }
    all
}

/// The entries from each park's end to the next park (or the end), after the first park:
/// what one heard change walks through. Runs that begin with a park's timeout are idle
/// re-checks, not heard changes, and are left out, unless `timeouts` (a poll: every run
/// begins with one, and those that hear nothing are what its changes cost).
pub fn per_change(histories: &[String], park: &str, timeouts: bool) -> Vec<Vec<String>> {
    let mut out = vec![];
    for history in histories {
        let names: Vec<&str> = history.split(',').collect();
        let Some(first_park) = names.iter().position(|n| *n == park) else {
            continue;
        };
        let mut run: Vec<String> = vec![];
        for name in &names[first_park + 1..] {
            run.push((*name).to_owned());
            if *name == park || *name == "End" {
                if timeouts || run.first().is_some_and(|f| f != "TimedOut") {
                    out.push(run.clone());
                }
                run.clear();
            }
        }
    }
    out
}

/// Invocations and billed milliseconds per function between two instants, from the
/// REPORT lines Lambda writes for every invocation.
pub async fn invocations(
    stack: &Stack,
    prefix: &str,
    from_ms: u64,
    to_ms: u64,
) -> Result<BTreeMap<String, (u64, u64)>, String> {
    let mut out = BTreeMap::new();
    for (group, line) in stack
        .log_events(prefix, Some(from_ms), Some(to_ms), Some("REPORT"))
        .await?
    {
        // `{prefix}WakeFunction-1a2b3c`, not another stack whose name starts the same; or a
        // function the template names, `{prefix}HearFunction`.
        let rest = group.strip_prefix(prefix).unwrap_or_default();
        let kind = match rest.split_once('-') {
            Some((kind, suffix)) if !suffix.contains('-') => kind,
            Some(_) => continue,
            None => rest,
        };
        let Some(function) = kind
            .strip_suffix("Function")
            .filter(|name| name.starts_with(|c: char| c.is_ascii_uppercase()))
            .map(str::to_lowercase)
        else {
            continue;
        };
        if let Some(billed) = billed_ms(&line) {
            let entry = out.entry(function).or_insert((0, 0));
            entry.0 += 1;
            entry.1 += billed;
        }
    }
    Ok(out)
}

/// The push function's rings in a window: the push function logs each ring the door made
/// instead of a hearing, with its reason, "...; the park is rung" (a hearing it could not
/// claim, one that told nothing, or one that outlasted its wait).
pub async fn door_rings(
    stack: &Stack,
    prefix: &str,
    from_ms: u64,
    to_ms: u64,
) -> Result<u64, String> {
    let rings = stack
        .log_events(prefix, Some(from_ms), Some(to_ms), Some("rung"))
        .await?
        .into_iter()
        .filter(|(group, line)| {
            group
                .strip_prefix(prefix)
                .is_some_and(|function| function.starts_with("PushFunction"))
                && line.contains("the park is rung")
        })
        .count();
    Ok(rings as u64)
}

fn billed_ms(report: &str) -> Option<u64> {
    let rest = report.split("Billed Duration: ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// AWS requests by operation between two instants, from LocalStack's request log
/// (`... localstack.request.aws : AWS dynamodb.UpdateItem => 200`); execute-api calls
/// count as API Gateway requests.
pub fn requests(log: &str, from_ms: u64, to_ms: u64) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in log.lines() {
        // LocalStack stamps its lines in the machine's time, UTC on the machines this runs on.
        let Some(at) = line
            .get(..23)
            .and_then(|t| crate::soak::oracle::epoch_ms(&format!("{t}Z")))
        else {
            continue;
        };
        if at < from_ms || at > to_ms || !line.contains("localstack.request") {
            continue;
        }
        let op = if line.contains("/_aws/execute-api/") {
            "apigateway.request".to_owned()
        } else if let Some(rest) = line.split(" : AWS ").nth(1) {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        } else {
            continue;
        };
        *out.entry(op).or_insert(0) += 1;
    }
    out
}

/// Dollars for one heard change: transitions, Lambda (128 MB) requests and GB-seconds,
/// DynamoDB request units (a transaction's item counts twice), SQS and API Gateway
/// requests.
pub fn dollars(
    transitions: f64,
    invocations: f64,
    billed_ms: f64,
    requests: &BTreeMap<String, f64>,
) -> Value {
    let r = |op: &str| requests.get(op).copied().unwrap_or(0.0);
    let ddb_writes =
        r("dynamodb.UpdateItem") + r("dynamodb.PutItem") + 4.0 * r("dynamodb.TransactWriteItems");
    let ddb_reads = r("dynamodb.GetItem") + r("dynamodb.Query") + r("dynamodb.BatchGetItem");
    let sqs = r("sqs.SendMessage") + r("sqs.SendMessageBatch");
    let api = r("apigateway.request");
    let parts = json!({
        "state_transitions": transitions * price("state_transition"),
        "lambda": invocations * price("lambda_request") + billed_ms / 1000.0 * 0.125 * price("lambda_gb_second"),
        "dynamodb": ddb_writes * price("dynamodb_write") + ddb_reads * price("dynamodb_read"),
        "sqs": sqs * price("sqs_request"),
        "apigateway": api * price("apigateway_request"),
    });
    let total: f64 = parts
        .as_object()
        .map_or(0.0, |o| o.values().filter_map(Value::as_f64).sum());
    json!({"parts": parts, "total": total})
}
