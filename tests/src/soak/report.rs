//! The soak's report: load, latency per watch, faults and what they led to, memory, and
//! the oracle's findings; as JSON, a picture (SVG) and a short text summary.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::observe::{Executions, Window};
use super::oracle::{Received, Verdict};
use super::plan::{Delivery, Plan, Watch};
use super::usage::{Component, Usage};
use super::{Options, Run};

pub struct Judged {
    pub plan: Plan,
    pub run: Run,
    pub verdict: Verdict,
    pub received: Vec<Received>,
}

pub struct Inputs {
    pub options: Options,
    pub began_ms: u64,
    pub driven_ms: u64,
    pub judged: Vec<Judged>,
    pub windows: Vec<Window>,
    pub proxy: Value,
    pub kills: u64,
    pub usage: Usage,
    pub executions: HashMap<String, Executions>,
    pub dead_letters: HashMap<String, i64>,
    pub leaks: Vec<String>,
    /// (watch, ms) from the functions' own metric lines, or why they could not be read.
    pub heard_by_stand_in: Result<Vec<(String, u64)>, String>,
    /// Each function's AWS calls by call, or why the logs could not be read.
    pub aws_calls_by_function: Result<BTreeMap<String, BTreeMap<String, u64>>, String>,
    /// Each violated stand-in's story (the first `STORIES` of them): its conversation in
    /// time and the functions' warnings and errors naming it.
    pub stories: serde_json::Map<String, Value>,
}

/// Violated stand-ins whose warnings the report keeps, at most.
pub const STORIES: usize = 20;

pub struct Report {
    pub json: Value,
    pub svg: String,
    pub violations: Vec<String>,
}

/// The `q`th quantile (0..=1) of sorted values, by nearest rank.
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn spread(mut values: Vec<u64>) -> Value {
    values.sort_unstable();
    json!({
        "count": values.len(),
        "p50": quantile(&values, 0.5),
        "p95": quantile(&values, 0.95),
        "p99": quantile(&values, 0.99),
        "max": values.last().copied().unwrap_or(0),
    })
}

fn per_minute(times: &[u64], from: u64) -> Vec<u64> {
    let mut buckets: Vec<u64> = Vec::new();
    for t in times {
        let minute = (t.saturating_sub(from) / 60_000) as usize;
        if buckets.len() <= minute {
            buckets.resize(minute + 1, 0);
        }
        buckets[minute] += 1;
    }
    buckets
}

