//! Agents that require credentials, on the stack: the official a2a-sdk server behind auth
//! middleware (`tests/sdk_agent/server.py --auth`, started by `scripts/test` on
//! 127.0.0.1:27161-27164) takes an API key (its card too), a bearer token (with an
//! extended card), a basic pair, or a JWT from a real OAuth2 server (`oauth2-mock-server`
//! on 27165, checked against its JWKS). Each secret is in LocalStack's Secrets Manager,
//! each agent added through the registry at run time. A conversation runs with each; a
//! rotated secret is used by the next call; an agent whose card requires what its entry
//! does not configure ends its first turn FAILED with one line saying what to set; an agent
//! on 27166 (the stack's AgentCore endpoint) checks SigV4 signatures made with the keys
//! STS gave for a `standin-agent-*` role the entry names, and refuses the functions' own;
//! entries that would have the functions call an AWS API are refused; and no secret,
//! token or key the agents heard appears in a table, an execution's history, a log or a
//! note. And an agent that asks the user to sign in mid-task (AUTH_REQUIRED) is told to
//! the parent with its link, watched on until the user has signed in, or ended at the
//! deadline.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;

use serde_json::{Value, json};
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{
    AUTH_REQUIRED, COMPLETED, FAILED, INPUT_REQUIRED, SOON, WORKING, assert_ended_at_deadline,
    reply, start_as, start_on_entry, states, wait_final, wait_parked,
};
use standin_integration::stack::{Stack, unique};

/// The stack under test (`STANDIN_E2E_STACK`, default `standin`).
static STACK: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(standin_integration::stack::under_test);
/// Where the stack under test may read secrets: `standin/<stack>/`.
static PREFIX: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("standin/{}/", *STACK));
/// What the stand-in's OAuth2 client secret is (oauth2-mock-server takes any).
const OAUTH2_CLIENT_SECRET: &str = "client-secret-of-the-stand-in";
/// The role the SigV4 agents' entries name (the stack's pattern is `standin-agent-*`).
const AGENT_ROLE: &str = "arn:aws:iam::000000000000:role/standin-agent-sigv4";

/// Every file under the role-keys folder whose name says it holds a secret (`<key id>`,
/// `<key id>.token`), in `part` (`assumed` by STS, or the `functions`' own).
fn role_keys(part: &str) -> Vec<(String, String)> {
    let dir = PathBuf::from(std::env::var("STANDIN_TEST_ROLE_KEYS_DIR").unwrap()).join(part);
    let Ok(files) = std::fs::read_dir(dir) else {
        return vec![];
    };
    files
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_none_or(|e| e == "token"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// Where `scripts/test` keeps what each auth agent accepts (and what it heard).
fn auth_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("STANDIN_AUTH_DIR").expect("STANDIN_AUTH_DIR (set by scripts/test)"),
    )
}

fn accepted(scheme: &str) -> String {
    std::fs::read_to_string(auth_dir().join(scheme))
        .unwrap()
        .trim()
        .to_owned()
}

fn heard(scheme: &str) -> Vec<String> {
    std::fs::read_to_string(auth_dir().join(format!("{scheme}.heard")))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Replaces what an agent accepts at once (the agent reads the file on every request).
fn replace_file(scheme: &str, value: &str) {
    let next = auth_dir().join(format!("{scheme}.next"));
    std::fs::write(&next, value).unwrap();
    std::fs::rename(next, auth_dir().join(scheme)).unwrap();
}

async fn put_secret(stack: &Stack, name: &str, value: &str) {
    let secrets = aws_sdk_secretsmanager::Client::new(&stack.config);
    let created = secrets
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await;
    if created.is_err() {
        secrets
            .put_secret_value()
            .secret_id(name)
            .secret_string(value)
            .send()
            .await
            .expect("the secret is written");
    }
}

/// Adds agent `id` at `port` with `auth` through the registry.
async fn put_agent(stack: &Stack, id: &str, port: u16, extra: Value) {
    let mut entry = json!({"url": format!("http://127.0.0.1:{port}"), "follow_interval": 1});
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        entry.extend(extra.clone());
    }
    let (status, body) = stack
        .control("PUT", &format!("/agents/{id}"), Some(entry))
        .await;
    assert_eq!(status, 200, "{body}");
}

