//! The parent's webhooks on a stand-in: set (checked like an agent's address, queued for
//! the notes already written), listed without their secrets, bounded, removed.

use super::*;
use standin::outbox::Teller;
use standin::row::Guard;

const HOOK: &str = "http://127.0.0.1:9/hook";

async fn with_notes(w: &World, id: &str, notes: usize) {
    w.store.create(&Row::new(id, "writer")).await.unwrap();
    let teller = Teller::new(&w.store);
    for i in 0..notes {
        teller
            .tell(
                id,
                None,
                &remote_out("r-1", TaskState::Working, &format!("step {i}")),
                &Guard::Open,
            )
            .await
            .unwrap();
    }
}

async fn set(w: &World, id: &str, hook: &str, body: Value) -> ApiAnswer {
    w.call(Call::WebhookSet {
        task_id: id,
        webhook_id: hook,
        body: &body,
    })
    .await
}

#[tokio::test]
async fn a_webhook_set_is_listed_without_its_secrets_and_queued_for_the_notes_before_it() {
    let w = World::new();
    with_notes(&w, "t", 2).await;
    let answer = set(
        &w,
        "t",
        "parent-1",
        json!({"url": HOOK, "token": "secret-token", "authorization": "Bearer abc", "after": 0}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["through"], 0);
    assert_eq!(answer.body["has_token"], true);
    let listed = w.call(Call::WebhookList { task_id: "t" }).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["webhooks"][0]["webhook_id"], "parent-1");
    let shown = format!("{}{}", answer.body, listed.body);
    assert!(
        !shown.contains("secret-token") && !shown.contains("abc"),
        "{shown}"
    );
    let queued = w.deliveries.queued.lock().unwrap().clone();
    assert_eq!(queued.len(), 1, "notes 1 and 2 are due: {queued:?}");
    assert_eq!(queued[0].0, "t");
    // The row keeps the token for the deliveries.
    let row = w.store.get("t").await.unwrap().unwrap();
    assert_eq!(
        row.webhooks["parent-1"].token.as_ref().unwrap().expose(),
        "secret-token"
    );
}

#[tokio::test]
async fn a_webhook_set_without_after_starts_from_now_and_is_not_queued() {
    let w = World::new();
    with_notes(&w, "t", 3).await;
    let answer = set(&w, "t", "w", json!({"url": HOOK})).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["through"], 3, "the notes from now on");
    assert!(w.deliveries.queued.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_webhook_is_refused_where_an_agent_would_be_and_for_a_bad_field() {
    let w = World::new();
    with_notes(&w, "t", 0).await;
    for (body, field) in [
        (json!({}), "url: is required"),
        (json!({"url": "ftp://x/"}), "url: must be an http(s) URL"),
        (
            json!({"url": "https://sqs.us-east-1.amazonaws.com/1/q"}),
            "AWS service endpoint",
        ),
        (
            json!({"url": "http://169.254.169.254/latest"}),
            "link-local",
        ),
        (
            json!({"url": HOOK, "token": "line\nbreak"}),
            "token: must be printable ASCII",
        ),
        (
            json!({"url": HOOK, "after": -1}),
            "after: must be a whole number",
        ),
    ] {
        let answer = set(&w, "t", "w", body.clone()).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.body);
        assert!(error(&answer).contains(field), "{body}: {}", error(&answer));
    }
    let answer = set(&w, "t", "no spaces", json!({"url": HOOK})).await;
    assert_eq!(answer.status, 400);
    assert!(
        error(&answer).starts_with("webhook_id:"),
        "{}",
        error(&answer)
    );
    let answer = set(&w, "nobody", "w", json!({"url": HOOK})).await;
    assert_eq!(answer.status, 404);
}

#[tokio::test]
async fn a_stand_in_takes_four_webhooks_and_one_removed_is_gone() {
    let w = World::new();
    with_notes(&w, "t", 0).await;
    for i in 0..4 {
        assert_eq!(
            set(&w, "t", &format!("w{i}"), json!({"url": HOOK}))
                .await
                .status,
            200
        );
    }
    let fifth = set(&w, "t", "w4", json!({"url": HOOK})).await;
    assert_eq!(fifth.status, 409);
    assert!(
        error(&fifth).contains("4 webhooks already"),
        "{}",
        error(&fifth)
    );
    let removed = w
        .call(Call::WebhookDelete {
            task_id: "t",
            webhook_id: "w0",
        })
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    let again = w
        .call(Call::WebhookDelete {
            task_id: "t",
            webhook_id: "w0",
        })
        .await;
    assert_eq!(again.status, 404);
    assert_eq!(
        set(&w, "t", "w4", json!({"url": HOOK})).await.status,
        200,
        "room again"
    );
}

