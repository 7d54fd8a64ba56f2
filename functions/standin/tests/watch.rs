//! The watch choice (every combination of card, `updates` and registration outcome, with
//! every fallback) and push registration.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use standin::agents::Updates;
use standin::digest::TokenDigest;
use standin::row::WatchMode;
use standin::watch::{WatchPlan, config_id, plan_watch, register};
use standin_remote::RemoteError;
use standin_remote::fake::FakeAgent;

const BASE: &str = "https://api.example.com/Prod";

#[test]
fn the_table() {
    let rows = [
        (None, true, Some(BASE), WatchPlan::Off),
        (Some(Updates::Off), true, Some(BASE), WatchPlan::Off),
        (Some(Updates::Follow), true, Some(BASE), WatchPlan::Follow),
        (Some(Updates::Auto), true, Some(BASE), WatchPlan::TryPush),
        (Some(Updates::Auto), false, Some(BASE), WatchPlan::Follow),
        (Some(Updates::Auto), true, None, WatchPlan::Follow),
    ];
    for (updates, card_push, base, want) in rows {
        assert_eq!(
            plan_watch(updates, card_push, base),
            want,
            "{updates:?} push={card_push} base={base:?}"
        );
    }
}

#[tokio::test]
async fn push_registration_hands_the_token_to_the_agent_and_keeps_only_its_digest() {
    let agent = FakeAgent::new(true);
    let watch = register(
        &agent,
        WatchPlan::TryPush,
        "local/1?x",
        "remote-1",
        Some(BASE),
    )
    .await;
    assert_eq!(watch.mode, WatchMode::Push);
    assert_eq!(
        watch.config_id.as_deref(),
        Some(config_id("local/1?x").as_str())
    );
    let configs = agent.configs();
    let config = &configs[0];
    assert_eq!(
        Some(config.config_id.clone()),
        watch.config_id,
        "our own config id"
    );
    assert_eq!(config.remote_task_id, "remote-1");
    assert_eq!(config.url, format!("{BASE}/a2a/push/local%2F1%3Fx"));
    let token = config.token.clone();
    assert!(!token.is_empty(), "token sent");
    assert_eq!(watch.token_digest, Some(TokenDigest::of(&token)));
    let stored = serde_json::to_string(&watch).expect("json");
    assert!(
        !stored.contains(&token),
        "the watch the row stores holds no token"
    );
}

#[tokio::test]
async fn every_registration_failure_falls_back_to_follow() {
    let refusals = [
        RemoteError::PushNotSupported("no".into()),
        RemoteError::TaskNotFound("gone".into()),
        RemoteError::Transport("refused".into()),
        RemoteError::Rpc {
            code: -32602,
            message: "Invalid push notification URL".into(),
        },
    ];
    for refusal in refusals {
        let agent = FakeAgent::new(true);
        agent.refuse_push_registration(refusal.clone());
        let watch = register(&agent, WatchPlan::TryPush, "l", "r", Some(BASE)).await;
        assert_eq!(
            (watch.mode, watch.token_digest),
            (WatchMode::Follow, None),
            "{refusal}"
        );
        assert_eq!(
            agent.count("CreateTaskPushNotificationConfig"),
            1,
            "one attempt"
        );
    }
    let agent = FakeAgent::new(true);
    let bad_base = register(&agent, WatchPlan::TryPush, "l", "r", Some("ftp://nope")).await;
    assert_eq!(bad_base.mode, WatchMode::Follow);
    assert!(
        agent.calls().is_empty(),
        "no call with an unusable base URL"
    );
}

#[tokio::test]
async fn follow_and_off_make_no_calls() {
    let agent = FakeAgent::new(true);
    assert_eq!(
        register(&agent, WatchPlan::Follow, "l", "r", Some(BASE))
            .await
            .mode,
        WatchMode::Follow
    );
    assert_eq!(
        register(&agent, WatchPlan::Off, "l", "r", Some(BASE))
            .await
            .mode,
        WatchMode::Off
    );
    assert!(agent.calls().is_empty());
}
