//! Races at the write, the store's pages, and the replies' bound.

use super::*;
use standin::row::{Notes, Parks, StandIns};

#[tokio::test]
async fn race_push_after_close_is_refused_at_the_write() {
    // The close lands just before the receiver's write (it reads nothing before it).
    struct ClosingStore {
        inner: MemoryStore,
    }
    impl StandIns for ClosingStore {
        standin::row_store_pass_through!(create, get, list, list_of_agent, set_remote, set_watch);
    }
    impl Notes for ClosingStore {
        standin::row_store_pass_through!(apply, close, notes);
    }
    impl Parks for ClosingStore {
        standin::row_store_pass_through!(
            park,
            claim_hearing,
            end_hearing,
            claim_follow,
            end_park,
            roll,
            drain,
            take_rung
        );
        async fn record(&self, id: &str, e: &WakeEvent, g: &Guard) -> Result<Row, StoreError> {
            self.inner.close(id, None).await?;
            self.inner.record(id, e, g).await
        }
    }
    let store = ClosingStore {
        inner: MemoryStore::new(),
    };
    let token = open_row(&store.inner, WatchMode::Push).await;
    store.inner.park(ID, 1, "tok-1").await.expect("parked");
    let bell = MemoryDoorbell::new();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-a2a-notification-token",
        token.expose().parse().expect("header"),
    );
    let body = format!(
        r#"{{"statusUpdate":{{"taskId":"{REMOTE}","status":{{"state":"TASK_STATE_WORKING"}}}}}}"#
    );
    let answer = receiver::receive(&store, &bell, ID, &headers, body.as_bytes()).await;
    assert_eq!(answer.status, 401);
    assert!(bell.rings().is_empty());
    assert!(store.inner.snapshot(ID).expect("row").pending.is_empty());
}

#[tokio::test]
async fn memory_store_lists_in_pages_without_repeats() {
    let store = MemoryStore::new();
    for i in 0..5 {
        store
            .create(&Row::new(format!("r{i}"), "a"))
            .await
            .expect("created");
    }
    let (first, next) = store.list(None, 2).await.expect("page 1");
    assert_eq!(
        first.iter().map(|r| r.task_id.as_str()).collect::<Vec<_>>(),
        ["r0", "r1"]
    );
    assert_eq!(next.as_deref(), Some("r1"));
    let (second, next) = store.list(next.as_deref(), 2).await.expect("page 2");
    assert_eq!(
        second
            .iter()
            .map(|r| r.task_id.as_str())
            .collect::<Vec<_>>(),
        ["r2", "r3"]
    );
    let (last, next) = store.list(next.as_deref(), 2).await.expect("page 3");
    assert_eq!(
        last.iter().map(|r| r.task_id.as_str()).collect::<Vec<_>>(),
        ["r4"]
    );
    assert_eq!(next, None);
}

#[tokio::test]
async fn replies_queue_up_to_the_bound_and_then_are_refused_until_one_is_taken() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    park(&store, &bell, 1, "tok-1").await;
    for i in 0..standin::row::MAX_QUEUED_REPLIES {
        doorbell::ring(&store, &bell, ID, &reply(&format!("r{i}")), &Guard::Open)
            .await
            .expect("queued");
    }
    assert_eq!(
        doorbell::ring(&store, &bell, ID, &reply("one too many"), &Guard::Open).await,
        Err(StoreError::RepliesFull(ID.into()))
    );
    store.drain(ID, None, 1).await.expect("drained");
    doorbell::ring(&store, &bell, ID, &reply("now there is room"), &Guard::Open)
        .await
        .expect("queued");
}