#[tokio::test]
async fn a_start_s_webhook_is_checked_before_it_starts_and_hears_every_note() {
    let w = World::new();
    let refused = w
        .start(
            json!({"agent": "writer", "message": "hi", "task_id": "bad-hook",
                      "webhook": {"url": "https://sqs.us-east-1.amazonaws.com/1/q"}}),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        error(&refused).starts_with("webhook.url:"),
        "{}",
        error(&refused)
    );
    assert!(
        w.store.get("bad-hook").await.unwrap().is_none(),
        "nothing started"
    );
    let started = w
        .start(
            json!({"agent": "writer", "message": "hi", "task_id": "hooked",
                      "webhook": {"url": HOOK, "token": "tok"}}),
        )
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let row = w.store.get("hooked").await.unwrap().unwrap();
    let hook = &row.webhooks["hooked"];
    assert_eq!(
        (hook.url.as_str(), hook.through),
        (HOOK, 0),
        "its id the stand-in's, every note"
    );
    assert_eq!(hook.token.as_ref().unwrap().expose(), "tok");
}

#[tokio::test]
async fn the_same_webhook_set_again_never_skips_a_note_it_has_not_had() {
    let w = World::new();
    with_notes(&w, "t", 5).await;
    assert_eq!(
        set(&w, "t", "w", json!({"url": HOOK, "after": 2}))
            .await
            .status,
        200
    );
    // As an A2A client sends its config again with a reply: after the latest note.
    let again = set(&w, "t", "w", json!({"url": HOOK, "after": 5})).await;
    assert_eq!(
        again.body["through"], 2,
        "notes 3 to 5 are still due: {}",
        again.body
    );
    let elsewhere = set(
        &w,
        "t",
        "w",
        json!({"url": "http://127.0.0.1:9/other", "after": 5}),
    )
    .await;
    assert_eq!(elsewhere.body["through"], 5, "another URL asks afresh");
}

#[tokio::test]
async fn where_private_agents_are_not_allowed_a_webhook_is_https_to_a_public_address() {
    let w = World::new();
    with_notes(&w, "t", 0).await;
    let strict = Control {
        store: &w.store,
        bell: &w.bell,
        executions: &w.executions,
        agents: &w.agents,
        cards: None,
        artifacts: None,
        max_standin_secs: standin::steps::next::MAX_STANDIN_SECS,
        webhooks: Some(&w.deliveries),
        allow_private: false,
        keys: None,
        turns: None,
    };
    for (url, said) in [
        ("http://parent.example/hook", "must be https"),
        ("https://127.0.0.1/hook", "non-public address"),
        ("https://10.1.2.3/hook", "non-public address"),
    ] {
        let body = json!({"url": url});
        let answer = strict
            .handle(Call::WebhookSet {
                task_id: "t",
                webhook_id: "w",
                body: &body,
            })
            .await;
        assert_eq!(answer.status, 400, "{url}: {}", answer.body);
        assert!(error(&answer).contains(said), "{url}: {}", error(&answer));
    }
}

#[tokio::test]
async fn the_same_config_sent_again_writes_nothing_and_a_mark_past_the_log_is_the_latest_note() {
    let w = World::new();
    with_notes(&w, "t", 3).await;
    let body = json!({"url": HOOK, "token": "tok"});
    assert_eq!(set(&w, "t", "w", body.clone()).await.status, 200);
    let version = w.store.get("t").await.unwrap().unwrap().webhooks["w"].version;
    assert_eq!(set(&w, "t", "w", body).await.status, 200);
    let row = w.store.get("t").await.unwrap().unwrap();
    assert_eq!(row.webhooks["w"].version, version, "not written again");
    let ahead = set(&w, "t", "v", json!({"url": HOOK, "after": 99})).await;
    assert_eq!(ahead.body["through"], 3, "{}", ahead.body);
    let userinfo = set(
        &w,
        "t",
        "u",
        json!({"url": "http://me:pw@127.0.0.1:9/hook"}),
    )
    .await;
    assert_eq!(userinfo.status, 400);
    assert!(
        error(&userinfo).contains("no user or password"),
        "{}",
        error(&userinfo)
    );
}

#[tokio::test]
async fn a_webhook_set_whose_delivery_cannot_be_queued_says_so_and_is_queued_when_sent_again() {
    let w = World::new();
    with_notes(&w, "t", 2).await;
    w.deliveries
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let body = json!({"url": HOOK, "after": 0});
    let answer = set(&w, "t", "w", body.clone()).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    w.deliveries
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(set(&w, "t", "w", body).await.status, 200);
    assert_eq!(
        w.deliveries.queued.lock().unwrap().len(),
        1,
        "queued when sent again"
    );
}

#[tokio::test]
async fn a_start_sent_again_with_a_webhook_the_first_lacked_sets_it() {
    let w = World::new();
    let first = w
        .start(json!({"agent": "writer", "message": "hi", "task_id": "again"}))
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let again = w
        .start(
            json!({"agent": "writer", "message": "hi", "task_id": "again",
                      "webhook": {"url": HOOK}}),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    let row = w.store.get("again").await.unwrap().unwrap();
    assert_eq!(row.webhooks["again"].through, 0, "every note");
}
