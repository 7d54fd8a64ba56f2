//! The contract between the state machine (`statemachine/stand_in.asl.json`), the template
//! and the Rust both of them drive. The steps decide, the ASL only routes, so every string
//! the ASL routes on must be one `Next` writes, every literal it writes must decode into
//! the type that reads it, every path it reads must be in what the steps return, and
//! every timing must agree with the constant in Rust. Change any one of them alone and a
//! test here fails.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeSet;

use serde_json::{Value, json};
use standin::doorbell::EndCause;
use standin::lambda::{
    DEFAULT_FOLLOW_HEARTBEAT_SECS, DEFAULT_HISTORY_BOUND, DEFAULT_TURN_WINDOW_SECS,
};
use standin::row::WatchMode;
use standin::steps::next::{
    Cursor, FOLLOW_PARK_SECS, FOLLOW_WINDOW_SECS, IDLE_RECHECK_SECS, Next, Pacing, park_for,
};
use standin::steps::{CHECK_ATTEMPTS, ParkOutcome, Step, Successor};
use standin_remote::Timeouts;

const ASL: &str = include_str!("../../../statemachine/stand_in.asl.json");
const TEMPLATE: &str = include_str!("../../../template.yaml");
const ARCHITECTURE: &str = include_str!("../../../docs/architecture.md");

fn asl() -> Value {
    serde_json::from_str(ASL).expect("the ASL is JSON")
}

fn state(name: &str) -> Value {
    asl()["States"][name].clone()
}

/// Every decision a step can return, one of each kind. The match makes a new kind of
/// `Next` fail to compile here until it is added (and so checked against the ASL).
fn every_next() -> Vec<Next> {
    let all = vec![
        Next::End(EndCause::Final),
        Next::End(EndCause::failed("x")),
        Next::End(EndCause::Cancelled { reason: "x".into() }),
        Next::End(EndCause::Deadline { reason: "x".into() }),
        Next::Turn {
            reply: "x".into(),
            parts: Vec::new(),
        },
        Next::Register,
        Next::Check {
            push_triggered: true,
        },
        Next::Park {
            park: 1,
            timeout_secs: 5,
        },
        Next::Follow {
            park: 1,
            timeout_secs: 60,
        },
        Next::Roll,
    ];
    for next in &all {
        match next {
            Next::End(_)
            | Next::Turn { .. }
            | Next::Register
            | Next::Check { .. }
            | Next::Park { .. }
            | Next::Follow { .. }
            | Next::Roll => {}
        }
    }
    all
}

/// The decisions that reach Route: a check is done inside the wake or the registration
/// that decided it, never routed.
fn routed_next() -> Vec<Next> {
    every_next()
        .into_iter()
        .filter(|n| !matches!(n, Next::Check { .. }))
        .collect()
}

fn tag(next: &Next) -> String {
    serde_json::to_value(next).unwrap()["step"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Evaluates Route's choices on a state, as Step Functions would: the state it goes to.
fn route(input: &Value) -> String {
    let route = state("Route");
    for choice in route["Choices"].as_array().unwrap() {
        if rule_holds(choice, input) {
            return choice["Next"].as_str().unwrap().to_owned();
        }
    }
    route["Default"].as_str().unwrap().to_owned()
}

fn rule_holds(rule: &Value, input: &Value) -> bool {
    if let Some(all) = rule["And"].as_array() {
        return all.iter().all(|r| rule_holds(r, input));
    }
    let variable = rule["Variable"].as_str().expect("a Variable");
    let at = path(input, variable);
    if let Some(present) = rule["IsPresent"].as_bool() {
        return at.is_some() == present;
    }
    // As on AWS: comparing a path that is not there fails the execution (States.Runtime,
    // which no Catch on a Choice state can take), so Route must check for it first.
    let at = at.unwrap_or_else(|| panic!("Route compares {variable}, which {input} lacks"));
    if let Some(s) = rule["StringEquals"].as_str() {
        return at.as_str() == Some(s);
    }
    if let Some(b) = rule["BooleanEquals"].as_bool() {
        return at.as_bool() == Some(b);
    }
    panic!("Route uses a comparison this test does not know: {rule}");
}

/// A JSONPath of plain members (`$.next.step`) on a value.
fn path<'a>(value: &'a Value, jsonpath: &str) -> Option<&'a Value> {
    let mut at = value;
    for member in jsonpath.strip_prefix("$.")?.split('.') {
        at = at.get(member)?;
    }
    Some(at)
}

