//! The push receiver: its refusal order (docs/architecture.md) and the abuse cases it refuses.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use http::HeaderMap;
use proptest::prelude::*;
use standin::doorbell::memory::MemoryDoorbell;
use standin::push::receiver::{self, MAX_PUSH_BYTES};
use standin::push::token::PushToken;
use standin::row::memory::MemoryStore;
use standin::row::{Notes, Parks, StandIns};
use standin::row::{Row, Watch, WatchMode};
use standin::state::remote_out;
use standin_wire::TaskState;

const A: &str = "stand-in-a";
const B: &str = "stand-in-b";

struct World {
    store: MemoryStore,
    bell: MemoryDoorbell,
    token_a: PushToken,
    token_b: PushToken,
}

async fn world() -> World {
    let store = MemoryStore::new();
    let (token_a, token_b) = (PushToken::generate(), PushToken::generate());
    for (id, remote, token) in [(A, "remote-a", &token_a), (B, "remote-b", &token_b)] {
        let mut row = Row::new(id, "agent");
        row.remote_task_id = Some(remote.into());
        row.watch = Some(Watch {
            mode: WatchMode::Push,
            config_id: Some("c".into()),
            token_digest: Some(token.digest()),
        });
        row.last = Some(remote_out(remote, TaskState::InputRequired, "q"));
        store.create(&row).await.expect("created");
        store
            .park(id, 1, &format!("park-{id}"))
            .await
            .expect("parked");
    }
    World {
        store,
        bell: MemoryDoorbell::new(),
        token_a,
        token_b,
    }
}

fn headers(token: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", "application/json".parse().expect("header"));
    if let Some(t) = token {
        h.insert("x-a2a-notification-token", t.parse().expect("header"));
    }
    h
}