/// The widget conversation: asked, answered "blue", worked on, completed.
async fn converse(stack: &Stack, agent: &str, between: impl AsyncFnOnce()) -> String {
    let id = unique(agent);
    start_as(stack, agent, &id).await;
    let notes = stack.wait_notes(&id, 1, SOON).await;
    assert_eq!(
        (notes[0]["state"].as_str(), notes[0]["text"].as_str()),
        (
            Some(INPUT_REQUIRED),
            Some("What colour should the widget be?")
        ),
        "{agent}: {notes:#?}"
    );
    between().await;
    assert_eq!(reply(stack, &id, "blue").await, 202);
    let notes = wait_final(stack, &id).await;
    assert_eq!(
        states(&notes),
        [
            (1, INPUT_REQUIRED.into(), false),
            (2, WORKING.into(), false),
            (3, COMPLETED.into(), true)
        ],
        "{agent}: {notes:#?}"
    );
    assert_eq!(notes[2]["text"], "Your blue widget is ready.");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_runs_with_each_scheme_and_no_secret_is_left_anywhere() {
    let stack = Stack::load(&STACK).await;
    let run = unique("auth");
    let secret = |scheme: &str| format!("{}{run}/{scheme}", *PREFIX);
    let key = (
        "api_key",
        27161,
        json!({"type": "api_key", "in": "header", "name": "X-API-Key", "secret": secret("api_key")}),
    );
    let basic = (
        "basic",
        27163,
        json!({"type": "basic", "secret": secret("basic")}),
    );
    let oauth = (
        "oauth2",
        27164,
        json!({"type": "oauth2_client_credentials", "token_url": "http://127.0.0.1:27165/token",
               "client_id": "stand-in", "secret": secret("oauth2"), "scopes": ["widgets"]}),
    );
    let sigv4_auth =
        json!({"type": "sigv4", "role_arn": AGENT_ROLE, "external_id": "standin-tests"});
    let sigv4 = ("sigv4", 27166, sigv4_auth.clone());
    let mtls = (
        "mtls",
        27167,
        json!({"type": "mtls", "secret": secret("mtls")}),
    );
    for (scheme, port, auth) in [&key, &basic, &oauth, &sigv4, &mtls] {
        match *scheme {
            "sigv4" => {}
            "oauth2" => put_secret(&stack, &secret(scheme), OAUTH2_CLIENT_SECRET).await,
            _ => put_secret(&stack, &secret(scheme), &accepted(scheme)).await,
        }
        let mut extra = json!({"auth": auth});
        if *scheme == "mtls" {
            extra["url"] = json!(format!("https://127.0.0.1:{port}"));
        }
        put_agent(&stack, &format!("{run}-{scheme}"), *port, extra).await;
    }
    // The same AgentCore agent followed: every function that calls agents signs.
    put_agent(
        &stack,
        &format!("{run}-sigv4-follow"),
        27166,
        json!({"auth": sigv4_auth, "updates": "follow"}),
    )
    .await;
    // The API key agent pushes (register, wake and end call it); the basic one cannot
    // push (the stand-in follows it); the OAuth2, SigV4 and mTLS ones push.
    let agents: Vec<String> = [
        "api_key",
        "basic",
        "oauth2",
        "sigv4",
        "mtls",
        "sigv4-follow",
    ]
    .iter()
    .map(|s| format!("{run}-{s}"))
    .collect();
    let conversations = futures_util::future::join_all(
        agents
            .iter()
            .map(|agent| converse(&stack, agent, async || {})),
    )
    .await;
    assert_eq!(conversations.len(), 6);
    let signatures = heard("sigv4");
    let assumed: Vec<String> = role_keys("assumed")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let own: Vec<String> = role_keys("functions")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert!(!own.is_empty(), "the functions' own keys are known");
    for signature in &signatures {
        let key_id = signature
            .strip_prefix("AWS4-HMAC-SHA256 Credential=")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_default();
        assert!(
            assumed.iter().any(|k| k == key_id),
            "signed with a key STS gave for the entry's role: {signature}"
        );
        assert!(
            !own.iter().any(|k| k == key_id),
            "never with the functions' own role: {signature}"
        );
    }
    assert!(
        !signatures.is_empty(),
        "the SigV4 agent heard signatures, and let in only those it checked"
    );
    let followed_sigv4 = stack.row_status(&conversations[5]).await;
    assert_eq!(followed_sigv4["watch"], "follow", "{followed_sigv4}");
    let followed = stack.row_status(&conversations[1]).await;
    assert_eq!(followed["watch"], "follow", "{followed}");
    assert!(
        !heard("oauth2").is_empty(),
        "the OAuth2 agent was called with tokens"
    );

    // Nothing we were given or fetched is anywhere the token scans look.
    let mut secrets: Vec<String> = ["api_key", "basic", "bearer"]
        .iter()
        .map(|s| accepted(s))
        .collect();
    secrets.push(OAUTH2_CLIENT_SECRET.into());
    for scheme in ["api_key", "basic", "bearer", "oauth2"] {
        secrets.extend(heard(scheme));
    }
    // The client certificate's key, line by line (PEM splits it).
    secrets.extend(
        accepted("mtls")
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::to_owned),
    );
    // The functions' own role keys, and the keys and session tokens of the agents' role.
    for part in ["functions", "assumed"] {
        secrets.extend(role_keys(part).into_iter().map(|(_, secret)| secret));
    }
    secrets.retain(|s| s.len() >= 8);
    // Each place's read is timed: the run prints where a slow scan spends its time.
    let mut places = vec![];
    let mut read = |place: &'static str, text: String, since: std::time::Instant| {
        println!("{place} read in {} ms", since.elapsed().as_millis());
        places.push((place, text));
    };
    let t = std::time::Instant::now();
    read("rows", stack.table_text("TableName").await.unwrap(), t);
    let t = std::time::Instant::now();
    read(
        "note log",
        stack.table_text("NotesTableName").await.unwrap(),
        t,
    );
    let t = std::time::Instant::now();
    read(
        "agent registry",
        stack.table_text("AgentsTableName").await.unwrap(),
        t,
    );
    let t = std::time::Instant::now();
    read(
        "execution history",
        stack.history_text(|_| true).await.unwrap(),
        t,
    );
    let t = std::time::Instant::now();
    read(
        "logs",
        stack.log_text(&stack.function_logs(), None).await.unwrap(),
        t,
    );
    let t = std::time::Instant::now();
    read("parent notes", stack.all_note_bodies().join("\n"), t);
    let t = std::time::Instant::now();
    read("artifacts bucket", stack.bucket_text().await.unwrap(), t);
    // The basic pair's password, and a token's base64 in a Basic header, as well.
    let pair: Value = serde_json::from_str(&accepted("basic")).unwrap();
    secrets.push(pair["password"].as_str().unwrap().to_owned());
    // Every secret in one pass over each place: the places hold megabytes, and a search
    // per secret took minutes in a test build.
    let scan = aho_corasick::AhoCorasick::new(&secrets).unwrap();
    for (place, text) in &places {
        assert!(!text.is_empty(), "{place} read");
        assert!(
            scan.find(text.as_str()).is_none(),
            "a credential leaked into the {place}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_rotated_in_secrets_manager_is_used_by_the_next_call() {
    let stack = Stack::load(&STACK).await;
    let run = unique("rot");
    let name = format!("{}{run}/bearer", *PREFIX);
    put_secret(&stack, &name, &accepted("bearer")).await;
    let agent = format!("{run}-bearer");
    put_agent(
        &stack,
        &agent,
        27162,
        json!({"auth": {"type": "bearer", "secret": name}}),
    )
    .await;
    let rotated = format!("rotated-{}", unique("t").replace('-', ""));
    let before = accepted("bearer");
    converse(&stack, &agent, async || {
        // The agent now takes only the new token, and the secret holds it: the turn's
        // cached old one is refused, and the secret read afresh.
        put_secret(&stack, &name, &rotated).await;
        replace_file("bearer", &rotated);
    })
    .await;
    let heard = heard("bearer");
    assert!(heard.contains(&before), "the first turn used the old token");
    assert!(heard.contains(&rotated), "the reply used the rotated one");
    // The other test's scans look for the agents' current values: put the old one back.
    put_secret(&stack, &name, &before).await;
    replace_file("bearer", &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_whose_card_requires_what_its_entry_lacks_fails_its_first_turn_saying_what_to_set()
{
    let stack = Stack::load(&STACK).await;
    let run = unique("noauth");
    // The bearer agent's card is public and names its scheme; the API key agent refuses
    // even its card.
    for (agent, port, expect) in [
        (
            format!("{run}-card"),
            27162,
            vec![
                "requires the card's security scheme \"bearer\"",
                "its auth (none) does not meet",
                "set auth.type to bearer,",
            ],
        ),
        (
            format!("{run}-401"),
            27161,
            vec!["requires credentials (HTTP 401)", "configure its auth"],
        ),
    ] {
        put_agent(&stack, &agent, port, json!({})).await;
        let id = unique(&agent);
        start_as(&stack, &agent, &id).await;
        let notes = wait_final(&stack, &id).await;
        let last = notes.last().unwrap();
        assert_eq!(last["state"], FAILED, "{notes:#?}");
        let text = last["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("{agent:?}")),
            "the agent is named: {text}"
        );
        for part in expect {
            assert!(text.contains(part), "{part:?} in {text:?}");
        }
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}

#[tokio::test]
async fn an_entry_naming_a_secret_outside_the_prefix_is_refused_naming_the_field() {
    let stack = Stack::load(&STACK).await;
    let (status, body) = stack
        .control(
            "PUT",
            &format!("/agents/{}", unique("outside")),
            Some(json!({"url": "http://127.0.0.1:27161",
                        "auth": {"type": "bearer", "secret": "someone-elses/secret"}})),
        )
        .await;
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("auth.secret")),
        "{body}"
    );
    let (status, body) = stack
        .control(
            "PUT",
            &format!("/agents/{}", unique("badauth")),
            Some(json!({"url": "http://127.0.0.1:27161",
                        "auth": {"type": "oauth2_client_credentials", "token_url": "http://login.example/token",
                                 "client_id": "c", "secret": format!("{}x", *PREFIX)}})),
        )
        .await;
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("auth.token_url")),
        "{body}"
    );
}