/// The state as Route sees it: Bind has written the execution's name.
fn step_with(next: Next) -> Value {
    let mut step = Step::start("t", "a", "m");
    step.next = Some(next);
    step.execution = Some(standin::steps::ExecutionName { name: "t".into() });
    serde_json::to_value(step).unwrap()
}

#[test]
fn route_sends_every_decision_to_the_state_that_carries_it_out() {
    let expected = |next: &Next| match next {
        Next::End(_) => "End",
        Next::Turn { .. } => "Turn",
        Next::Register => "Register",
        Next::Park { .. } => "Park",
        Next::Follow { .. } => "Follow",
        Next::Roll => "Roll",
        Next::Check { .. } => unreachable!("not routed"),
    };
    for next in routed_next() {
        assert_eq!(
            route(&step_with(next.clone())),
            expected(&next),
            "{next:?} as the ASL sees it: {}",
            step_with(next.clone())["next"]
        );
    }
    let first = serde_json::to_value(Step::start("t", "a", "m")).unwrap();
    assert_eq!(route(&first), "Turn", "a new stand-in starts with its turn");
}

#[test]
fn every_step_string_route_knows_is_one_a_step_returns() {
    let tags: BTreeSet<String> = routed_next().iter().map(tag).collect();
    let mut seen = BTreeSet::new();
    fn strings(rule: &Value, out: &mut BTreeSet<String>) {
        if let Some(all) = rule["And"].as_array() {
            all.iter().for_each(|r| strings(r, out));
        } else if rule["Variable"] == "$.next.step"
            && let Some(step) = rule["StringEquals"].as_str()
        {
            out.insert(step.to_owned());
        }
    }
    for choice in state("Route")["Choices"].as_array().unwrap() {
        strings(choice, &mut seen);
    }
    let unknown: Vec<&String> = seen.difference(&tags).collect();
    assert!(
        unknown.is_empty(),
        "Route routes on {unknown:?}, which no step returns (they return {tags:?})"
    );
}

#[test]
fn a_decision_route_cannot_read_goes_to_unknown_step_not_to_a_runtime_error() {
    for next in [
        json!({}),
        json!("park"),
        json!({"step": 7}),
        json!({"step": "park"}),
        json!({"park": 3}),
    ] {
        let input = json!({"task_id": "t", "agent": "a", "next": next});
        let to = std::panic::catch_unwind(|| route(&input));
        let expected = if next == json!({"step": "park"}) {
            "Park"
        } else {
            "UnknownStep"
        };
        assert_eq!(to.ok().as_deref(), Some(expected), "{next}");
    }
}

#[test]
fn a_check_is_never_written_to_the_execution_state() {
    let check = Next::Check {
        push_triggered: true,
    };
    assert!(
        serde_json::to_value(step_with_unchecked(check)).is_err(),
        "a Check leaving a step would fail loudly, not route"
    );
}

fn step_with_unchecked(next: Next) -> Step {
    let mut step = Step::start("t", "a", "m");
    step.next = Some(next);
    step
}

