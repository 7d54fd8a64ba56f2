//! What the soak watches besides the conversations: the fault proxy, the dead-letter
//! queues, the executions, the follow processes it kills, and every place a push token
//! could leak to (what the processes use: [`super::usage`]). The observers talk to
//! LocalStack directly, never through the proxy.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::stack::{Stack, now_ms};

fn proxy() -> Option<String> {
    std::env::var("STANDIN_FAULT_PROXY")
        .ok()
        .filter(|p| !p.is_empty())
}

/// A fault window of the profile, in wall-clock milliseconds.
#[derive(Clone, Debug)]
pub struct Window {
    pub from_ms: u64,
    pub to_ms: u64,
    pub rules: Value,
}

/// Loads a fault profile into the proxy (its clock starts now); its windows.
pub async fn load_profile(path: &Path) -> Result<Vec<Window>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("fault profile {}: {e}", path.display()))?;
    let profile: Value = serde_json::from_str(&text)
        .map_err(|e| format!("fault profile {}: not JSON: {e}", path.display()))?;
    let proxy =
        proxy().ok_or("a fault profile needs the fault proxy: STANDIN_FAULT_PROXY is not set")?;
    let now = now_ms();
    let answer = reqwest::Client::new()
        .post(format!("{proxy}/__faults/profile"))
        .json(&profile)
        .send()
        .await
        .map_err(|e| format!("the fault proxy at {proxy}: {e}"))?;
    if !answer.status().is_success() {
        let status = answer.status();
        let body = answer.text().await.unwrap_or_default();
        return Err(format!(
            "the fault proxy refused the profile {}: {status} {body}",
            path.display()
        ));
    }
    Ok(profile["windows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            let start = (w["start"].as_f64().unwrap_or(0.0) * 1000.0) as u64;
            let seconds = (w["seconds"].as_f64().unwrap_or(60.0) * 1000.0) as u64;
            Window {
                from_ms: now + start,
                to_ms: now + start + seconds,
                rules: w["rules"].clone(),
            }
        })
        .collect())
}

/// Removes every fault rule (the soak's windows must not outlive it).
pub async fn clear_faults() {
    if let Some(proxy) = proxy() {
        let _ = reqwest::Client::new()
            .delete(format!("{proxy}/__faults/rules"))
            .send()
            .await;
    }
}

pub async fn proxy_stats() -> Value {
    let Some(proxy) = proxy() else {
        return json!({});
    };
    match reqwest::Client::new()
        .get(format!("{proxy}/__faults/stats"))
        .send()
        .await
    {
        Ok(r) => r.json().await.unwrap_or(json!({})),
        Err(_) => json!({}),
    }
}

/// What the proxy did between two snapshots: calls forwarded, faults per kind.
pub fn proxy_delta(before: &Value, after: &Value) -> Value {
    let n = |v: &Value, path: &[&str]| path.iter().fold(v, |v, k| &v[k]).as_u64().unwrap_or(0);
    let mut kinds = serde_json::Map::new();
    for kind in ["error", "throttle", "delay", "drop", "lose_answer"] {
        let taken = n(after, &["by_action", kind]).saturating_sub(n(before, &["by_action", kind]));
        kinds.insert(kind.into(), json!(taken));
    }
    let mut targets: Vec<(String, u64)> = after["by_target"]
        .as_object()
        .map(|counts| {
            counts
                .keys()
                .map(|t| {
                    let taken =
                        n(after, &["by_target", t]).saturating_sub(n(before, &["by_target", t]));
                    (t.clone(), taken)
                })
                .filter(|(_, taken)| *taken > 0)
                .collect()
        })
        .unwrap_or_default();
    targets.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let by_target: serde_json::Map<String, Value> =
        targets.into_iter().map(|(t, c)| (t, json!(c))).collect();
    json!({
        "forwarded": n(after, &["forwarded"]).saturating_sub(n(before, &["forwarded"])),
        "faults": kinds,
        "by_target": by_target,
    })
}