/// The confused deputy, through the deployed control API: entries that would have the
/// functions sign a GET to SQS or S3 with a role, or read a card off SQS, are refused
/// naming the field; so is a role outside `standin-agent-*` and the stack's own AWS
/// endpoint. Nothing is stored.
#[tokio::test]
async fn entries_that_would_make_the_functions_call_an_aws_api_are_refused() {
    let stack = Stack::load(&STACK).await;
    let queue = "https://sqs.us-east-1.amazonaws.com/000000000000/standin-parent.fifo";
    for (entry, field) in [
        (
            json!({"url": "https://sqs.us-east-1.amazonaws.com",
                   "card_url": format!("{queue}?Action=SendMessage&MessageBody=forged"),
                   "auth": {"type": "sigv4", "service": "sqs", "role_arn": AGENT_ROLE}}),
            "auth.service",
        ),
        (
            json!({"url": "https://s3.us-east-1.amazonaws.com",
                   "auth": {"type": "sigv4", "service": "s3", "role_arn": AGENT_ROLE}}),
            "auth.service",
        ),
        (
            json!({"url": "https://sqs.us-east-1.amazonaws.com",
                   "card_url": format!("{queue}?Action=ReceiveMessage&VisibilityTimeout=43200")}),
            "url",
        ),
        (
            json!({"url": "http://127.0.0.1:27161",
                   "card_url": format!("{queue}?Action=SendMessage"),
                   "allowed_origins": ["https://sqs.us-east-1.amazonaws.com"]}),
            "card_url",
        ),
        (
            json!({"url": "http://127.0.0.1:27166",
                   "auth": {"type": "sigv4", "role_arn": "arn:aws:iam::000000000000:role/admin"}}),
            "auth.role_arn",
        ),
        (
            json!({"url": "http://127.0.0.1:27161",
                   "auth": {"type": "sigv4", "role_arn": AGENT_ROLE}}),
            "url",
        ),
        // The AWS endpoint the stack's functions call (LocalStack's here).
        (
            json!({"url": "http://127.0.0.1:4566",
                   "card_url": "http://127.0.0.1:4566/000000000000/standin-parent.fifo?Action=SendMessage"}),
            "url",
        ),
    ] {
        let id = unique("deputy");
        let (status, body) = stack
            .control("PUT", &format!("/agents/{id}"), Some(entry.clone()))
            .await;
        assert_eq!(
            (status, body["field"].as_str()),
            (400, Some(field)),
            "{entry}: {body}"
        );
        let (status, _) = stack.control("GET", &format!("/agents/{id}"), None).await;
        assert_eq!(status, 404, "{entry} was not stored");
    }
}

