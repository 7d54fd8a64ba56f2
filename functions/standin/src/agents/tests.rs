use super::*;

fn field_of(json: &str) -> String {
    AgentsConfig::parse(json).expect_err("must fail").field
}

#[test]
fn full_and_minimal_agents() {
    let cfg = AgentsConfig::parse(
        r#"{"agents":[
            {"id":"a","url":"http://127.0.0.1:9000","version":"1.0","updates":"follow","follow_interval":2.5,"participant":"p1"},
            {"id":"b","url":"https://b.example"}]}"#,
    )
    .expect("valid");
    let a = cfg.agent("a").expect("a");
    assert_eq!(a.updates, Updates::Follow);
    assert_eq!(a.follow_interval, Duration::from_millis(2500));
    assert_eq!(a.participant.as_deref(), Some("p1"));
    let b = cfg.agent("b").expect("b");
    assert_eq!(
        (b.updates, b.follow_interval),
        (Updates::Auto, DEFAULT_FOLLOW_INTERVAL)
    );
    assert!(cfg.agent("c").is_none());
}

#[test]
fn allowed_origins_are_bare_origins_and_strict() {
    let cfg = AgentsConfig::parse(
        r#"{"agents":[{"id":"a","url":"https://a.example","allowed_origins":["https://rpc.a.example:8443","http://other.example/"]}]}"#,
    )
    .expect("valid");
    assert_eq!(
        cfg.agent("a").map(|a| a.allowed_origins.clone()),
        Some(vec![
            "https://rpc.a.example:8443".to_owned(),
            "http://other.example".to_owned()
        ])
    );
    for bad in [
        r#""https://x.example""#,
        r#"["https://x.example/path"]"#,
        r#"["ftp://x.example"]"#,
        r#"["https://x.example?q=1"]"#,
        r#"[42]"#,
    ] {
        let doc = format!(
            r#"{{"agents":[{{"id":"a","url":"https://a.example","allowed_origins":{bad}}}]}}"#
        );
        let field = field_of(&doc);
        assert!(
            field.starts_with("agents[0].allowed_origins"),
            "{bad}: {field}"
        );
    }
}

#[test]
fn every_error_names_its_field() {
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":0.5}]}"#),
        "agents[0].follow_interval"
    );
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":"5s"}]}"#),
        "agents[0].follow_interval"
    );
    assert_eq!(
        field_of(
            r#"{"agents":[{"id":"a","url":"http://h"},{"id":"b","url":"http://h","updates":"push"}]}"#
        ),
        "agents[1].updates"
    );
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"http://h","colour":"blue"}]}"#),
        "agents[0].colour"
    );
    assert_eq!(
        field_of(r#"{"agents":[{"url":"http://h"}]}"#),
        "agents[0].id"
    );
    assert_eq!(field_of(r#"{"agents":[{"id":"a"}]}"#), "agents[0].url");
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"ftp://h"}]}"#),
        "agents[0].url"
    );
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"http://h"},{"id":"a","url":"http://h"}]}"#),
        "agents[1].id"
    );
    assert_eq!(field_of(r#"{"agents":[],"extra":1}"#), "extra");
    assert_eq!(field_of(r#"{"agents":{}}"#), "agents");
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"http://h","participant":3}]}"#),
        "agents[0].participant"
    );
    assert_eq!(field_of("not json"), "agents document");
    assert_eq!(field_of("{}"), "agents");
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":null}]}"#),
        "agents[0].follow_interval"
    );
    assert_eq!(
        field_of(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":1e300}]}"#),
        "agents[0].follow_interval"
    );
    let trailing = AgentsConfig::parse(r#"{"agents":[]} {"agents":[]}"#).expect_err("two");
    assert_eq!(trailing.field, "agents document", "{trailing}");
    assert!(trailing.problem.contains("trailing"), "{trailing}");
    let wrong = AgentsConfig::parse("7").expect_err("a number");
    assert!(wrong.problem.contains("\"agents\" list"), "{wrong}");
    let unknown =
        AgentsConfig::parse(r#"{"agents":[{"id":"a","url":"http://h","colour":"blue"}]}"#)
            .expect_err("unknown field");
    assert!(
        unknown.problem.contains("unknown field `colour`") && unknown.problem.contains("`url`"),
        "the problem names the field and the known ones: {unknown}"
    );
    assert!(!unknown.problem.contains("line"), "{unknown}");
}

#[test]
fn an_entry_reads_back_to_the_spec_it_was_written_from() {
    let cfg = AgentsConfig::parse(
        r#"{"agents":[{"id":"a","url":"https://a.example","version":"1.0","updates":"follow","follow_interval":2.5,"participant":"p","allowed_origins":["https://b.example"]},{"id":"b","url":"http://h","file_delivery":"bytes","card_signing":{"jwks_url":"https://h.example/jwks.json"},"preferred_binding":"GRPC"},
            {"id":"d","url":"https://d.example","card_signing":{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}},
            {"id":"c","url":"https://c.example","updates":"poll","poll_max_interval":30,"card_url":"https://c.example/a2a/v1/card?assistant_id=x","headers":{"X-Api-Version":"2"},"session_header":"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id","extensions":["https://ext.example/v1"]}]}"#,
    )
    .expect("valid");
    for spec in &cfg.agents {
        let text = spec.to_entry().to_string();
        assert_eq!(&AgentSpec::parse_entry(&text).expect("reads back"), spec);
    }
}