#[test]
fn only_a_permanent_step_error_skips_the_retries() {
    for name in ["Register", "Wake", "End"] {
        let retry = state(name)["Retry"].as_array().unwrap().clone();
        assert_eq!(
            retry[0],
            json!({"ErrorEquals": [standin::lambda::PERMANENT], "MaxAttempts": 0}),
            "{name} ends at once on a permanent error"
        );
        assert!(
            retry[1..]
                .iter()
                .all(|r| !r["ErrorEquals"].to_string().contains("StandIn.Permanent")),
            "{name}"
        );
        assert!(
            retry[1..]
                .iter()
                .any(|r| r["ErrorEquals"] == json!(["States.ALL"])
                    && r["MaxAttempts"].as_u64() > Some(1)),
            "{name} retries the rest"
        );
    }
    let catch = &state("End")["Catch"][0];
    assert_eq!(catch["ErrorEquals"], json!([standin::lambda::PERMANENT]));
    let refused = state(catch["Next"].as_str().unwrap());
    let fail = refused["Default"].as_str().unwrap();
    assert_eq!(
        state(fail)["Type"],
        "Fail",
        "an End that can never run fails the execution instead of looping through EndLater"
    );
    assert_eq!(
        state("TellParent")["Next"],
        fail,
        "after telling its parent"
    );
    let turn = state("Turn")["Retry"].to_string();
    assert!(
        !turn.contains("States.ALL") && !turn.contains(standin::lambda::TRANSIENT),
        "a turn is retried only where the function did not run: {turn}"
    );
    // A throttled turn (the function never ran) waits out the account's concurrency for
    // minutes, not seconds, before the stand-in would end.
    let throttled = state("Turn")["Retry"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ErrorEquals"] == json!(["Lambda.TooManyRequestsException"]))
        .cloned()
        .expect("a retrier of its own for throttles");
    let (mut wait, mut total) = (throttled["IntervalSeconds"].as_f64().unwrap(), 0.0);
    for _ in 0..throttled["MaxAttempts"].as_u64().unwrap() {
        let step = throttled["MaxDelaySeconds"]
            .as_f64()
            .map_or(wait, |m| wait.min(m));
        total += step;
        wait *= throttled["BackoffRate"].as_f64().unwrap();
    }
    // Full jitter waits a random share of each delay: half of it on average.
    if throttled["JitterStrategy"] == "FULL" {
        total /= 2.0;
    }
    assert!(total >= 300.0, "throttles retried for {total} s on average");
}

#[test]
fn an_unknown_step_ends_the_stand_in_as_failed_naming_the_step() {
    let input = json!({"task_id": "t", "agent": "a", "next": {"step": "fly", "park": 3}});
    let unknown = route(&input);
    assert_ne!(unknown, "End", "an unknown step must not end quietly");
    let pass = state(&unknown);
    assert_eq!(pass["Type"], "Pass");
    assert_eq!(pass["ResultPath"], "$.next");
    assert_eq!(pass["Next"], "End");
    let params = &pass["Parameters"];
    // The literal part decodes as the end's cause; the reason is built from the step.
    let mut literal = params.clone();
    let reason = literal
        .as_object_mut()
        .unwrap()
        .remove("reason.$")
        .expect("the reason is built from the input");
    literal["reason"] = json!("x");
    assert!(
        matches!(
            serde_json::from_value::<Next>(literal.clone()),
            Ok(Next::End(EndCause::Failed { .. }))
        ),
        "{literal}"
    );
    let reason = reason.as_str().unwrap();
    assert!(
        reason.starts_with("States.Format(") && reason.contains("$.next"),
        "the reason names the decision: {reason}"
    );
}

#[test]
fn the_literals_the_asl_writes_decode_into_the_types_that_read_them() {
    let failed = state("StepFailed");
    assert_eq!(failed["ResultPath"], "$.next");
    assert!(
        matches!(
            serde_json::from_value::<Next>(failed["Result"].clone()),
            Ok(Next::End(EndCause::Failed { .. }))
        ),
        "StepFailed's result is an end for failure: {}",
        failed["Result"]
    );
    for name in ["TimedOut", "ParkFailed"] {
        let pass = state(name);
        assert_eq!(pass["ResultPath"], "$.park", "{name}");
        serde_json::from_value::<ParkOutcome>(pass["Result"].clone()).unwrap_or_else(|e| {
            panic!("{name}'s result {} is no ParkOutcome: {e}", pass["Result"])
        });
    }
}

#[test]
fn what_the_parks_and_the_roll_read_is_in_what_the_steps_return() {
    let mut cursor = Cursor::default();
    for (watch, state_name) in [(WatchMode::Push, "Park"), (WatchMode::Follow, "Follow")] {
        let next = park_for(&mut cursor, watch, Pacing::default());
        let input = step_with(next);
        let task = state(state_name);
        let payload = &task["Parameters"][if watch == WatchMode::Follow {
            "MessageBody"
        } else {
            "Payload"
        }];
        for (key, from) in payload.as_object().unwrap() {
            let from = from.as_str().unwrap();
            if from.starts_with("$$.") {
                continue; // the context object: the task token
            }
            assert!(
                path(&input, from).is_some(),
                "{state_name} reads {key} from {from}, which {input} lacks"
            );
        }
        if let Some(timeout) = task["TimeoutSecondsPath"].as_str() {
            assert!(
                path(&input, timeout).and_then(Value::as_u64).is_some(),
                "{state_name}'s timeout {timeout} is not a number in {input}"
            );
        }
    }
    let mut rolled = serde_json::to_value({
        let mut step = Step::start("t", "a", "m");
        step.next = Some(Next::Roll);
        step.successor = Some(Successor {
            name: "t__1".into(),
            input: Box::new(Step::start("t", "a", "m")),
        });
        step
    })
    .unwrap();
    let roll = state("Roll");
    for key in ["Name.$", "Input.$"] {
        let from = roll["Parameters"][key].as_str().unwrap();
        assert!(
            path(&rolled, from).is_some(),
            "Roll reads {from} from {rolled}"
        );
    }
    rolled["successor"] = Value::Null;
    assert!(path(&rolled, "$.successor.name").is_none());
}

/// One resource's (or parameter's) block of `template.yaml`: the lines indented under
/// its name.
fn resource(name: &str) -> String {
    let lines: Vec<&str> = TEMPLATE.lines().collect();
    let header = format!("  {name}:");
    let start = lines
        .iter()
        .position(|l| *l == header)
        .unwrap_or_else(|| panic!("no {name} in template.yaml"));
    lines[start + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.starts_with("   "))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The number after `key:` in a block of YAML.
fn number(block: &str, key: &str) -> u64 {
    block
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in\n{block}"))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{key} is not a number: {e}"))
}

