use std::collections::HashMap;

use super::*;

fn full() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        ("TABLE_NAME", "rows"),
        ("NOTES_TABLE_NAME", "notes"),
        ("PARENT_QUEUE_URL", "https://sqs/q.fifo"),
        ("STATE_MACHINE_ARN", "arn:aws:states:r:1:stateMachine:s"),
        ("AGENTS_TABLE_NAME", "agents"),
        (
            "AGENTS",
            r#"{"agents":[{"id":"a","url":"https://a.example"}]}"#,
        ),
    ])
}

fn without(name: &str) -> HashMap<&'static str, &'static str> {
    let mut env = full();
    env.remove(name);
    env
}

#[test]
fn each_kind_reads_its_own_variables_with_their_defaults() {
    let steps = StepSettings::read(&full()).expect("steps");
    assert_eq!(
        steps.tables,
        Tables {
            rows: "rows".into(),
            notes: "notes".into()
        }
    );
    assert_eq!(steps.agents.agent("a").map(|a| a.id.as_str()), Some("a"));
    assert_eq!(steps.history_bound, DEFAULT_HISTORY_BOUND);
    assert_eq!(steps.pacing.idle_recheck_secs, IDLE_RECHECK_SECS);
    assert_eq!(steps.turn_window.as_secs(), DEFAULT_TURN_WINDOW_SECS);
    assert_eq!(
        steps.follow_heartbeat.as_secs(),
        DEFAULT_FOLLOW_HEARTBEAT_SECS
    );
    assert_eq!((steps.push_base_url, steps.agent_ca_file), (None, None));
    assert_eq!(steps.agents_table.as_deref(), Some("agents"));
    assert!(
        !steps.allow_private_agents,
        "private agents are refused unless allowed"
    );
    let mut private = full();
    private.insert("ALLOW_PRIVATE_AGENTS", "true");
    assert!(
        StepSettings::read(&private)
            .expect("steps")
            .allow_private_agents
    );
    private.insert("ALLOW_PRIVATE_AGENTS", "yes");
    let refused = StepSettings::read(&private).expect_err("not a boolean");
    assert_eq!(refused.field, "ALLOW_PRIVATE_AGENTS");
    let control = ControlSettings::read(&full()).expect("control");
    assert_eq!(
        control.state_machine_arn,
        "arn:aws:states:r:1:stateMachine:s"
    );
    let notify = NotifySettings::read(&full()).expect("notify");
    assert_eq!(
        (
            notify.rows_table.as_str(),
            notify.outlets.parent_queue_url.as_str(),
            notify.outlets.note_bus
        ),
        ("rows", "https://sqs/q.fifo", None)
    );
    let mut with_bus = full();
    with_bus.insert("NOTE_BUS_NAME", "parents");
    let notify = NotifySettings::read(&with_bus).expect("notify");
    assert_eq!(notify.outlets.note_bus.as_deref(), Some("parents"));
    let steps = StepSettings::read(&with_bus).expect("steps");
    assert_eq!(steps.outlets, Some(notify.outlets), "steps send at once");
}

#[test]
fn a_missing_variable_is_named_by_every_kind_that_needs_it() {
    for name in ["TABLE_NAME", "NOTES_TABLE_NAME"] {
        assert_eq!(
            Tables::read(&without(name)).map_err(|e| e.field),
            Err(name.into())
        );
        let steps = StepSettings::read(&without(name)).expect_err("steps need it");
        assert_eq!(steps.field, name);
        let control = ControlSettings::read(&without(name)).expect_err("control needs it");
        assert_eq!(control.field, name);
    }
    let control = ControlSettings::read(&without("STATE_MACHINE_ARN")).expect_err("control");
    assert_eq!(
        control.to_string(),
        "STATE_MACHINE_ARN: environment variable is not set"
    );
    let control = ControlSettings::read(&without("AGENTS_TABLE_NAME")).expect_err("control");
    assert_eq!(control.field, "AGENTS_TABLE_NAME");
    // The steps do without the registry (only the turn is given it).
    let steps = StepSettings::read(&without("AGENTS_TABLE_NAME")).expect("steps");
    assert_eq!(steps.agents_table, None);
    let notify = NotifySettings::read(&without("PARENT_QUEUE_URL")).expect_err("notify");
    assert_eq!(notify.field, "PARENT_QUEUE_URL");
    let notify = NotifySettings::read(&without("TABLE_NAME")).expect_err("notify");
    assert_eq!(notify.field, "TABLE_NAME", "notify marks the rows");
    // A blank value is as good as none.
    let mut blank = full();
    blank.insert("STATE_MACHINE_ARN", "  ");
    assert!(ControlSettings::read(&blank).is_err());
}

#[test]
fn a_kind_does_not_need_what_only_others_read() {
    let mut only_queue = HashMap::new();
    only_queue.insert("PARENT_QUEUE_URL", "https://sqs/q.fifo");
    only_queue.insert("TABLE_NAME", "rows");
    assert!(
        NotifySettings::read(&only_queue).is_ok(),
        "notify reads no note log"
    );
    assert!(StepSettings::read(&without("STATE_MACHINE_ARN")).is_ok());
    let by_outbox = StepSettings::read(&without("PARENT_QUEUE_URL")).expect("steps");
    assert_eq!(by_outbox.outlets, None, "every note by the outbox");
    assert!(ControlSettings::read(&without("PARENT_QUEUE_URL")).is_ok());
}