impl Report {
    pub fn build(input: Inputs) -> Self {
        let began = input.began_ms;
        let mut violations = Vec::new();
        let mut latency: BTreeMap<Watch, Vec<u64>> = BTreeMap::new();
        let mut calm: BTreeMap<Watch, Vec<u64>> = BTreeMap::new();
        let mut outbox: Vec<u64> = Vec::new();
        // The outbox's time split where the queue took the note: before it the system's
        // (a step's send at once, or the stream and notify), after it the parent's reading.
        let (mut to_queue, mut to_parent): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
        let mut points: Vec<(u64, u64, Watch)> = Vec::new();
        let (mut notes, mut duplicates, mut coalesced, mut control_retries) = (0, 0, 0, 0);
        let mut deliveries: BTreeMap<Delivery, u64> = BTreeMap::new();
        let mut endings: BTreeMap<&str, u64> = BTreeMap::new();
        let mut personas: BTreeMap<&str, u64> = BTreeMap::new();
        let mut habit_acts: BTreeMap<&str, u64> = BTreeMap::new();
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        let mut intervals = Vec::new();
        for j in &input.judged {
            let watch = j.plan.persona.watch;
            for v in &j.verdict.violations {
                violations.push(format!("{} ({}): {v}", j.plan.id, j.plan.persona.name));
            }
            for (at, ms) in &j.verdict.heard_ms {
                latency.entry(watch).or_default().push(*ms);
                if !in_a_window(*at, *ms, &input.windows) {
                    calm.entry(watch).or_default().push(*ms);
                }
                points.push((at.saturating_sub(began), *ms, watch));
            }
            outbox.extend(
                j.received
                    .iter()
                    .filter_map(|n| Some(n.received_ms.saturating_sub(n.written_ms?))),
            );
            for n in &j.received {
                if let (Some(written), Some(queued)) = (n.written_ms, n.queued_ms) {
                    to_queue.push(queued.saturating_sub(written));
                    to_parent.push(n.received_ms.saturating_sub(queued));
                }
            }
            notes += j.received.len() - j.verdict.duplicates;
            duplicates += j.verdict.duplicates;
            coalesced += j.verdict.coalesced;
            control_retries += j.run.control_retries;
            for d in &j.run.deliveries {
                *deliveries.entry(*d).or_default() += 1;
            }
            *endings.entry(j.plan.ending.name()).or_default() += 1;
            *personas.entry(j.plan.persona.name).or_default() += 1;
            *habit_acts.entry(j.plan.persona.name).or_default() += j.run.habit_acts;
            starts.push(j.run.started_ms);
            if let Some(end) = j
                .received
                .iter()
                .filter(|n| n.is_final)
                .map(|n| n.received_ms)
                .min()
            {
                ends.push(end);
                intervals.push((j.run.started_ms, end));
            }
        }
        for (queue, count) in &input.dead_letters {
            if *count < -1 || (*count == -1 && queue != "InvokeFailures") {
                violations.push(format!("the {queue} queue could not be read"));
            } else if queue != "InvokeFailures" && *count != 0 {
                violations.push(format!("{count} new message(s) in {queue}"));
            }
        }
        violations.extend(input.leaks.iter().cloned());
        let mut peak_concurrent = 0;
        for (s, _) in &intervals {
            peak_concurrent =
                peak_concurrent.max(intervals.iter().filter(|(a, b)| a <= s && s < b).count());
        }
        let last_end = ends
            .iter()
            .copied()
            .max()
            .unwrap_or(input.driven_ms)
            .max(input.driven_ms);
        let seconds = (last_end.saturating_sub(began) as f64 / 1000.0).max(1.0);
        let transitions: Vec<u64> = input.executions.values().map(|e| e.transitions).collect();
        let total_transitions: u64 = transitions.iter().sum();
        let step_retries: u64 = input.executions.values().map(|e| e.step_retries).sum();
        let succeeded = input
            .executions
            .values()
            .filter(|e| !e.statuses.is_empty() && e.problems.is_empty())
            .count();
        let windows: Vec<Value> = input
            .windows
            .iter()
            .map(|w| json!({"from_s": w.from_ms.saturating_sub(began) / 1000, "to_s": w.to_ms.saturating_sub(began) / 1000, "rules": w.rules}))
            .collect();
        let json = json!({
            "passed": violations.is_empty(),
            "violations_total": violations.len(),
            "violations": violations.iter().take(200).collect::<Vec<_>>(),
            "violated_stand_ins": input.stories,
            "run": {
                "stack": input.options.stack,
                "seed": input.options.seed,
                "standins": input.judged.len(),
                "standins_asked": input.options.standins,
                "only": input.options.only,
                "concurrency": input.options.concurrency,
                "gap_ms": [input.options.gap.0.as_millis() as u64, input.options.gap.1.as_millis() as u64],
                "starts_per_sec": input.options.starts_per_sec,
                "stack_params": input.options.stack_params,
                "profile": input.options.profile.as_ref().map(|p| p.display().to_string()),
                "seconds": seconds.round(),
            },
            "load": {
                "started_per_minute": per_minute(&starts, began),
                "ended_per_minute": per_minute(&ends, began),
                "peak_concurrent": peak_concurrent,
                "notes": notes,
                "notes_per_second": (notes as f64 / seconds * 100.0).round() / 100.0,
                "duplicate_notes_received": duplicates,
                "coalesced_changes": coalesced,
            },
            "heard_latency_ms": latency.iter().map(|(w, v)| (w.name().to_owned(), spread(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "heard_latency_outside_fault_windows_ms": calm.iter().map(|(w, v)| (w.name().to_owned(), spread(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "heard_by_the_stand_in_ms": heard_by_stand_in(&input.heard_by_stand_in),
            "outbox_latency_ms": spread(outbox),
            "outbox_split_ms": {
                "written_to_queued": spread(to_queue),
                "queued_to_read_by_the_parent": spread(to_parent),
            },
            "faults": {
                "fault_windows": windows,
                "aws_calls_forwarded": input.proxy["forwarded"],
                "aws_calls_by_target": input.proxy["by_target"],
                "aws_calls_by_function": match &input.aws_calls_by_function {
                    Ok(calls) => json!(calls),
                    Err(unread) => json!({"unread": unread}),
                },
                "aws_faults": input.proxy["faults"],
                "agent_deliveries": deliveries.iter().map(|(d, n)| (d.name().to_owned(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "endings": endings,
                "personas": personas,
                "habit_acts": habit_acts,
                "follow_processes_killed": input.kills,
            },
            "outcomes": {
                "stand_ins_ended_truthfully": input.judged.iter().filter(|j| j.verdict.violations.is_empty()).count(),
                "executions_succeeded": succeeded,
                "step_retries": step_retries,
                "control_api_retries": control_retries,
                "queues": input.dead_letters,
                "token_leaks": input.leaks,
            },
            "state_transitions": {
                "per_stand_in": spread(transitions),
                "per_note": if notes == 0 { 0.0 } else { (total_transitions as f64 / notes as f64 * 10.0).round() / 10.0 },
            },
            "memory_peak_mib": {
                "localstack": input.usage.localstack_peak_mib.round(),
                "functions_total": input.usage.functions_peak_mib.round(),
                "one_function_process": input.usage.function_process_peak_mib.round(),
                "function_processes": input.usage.function_processes_peak,
            },
            "cpu_seconds": cpu_seconds(&input.usage),
            "machine": {
                "cores": input.usage.cores,
                "busy_seconds": input.usage.machine_busy_seconds.round(),
                "busy_share": (input.usage.machine_busy_share() * 100.0).round() / 100.0,
                "wall_seconds": input.usage.wall_seconds.round(),
            },
        });
        let svg = picture(&points, &input.windows, began, seconds);
        Self {
            json,
            svg,
            violations,
        }
    }

    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// A few lines for the terminal.
    pub fn summary(&self) -> String {
        let j = &self.json;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "soak: {} stand-ins of {} asked (peak {} at once) in {} s, {} notes ({}/s), {} coalesced, {} duplicates received",
            j["run"]["standins"],
            j["run"]["standins_asked"],
            j["load"]["peak_concurrent"],
            j["run"]["seconds"],
            j["load"]["notes"],
            j["load"]["notes_per_second"],
            j["load"]["coalesced_changes"],
            j["load"]["duplicate_notes_received"]
        );
        for (watch, s) in j["heard_latency_ms"].as_object().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  heard latency {watch:>6}: p50 {} ms, p95 {} ms, p99 {} ms, max {} ms ({} notes)",
                s["p50"], s["p95"], s["p99"], s["max"], s["count"]
            );
        }
        for (watch, s) in j["heard_by_the_stand_in_ms"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, s)| s.is_object())
        {
            let _ = writeln!(
                out,
                "  heard by the stand-in {watch:>6}: p50 {} ms, p95 {} ms, max {} ms ({} changes)",
                s["p50"], s["p95"], s["max"], s["count"]
            );
        }
        let o = &j["outbox_latency_ms"];
        let _ = writeln!(
            out,
            "  of which the outbox (note written to the parent's queue): p50 {} ms, p95 {} ms, max {} ms",
            o["p50"], o["p95"], o["max"]
        );
        let (q, r) = (
            &j["outbox_split_ms"]["written_to_queued"],
            &j["outbox_split_ms"]["queued_to_read_by_the_parent"],
        );
        let _ = writeln!(
            out,
            "    written to queued p50 {} ms, p95 {} ms; queued to read by the parent p50 {} ms, p95 {} ms",
            q["p50"], q["p95"], r["p50"], r["p95"]
        );
        let _ = writeln!(
            out,
            "  faults: AWS {} of {} forwarded calls; agent deliveries {}; follow processes killed {}",
            j["faults"]["aws_faults"],
            j["faults"]["aws_calls_forwarded"],
            j["faults"]["agent_deliveries"],
            j["faults"]["follow_processes_killed"]
        );
        let _ = writeln!(
            out,
            "  outcomes: {} of {} ended truthfully, {} executions succeeded, {} step retries, {} control API retries, queues {}",
            j["outcomes"]["stand_ins_ended_truthfully"],
            j["run"]["standins"],
            j["outcomes"]["executions_succeeded"],
            j["outcomes"]["step_retries"],
            j["outcomes"]["control_api_retries"],
            j["outcomes"]["queues"]
        );
        for (watch, s) in j["heard_latency_outside_fault_windows_ms"]
            .as_object()
            .into_iter()
            .flatten()
        {
            let _ = writeln!(
                out,
                "  outside fault windows {watch:>6}: p50 {} ms, p95 {} ms, max {} ms ({} notes)",
                s["p50"], s["p95"], s["max"], s["count"]
            );
        }
        let _ = writeln!(
            out,
            "  transitions per stand-in {}, memory peak {}",
            j["state_transitions"]["per_stand_in"], j["memory_peak_mib"]
        );
        let _ = writeln!(
            out,
            "  CPU-seconds {}; the machine's {} cores {}% busy",
            j["cpu_seconds"],
            j["machine"]["cores"],
            (j["machine"]["busy_share"].as_f64().unwrap_or(0.0) * 100.0).round()
        );
        if self.passed() {
            let _ = writeln!(out, "oracle: PASSED");
        } else {
            let _ = writeln!(
                out,
                "oracle: FAILED, {} violation(s):",
                self.violations.len()
            );
            for v in self.violations.iter().take(30) {
                let _ = writeln!(out, "  - {v}");
            }
        }
        out
    }
}

/// Whether a change made at `at_ms` and heard `heard_ms` later met a fault window on its
/// way: its latency then measures the faults, not the path.
fn in_a_window(at_ms: u64, heard_ms: u64, windows: &[Window]) -> bool {
    let heard_at = at_ms + heard_ms;
    windows
        .iter()
        .any(|w| at_ms < w.to_ms && w.from_ms < heard_at)
}

fn heard_by_stand_in(heard: &Result<Vec<(String, u64)>, String>) -> Value {
    match heard {
        Err(e) => json!({"unread": e}),
        Ok(heard) => {
            let mut by_watch: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
            for (watch, ms) in heard {
                by_watch.entry(watch.as_str()).or_default().push(*ms);
            }
            by_watch
                .into_iter()
                .map(|(w, v)| (w.to_owned(), spread(v)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        }
    }
}

fn cpu_seconds(usage: &Usage) -> Value {
    Component::ALL
        .iter()
        .map(|c| {
            let seconds = usage.cpu_seconds.get(c).copied().unwrap_or(0.0);
            (c.name().to_owned(), json!((seconds * 10.0).round() / 10.0))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Heard latency over the run (one dot per note, by watch), fault windows shaded.
fn picture(points: &[(u64, u64, Watch)], windows: &[Window], began: u64, seconds: f64) -> String {
    let (w, h, left, right, top, bottom) = (900.0, 420.0, 70.0, 20.0, 40.0, 50.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let mut sorted: Vec<u64> = points.iter().map(|p| p.1).collect();
    sorted.sort_unstable();
    let ceiling = (quantile(&sorted, 0.99) as f64 * 1.2).max(1000.0);
    let step = [
        250.0, 500.0, 1000.0, 2000.0, 5000.0, 10_000.0, 20_000.0, 60_000.0,
    ]
    .into_iter()
    .find(|s| ceiling / s <= 6.0)
    .unwrap_or(120_000.0);
    let ymax = (ceiling / step).ceil() * step;
    let x = |s: f64| left + pw * (s / seconds).min(1.0);
    let y = |ms: f64| top + ph * (1.0 - (ms / ymax).min(1.0));
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{left}" y="22" font-size="14">Heard latency during the soak (agent's change to the parent's queue), fault windows shaded</text>"##
    );
    for win in windows {
        let (a, b) = (
            win.from_ms.saturating_sub(began) as f64 / 1000.0,
            win.to_ms.saturating_sub(began) as f64 / 1000.0,
        );
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{top}" width="{:.1}" height="{ph}" fill="#f4c7c3" opacity="0.6"/><text x="{:.1}" y="{:.1}" fill="#a33">faults</text>"##,
            x(a),
            (x(b) - x(a)).max(1.0),
            x(a) + 4.0,
            top + 14.0
        );
    }
    let mut tick = 0.0;
    while tick <= ymax {
        let _ = write!(
            svg,
            r##"<line x1="{left}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left + pw,
            y(tick),
            y(tick),
            left - 6.0,
            y(tick) + 4.0,
            if step >= 1000.0 {
                format!("{} s", tick / 1000.0)
            } else {
                format!("{tick} ms")
            }
        );
        tick += step;
    }
    let xstep = if seconds > 600.0 {
        120.0
    } else if seconds > 240.0 {
        60.0
    } else {
        30.0
    };
    let mut t = 0.0;
    while t <= seconds {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t}</text>"##,
            x(t),
            top + ph + 18.0
        );
        t += xstep;
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds since the soak began</text><rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##,
        left + pw / 2.0,
        h - 10.0
    );
    let colour = |watch: Watch| match watch {
        Watch::Push => "#1f77b4",
        Watch::Follow => "#2ca02c",
        Watch::Off => "#ff7f0e",
    };
    for (at, ms, watch) in points {
        let _ = write!(
            svg,
            r##"<circle cx="{:.1}" cy="{:.1}" r="2" fill="{}" opacity="0.55"/>"##,
            x(*at as f64 / 1000.0),
            y(*ms as f64),
            colour(*watch)
        );
    }
    for (i, watch) in [Watch::Push, Watch::Follow, Watch::Off]
        .into_iter()
        .enumerate()
    {
        let lx = left + pw - 220.0 + i as f64 * 75.0;
        let _ = write!(
            svg,
            r##"<circle cx="{lx}" cy="{:.1}" r="5" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            top - 8.0,
            colour(watch),
            lx + 8.0,
            top - 4.0,
            watch.name()
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(
            (quantile(&v, 0.5), quantile(&v, 0.95), quantile(&v, 0.99)),
            (50, 95, 99)
        );
        assert_eq!(quantile(&[], 0.5), 0);
        assert_eq!(quantile(&[7], 0.99), 7);
    }

    #[test]
    fn per_minute_buckets_from_the_start() {
        assert_eq!(
            per_minute(&[1_000, 59_000, 61_000, 185_000], 0),
            vec![2, 1, 0, 1]
        );
    }

    #[test]
    fn the_picture_marks_fault_windows_and_every_note() {
        let windows = vec![Window {
            from_ms: 10_000,
            to_ms: 40_000,
            rules: json!([]),
        }];
        let svg = picture(
            &[(5_000, 300, Watch::Push), (20_000, 900, Watch::Follow)],
            &windows,
            0,
            60.0,
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches(">faults<").count(), 1);
        assert_eq!(svg.matches("r=\"2\"").count(), 2);
    }

    #[test]
    fn a_change_whose_way_meets_a_fault_window_is_not_counted_as_clear() {
        let windows = vec![Window {
            from_ms: 10_000,
            to_ms: 20_000,
            rules: json!([]),
        }];
        // Made and heard before the window, across its start, inside, across its end,
        // and after it.
        let ways = [
            (1_000, 2_000),
            (9_000, 2_000),
            (12_000, 1_000),
            (19_000, 5_000),
            (20_000, 1),
        ];
        let met: Vec<bool> = ways
            .iter()
            .map(|(at, ms)| in_a_window(*at, *ms, &windows))
            .collect();
        assert_eq!(met, vec![false, true, true, true, false]);
    }

    #[test]
    fn the_stand_ins_own_measures_are_spread_by_watch_or_say_why_they_are_missing() {
        let heard = Ok(vec![
            ("push".to_owned(), 100),
            ("follow".to_owned(), 40),
            ("push".to_owned(), 300),
        ]);
        let by_watch = heard_by_stand_in(&heard);
        assert_eq!(by_watch["push"]["count"], 2);
        assert_eq!(by_watch["push"]["max"], 300);
        assert_eq!(by_watch["follow"]["p50"], 40);
        let unread = heard_by_stand_in(&Err("the logs could not be listed".to_owned()));
        assert_eq!(unread["unread"], "the logs could not be listed");
    }

    #[test]
    fn cpu_seconds_name_every_component_to_a_tenth() {
        let usage = Usage {
            cpu_seconds: [(Component::LocalStack, 12.345)].into_iter().collect(),
            ..Usage::default()
        };
        let cpu = cpu_seconds(&usage);
        assert_eq!(cpu["localstack"], 12.3);
        for component in Component::ALL {
            assert!(cpu.get(component.name()).is_some(), "{cpu}");
        }
    }
}