fn status_body(remote: &str, state: &str) -> Vec<u8> {
    format!(r#"{{"statusUpdate":{{"taskId":"{remote}","contextId":"c","status":{{"state":"{state}"}}}}}}"#).into_bytes()
}

async fn send(w: &World, id: &str, h: &HeaderMap, body: &[u8]) -> receiver::PushResponse {
    receiver::receive(&w.store, &w.bell, id, h, body).await
}

/// Asserts the push changed nothing at all.
async fn assert_refused(
    w: &World,
    answer: &receiver::PushResponse,
    status: u16,
    writes_before: usize,
) {
    assert_eq!(answer.status, status);
    assert_eq!(w.store.writes(), writes_before, "nothing written");
    assert!(w.bell.rings().is_empty(), "nothing rung");
}

#[tokio::test]
async fn a_valid_push_records_a_doorbell_and_rings_204() {
    let w = world().await;
    let answer = send(
        &w,
        A,
        &headers(Some(w.token_a.expose())),
        &status_body("remote-a", "TASK_STATE_WORKING"),
    )
    .await;
    assert_eq!((answer.status, answer.body), (204, ""));
    assert_eq!(w.bell.rings(), [format!("park-{A}")]);
    let row = w.store.snapshot(A).expect("row");
    assert_eq!(
        row.pending.push.map(|push| push.claimed),
        Some(Some(TaskState::Working))
    );
}

/// The write's condition holds every check, so a push that passes them costs one write
/// and the ring, with no read ahead of them (the floor reads its token once); only a
/// refused one is read, to say why.
#[tokio::test]
async fn a_valid_push_is_written_without_a_read_and_a_refused_one_read_once() {
    let w = world().await;
    let body = status_body("remote-a", "TASK_STATE_WORKING");
    let answer = send(&w, A, &headers(Some(w.token_a.expose())), &body).await;
    assert_eq!(answer.status, 204);
    assert_eq!(w.store.reads(), 0, "no read before the write");
    let writes = w.store.writes();
    let answer = send(&w, A, &headers(Some(w.token_b.expose())), &body).await;
    assert_eq!(answer.status, 401);
    assert_eq!(w.store.writes(), writes, "nothing written");
    assert_eq!(w.bell.rings().len(), 1, "only the valid push rang");
    assert_eq!(w.store.reads(), 1, "one read to tell why");
}

#[tokio::test]
async fn abuse_1_missing_empty_or_wrong_token() {
    let w = world().await;
    let body = status_body("remote-a", "TASK_STATE_WORKING");
    let writes = w.store.writes();
    for token in [None, Some(""), Some("   "), Some("not-the-token")] {
        let answer = send(&w, A, &headers(token), &body).await;
        assert_refused(&w, &answer, 401, writes).await;
    }
}

#[tokio::test]
async fn abuse_2_token_of_a_at_bs_url() {
    let w = world().await;
    let writes = w.store.writes();
    let answer = send(
        &w,
        B,
        &headers(Some(w.token_a.expose())),
        &status_body("remote-b", "TASK_STATE_WORKING"),
    )
    .await;
    assert_refused(&w, &answer, 401, writes).await;
    drop(w.token_b);
}

#[tokio::test]
async fn abuse_3_body_naming_another_remote_task() {
    let w = world().await;
    let writes = w.store.writes();
    let answer = send(
        &w,
        A,
        &headers(Some(w.token_a.expose())),
        &status_body("remote-b", "TASK_STATE_WORKING"),
    )
    .await;
    assert_refused(&w, &answer, 401, writes).await;
}

#[tokio::test]
async fn abuse_4_ended_unknown_or_non_push_stand_ins_and_one_answer_for_all() {
    let w = world().await;
    let good = headers(Some(w.token_a.expose()));
    let body = status_body("remote-a", "TASK_STATE_WORKING");
    let mut answers = vec![
        send(&w, A, &headers(None), &body).await,
        send(&w, A, &headers(Some("wrong")), &body).await,
        send(&w, B, &good, &status_body("remote-b", "TASK_STATE_WORKING")).await,
        send(&w, A, &good, &status_body("remote-b", "TASK_STATE_WORKING")).await,
        send(&w, "no-such-stand-in", &good, &body).await,
    ];
    w.store
        .set_watch(A, &Watch::follow())
        .await
        .expect("follow");
    answers.push(send(&w, A, &good, &body).await);
    w.store.close(A, None).await.expect("closed");
    let writes = w.store.writes();
    answers.push(send(&w, A, &good, &body).await);
    assert_eq!(w.store.writes(), writes);
    assert!(w.bell.rings().is_empty());
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    assert_eq!(answers[0].status, 401);
}

#[tokio::test]
async fn abuse_5_oversized_and_malformed_bodies() {
    let w = world().await;
    let writes = w.store.writes();
    let good = headers(Some(w.token_a.expose()));
    let big = vec![b' '; MAX_PUSH_BYTES + 1];
    // A stranger's oversized body is refused first, whatever its token.
    let strangers = [
        headers(None),
        headers(Some("not-the-token")),
        headers(Some(w.token_b.expose())),
        headers(Some(&"x".repeat(43))),
    ];
    for stranger in &strangers {
        assert_refused(&w, &send(&w, A, stranger, &big).await, 413, writes).await;
    }
    let mut declared = strangers[1].clone();
    declared.insert("content-length", "10000000".parse().expect("header"));
    assert_refused(&w, &send(&w, A, &declared, b"{}").await, 413, writes).await;
    for body in [
        &b"not json"[..],
        b"{}",
        b"[]",
        br#"{"statusUpdate":{"taskId":""}}"#,
        br#"{"artifactUpdate":{}}"#,
    ] {
        assert_refused(&w, &send(&w, A, &good, body).await, 400, writes).await;
    }
    let mut text = good.clone();
    text.insert("content-type", "text/plain".parse().expect("header"));
    assert_refused(
        &w,
        &send(&w, A, &text, &status_body("remote-a", "TASK_STATE_WORKING")).await,
        400,
        writes,
    )
    .await;
}

/// A 0.3 agent pushes the whole task, history and artifacts included: a genuine push of
/// 200 KiB rings (claiming no state, so the wake asks GetTask) instead of being lost.
#[tokio::test]
async fn a_genuine_oversized_push_rings_without_its_body_being_read() {
    let w = world().await;
    let history = format!(
        r#"{{"kind":"task","id":"remote-a","contextId":"c","status":{{"state":"completed"}},"history":[{{"kind":"message","messageId":"m","role":"agent","parts":[{{"kind":"text","text":"{}"}}]}}]}}"#,
        "x".repeat(200 * 1024)
    );
    assert!(history.len() > MAX_PUSH_BYTES);
    let mut bearer = HeaderMap::new();
    bearer.insert(
        "authorization",
        format!("Bearer {}", w.token_a.expose())
            .parse()
            .expect("header"),
    );
    let answer = send(&w, A, &bearer, history.as_bytes()).await;
    assert_eq!(answer.status, 204);
    assert_eq!(w.bell.rings(), [format!("park-{A}")]);
    let row = w.store.snapshot(A).expect("row");
    assert_eq!(row.pending.push.map(|push| push.claimed), Some(None));
}

/// The Rust SDK names the token header `A2A-Notification-Token`.
#[tokio::test]
async fn the_token_is_read_from_each_header_real_senders_use() {
    let w = world().await;
    let mut rust_sdk = HeaderMap::new();
    rust_sdk.insert(
        "a2a-notification-token",
        w.token_a.expose().parse().expect("header"),
    );
    let answer = send(
        &w,
        A,
        &rust_sdk,
        &status_body("remote-a", "TASK_STATE_WORKING"),
    )
    .await;
    assert_eq!(answer.status, 204);
}

#[tokio::test]
async fn abuse_6_a_claimed_state_is_never_applied() {
    let w = world().await;
    let answer = send(
        &w,
        A,
        &headers(Some(w.token_a.expose())),
        &status_body("remote-a", "TASK_STATE_COMPLETED"),
    )
    .await;
    assert_eq!(answer.status, 204);
    let row = w.store.snapshot(A).expect("row");
    assert_eq!(
        row.last.as_ref().map(|l| l.state),
        Some(TaskState::InputRequired),
        "the row still holds the fetched state"
    );
    assert_eq!(
        row.pending.push.map(|push| push.claimed),
        Some(Some(TaskState::Completed)),
        "the claim is only a hint for rechecks"
    );
}

#[tokio::test]
async fn bearer_tokens_a2a_content_type_every_body_kind_and_unknown_fields_are_accepted() {
    let w = world().await;
    let bodies = [
        r#"{"task":{"id":"remote-a","contextId":"c","status":{"state":"TASK_STATE_WORKING"}},"extra":1}"#.to_owned(),
        r#"{"artifactUpdate":{"taskId":"remote-a","contextId":"c","artifact":{"artifactId":"x","parts":[{"text":"w"}]},"lastChunk":true}}"#.to_owned(),
        r#"{"message":{"messageId":"m","taskId":"remote-a","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}"#.to_owned(),
    ];
    for body in &bodies {
        let mut h = HeaderMap::new();
        h.insert(
            "content-type",
            "application/a2a+json; charset=utf-8"
                .parse()
                .expect("header"),
        );
        h.insert(
            "authorization",
            format!("Bearer {}", w.token_a.expose())
                .parse()
                .expect("header"),
        );
        assert_eq!(send(&w, A, &h, body.as_bytes()).await.status, 204, "{body}");
    }
}

#[tokio::test]
async fn the_captured_sdk_webhook_posts_parse() {
    // The SDK captures live with the protocol, in the remote crate.
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../remote/tests/data/a2a-sdk-1.3.0"
    );
    let mut posts: Vec<serde_json::Value> = Vec::new();
    for f in [
        "a_jsonrpc_main/push_notifications.json",
        "b_jsonrpc_streaming/push_notifications.json",
        "c_rest/push_notifications.json",
        "d_ids_and_cancel/push_notifications.json",
        "f_multiturn_and_failure/push_notifications_multiturn.json",
    ] {
        let raw = std::fs::read_to_string(format!("{dir}/{f}")).expect("fixture");
        posts.extend(serde_json::from_str::<Vec<serde_json::Value>>(&raw).expect("json"));
    }
    assert!(posts.len() >= 15, "{} captured posts", posts.len());
    for post in posts {
        // Replay the SDK's own headers: its token header, and Bearer where configured.
        let mut h = HeaderMap::new();
        for pair in post["headers"].as_array().expect("headers") {
            let (k, v) = (
                pair[0].as_str().expect("name"),
                pair[1].as_str().expect("value"),
            );
            if k.eq_ignore_ascii_case("content-length") {
                continue;
            }
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        let body = post["body_raw"].as_str().expect("body_raw");
        let checked = receiver::precheck(&h, body.as_bytes())
            .expect("a real SDK push passes the body checks");
        assert!(!checked.remote_task_id.is_empty());
        assert!(
            checked.claimed.is_some() || body.contains("artifactUpdate"),
            "{body}"
        );
    }
}

// The refusal order, over every combination.

#[derive(Debug, Clone, Copy)]
enum Token {
    Absent,
    Empty,
    Right,
    RightBearer,
    Wrong,
}
#[derive(Debug, Clone, Copy)]
enum Body {
    Valid,
    OtherTask,
    Garbage,
    NoTaskId,
    Oversize,
}
#[derive(Debug, Clone, Copy)]
enum RowState {
    Missing,
    Closed,
    Follow,
    Push,
}
#[derive(Debug, Clone, Copy)]
enum ContentType {
    Json,
    A2a,
    Text,
    Absent,
}

/// The order, written out independently of the receiver.
fn expected(declared_big: bool, token: Token, body: Body, row: RowState, ct: ContentType) -> u16 {
    if declared_big || matches!(body, Body::Oversize) {
        // Unread, it rings only for the stand-in's own token on a push row.
        let genuine = matches!(token, Token::Right | Token::RightBearer);
        return if genuine && matches!(row, RowState::Push) {
            204
        } else {
            413
        };
    }
    if matches!(token, Token::Absent | Token::Empty) {
        return 401;
    }
    if matches!(ct, ContentType::Text) || matches!(body, Body::Garbage | Body::NoTaskId) {
        return 400;
    }
    if !matches!(row, RowState::Push)
        || matches!(token, Token::Wrong)
        || matches!(body, Body::OtherTask)
    {
        return 401;
    }
    204
}

fn token_strategy() -> impl Strategy<Value = Token> {
    prop_oneof![
        Just(Token::Absent),
        Just(Token::Empty),
        Just(Token::Right),
        Just(Token::RightBearer),
        Just(Token::Wrong)
    ]
}
fn body_strategy() -> impl Strategy<Value = Body> {
    prop_oneof![
        Just(Body::Valid),
        Just(Body::OtherTask),
        Just(Body::Garbage),
        Just(Body::NoTaskId),
        Just(Body::Oversize)
    ]
}
fn row_strategy() -> impl Strategy<Value = RowState> {
    prop_oneof![
        Just(RowState::Missing),
        Just(RowState::Closed),
        Just(RowState::Follow),
        Just(RowState::Push)
    ]
}
fn ct_strategy() -> impl Strategy<Value = ContentType> {
    prop_oneof![
        Just(ContentType::Json),
        Just(ContentType::A2a),
        Just(ContentType::Text),
        Just(ContentType::Absent)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn refusal_order_holds_and_refusals_change_nothing(
        declared_big in any::<bool>(), token in token_strategy(), body in body_strategy(),
        row_state in row_strategy(), ct in ct_strategy(), junk in "\\PC{0,30}",
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        rt.block_on(async {
            let w = world().await;
            let id = match row_state {
                RowState::Missing => "missing",
                _ => A,
            };
            match row_state {
                RowState::Closed => { w.store.close(A, None).await.expect("closed"); }
                RowState::Follow => { w.store.set_watch(A, &Watch::follow()).await.expect("follow"); }
                _ => {}
            }
            let mut h = HeaderMap::new();
            match ct {
                ContentType::Json => { h.insert("content-type", "application/json".parse().expect("h")); }
                ContentType::A2a => { h.insert("content-type", "application/a2a+json".parse().expect("h")); }
                ContentType::Text => { h.insert("content-type", "text/plain".parse().expect("h")); }
                ContentType::Absent => {}
            }
            match token {
                Token::Absent => {}
                Token::Empty => { h.insert("x-a2a-notification-token", "".parse().expect("h")); }
                Token::Right => { h.insert("x-a2a-notification-token", w.token_a.expose().parse().expect("h")); }
                Token::RightBearer => { h.insert("authorization", format!("Bearer {}", w.token_a.expose()).parse().expect("h")); }
                Token::Wrong => { h.insert("x-a2a-notification-token", w.token_b.expose().parse().expect("h")); }
            }
            if declared_big {
                h.insert("content-length", (MAX_PUSH_BYTES + 1).to_string().parse().expect("h"));
            }
            let body_bytes = match body {
                Body::Valid => status_body("remote-a", "TASK_STATE_WORKING"),
                Body::OtherTask => status_body("remote-b", "TASK_STATE_WORKING"),
                Body::Garbage => format!("<{junk}").into_bytes(),
                Body::NoTaskId => br#"{"statusUpdate":{"status":{"state":"TASK_STATE_WORKING"}}}"#.to_vec(),
                Body::Oversize => {
                    let mut b = status_body("remote-a", "TASK_STATE_WORKING");
                    b.resize(MAX_PUSH_BYTES + 1, b' ');
                    b
                }
            };
            let writes = w.store.writes();
            let before = w.store.snapshot(A);
            let answer = receiver::receive(&w.store, &w.bell, id, &h, &body_bytes).await;
            let want = expected(declared_big, token, body, row_state, ct);
            prop_assert_eq!(answer.status, want);
            if want == 204 {
                prop_assert_eq!(w.bell.rings(), vec![format!("park-{A}")]);
            } else {
                prop_assert_eq!(w.store.writes(), writes);
                prop_assert!(w.bell.rings().is_empty());
                prop_assert_eq!(w.store.snapshot(A), before);
            }
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn authorize_names_each_refusal_but_answers_alike() {
    use receiver::{CheckedPush, Refusal, authorize};
    let w = world().await;
    let push = |token: &PushToken, remote: &str| CheckedPush {
        digest: token.digest(),
        remote_task_id: remote.into(),
        claimed: None,
    };
    let row_a = w.store.snapshot(A);
    let good = push(&w.token_a, "remote-a");
    assert_eq!(authorize(row_a.as_ref(), &good), Ok(()));
    let cases = [
        (authorize(None, &good), "unknown_task"),
        (
            authorize(row_a.as_ref(), &push(&w.token_b, "remote-a")),
            "bad_token",
        ),
        (
            authorize(row_a.as_ref(), &push(&w.token_a, "remote-b")),
            "other_task",
        ),
    ];
    for (result, category) in cases {
        assert_eq!(result, Err(Refusal::NotAccepted(category)));
    }
    let mut follow = row_a.clone().expect("row");
    follow.watch = Some(Watch::follow());
    assert_eq!(
        authorize(Some(&follow), &good),
        Err(Refusal::NotAccepted("not_push"))
    );
    let mut closed = row_a.expect("row");
    closed.closed = true;
    assert_eq!(
        authorize(Some(&closed), &good),
        Err(Refusal::NotAccepted("closed"))
    );
    let bodies: Vec<&str> = [
        "unknown_task",
        "closed",
        "not_push",
        "bad_token",
        "other_task",
    ]
    .into_iter()
    .map(|c| Refusal::NotAccepted(c).body())
    .chain([Refusal::NoToken.body()])
    .collect();
    assert!(bodies.iter().all(|b| *b == bodies[0]));
}
