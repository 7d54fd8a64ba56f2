#![allow(clippy::expect_used, clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

const ROLE: &str = "arn:aws:iam::123456789012:role/standin-agent-billing";

/// A deployment in us-east-1 reading secrets under `standin/prod/`, assuming roles
/// `standin-agent-*`, calling AWS through a proxy, with push API `pushapi1`.
fn rules() -> EntryRules {
    EntryRules {
        secret_prefix: "standin/prod/".into(),
        role_pattern: Some("arn:aws:iam::123456789012:role/standin-agent-*".into()),
        region: Some("us-east-1".into()),
        agentcore_endpoint: None,
        own_origins: vec!["http://127.0.0.1:4566".into()],
        own_api_ids: vec!["pushapi1".into(), "ctlapi22".into()],
    }
}

fn entry(value: Value) -> AgentSpec {
    let mut value = value;
    value["id"] = json!("a");
    AgentSpec::parse_entry(&value.to_string()).expect("the entry reads")
}

fn refused(value: Value) -> String {
    rules().check("", &entry(value)).expect_err("refused").field
}

/// The confused deputy of the review, and its cousins: an entry on an AWS API, with or
/// without SigV4, is refused naming the field.
#[test]
fn an_entry_on_an_aws_service_endpoint_is_refused_whatever_its_auth() {
    let queue = "https://sqs.us-east-1.amazonaws.com/123456789012/standin-parent.fifo";
    let send = format!("{queue}?Action=SendMessage&MessageBody=%7B%22final%22%3Atrue%7D");
    let sigv4 = json!({"type": "sigv4", "role_arn": ROLE});
    assert_eq!(
        refused(
            json!({"url": "https://sqs.us-east-1.amazonaws.com", "card_url": send, "auth": sigv4})
        ),
        "url"
    );
    assert_eq!(
        refused(json!({"url": "https://sqs.us-east-1.amazonaws.com", "card_url": send})),
        "url"
    );
    assert_eq!(
        refused(
            json!({"url": "https://agent.example", "card_url": send, "allowed_origins": ["https://sqs.us-east-1.amazonaws.com"]})
        ),
        "card_url"
    );
    for url in [
        "https://s3.amazonaws.com/bucket/card.json",
        "https://bucket.s3.eu-west-1.amazonaws.com",
        "https://sts.amazonaws.com",
        "https://states.us-east-1.amazonaws.com",
        "https://dynamodb.cn-north-1.amazonaws.com.cn",
        "https://sqs.us-east-1.api.aws",
        "https://bedrock-agentcore-control.us-east-1.amazonaws.com",
        "https://SQS.US-EAST-1.AMAZONAWS.COM.",
        "https://elb.s3.amazonaws.com/card.json",
        "https://execute-api.s3.us-east-1.amazonaws.com/card.json",
        "https://sqs.eu-central-1.amazonaws.eu",
    ] {
        assert_eq!(refused(json!({"url": url})), "url", "{url}");
        assert_eq!(
            refused(json!({"url": url, "auth": {"type": "sigv4", "role_arn": ROLE}})),
            "url",
            "{url} with SigV4"
        );
    }
    assert_eq!(
        refused(
            json!({"url": "https://agent.example", "auth": {"type": "oauth2_client_credentials",
            "token_url": "https://sts.amazonaws.com/token", "client_id": "c", "secret": "standin/prod/o"}})
        ),
        "auth.token_url"
    );
    assert_eq!(
        refused(json!({"url": "https://agent.example",
            "card_signing": {"jwks_url": "https://sts.amazonaws.com/keys"}})),
        "card_signing.jwks_url"
    );
}

#[test]
fn the_stacks_own_places_are_refused() {
    assert_eq!(
        refused(json!({"url": "https://pushapi1.execute-api.us-east-1.amazonaws.com/Prod"})),
        "url"
    );
    assert_eq!(
        refused(json!({"url": "https://ctlapi22.execute-api.us-east-1.amazonaws.com"})),
        "url"
    );
    let own = rules()
        .check(
            "",
            &entry(json!({"url": "http://127.0.0.1:4566/_aws/execute-api/pushapi1/Prod"})),
        )
        .expect_err("the AWS endpoint the functions call");
    assert!(own.problem.contains("calls AWS"), "{own}");
}