#[test]
fn a_registry_entry_names_its_field_and_keeps_ids_path_safe() {
    let field = |json: &str| AgentSpec::parse_entry(json).expect_err("must fail").field;
    assert_eq!(field(r#"{"id":"a","url":"ftp://h"}"#), "url");
    assert_eq!(field(r#"{"id":"a"}"#), "url");
    assert_eq!(field(r#"{"url":"http://h"}"#), "id");
    assert_eq!(
        field(r#"{"id":"a","url":"http://h","follow_interval":0}"#),
        "follow_interval"
    );
    assert_eq!(field(r#"{"id":"a","url":"http://h","colour":1}"#), "colour");
    assert_eq!(field("[1]"), "agent entry");
    assert_eq!(field("{"), "agent entry");
    for bad in ["", "a/b", "a b", "é", &"x".repeat(65)] {
        let json = serde_json::json!({"id": bad, "url": "http://h"}).to_string();
        assert_eq!(field(&json), "id", "{bad:?}");
    }
    assert!(AgentSpec::parse_entry(r#"{"id":"A-1.b_c","url":"http://h"}"#).is_ok());
}

/// The least length of the session id `session_header` carries (AgentCore Runtime's).
const SESSION_ID_MIN_CHARS: usize = 33;

#[test]
fn a_session_id_is_stable_long_enough_and_the_deployments_own() {
    let id = session_id("stack-a", "si-1");
    assert_eq!(id, session_id("stack-a", "si-1"));
    assert!(id.len() >= SESSION_ID_MIN_CHARS, "{id}");
    assert_ne!(id, session_id("stack-b", "si-1"));
    assert_ne!(id, session_id("stack-a", "si-2"));
}

#[test]
fn reach_settings_are_checked_field_by_field() {
    let field = |extra: &str| {
        field_of(&format!(
            r#"{{"agents":[{{"id":"a","url":"http://h",{extra}}}]}}"#
        ))
    };
    assert_eq!(field(r#""card_url":"ftp://h/card""#), "agents[0].card_url");
    assert_eq!(
        field(r#""card_url":"http://elsewhere/card""#),
        "agents[0].card_url"
    );
    assert!(
        AgentsConfig::parse(
            r#"{"agents":[{"id":"a","url":"http://h","card_url":"http://cards.example/c","allowed_origins":["http://cards.example"]}]}"#
        )
        .is_ok(),
        "a card on an allowed origin"
    );
    for credential in [
        "X-Api-Key",
        "x-auth-token",
        "X-Amz-Security-Token",
        "Cookie",
        "Authorization",
    ] {
        let json = format!(r#""headers":{{"{credential}":"v"}}"#);
        assert_eq!(
            field(&json),
            format!("agents[0].headers.{credential}"),
            "{credential}"
        );
    }
    assert_eq!(
        field(r#""headers":{"X-A":"1","x-a":"2"}"#),
        "agents[0].headers.x-a"
    );
    assert_eq!(
        field(r#""headers":{"Upgrade":"h2c"}"#),
        "agents[0].headers.Upgrade"
    );
    assert_eq!(
        field(r#""headers":{"X-S":"1"},"session_header":"x-s""#),
        "agents[0].session_header"
    );
    assert_eq!(field(r#""card_url":3"#), "agents[0].card_url");
    assert_eq!(
        field(r#""headers":{"Authorization":"Bearer x"}"#),
        "agents[0].headers.Authorization"
    );
    assert_eq!(
        field(r#""headers":{"bad name":"x"}"#),
        "agents[0].headers.bad name"
    );
    assert_eq!(
        field(
            r#""headers":{"x-ok":"line
break"}"#
        ),
        "agents[0].headers.x-ok"
    );
    assert_eq!(field(r#""headers":{"x-ok":""}"#), "agents[0].headers.x-ok");
    assert_eq!(field(r#""headers":["x"]"#), "agents[0].headers");
    assert_eq!(
        field(r#""session_header":"A2A-Version""#),
        "agents[0].session_header"
    );
    assert_eq!(
        field(r#""session_header":"two words""#),
        "agents[0].session_header"
    );
    assert_eq!(
        field(r#""extensions":["not a url"]"#),
        "agents[0].extensions[0]"
    );
    assert_eq!(
        field(r#""poll_max_interval":1"#),
        "agents[0].poll_max_interval"
    );
    assert_eq!(
        field(r#""poll_max_interval":86401"#),
        "agents[0].poll_max_interval"
    );
    assert_eq!(field(r#""updates":"sometimes""#), "agents[0].updates");
    assert_eq!(
        field(r#""file_delivery":"inline""#),
        "agents[0].file_delivery"
    );
    for wrong in [
        r#""preferred_binding":"grpc""#,
        r#""preferred_binding":null"#,
    ] {
        assert_eq!(field(wrong), "agents[0].preferred_binding");
    }
    let cfg = AgentsConfig::parse(
        r#"{"agents":[{"id":"a","url":"http://h","updates":"poll","headers":{"X-Api-Version":"2"},"session_header":"X-Session"}]}"#,
    )
    .expect("valid");
    let a = cfg.agent("a").expect("a");
    assert_eq!(a.updates, Updates::Poll);
    assert_eq!(a.headers, [("x-api-version".to_owned(), "2".to_owned())]);
    assert_eq!(a.session_header.as_deref(), Some("x-session"));
    assert_eq!(a.poll_max_interval, DEFAULT_POLL_MAX_INTERVAL);
}

/// An 80 KB entry made every later reply of its stand-ins fail (the row keeps a
/// copy): entries are bounded by field and in total, each refusal naming its field.
#[test]
fn entries_are_bounded_by_field_and_in_total() {
    let long = "x".repeat(MAX_URL_BYTES);
    let field = |extra: String| {
        AgentSpec::parse_entry(&format!(
            r#"{{"id":"a","url":"https://a.example",{extra}}}"#
        ))
        .expect_err("too big")
        .field
    };
    assert_eq!(
        field(format!(r#""card_url":"https://a.example/{long}""#)),
        "card_url"
    );
    assert_eq!(field(format!(r#""participant":"{long}""#)), "participant");
    assert_eq!(
        field(format!(r#""headers":{{"x-a":"{long}"}}"#)),
        "headers.x-a"
    );
    let many: Vec<String> = (0..17).map(|i| format!(r#""x-h{i}":"v""#)).collect();
    assert_eq!(
        field(format!(r#""headers":{{{}}}"#, many.join(","))),
        "headers"
    );
    let url = format!("https://a.example/{long}");
    assert_eq!(
        AgentSpec::parse_entry(&format!(r#"{{"id":"a","url":"{url}"}}"#))
            .expect_err("too long")
            .field,
        "url"
    );
    // Every field within its bound, the whole past 16 KiB.
    let headers: Vec<String> = (0..16)
        .map(|i| format!(r#""x-h{i}":"{}""#, "v".repeat(MAX_SHORT_BYTES)))
        .collect();
    let whole = AgentSpec::parse_entry(&format!(
        r#"{{"id":"a","url":"https://a.example","headers":{{{}}}}}"#,
        headers.join(",")
    ))
    .expect_err("too big in total");
    assert_eq!(whole.field, "agent entry", "{whole}");
    let in_document = AgentsConfig::parse(&format!(
        r#"{{"agents":[{{"id":"a","url":"https://a.example","headers":{{{}}}}}]}}"#,
        headers.join(",")
    ))
    .expect_err("too big in total");
    assert_eq!(in_document.field, "agents[0]", "{in_document}");
}

/// An entry bounds its stand-ins' lives and how long its agent may be unreachable, in
/// whole seconds; the bounds survive the copy a row keeps.
#[test]
fn an_entry_bounds_its_stand_ins_lives_in_whole_seconds() {
    let spec = AgentSpec::parse_entry(
        r#"{"id":"a","url":"https://a.example","max_duration":3600,"max_unreachable":600}"#,
    )
    .expect("valid");
    assert_eq!(spec.max_duration, Some(Duration::from_secs(3600)));
    assert_eq!(spec.max_unreachable, Duration::from_secs(600));
    let copy = AgentSpec::parse_entry(&spec.to_entry().to_string()).expect("its own copy");
    assert_eq!(copy, spec);
    let plain = AgentSpec::parse_entry(r#"{"id":"a","url":"https://a.example"}"#).expect("valid");
    assert_eq!(
        (plain.max_duration, plain.max_unreachable),
        (None, DEFAULT_MAX_UNREACHABLE)
    );
    for (field, bad) in [
        ("max_duration", "0"),
        ("max_duration", "1.5"),
        ("max_duration", "40000000"),
        ("max_unreachable", "-1"),
    ] {
        let refused = AgentSpec::parse_entry(&format!(
            r#"{{"id":"a","url":"https://a.example","{field}":{bad}}}"#
        ))
        .expect_err("refused");
        assert_eq!(refused.field, field, "{refused}");
    }
}

#[test]
fn one_second_is_the_least_interval() {
    assert!(
        AgentsConfig::parse(r#"{"agents":[{"id":"a","url":"http://h","follow_interval":1}]}"#)
            .is_ok()
    );
}

#[test]
fn an_agent_takes_uploaded_files_as_links_unless_its_entry_says_bytes() {
    let cfg = AgentsConfig::parse(
        r#"{"agents":[{"id":"a","url":"http://h"},{"id":"b","url":"http://h","file_delivery":"bytes"},{"id":"c","url":"http://h","file_delivery":"link"}]}"#,
    )
    .expect("valid");
    let delivery: Vec<FileDelivery> = cfg.agents.iter().map(|a| a.file_delivery).collect();
    assert_eq!(
        delivery,
        [FileDelivery::Link, FileDelivery::Bytes, FileDelivery::Link]
    );
    // The default is not written: an entry from before reads the same.
    assert!(cfg.agents[0].to_entry().get("file_delivery").is_none());
    assert_eq!(cfg.agents[1].to_entry()["file_delivery"], "bytes");
}

/// A pinned key is checked with the entry: a private key, which an entry would show in
/// plain text, or a key of no kind a card is signed with, is the entry's error.
#[test]
fn card_signing_errors_name_the_member() {
    for (signing, field) in [
        (r#"{}"#, "agents[0].card_signing"),
        (
            r#"{"jwks_url":"file:///etc/keys"}"#,
            "agents[0].card_signing.jwks_url",
        ),
        (
            r#"{"keys":[{"kty":"EC","crv":"P-256","x":"a","y":"b","d":"secret"}]}"#,
            "agents[0].card_signing.keys[0]",
        ),
        (
            r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#,
            "agents[0].card_signing.keys[0]",
        ),
    ] {
        let json = format!(
            r#"{{"agents":[{{"id":"a","url":"https://a.example","card_signing":{signing}}}]}}"#
        );
        assert_eq!(field_of(&json), field, "{signing}");
    }
}