#[test]
fn the_timings_in_the_asl_and_the_template_agree_with_the_rust() {
    let follow = state("Follow");
    assert_eq!(
        follow["TimeoutSecondsPath"].as_str(),
        Some("$.next.timeout_secs"),
        "the Follow state's timeout is the follow park's, as the decision says"
    );
    let decided = serde_json::to_value(Next::Follow {
        park: 1,
        timeout_secs: FOLLOW_PARK_SECS,
    })
    .unwrap();
    assert_eq!(decided["timeout_secs"].as_u64(), Some(FOLLOW_PARK_SECS));
    let follow_fn = resource("FollowFunction");
    assert_eq!(
        number(&follow_fn, "Timeout"),
        standin::lambda::MAX_FOLLOW_WINDOW_SECS + 60,
        "a follower lives its longest window and a minute for the hand-back"
    );
    assert!(
        resource("FollowWindowSecs").contains(&format!(
            "MaxValue: {}",
            standin::lambda::MAX_FOLLOW_WINDOW_SECS
        )),
        "the window parameter stops where the function's timeout allows"
    );
    let most_streams = number(&resource("FollowsPerFunction"), "MaxValue");
    assert!(
        standin::artifacts::PartRoom::fits(
            number(&follow_fn, "MemorySize"),
            usize::try_from(most_streams).unwrap(),
            standin_remote::AgentClient::MAX_EVENT_BYTES
        ),
        "the follower's memory holds the most streams the template allows, and a part"
    );
    let visibility = number(&resource("FollowQueue"), "VisibilityTimeout");
    assert!(
        visibility >= number(&follow_fn, "Timeout"),
        "an event source mapping needs the queue's visibility timeout at least the function's"
    );
    const { assert!(FOLLOW_PARK_SECS > FOLLOW_WINDOW_SECS) };
    let heartbeat = number(&follow_fn, "FOLLOW_HEARTBEAT_SECS");
    assert_eq!(heartbeat, DEFAULT_FOLLOW_HEARTBEAT_SECS);
    let missed_after = follow["HeartbeatSeconds"].as_u64().unwrap();
    assert!(
        missed_after >= 3 * heartbeat,
        "the Follow state tolerates two late heartbeats ({missed_after} s against beats every {heartbeat} s)"
    );

    let parameter = |name: &str| number(&resource(name), "Default");
    assert_eq!(parameter("IdleRecheckSecs"), IDLE_RECHECK_SECS);
    assert_eq!(parameter("HistoryBound"), u64::from(DEFAULT_HISTORY_BOUND));
    assert_eq!(parameter("TurnWindowSecs"), DEFAULT_TURN_WINDOW_SECS);

    // A function outlives what it waits for: the longest turn window plus a minute; the
    // card read and every GetTask attempt of a registration or a wake.
    let turn_window_max = number(&resource("TurnWindowSecs"), "MaxValue");
    assert!(number(&resource("TurnFunction"), "Timeout") >= turn_window_max + 60);
    let call = Timeouts::default().call.as_secs();
    for name in ["RegisterFunction", "WakeFunction"] {
        let timeout = number(&resource(name), "Timeout");
        assert!(
            timeout > call * (u64::from(CHECK_ATTEMPTS) + 1),
            "{name}: {timeout} s cannot hold the card read and {CHECK_ATTEMPTS} GetTasks of {call} s"
        );
    }
    assert_eq!(state("EndLater")["Seconds"], 60);
    assert_eq!(state("RollLater")["Seconds"], 60);
}

