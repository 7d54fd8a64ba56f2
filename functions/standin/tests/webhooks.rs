//! The parent's webhooks: each gets every note after its mark, in order, at least once;
//! one that is down is tried again later, with a growing delay, and holds back neither
//! the other webhooks nor other stand-ins; past its tries it is given up, and the next
//! note starts again from its mark.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use aws_lambda_events::sqs::SqsEvent;
use serde_json::json;
use standin::outbox::Teller;
use standin::row::memory::MemoryStore;
use standin::row::{Guard, MAX_WEBHOOKS, Row, StandIns, StoreError, Webhook, Webhooks};
use standin::state::remote_out;
use standin::webhook::memory::{MemoryRedelivery, MemoryWebhook};
use standin::webhook::{Delivered, GIVE_UP_AFTER, delay_after, deliver, handle};
use standin_wire::TaskState;

const A: &str = "https://a.example/hook";
const B: &str = "https://b.example/hook";

async fn with_notes(store: &MemoryStore, task_id: &str, texts: &[&str]) {
    store.create(&Row::new(task_id, "agent-a")).await.unwrap();
    let teller = Teller::new(store);
    for text in texts {
        teller
            .tell(
                task_id,
                None,
                &remote_out("r-1", TaskState::Working, text),
                &Guard::Open,
            )
            .await
            .unwrap();
    }
}

fn later() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(60)
}

fn seqs(webhook: &MemoryWebhook, url: &str, task_id: &str) -> Vec<u64> {
    webhook
        .taken()
        .into_iter()
        .filter(|(u, t, _)| u == url && t == task_id)
        .map(|(_, _, seq)| seq)
        .collect()
}