/// The agent needs the user to sign in mid-task (A2A's AUTH_REQUIRED): the parent's note
/// carries what the agent sent (its text, the sign-in link, the scheme as data), the
/// stand-in keeps watching, and once the user has signed in out of band, at that link,
/// the agent moves on and the stand-in hears it through to the end.
#[tokio::test]
async fn auth_required_reaches_the_parent_and_the_task_goes_on_after_sign_in() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27186, Behaviour::default()).await;
    agent.script_turn(&[(WORKING, "Looking for a free room")]);
    let entry = json!({"url": agent.url, "follow_interval": 1});
    let (_, id) = start_on_entry(&stack, "signin", entry, json!({})).await;
    wait_parked(&stack, &id, "push").await;
    let remote = agent.task_ids().pop().unwrap();
    let link = agent
        .ask_for_authorization(&remote, "Sign in to your calendar so I can book the room")
        .await;
    let notes = stack.wait_notes(&id, 2, SOON).await;
    let asked = &notes[1];
    assert_eq!(asked["state"], AUTH_REQUIRED, "{notes:#?}");
    assert_eq!(asked["final"], false);
    assert_eq!(
        asked["text"],
        "Sign in to your calendar so I can book the room"
    );
    assert_eq!(asked["parts"][0]["kind"], "url", "{asked:#}");
    assert_eq!(asked["parts"][0]["url"], link.as_str());
    assert_eq!(asked["parts"][1]["data"]["scheme"], "oauth2", "{asked:#}");
    // Still watched: the park is live, and nothing ends it but the agent.
    wait_parked(&stack, &id, "push").await;
    // The user signs in, out of band, where the note sent them.
    let signed_in = reqwest::get(asked["parts"][0]["url"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 200);
    let notes = stack.wait_notes(&id, 3, SOON).await;
    assert_eq!(
        (notes[2]["state"].as_str(), notes[2]["text"].as_str()),
        (Some(WORKING), Some("Signed in; booking the room")),
        "{notes:#?}"
    );
    agent
        .change(&remote, COMPLETED, "The room is booked.", false)
        .await;
    let notes = wait_final(&stack, &id).await;
    assert_eq!(
        states(&notes),
        [
            (1, WORKING.into(), false),
            (2, AUTH_REQUIRED.into(), false),
            (3, WORKING.into(), false),
            (4, COMPLETED.into(), true)
        ]
    );
    stack.wait_execution(&id, "SUCCEEDED", SOON).await;
}

/// A sign-in that never comes does not hold a stand-in for ever: its deadline ends it,
/// the remote task cancelled and the parent told why.
#[tokio::test]
async fn auth_required_never_answered_ends_at_the_deadline() {
    let stack = Stack::load(&STACK).await;
    let agent = TestAgent::start(27187, Behaviour::default()).await;
    agent.script_turn(&[(AUTH_REQUIRED, "Sign in first")]);
    let entry = json!({"url": agent.url});
    let (_, id) = start_on_entry(&stack, "nosignin", entry, json!({"deadline_secs": 8})).await;
    let notes = assert_ended_at_deadline(&stack, &id, &agent).await;
    assert_eq!(notes[0]["state"], AUTH_REQUIRED, "{notes:#?}");
}