#[test]
fn the_architecture_diagram_names_every_state_of_the_machine() {
    let states: BTreeSet<String> = asl()["States"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let diagram = ARCHITECTURE
        .split("```mermaid\nstateDiagram-v2\n")
        .nth(1)
        .and_then(|d| d.split("```").next())
        .expect("docs/architecture.md has a stateDiagram-v2");
    let mut drawn = BTreeSet::new();
    for line in diagram.lines() {
        let edge = line.split(':').next().unwrap_or_default();
        for name in edge.split("-->") {
            let name = name.trim();
            if !name.is_empty() && name != "[*]" {
                drawn.insert(name.to_owned());
            }
        }
    }
    assert_eq!(
        drawn, states,
        "docs/architecture.md's state diagram and the ASL"
    );
}

/// What docs/operations.md promises is in the template: tracing everywhere,
/// encryption and recovery at rest, access logs, and the alarms.
#[test]
fn the_template_carries_its_operations() {
    let globals = TEMPLATE
        .split_once("\nGlobals:\n")
        .and_then(|(_, rest)| rest.split_once("\nResources:\n"))
        .expect("Globals before Resources")
        .0;
    assert!(globals.contains("\n    Tracing: Active\n"), "{globals}");
    assert!(globals.contains("\n    TracingEnabled: true"), "{globals}");
    assert!(resource("StateMachine").contains("Tracing: { Enabled: true }"));
    for queue in [
        "NotesUndelivered",
        "InvokeFailures",
        "ParentQueue",
        "ParentDeadLetters",
    ] {
        assert!(
            resource(queue).contains("SqsManagedSseEnabled: true"),
            "{queue}"
        );
    }
    for table in ["Table", "NotesTable"] {
        assert!(
            resource(table).contains("PointInTimeRecoveryEnabled: true"),
            "{table}"
        );
    }
    for (api, logs) in [
        ("PushApi", "PushApiAccessLogs"),
        ("ControlApi", "ControlApiAccessLogs"),
    ] {
        let block = resource(api);
        assert!(
            block.contains(&format!("DestinationArn: !GetAtt {logs}.Arn")),
            "{api}"
        );
        assert!(
            !block.to_ascii_lowercase().contains("token"),
            "{api} logs no token"
        );
        assert!(resource(logs).contains("RetentionInDays: 30"));
    }
    for (alarm, metric) in [
        ("StandInsFailedAlarm", "ExecutionsFailed"),
        ("StandInsFailedAlarm", "ExecutionsTimedOut"),
        ("StandInsFailedAlarm", "ExecutionsAborted"),
        ("NoteDeliveryErrorsAlarm", "NotesNotDelivered"),
        ("NotesRefusedAlarm", "NotesRefused"),
        ("ParentCallbacksRefusedAlarm", "ParentCallbacksRefused"),
        ("NotifyErrorsAlarm", "Errors"),
        (
            "ParentDeadLettersAlarm",
            "ApproximateNumberOfMessagesVisible",
        ),
        (
            "NotesUndeliveredAlarm",
            "ApproximateNumberOfMessagesVisible",
        ),
    ] {
        assert!(
            resource(alarm).contains(&format!("MetricName: {metric}")),
            "{alarm}"
        );
    }
    assert!(resource("ControlApi").contains("Location: api/control.openapi.json"));
}

/// checkov runs in `make lint`; a check it skips must say why, next to the resource.
#[test]
fn every_checkov_skip_says_why() {
    let mut skips = 0;
    for (i, line) in TEMPLATE.lines().enumerate() {
        let Some(at) = line.find("id: CKV_") else {
            continue;
        };
        skips += 1;
        let rest = &line[at..];
        let next = TEMPLATE.lines().nth(i + 1).unwrap_or_default();
        let said = rest
            .split_once("comment:")
            .or_else(|| next.split_once("comment:"))
            .map(|(_, why)| why.trim().trim_matches(['"', '}', ' ']).len());
        assert!(said.is_some_and(|n| n > 20), "line {}: {line}", i + 1);
    }
    assert!(skips > 40, "the skips were found: {skips}");
}

/// The dashboard shows the metrics the functions emit, by the names and the dimension
/// they emit them with.
#[test]
fn the_dashboard_shows_the_metrics_the_functions_emit() {
    use standin::metrics::{Metric, NAMESPACE};
    let dashboard: String = resource("Dashboard")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    for metric in Metric::ALL {
        let name = metric.name();
        let shown = match metric.dimension() {
            None => format!("\"{NAMESPACE}\",\"{name}\",\"Stack\",\"${{AWS::StackName}}\""),
            Some(dimension) => format!(
                "SEARCH('{{{NAMESPACE},Stack,{dimension}}}MetricName=\\\"{name}\\\"Stack=\\\"${{AWS::StackName}}\\\"'"
            ),
        };
        assert!(
            dashboard.contains(&shown),
            "{name} is not on the dashboard as {shown}"
        );
    }
    assert!(
        resource("NoteDeliveryErrorsAlarm").contains(&format!("Namespace: {NAMESPACE}")),
        "the delivery alarm watches the stand-in's own metric"
    );
}

/// The dashboard's body is JSON once `!Sub` has filled in its names.
#[test]
fn the_dashboard_body_is_json() {
    let block = resource("Dashboard");
    let body: String = block
        .split_once("DashboardBody: !Sub |\n")
        .expect("a DashboardBody")
        .1
        .lines()
        .map(|l| l.strip_prefix("        ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("${AWS::StackName}", "standin")
        .replace("${AWS::Region}", "eu-west-1");
    let parsed: Value = serde_json::from_str(&body).expect("the dashboard is JSON");
    assert!(parsed["widgets"].as_array().is_some_and(|w| w.len() >= 6));
}

/// Issue 24, 1: every execution first writes its own name (Bind), every park states who
/// parks, a taken successor name is checked for the lease, and an End that cannot run
/// answers its input's parent token.
#[test]
fn every_execution_is_bound_to_its_stand_in_before_any_step() {
    let asl = asl();
    assert_eq!(asl["StartAt"], "Bind");
    let bind = state("Bind");
    assert_eq!(bind["Type"], "Pass");
    assert_eq!(bind["Parameters"], json!({"name.$": "$$.Execution.Name"}));
    assert_eq!(bind["ResultPath"], "$.execution");
    assert_eq!(bind["Next"], "Route");
    // What Bind writes is what a step reads.
    let step: Step = serde_json::from_value(json!({
        "task_id": "t", "agent": "a", "execution": {"name": "t"}
    }))
    .unwrap();
    assert_eq!(step.execution.map(|b| b.name).as_deref(), Some("t"));
    for (park, body) in [("Park", "Payload"), ("Follow", "MessageBody")] {
        let payload = &state(park)["Parameters"][body];
        assert_eq!(payload["execution.$"], "$.execution.name", "{park}");
        assert_eq!(payload["generation.$"], "$.generation", "{park}");
        assert_eq!(payload["lease.$"], "$.lease", "{park}");
    }
    let fresh = serde_json::to_value(Step::start("t", "a", "m")).unwrap();
    assert!(
        fresh.get("lease").is_some() && fresh.get("generation").is_some(),
        "the parks' paths are always there: {fresh}"
    );
    let roll = state("Roll");
    assert_eq!(roll["Catch"][0]["Next"], "RollTaken");
    assert!(
        TEMPLATE.contains("ExecutionArnPrefix:"),
        "RollTaken's ARN prefix is substituted"
    );
    let ours = state("RollOurs").to_string();
    assert!(
        ours.contains("$.successor.input.lease") && ours.contains("RollStolen"),
        "{ours}"
    );
    assert_eq!(state("RollStolen")["Next"], "End");
    assert_eq!(state("End")["Catch"][0]["Next"], "EndRefused");
    assert_eq!(state("EndRefused")["Choices"][0]["Next"], "TellParent");
    assert_eq!(
        state("TellParent")["Parameters"]["TaskToken.$"],
        "$.parent_task_token"
    );
}

/// Issue 24, 11: the history bound has a ceiling the template and the functions share,
/// under Step Functions' 25,000 events; and the state machine's role grants nothing it
/// does not use (no EventBridge rule: no state waits on `.sync`).
#[test]
fn the_history_bound_has_a_ceiling_and_the_role_no_unused_grant() {
    let parameter: String = TEMPLATE
        .split("\n  HistoryBound:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("    "))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        parameter.contains(&format!("MaxValue: {}", standin::lambda::MAX_HISTORY_BOUND)),
        "{parameter}"
    );
    const { assert!(standin::lambda::MAX_HISTORY_BOUND * 22 < 25_000) };
    assert!(
        !TEMPLATE.contains("events:PutTargets"),
        "the role's unused events grant"
    );
    assert!(
        !ASL.contains(".sync"),
        "no state waits on .sync, which would need it"
    );
}

/// LocalStack has no WAF, so the per-source limit is checked here as CloudFormation
/// will read it: optional, one rate rule per address, blocking, on the push stage only.
#[test]
fn a_flood_from_one_address_meets_a_waf_rate_rule_of_its_own_when_configured() {
    let acl = resource("PushWebAcl");
    for expected in [
        "Type: AWS::WAFv2::WebACL",
        "Condition: PushWafOn",
        "Scope: REGIONAL",
        "DefaultAction: { Allow: {} }",
        "Action: { Block: {} }",
        "Limit: !Ref PushWafRateLimit",
        "AggregateKeyType: IP",
    ] {
        assert!(
            acl.contains(expected),
            "PushWebAcl lacks {expected}:\n{acl}"
        );
    }
    let association = resource("PushWebAclOnStage");
    assert!(association.contains("Condition: PushWafOn"));
    assert!(association.contains("WebACLArn: !GetAtt PushWebAcl.Arn"));
    assert!(
        association.contains("/restapis/${PushApi}/stages/${PushApi.Stage}"),
        "{association}"
    );
    assert!(
        TEMPLATE.contains(r#"PushWafOn: !Not [!Equals [!Ref PushWafRateLimit, "0"]]"#),
        "0 leaves WAF out"
    );
    let stage = resource("PushApi");
    assert!(stage.contains("ThrottlingRateLimit: !Ref PushRateLimit"));
    assert!(stage.contains("ThrottlingBurstLimit: !Ref PushBurstLimit"));
}

/// The A2A front's keyed door is open at the gateway: each of its routes has the stage
/// throttle of its own, on the paths the API document gives it (slashes as `~1`).
#[test]
fn the_keyed_door_has_a_throttle_of_its_own_on_each_of_its_routes() {
    let stage = resource("ControlApi");
    for (path, method) in [
        ("/keyed/a2a/{agent_id}", "POST"),
        ("/keyed/a2a/{agent_id}/.well-known/agent-card.json", "GET"),
    ] {
        let setting = format!(
            "- ResourcePath: \"/{}\"\n          HttpMethod: {method}\n          ThrottlingRateLimit: !Ref KeyedRateLimit\n          ThrottlingBurstLimit: !Ref KeyedRateLimit",
            path.replace('/', "~1")
        );
        assert!(stage.contains(&setting), "{path}: {setting}");
        let document: serde_json::Value =
            serde_json::from_str(include_str!("../../../api/control.openapi.json")).unwrap();
        assert!(
            document["paths"][path][method.to_ascii_lowercase()]["security"]
                == serde_json::json!([]),
            "{path} is the open door"
        );
    }
}

/// LocalStack's CloudFormation does not apply `ReservedConcurrentExecutions`, so the
/// reservations are checked as CloudFormation will read them: push, control and notify
/// hold one, follow a cap, each from its parameter, 0 meaning none; the steps share the
/// pool.
#[test]
fn concurrency_is_reserved_for_push_control_and_notify_and_capped_for_follow() {
    for (function, parameter, condition) in [
        ("ControlFunction", "ControlConcurrency", "ReserveControl"),
        ("NotifyFunction", "NotifyConcurrency", "ReserveNotify"),
        ("FollowFunction", "FollowConcurrency", "CapFollow"),
    ] {
        assert!(
            resource(function).contains(&format!(
                "ReservedConcurrentExecutions: !If [{condition}, !Ref {parameter}, !Ref AWS::NoValue]"
            )),
            "{function}"
        );
        assert!(
            TEMPLATE.contains(&format!(
                "{condition}: !Not [!Equals [!Ref {parameter}, 0]]"
            )),
            "{condition}: 0 reserves nothing"
        );
        assert!(resource(parameter).contains("MinValue: 0"), "{parameter}");
    }
    // The push function reserves what the stage lets through at once: a reservation
    // below the stage's burst was a ceiling (Lambda throttled pushes API Gateway had let
    // through, answered 500, and A2A senders do not retry). Its parameter can only say
    // that or none.
    assert!(
        resource("PushFunction").contains(
            "ReservedConcurrentExecutions: !If [ReservePush, !Ref PushBurstLimit, !Ref AWS::NoValue]"
        ),
        "the push reservation is the stage's burst"
    );
    assert!(TEMPLATE.contains(r#"ReservePush: !Not [!Equals [!Ref PushConcurrency, "0"]]"#));
    let rule = resource("PushConcurrencyIsTheBurstOrNone");
    for allowed in [
        "!Equals [!Ref PushConcurrency, burst]",
        r#"!Equals [!Ref PushConcurrency, "0"]"#,
        "!Equals [!Ref PushConcurrency, !Ref PushBurstLimit]",
    ] {
        assert!(
            rule.contains(allowed),
            "no reservation below the burst: {rule}"
        );
    }
    for step in [
        "TurnFunction",
        "RegisterFunction",
        "WakeFunction",
        "EndFunction",
        "ParkFunction",
    ] {
        assert!(
            !resource(step).contains("ReservedConcurrentExecutions"),
            "{step} shares the unreserved pool"
        );
    }
}

/// The keys and turns tables are found by the stack's name, as the template names them.
#[test]
fn the_keys_and_turns_tables_are_named_as_the_control_function_finds_them() {
    use standin::lambda::{KEYS_TABLE_SUFFIX, TURNS_TABLE_SUFFIX};
    for (table, suffix) in [
        ("KeysTable", KEYS_TABLE_SUFFIX),
        ("TurnsTable", TURNS_TABLE_SUFFIX),
    ] {
        let named = format!("TableName: !Sub \"${{AWS::StackName}}{suffix}\"");
        assert!(resource(table).contains(&named), "{table}: {named}");
    }
    assert!(!TEMPLATE.contains("KEYS_TABLE:") && !TEMPLATE.contains("TURNS_TABLE:"));
}