/// Messages `(id, task_id, tries)`, queued `age` ago.
fn event_aged(messages: &[(&str, &str, u32)], age: Duration) -> SqsEvent {
    let sent = standin::clock::now_ms() - age.as_millis() as u64;
    let records: Vec<_> = messages
        .iter()
        .map(|(id, task_id, tries)| {
            json!({
                "messageId": id,
                "receiptHandle": format!("receipt-{id}"),
                "body": json!({"task_id": task_id, "seq": 1}).to_string(),
                "attributes": {"ApproximateReceiveCount": tries.to_string(),
                               "SentTimestamp": sent.to_string()},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

fn event(messages: &[(&str, &str, u32)]) -> SqsEvent {
    event_aged(messages, Duration::from_secs(10))
}

#[tokio::test]
async fn each_webhook_gets_the_notes_after_its_mark_in_order_once() {
    let store = MemoryStore::new();
    with_notes(&store, "t-1", &["one", "two", "three"]).await;
    store
        .set_webhook("t-1", "from-start", &Webhook::new(A, 0))
        .await
        .unwrap();
    store
        .set_webhook("t-1", "from-now", &Webhook::new(B, 3))
        .await
        .unwrap();
    let webhook = MemoryWebhook::default();
    assert_eq!(
        deliver(&store, &webhook, "t-1", later()).await.unwrap(),
        Delivered::All
    );
    assert_eq!(seqs(&webhook, A, "t-1"), [1, 2, 3]);
    assert!(
        seqs(&webhook, B, "t-1").is_empty(),
        "set after note 3: none before it"
    );
    Teller::new(&store)
        .tell(
            "t-1",
            None,
            &remote_out("r-1", TaskState::Working, "four"),
            &Guard::Open,
        )
        .await
        .unwrap();
    deliver(&store, &webhook, "t-1", later()).await.unwrap();
    assert_eq!(seqs(&webhook, A, "t-1"), [1, 2, 3, 4], "each note once");
    assert_eq!(seqs(&webhook, B, "t-1"), [4]);
    let row = store.get("t-1").await.unwrap().unwrap();
    assert_eq!(row.webhooks["from-start"].through, 4);
}

#[tokio::test]
async fn a_webhook_that_is_down_keeps_its_mark_and_gets_every_note_in_order_when_back() {
    let store = MemoryStore::new();
    with_notes(&store, "t-1", &["one", "two"]).await;
    store
        .set_webhook("t-1", "a", &Webhook::new(A, 0))
        .await
        .unwrap();
    store
        .set_webhook("t-1", "b", &Webhook::new(B, 0))
        .await
        .unwrap();
    let webhook = MemoryWebhook::default();
    webhook.set_down(A, true);
    let outcome = deliver(&store, &webhook, "t-1", later()).await.unwrap();
    assert!(
        matches!(outcome, Delivered::Failed { ref why, .. } if why.contains("503")),
        "{outcome:?}"
    );
    let since = store.get("t-1").await.unwrap().unwrap().webhooks["a"].failing_since;
    assert!(since.is_some(), "the row knows since when it fails");
    assert_eq!(
        seqs(&webhook, B, "t-1"),
        [1, 2],
        "the other webhook is not held back"
    );
    Teller::new(&store)
        .tell(
            "t-1",
            None,
            &remote_out("r-1", TaskState::Working, "three"),
            &Guard::Open,
        )
        .await
        .unwrap();
    webhook.set_down(A, false);
    assert_eq!(
        deliver(&store, &webhook, "t-1", later()).await.unwrap(),
        Delivered::All
    );
    assert_eq!(seqs(&webhook, A, "t-1"), [1, 2, 3]);
    assert_eq!(seqs(&webhook, B, "t-1"), [1, 2, 3]);
}

#[tokio::test]
async fn a_failed_delivery_comes_back_later_and_other_stand_ins_are_delivered_now() {
    let store = MemoryStore::new();
    with_notes(&store, "t-1", &["one"]).await;
    with_notes(&store, "t-2", &["one"]).await;
    store
        .set_webhook("t-1", "a", &Webhook::new(A, 0))
        .await
        .unwrap();
    store
        .set_webhook("t-2", "b", &Webhook::new(B, 0))
        .await
        .unwrap();
    let (webhook, redelivery) = (MemoryWebhook::default(), MemoryRedelivery::default());
    webhook.set_down(A, true);
    let answer = handle(
        &store,
        &webhook,
        &redelivery,
        &event(&[("m1", "t-1", 3), ("m2", "t-2", 1), ("m3", "t-1", 1)]),
        later(),
    )
    .await;
    let failed: Vec<String> = answer
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(
        failed,
        ["m1", "m3"],
        "both of t-1's messages, none of t-2's"
    );
    assert_eq!(seqs(&webhook, B, "t-2"), [1]);
    let asked = redelivery.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            ("receipt-m1".to_owned(), delay_after(3)),
            ("receipt-m3".to_owned(), delay_after(3)),
        ]
    );
}

#[tokio::test]
async fn a_webhook_failing_for_eight_minutes_is_given_up_and_the_next_note_starts_from_the_mark() {
    let store = MemoryStore::new();
    with_notes(&store, "t-1", &["one"]).await;
    let mut failing = Webhook::new(A, 0);
    let long_ago = GIVE_UP_AFTER + Duration::from_secs(1);
    failing.failing_since = Some(standin::clock::now_ms() - long_ago.as_millis() as u64);
    store.set_webhook("t-1", "a", &failing).await.unwrap();
    let (webhook, redelivery) = (MemoryWebhook::default(), MemoryRedelivery::default());
    webhook.set_down(A, true);
    let answer = handle(
        &store,
        &webhook,
        &redelivery,
        &event(&[("m1", "t-1", 25)]),
        later(),
    )
    .await;
    assert!(answer.batch_item_failures.is_empty(), "given up: not kept");
    webhook.set_down(A, false);
    Teller::new(&store)
        .tell(
            "t-1",
            None,
            &remote_out("r-1", TaskState::Working, "two"),
            &Guard::Open,
        )
        .await
        .unwrap();
    let answer = handle(
        &store,
        &webhook,
        &redelivery,
        &event(&[("m2", "t-1", 1)]),
        later(),
    )
    .await;
    assert!(answer.batch_item_failures.is_empty());
    assert_eq!(seqs(&webhook, A, "t-1"), [1, 2], "nothing lost");
    let hook = &store.get("t-1").await.unwrap().unwrap().webhooks["a"];
    assert_eq!(hook.failing_since, None, "a note taken: failing no more");
}

#[tokio::test]
async fn a_message_long_queued_is_not_given_up_for_a_webhook_that_just_began_failing() {
    let store = MemoryStore::new();
    with_notes(&store, "t-1", &["one"]).await;
    store
        .set_webhook("t-1", "a", &Webhook::new(A, 0))
        .await
        .unwrap();
    let (webhook, redelivery) = (MemoryWebhook::default(), MemoryRedelivery::default());
    webhook.set_down(A, true);
    let queued_long_ago = event_aged(&[("m1", "t-1", 30)], GIVE_UP_AFTER * 2);
    let answer = handle(&store, &webhook, &redelivery, &queued_long_ago, later()).await;
    assert_eq!(
        answer.batch_item_failures.len(),
        1,
        "tried again: it only began failing"
    );
}

#[test]
fn the_delay_grows_from_two_seconds_to_thirty() {
    let delays: Vec<u64> = (1..=7).map(|n| delay_after(n).as_secs()).collect();
    assert_eq!(delays, [2, 4, 8, 16, 30, 30, 30]);
    assert_eq!(delay_after(u32::MAX), Duration::from_secs(30));
}

#[tokio::test]
async fn a_stand_in_keeps_at_most_four_webhooks_and_a_mark_for_a_replaced_one_is_refused() {
    let store = MemoryStore::new();
    store.create(&Row::new("t-1", "agent-a")).await.unwrap();
    for i in 0..MAX_WEBHOOKS {
        store
            .set_webhook("t-1", &format!("w{i}"), &Webhook::new(A, 0))
            .await
            .unwrap();
    }
    let refused = store
        .set_webhook("t-1", "one-more", &Webhook::new(A, 0))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Refused(_))),
        "{refused:?}"
    );
    let old = store.get("t-1").await.unwrap().unwrap().webhooks["w0"].version;
    store
        .set_webhook("t-1", "w0", &Webhook::new(B, 0))
        .await
        .unwrap();
    assert!(
        !store.mark_webhook("t-1", "w0", old, 5).await.unwrap(),
        "replaced"
    );
    assert!(store.delete_webhook("t-1", "w0").await.unwrap());
    assert!(
        !store.delete_webhook("t-1", "w0").await.unwrap(),
        "gone already"
    );
}

