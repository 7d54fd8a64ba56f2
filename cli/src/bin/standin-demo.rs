//! The demo's orchestrator: starts one stand-in per watch mode, answers the agent's
//! question as a parent would, and shows each note as it reaches the parent queue with how
//! long it took since the agent made the change. Writes a JSON summary for machines.

use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde_json::{Value, json};
use standin_cli::events::short_state;
use standin_cli::target::DEFAULT_ENDPOINT;
use standin_cli::{CliError, ControlClient, Heard, NoteStream, StackInfo, Target};

#[derive(Parser)]
#[command(about = "Runs the stand-in demo against a deployed stack and the demo agents")]
struct Args {
    #[arg(long, env = "STANDIN_STACK", default_value = "standin")]
    stack: String,
    #[arg(long, env = "STANDIN_ENDPOINT", default_value = DEFAULT_ENDPOINT)]
    endpoint: String,
    /// Scenarios as WATCH=AGENT_ID=AGENT_URL (the watch the stand-in is expected to pick).
    #[arg(long = "scenario", required = true)]
    scenarios: Vec<String>,
    /// The parent's answer to the agent's question.
    #[arg(long, default_value = "Markdown")]
    answer: String,
    /// Give up on a scenario after this long.
    #[arg(long, default_value_t = 180)]
    timeout_secs: u64,
    /// Write the JSON summary here.
    #[arg(long)]
    summary: Option<std::path::PathBuf>,
    /// Save what each sub-task produced under this directory (DIR/TASK_ID/...).
    #[arg(long, default_value = "standin-artifacts")]
    artifacts: std::path::PathBuf,
}

const BRIEF: &str = "Write a short report on how A2A agents report progress.";

struct Scenario {
    watch: String,
    agent: String,
    agent_url: String,
}