#[test]
fn recording_the_calls_is_off_unless_asked_for() {
    assert_eq!(record_calls(&full()), Ok(false));
    let mut env = full();
    env.insert("RECORD_AWS_CALLS", "true");
    assert_eq!(record_calls(&env), Ok(true));
    env.insert("RECORD_AWS_CALLS", "yes");
    let err = record_calls(&env).expect_err("not a boolean");
    assert_eq!(err.field, "RECORD_AWS_CALLS");
}

#[test]
fn a_malformed_number_or_agents_document_is_named() {
    for (name, value, problem) in [
        ("HISTORY_BOUND", "many", "whole number"),
        ("HISTORY_BOUND", "99999999999", "at most"),
        ("HISTORY_BOUND", "1001", "at most 1000"),
        ("HISTORY_BOUND", "1", "2 to"),
        ("IDLE_RECHECK_SECS", "0", "at least 1"),
        ("TURN_WINDOW_SECS", "-3", "whole number"),
        ("FOLLOW_HEARTBEAT_SECS", "0", "at least 1"),
    ] {
        let mut env = full();
        env.insert(name, value);
        let err = StepSettings::read(&env).expect_err(name);
        assert_eq!(err.field, name, "{err}");
        assert!(err.problem.contains(problem), "{name}={value}: {err}");
    }
    for (name, value, problem) in [
        ("FOLLOWS_PER_FUNCTION", "0", "at least 1"),
        ("FOLLOWS_PER_FUNCTION", "501", "at most 500"),
        ("FOLLOW_WINDOW_SECS", "601", "at most 600"),
        ("FOLLOW_QUEUE_URL", "", "not set"),
    ] {
        let mut env = full();
        env.insert("FOLLOW_QUEUE_URL", "https://sqs/follow");
        env.insert(name, value);
        let err = FollowerSettings::read(&env).expect_err(name);
        assert_eq!(err.field, name, "{err}");
        assert!(err.problem.contains(problem), "{name}={value}: {err}");
    }
    let mut env = full();
    env.insert("FOLLOW_QUEUE_URL", "https://sqs/follow");
    let follower = FollowerSettings::read(&env).expect("follower");
    assert_eq!(follower.capacity, 100);
    assert_eq!(follower.window, Duration::from_secs(600));
    let mut env = full();
    env.insert("AGENTS", "{not json");
    let err = ControlSettings::read(&env).expect_err("bad AGENTS");
    assert!(err.field.starts_with("AGENTS"), "{err}");
}
/// The confused deputy through the agents document: an entry on an AWS API fails
/// every function's cold start, naming it; SigV4 is AgentCore Runtime's as a role
/// the stack's pattern allows.
#[test]
fn an_agents_document_naming_an_aws_api_fails_the_cold_start() {
    let sqs = r#"{"agents":[{"id":"a","url":"https://sqs.us-east-1.amazonaws.com","card_url":"https://sqs.us-east-1.amazonaws.com/123456789012/s-parent.fifo?Action=SendMessage","auth":{"type":"sigv4","role_arn":"arn:aws:iam::123456789012:role/standin-agent-a"}}]}"#;
    let service = r#"{"agents":[{"id":"a","url":"https://bedrock-agentcore.us-east-1.amazonaws.com","auth":{"type":"sigv4","role_arn":"arn:aws:iam::123456789012:role/standin-agent-a","service":"s3"}}]}"#;
    let role = r#"{"agents":[{"id":"a","url":"https://bedrock-agentcore.us-east-1.amazonaws.com","auth":{"type":"sigv4","role_arn":"arn:aws:iam::123456789012:role/admin"}}]}"#;
    let ours = r#"{"agents":[{"id":"a","url":"https://pushapi1.execute-api.us-east-1.amazonaws.com/Prod"}]}"#;
    for (document, field) in [
        (sqs, "AGENTS: agents[0].url"),
        (service, "AGENTS: agents[0].auth.service"),
        (role, "AGENTS: agents[0].auth.role_arn"),
        (ours, "AGENTS: agents[0].url"),
    ] {
        let mut env = full();
        env.insert("AGENTS", document);
        env.insert("AWS_REGION", "us-east-1");
        env.insert(
            "AGENT_ROLE_ARN_PATTERN",
            "arn:aws:iam::123456789012:role/standin-agent-*",
        );
        env.insert("OWN_API_IDS", "pushapi1,ctl");
        let steps = StepSettings::read(&env).expect_err(document);
        assert_eq!(steps.field, field, "{steps}");
        let control = ControlSettings::read(&env).expect_err(document);
        assert_eq!(control.field, field, "{control}");
    }
    let mut env = full();
    env.insert("AGENTS", r#"{"agents":[{"id":"a","url":"https://bedrock-agentcore.us-east-1.amazonaws.com/runtimes/r/invocations","auth":{"type":"sigv4","role_arn":"arn:aws:iam::123456789012:role/standin-agent-a"}}]}"#);
    env.insert("AWS_REGION", "us-east-1");
    assert!(StepSettings::read(&env).is_ok());
    for bad in ["vpce-123", "http://agentcore.example", "ftp://x"] {
        env.insert("AGENTCORE_ENDPOINT", bad);
        assert_eq!(
            StepSettings::read(&env).expect_err(bad).field,
            "AGENTCORE_ENDPOINT"
        );
    }
    env.insert("AGENTCORE_ENDPOINT", "http://127.0.0.1:27166");
    env.insert("AGENTS", r#"{"agents":[]}"#);
    env.insert(
        "OWN_ORIGINS",
        "http://127.0.0.1:4566, https://push.example.com/a2a",
    );
    let rules = StepSettings::read(&env).expect("steps").entry_rules;
    assert_eq!(
        rules.own_origins,
        ["http://127.0.0.1:4566", "https://push.example.com"]
    );
}