#[tokio::test]
async fn a_delivery_out_of_time_goes_on_at_once_and_is_never_given_up() {
    let store = MemoryStore::new();
    with_notes(&store, "t-1", &["one"]).await;
    store
        .set_webhook("t-1", "a", &Webhook::new(A, 0))
        .await
        .unwrap();
    let (webhook, redelivery) = (MemoryWebhook::default(), MemoryRedelivery::default());
    let already = tokio::time::Instant::now();
    let old = GIVE_UP_AFTER * 3;
    let answer = handle(
        &store,
        &webhook,
        &redelivery,
        &event_aged(&[("m1", "t-1", 30)], old),
        already,
    )
    .await;
    assert_eq!(answer.batch_item_failures.len(), 1, "kept: it goes on");
    let asked = redelivery.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [("receipt-m1".to_owned(), Duration::ZERO)],
        "at once"
    );
}

/// A webhook replaced while its notes go out: the old one gets no more of them.
struct ReplacedOnFirstPost<'a> {
    store: &'a MemoryStore,
    inner: MemoryWebhook,
}

impl standin::webhook::WebhookPoster for ReplacedOnFirstPost<'_> {
    async fn post(
        &self,
        hook: &Webhook,
        context: Option<&str>,
        note: &standin_wire::ParentNote,
    ) -> Result<(), String> {
        if note.seq == 1 {
            self.store
                .set_webhook("t-1", "a", &Webhook::new(B, 3))
                .await
                .unwrap();
        }
        self.inner.post(hook, context, note).await
    }
}

#[tokio::test]
async fn a_webhook_replaced_meanwhile_gets_nothing_more_of_the_old_delivery() {
    let store = MemoryStore::new();
    with_notes(&store, "t-1", &["one", "two", "three"]).await;
    store
        .set_webhook("t-1", "a", &Webhook::new(A, 0))
        .await
        .unwrap();
    let poster = ReplacedOnFirstPost {
        store: &store,
        inner: MemoryWebhook::default(),
    };
    assert_eq!(
        deliver(&store, &poster, "t-1", later()).await.unwrap(),
        Delivered::All
    );
    assert_eq!(
        seqs(&poster.inner, A, "t-1"),
        [1],
        "the old URL: the note in flight only"
    );
    assert_eq!(
        store.get("t-1").await.unwrap().unwrap().webhooks["a"].through,
        3
    );
}