/// Messages in the queues that must stay empty: the parent's DLQ and undelivered notes.
/// Invoke failures (a follow killed, a park lost) are expected and counted, not judged.
pub async fn dead_letters(stack: &Stack) -> HashMap<String, i64> {
    let sqs = aws_sdk_sqs::Client::new(&stack.config);
    let mut counts = HashMap::new();
    for key in [
        "ParentDeadLetterQueueUrl",
        "NotesUndeliveredQueueUrl",
        "InvokeFailuresQueueUrl",
    ] {
        let answer = sqs
            .get_queue_attributes()
            .queue_url(stack.out(key))
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
            .send()
            .await;
        let count = answer.ok().map_or(-1, |a| {
            let get = |name: aws_sdk_sqs::types::QueueAttributeName| {
                a.attributes()
                    .and_then(|m| m.get(&name))
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0)
            };
            get(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
                + get(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        });
        counts.insert(key.trim_end_matches("QueueUrl").to_owned(), count);
    }
    counts
}

pub fn delta(before: &HashMap<String, i64>, after: &HashMap<String, i64>) -> HashMap<String, i64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .collect()
}

pub static KILLS: AtomicU64 = AtomicU64::new(0);

/// Every `every`, kills one running follow process of the stack (they are LocalStack's
/// children, started for this run: ours to stop).
pub async fn kill_follows(stack: &str, every: Duration) {
    let follow = format!("AWS_LAMBDA_FUNCTION_NAME={stack}-FollowFunction-");
    loop {
        tokio::time::sleep(every).await;
        let victim = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .find_map(|entry| {
                let pid = entry.file_name().to_string_lossy().parse::<i32>().ok()?;
                let environ = std::fs::read(entry.path().join("environ")).ok()?;
                environ
                    .split(|b| *b == 0)
                    .any(|kv| kv.starts_with(follow.as_bytes()))
                    .then_some(pid)
            });
        if let Some(pid) = victim {
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if killed {
                KILLS.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// Each stand-in's executions (the first and any it rolled into).
#[derive(Clone, Debug, Default)]
pub struct Executions {
    pub statuses: Vec<String>,
    /// State entries over all its executions.
    pub transitions: u64,
    /// Lambda steps that failed or timed out and were retried by the state machine.
    pub step_retries: u64,
    pub problems: Vec<String>,
}

/// Waits (up to `patience`) for every stand-in's executions to end, then reads their
/// histories.
pub async fn executions(
    stack: &Stack,
    ids: &[String],
    patience: Duration,
) -> HashMap<String, Executions> {
    let sfn = aws_sdk_sfn::Client::new(&stack.config);
    let deadline = std::time::Instant::now() + patience;
    let wanted: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let owner = |name: &str| -> Option<String> {
        let id = name.split("__").next().unwrap_or(name);
        wanted.contains(id).then(|| id.to_owned())
    };
    let list = || async {
        let mut all: Vec<(String, String, String)> = Vec::new();
        let mut pages = sfn
            .list_executions()
            .state_machine_arn(stack.out("StateMachineArn"))
            .into_paginator()
            .items()
            .send();
        while let Some(item) = pages.next().await {
            let Ok(e) = item else { break };
            if let Some(id) = owner(e.name()) {
                all.push((
                    id,
                    e.execution_arn().to_owned(),
                    e.status().as_str().to_owned(),
                ));
            }
        }
        all
    };
    let mut listed = list().await;
    while listed.iter().any(|(_, _, s)| s == "RUNNING") && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2)).await;
        listed = list().await;
    }
    let mut out: HashMap<String, Executions> = HashMap::new();
    for (id, arn, status) in listed {
        let entry = out.entry(id).or_default();
        if status != "SUCCEEDED" {
            entry.problems.push(format!("execution {arn} is {status}"));
        }
        entry.statuses.push(status);
        let mut events = sfn
            .get_execution_history()
            .execution_arn(&arn)
            .into_paginator()
            .items()
            .send();
        while let Some(event) = events.next().await {
            let Ok(event) = event else { break };
            let kind = event.r#type().as_str();
            if kind.ends_with("StateEntered") {
                entry.transitions += 1;
            }
            if matches!(
                kind,
                "LambdaFunctionFailed" | "LambdaFunctionTimedOut" | "TaskFailed"
            ) {
                entry.step_retries += 1;
            }
        }
    }
    for id in ids {
        let entry = out.entry(id.clone()).or_default();
        if entry.statuses.is_empty() {
            entry.problems.push("no execution".into());
        }
    }
    out
}

/// The functions' log events (group, line) since the soak began, read once for every
/// check of them, or why they could not be read.
pub type Logs = Result<Vec<(String, String)>, String>;

pub async fn functions_logs(stack: &Stack, name: &str, since_ms: u64) -> Logs {
    stack
        .log_events(&format!("/aws/lambda/{name}-"), Some(since_ms), None, None)
        .await
}

/// Where any registered push token shows up in the clear: the tables, the soak's
/// execution histories (with their data), the functions' logs since `since_ms`, and the
/// notes the parent got. Each finding names the place.
pub async fn token_leaks(
    stack: &Stack,
    logs: &Logs,
    tokens: &[String],
    ids: &[String],
) -> Vec<String> {
    let wanted: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let reads = [
        ("the TableName", stack.table_text("TableName").await),
        (
            "the NotesTableName",
            stack.table_text("NotesTableName").await,
        ),
        (
            "execution histories",
            stack
                .history_text(|n| wanted.contains(n.split("__").next().unwrap_or_default()))
                .await,
        ),
        (
            "logs",
            logs.as_ref().map_err(Clone::clone).map(|events| {
                events
                    .iter()
                    .map(|(_, line)| line.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
        ),
    ];
    let mut places: Vec<(String, String)> = Vec::new();
    let mut unread: Vec<String> = Vec::new();
    for (place, read) in reads {
        match read {
            Ok(text) => places.push((place.to_owned(), text)),
            Err(e) => unread.push(e),
        }
    }
    places.push(("parent notes".into(), stack.all_note_bodies().join("\n")));
    let mut leaks = unread;
    for (place, text) in &places {
        let found = tokens
            .iter()
            .filter(|t| !t.is_empty() && text.contains(t.as_str()))
            .count();
        if found > 0 {
            leaks.push(format!("{found} push token(s) in {place}"));
        }
    }
    for (place, text) in &places {
        if text.is_empty() && place != "parent notes" {
            leaks.push(format!(
                "nothing to scan in {place}: the token scan read nothing there"
            ));
        }
    }
    leaks
}

/// How long after each agent change the stand-in itself heard it, from the functions'
/// `HeardLatency` metric lines (by watch, for the soak's stand-ins): recorded once the
/// change and its note are committed (and, for a follow, the park rung), so it is the
/// path up to the send. LocalStack hands a function's logs over when its invocation
/// ends: a follower still running when they are read is missing here.
pub fn heard_by_the_stand_in(logs: &Logs, ids: &[String]) -> Result<Vec<(String, u64)>, String> {
    let wanted: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let events = logs.as_ref().map_err(Clone::clone)?;
    Ok(events
        .iter()
        .filter(|(_, line)| line.contains("HeardLatency"))
        .filter_map(|(_, line)| serde_json::from_str::<Value>(line.trim()).ok())
        .filter(|l| l["task_id"].as_str().is_some_and(|id| wanted.contains(id)))
        .filter_map(|l| {
            let watch = l["Watch"].as_str()?.to_owned();
            let ms = l["HeardLatency"].as_f64()?;
            Some((watch, ms.max(0.0) as u64))
        })
        .collect())
}

/// Each function's AWS calls, by call, from the lines the stack's `RecordAwsCalls` has
/// every function write: where the calls LocalStack serves come from.
pub fn aws_calls_by_function(
    logs: &Logs,
    stack: &str,
) -> Result<BTreeMap<String, BTreeMap<String, u64>>, String> {
    let events = logs.as_ref().map_err(Clone::clone)?;
    let prefix = format!("/aws/lambda/{stack}-");
    let mut calls: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (group, line) in events {
        if !line.contains("\"aws_call\"") {
            continue;
        }
        let Some(call) = serde_json::from_str::<Value>(line.trim())
            .ok()
            .and_then(|l| l["aws_call"].as_str().map(str::to_owned))
        else {
            continue;
        };
        // "/aws/lambda/<stack>-TurnFunction-1a2b3c4d": "TurnFunction".
        let function = group.strip_prefix(&prefix).unwrap_or(group);
        let function = function.rsplit_once('-').map_or(function, |(name, _)| name);
        *calls
            .entry(function.to_owned())
            .or_default()
            .entry(call)
            .or_default() += 1;
    }
    Ok(calls)
}

/// Lines of a violated stand-in's story kept in the report, at most, each cut to this
/// many characters: enough to say where it stopped without copying the logs.
const STORY_LINES: usize = 30;
const STORY_LINE_CHARS: usize = 600;

/// The functions' warnings and errors naming each of `ids` (by `task_id`, or among a
/// follower's or a batch's `task_ids`), function by function: why a stand-in
/// the oracle faults went wrong, read before the stack is gone.
pub fn warnings_of(logs: &Logs, ids: &[String]) -> Result<HashMap<String, Vec<String>>, String> {
    let mut stories: HashMap<String, Vec<String>> = HashMap::new();
    let events = logs.as_ref().map_err(Clone::clone)?;
    for (group, line) in events {
        let Ok(fields) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if !matches!(fields["level"].as_str(), Some("WARN" | "ERROR")) {
            continue;
        }
        let named = |id: &str| {
            fields["task_id"].as_str() == Some(id)
                || fields["task_ids"]
                    .as_str()
                    .is_some_and(|all| all.split(',').any(|one| one == id))
        };
        let function = group.rsplit('/').next().unwrap_or(group);
        for id in ids.iter().filter(|id| named(id)) {
            let story = stories.entry(id.clone()).or_default();
            if story.len() < STORY_LINES {
                let line: String = line.trim().chars().take(STORY_LINE_CHARS).collect();
                story.push(format!("{function}: {line}"));
            }
        }
    }
    Ok(stories)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_function_s_calls_are_counted_by_call() {
        let line = |call: &str| format!("{{\"aws_call\":\"{call}\",\"level\":\"INFO\"}}");
        let logs: Logs = Ok(vec![
            (
                "/aws/lambda/s-TurnFunction-1a2b".into(),
                line("dynamodb:GetItem"),
            ),
            (
                "/aws/lambda/s-TurnFunction-3c4d".into(),
                line("dynamodb:GetItem"),
            ),
            (
                "/aws/lambda/s-TurnFunction-1a2b".into(),
                line("sqs:SendMessage"),
            ),
            (
                "/aws/lambda/s-NotifyFunction-9f".into(),
                line("dynamodb:UpdateItem"),
            ),
            (
                "/aws/lambda/s-NotifyFunction-9f".into(),
                "REPORT RequestId: x".into(),
            ),
        ]);
        let calls = aws_calls_by_function(&logs, "s").unwrap();
        assert_eq!(calls["TurnFunction"]["dynamodb:GetItem"], 2);
        assert_eq!(calls["TurnFunction"]["sqs:SendMessage"], 1);
        assert_eq!(calls["NotifyFunction"].len(), 1);
        assert!(aws_calls_by_function(&Err("unread".into()), "s").is_err());
    }
}