fn parse_scenario(raw: &str) -> Result<Scenario, String> {
    let mut parts = raw.splitn(3, '=');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(watch), Some(agent), Some(url)) if !watch.is_empty() && !agent.is_empty() => {
            Ok(Scenario {
                watch: watch.to_owned(),
                agent: agent.to_owned(),
                agent_url: url.trim_end_matches('/').to_owned(),
            })
        }
        _ => Err(format!(
            "--scenario {raw:?}: expected WATCH=AGENT_ID=AGENT_URL, e.g. push=demo=http://127.0.0.1:27201"
        )),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let scenarios = match args
        .scenarios
        .iter()
        .map(|s| parse_scenario(s))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(s) => s,
        Err(err) => {
            eprintln!("standin-demo: {err}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let mut results = Vec::new();
    let mut ok = true;
    let mut error = None;
    match setup(&args).await {
        Ok((target, config, stack, control)) => {
            let mut notes = NoteStream::new(&target, &config, &stack.queue_url);
            let http = reqwest::Client::new();
            for scenario in &scenarios {
                let result = run_scenario(&args, scenario, &control, &mut notes, &http).await;
                ok &= result["ok"].as_bool() == Some(true);
                results.push(result);
            }
        }
        Err(err) => {
            ok = false;
            error = Some(err.to_string());
            eprintln!("standin-demo: {err}");
        }
    }
    let summary = json!({
        "ok": ok,
        "error": error,
        "stack": args.stack,
        "elapsed_ms": started.elapsed().as_millis() as u64,
        "scenarios": results,
    });
    print_summary(&summary);
    if let Some(path) = &args.summary
        && let Err(err) = std::fs::write(path, format!("{summary:#}\n"))
    {
        eprintln!("standin-demo: cannot write {}: {err}", path.display());
        return ExitCode::FAILURE;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn setup(
    args: &Args,
) -> Result<(Target, aws_config::SdkConfig, StackInfo, ControlClient), CliError> {
    let target = Target::LocalStack {
        endpoint: args.endpoint.trim_end_matches('/').to_owned(),
    };
    let config = target.sdk_config().await;
    let stack = StackInfo::load(&target, &config, &args.stack).await?;
    let control = ControlClient::new(&target, &config, &stack.control_url).await?;
    Ok((target, config, stack, control))
}

/// One stand-in from start to its final note.
async fn run_scenario(
    args: &Args,
    scenario: &Scenario,
    control: &ControlClient,
    notes: &mut NoteStream,
    http: &reqwest::Client,
) -> Value {
    println!();
    println!(
        "── {} watch: agent {:?} at {} ──",
        scenario.watch, scenario.agent, scenario.agent_url
    );
    let started = Instant::now();
    let mut report =
        json!({"watch_expected": scenario.watch, "agent": scenario.agent, "ok": false});
    let task_id = match control
        .start(&scenario.agent, BRIEF, Vec::new(), None, None, None)
        .await
    {
        Ok(started) => started.task_id.to_string(),
        Err(err) => {
            println!("  start failed: {err}");
            report["error"] = json!(err.to_string());
            return report;
        }
    };
    report["task_id"] = json!(task_id);
    println!("  orchestrator  started stand-in {task_id}: {BRIEF:?}");
    let mut seen = Vec::new();
    let mut used_changes = Vec::new();
    let mut replied = false;
    let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
    let final_note = loop {
        if Instant::now() > deadline {
            report["error"] = json!(format!("no final note within {} s", args.timeout_secs));
            break None;
        }
        let note = match notes.next(2).await {
            Ok(Some(Heard::Note(note))) => *note,
            // Not a note: nothing this run waits for.
            Ok(Some(Heard::Other(_)) | None) => continue,
            Err(err) => {
                report["error"] = json!(err.to_string());
                break None;
            }
        };
        let received_ms = now_ms();
        if note.task_id != task_id {
            continue; // another stand-in's note (an earlier run's, say)
        }
        let state = note.state.as_str().to_owned();
        let text = note.text.clone();
        let remote = note.remote_task_id.clone().unwrap_or_default();
        let latency = latency_ms(
            http,
            scenario,
            &remote,
            &state,
            &text,
            received_ms,
            &mut used_changes,
        )
        .await;
        let short = short_state(&state);
        let took = latency.map_or_else(
            || "agent time unknown".into(),
            |ms| format!("{ms} ms after the agent's change"),
        );
        println!(
            "  parent note   [{:>5.1} s] seq {} {short:<14} {text:?}  ({took})",
            started.elapsed().as_secs_f64(),
            note.seq
        );
        seen.push(json!({
            "seq": note.seq, "state": state, "text": text, "final": note.is_final,
            "latency_ms": latency,
        }));
        if note.is_final {
            break Some(note);
        }
        if state == "TASK_STATE_INPUT_REQUIRED" && !replied {
            println!("  orchestrator  replies {:?}", args.answer);
            if let Err(err) = control.reply(&task_id, &args.answer, Vec::new()).await {
                report["error"] = json!(err.to_string());
                break None;
            }
            replied = true;
        }
    };
    let status = control.status(&task_id).await.ok().map(|s| s.summary);
    let watch = status
        .as_ref()
        .and_then(|s| s.watch)
        .and_then(|w| serde_json::to_value(w).ok())
        .and_then(|w| w.as_str().map(str::to_owned))
        .unwrap_or_default();
    let latencies: Vec<u64> = seen
        .iter()
        .filter_map(|n| n["latency_ms"].as_u64())
        .collect();
    let final_state = final_note
        .as_ref()
        .map(|n| n.state.as_str())
        .unwrap_or_default()
        .to_owned();
    println!(
        "  stand-in      {task_id}: watch {watch}, {} notes, final {final_state}",
        seen.len()
    );
    let saved = match &final_note {
        Some(note) => deliverable(note, control, &task_id, &args.artifacts).await,
        None => Vec::new(),
    };
    report["artifacts"] = json!(saved);
    report["ok"] =
        json!(final_note.is_some() && watch == scenario.watch && replied && !saved.is_empty());
    if final_note.is_some() && watch != scenario.watch {
        report["error"] = json!(format!("watched by {watch}, expected {}", scenario.watch));
    }
    report["watch"] = json!(watch);
    report["remote_task_id"] = json!(status.and_then(|s| s.remote_task_id));
    report["replied"] = json!(replied);
    report["final_state"] = json!(final_state);
    report["notes"] = Value::Array(seen);
    report["latency_ms"] = json!({
        "median": median(&latencies),
        "max": latencies.iter().max(),
    });
    report["elapsed_ms"] = json!(started.elapsed().as_millis() as u64);
    report
}

/// What the sub-task produced, as the parent gets it: the report printed from the final
/// note, and every part saved through the control API (its SHA-256 checked). The files
/// saved.
async fn deliverable(
    note: &standin_wire::ParentNote,
    control: &ControlClient,
    task_id: &str,
    out: &std::path::Path,
) -> Vec<String> {
    for artifact in &note.artifacts {
        let name = artifact.name.as_deref().unwrap_or(&artifact.artifact_id);
        println!("  parent gets   {name}:");
        for part in &artifact.parts {
            for line in part.text.as_deref().unwrap_or_default().lines() {
                println!("                | {line}");
            }
        }
    }
    match standin_cli::artifacts::save(control, task_id, &out.join(task_id)).await {
        Ok(paths) => {
            for path in &paths {
                println!("  parent saved  {}", path.display());
            }
            paths.iter().map(|p| p.display().to_string()).collect()
        }
        Err(err) => {
            println!("  artifacts not saved: {err}");
            Vec::new()
        }
    }
}

/// How long after the agent's matching change the parent got the note: the agent lists
/// its changes with their times (`GET /changes`); each change is matched once.
async fn latency_ms(
    http: &reqwest::Client,
    scenario: &Scenario,
    remote: &str,
    state: &str,
    text: &str,
    received_ms: u64,
    used: &mut Vec<u64>,
) -> Option<u64> {
    let changes: Vec<Value> = http
        .get(format!("{}/changes", scenario.agent_url))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    // Matched by its place in the agent's list, which only grows: two changes made in
    // the same millisecond (a question right after a progress message) are two.
    let (index, at) = changes
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c["task"] == remote && c["state"] == state && (text.is_empty() || c["text"] == text)
        })
        .filter_map(|(i, c)| Some((i as u64, c["at_ms"].as_u64()?)))
        .rfind(|(i, at)| *at <= received_ms && !used.contains(i))?;
    used.push(index);
    Some(received_ms - at)
}

fn median(values: &[u64]) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

fn print_summary(summary: &Value) {
    println!();
    println!("── summary ──");
    for s in summary["scenarios"].as_array().into_iter().flatten() {
        println!(
            "  {:<7} {:<4} {} notes, final {}, latency median {} ms, max {} ms, {:.1} s in all{}",
            s["watch"].as_str().unwrap_or("?"),
            if s["ok"].as_bool() == Some(true) {
                "ok"
            } else {
                "FAIL"
            },
            s["notes"].as_array().map_or(0, Vec::len),
            s["final_state"].as_str().unwrap_or("-"),
            s["latency_ms"]["median"],
            s["latency_ms"]["max"],
            s["elapsed_ms"].as_f64().unwrap_or(0.0) / 1000.0,
            s["error"]
                .as_str()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default(),
        );
    }
    println!(
        "  {} in {:.1} s",
        if summary["ok"].as_bool() == Some(true) {
            "demo passed"
        } else {
            "demo FAILED"
        },
        summary["elapsed_ms"].as_f64().unwrap_or(0.0) / 1000.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_are_watch_agent_and_url() {
        let s = parse_scenario("push=demo=http://127.0.0.1:27201/").unwrap();
        assert_eq!(
            (s.watch.as_str(), s.agent.as_str(), s.agent_url.as_str()),
            ("push", "demo", "http://127.0.0.1:27201")
        );
        for bad in ["push", "push=demo", "=demo=http://x", "push==http://x"] {
            let err = parse_scenario(bad).err().unwrap();
            assert!(err.contains("WATCH=AGENT_ID=AGENT_URL"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_median_of_latencies() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7]), Some(7));
        assert_eq!(median(&[300, 90, 450]), Some(300));
    }
}