#[test]
fn customers_endpoints_under_aws_names_and_agentcore_stay_reachable() {
    for url in [
        "https://abc123.execute-api.us-east-1.amazonaws.com/Prod",
        "https://agents-123.us-east-1.elb.amazonaws.com",
        "https://ec2-3-80-1-2.compute-1.amazonaws.com:8443",
        "https://agent.example",
        "http://127.0.0.1:27166",
        "https://abc.lambda-url.us-east-1.on.aws",
        // AgentCore Runtime with its inbound JWT auth: a bearer token, no signature.
        "https://bedrock-agentcore.us-west-2.amazonaws.com",
    ] {
        assert_eq!(
            rules().check("", &entry(json!({"url": url}))),
            Ok(()),
            "{url}"
        );
    }
}

#[test]
fn sigv4_reaches_agentcore_runtime_only_as_a_role_the_pattern_allows() {
    let agentcore = "https://bedrock-agentcore.us-east-1.amazonaws.com/runtimes/arn%3Aaws%3Abedrock-agentcore%3Aus-east-1%3A123456789012%3Aruntime%2Fa/invocations";
    let sigv4 = |extra: Value| {
        let mut auth = json!({"type": "sigv4", "role_arn": ROLE});
        auth.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        auth
    };
    assert_eq!(
        rules().check(
            "",
            &entry(json!({"url": agentcore, "auth": sigv4(json!({}))}))
        ),
        Ok(())
    );
    assert_eq!(
        rules().check(
            "",
            &entry(
                json!({"url": "https://bedrock-agentcore.eu-west-1.amazonaws.com/runtimes/x/invocations",
                "auth": sigv4(json!({"region": "eu-west-1"}))})
            )
        ),
        Ok(()),
        "the entry's region names the host"
    );
    // Signed calls go nowhere else: not an agent of the internet, not another region.
    assert_eq!(
        refused(json!({"url": "https://agent.example", "auth": sigv4(json!({}))})),
        "url"
    );
    assert_eq!(
        refused(
            json!({"url": "https://bedrock-agentcore.eu-west-1.amazonaws.com", "auth": sigv4(json!({}))})
        ),
        "url"
    );
    assert_eq!(
        refused(
            json!({"url": agentcore, "allowed_origins": ["https://agent.example"], "auth": sigv4(json!({}))})
        ),
        "allowed_origins[0]"
    );
    let outside = refused(json!({"url": agentcore, "auth": {"type": "sigv4",
        "role_arn": "arn:aws:iam::123456789012:role/admin"}}));
    assert_eq!(outside, "auth.role_arn");
    let mut no_region = rules();
    no_region.region = None;
    assert_eq!(
        no_region
            .check(
                "",
                &entry(json!({"url": agentcore, "auth": sigv4(json!({}))}))
            )
            .expect_err("no region")
            .field,
        "auth.region"
    );
    // A deployment's own AgentCore endpoint (a VPC endpoint's, a test's) replaces AWS's.
    let mut local = rules();
    local.agentcore_endpoint = Some("http://127.0.0.1:27166".into());
    assert_eq!(
        local.check(
            "",
            &entry(json!({"url": "http://127.0.0.1:27166", "auth": sigv4(json!({}))}))
        ),
        Ok(())
    );
    assert_eq!(
        local
            .check(
                "",
                &entry(json!({"url": agentcore, "auth": sigv4(json!({}))}))
            )
            .expect_err("elsewhere")
            .field,
        "url"
    );
}

#[test]
fn secrets_outside_the_prefix_are_refused_under_the_entrys_path() {
    let rules = rules();
    let spec = entry(
        json!({"url": "https://agent.example", "auth": {"type": "bearer", "secret": "other/b"}}),
    );
    assert_eq!(
        rules.check("agents[3]", &spec).expect_err("refused").field,
        "agents[3].auth.secret"
    );
}

#[test]
fn iam_wildcards_match_as_iam_does() {
    let pattern = "arn:aws:iam::123456789012:role/standin-agent-*";
    assert!(glob_matches(pattern, ROLE));
    assert!(glob_matches(
        pattern,
        "arn:aws:iam::123456789012:role/standin-agent-"
    ));
    assert!(!glob_matches(
        pattern,
        "arn:aws:iam::123456789012:role/admin"
    ));
    assert!(!glob_matches(
        pattern,
        "arn:aws:iam::999999999999:role/standin-agent-a"
    ));
    assert!(glob_matches(
        "arn:aws:iam::*:role/a?c",
        "arn:aws:iam::1:role/abc"
    ));
    assert!(!glob_matches(
        "arn:aws:iam::*:role/a?c",
        "arn:aws:iam::1:role/abbc"
    ));
    assert!(glob_matches("*", ""));
    assert!(glob_matches("a*b*c", "a-x-b-y-c"));
    assert!(!glob_matches("a*b*c", "a-x-c-y-b"));
}
