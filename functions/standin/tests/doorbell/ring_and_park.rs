//! Rules 1 and 2: a ring records then rings the stored token; only the newest park stores its token.

use super::*;

// Rule 1: ring = record (never on a closed row), then SendTaskSuccess with the stored token.

#[tokio::test]
async fn ring_records_then_rings_the_stored_token() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, 1, "tok-1").await.expect("parked");
    let row = doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("rung");
    assert_eq!(row.pending.replies, ["blue"]);
    assert_eq!(bell.rings(), ["tok-1"]);
}

#[tokio::test]
async fn a_named_reply_is_queued_once_however_often_it_rings() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    let named = |text: &str, id: &str| WakeEvent::Reply {
        parts: Vec::new(),
        text: text.into(),
        id: Some(id.into()),
    };
    for _ in 0..3 {
        doorbell::ring(&store, &bell, ID, &named("blue", "r1"), &Guard::Open)
            .await
            .expect("accepted");
    }
    doorbell::ring(&store, &bell, ID, &named("blue", "r2"), &Guard::Open)
        .await
        .expect("accepted");
    let row = store.snapshot(ID).expect("row");
    assert_eq!(row.pending.replies, ["blue", "blue"], "r1 once, r2 once");
    // Taken for its turn, r1 is still known: a late retry is not queued again.
    store.park(ID, 1, "tok-1").await.expect("parked");
    store.drain(ID, None, 1).await.expect("drained");
    doorbell::ring(&store, &bell, ID, &named("blue", "r1"), &Guard::Open)
        .await
        .expect("accepted");
    assert_eq!(store.snapshot(ID).expect("row").pending.replies, ["blue"]);
}

#[tokio::test]
async fn ring_without_a_park_token_only_records() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("recorded");
    assert!(bell.rings().is_empty());
    assert_eq!(store.snapshot(ID).expect("row").pending.replies, ["blue"]);
}

#[tokio::test]
async fn ring_on_a_closed_row_records_nothing_and_rings_nothing() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, 1, "tok-1").await.expect("parked");
    store.close(ID, None).await.expect("closed");
    let writes = store.writes();
    let err = doorbell::ring(&store, &bell, ID, &reply("late"), &Guard::Open)
        .await
        .expect_err("closed rows take no events");
    assert_eq!(err, StoreError::Refused(ID.into()));
    assert_eq!(store.writes(), writes);
    assert!(bell.rings().is_empty());
}

#[tokio::test]
async fn a_failed_or_refused_ring_is_harmless_and_the_next_park_sees_the_event() {
    for failure in [
        DoorbellError::ParkOver,
        DoorbellError::Backend("throttled".into()),
    ] {
        let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
        open_row(&store, WatchMode::Off).await;
        store.park(ID, 1, "tok-1").await.expect("parked");
        bell.fail_with(Some(failure.clone()));
        doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
            .await
            .expect("a failed ring is not an error");
        bell.fail_with(None);
        park(&store, &bell, 2, "tok-2").await;
        assert_eq!(
            bell.rings(),
            ["tok-1", "tok-2"],
            "{failure:?}: the new park rang itself"
        );
        let drained = doorbell::drain(&store, ID, 2).await.expect("drained");
        assert_eq!(drained.event, Some(reply("blue")));
    }
}

// Rule 2: park = store the token (its number becomes the epoch); ring yourself if
// anything is pending. Only the newest park stores its token.

#[tokio::test]
async fn park_with_nothing_pending_waits_and_starts_a_new_epoch() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    let first = park(&store, &bell, 1, "tok-1").await;
    let second = park(&store, &bell, 2, "tok-2").await;
    assert_eq!((first.epoch, second.epoch), (1, 2));
    assert_eq!(second.park_token.as_deref(), Some("tok-2"));
    assert!(bell.rings().is_empty());
    assert!(second.is_parked());
}

#[tokio::test]
async fn a_park_takes_its_own_number_as_the_epoch_even_past_a_gap() {
    // A park whose invoke never ran (its number skipped) leaves no trace: the next one
    // is still newer.
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    park(&store, &bell, 1, "tok-1").await;
    assert_eq!(park(&store, &bell, 5, "tok-5").await.epoch, 5);
}

#[tokio::test]
async fn a_late_or_repeated_park_invoke_is_refused_and_changes_nothing() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    park(&store, &bell, 2, "tok-2").await;
    // An event waits, so a park that stored its token would ring itself at once.
    store
        .record(ID, &reply("blue"), &Guard::Open)
        .await
        .expect("recorded");
    let before = store.snapshot(ID).expect("row");
    let writes = store.writes();
    for (number, token, why) in [
        (1, "tok-late", "a late invoke of an older park"),
        (2, "tok-again", "a repeated invoke of the same park"),
    ] {
        assert_eq!(
            doorbell::store_park(&store, &bell, ID, number, token).await,
            Ok(None),
            "{why}"
        );
        assert_eq!(
            store.park(ID, number, token).await,
            Err(StoreError::Refused(ID.into())),
            "{why}"
        );
        assert_eq!(store.snapshot(ID).expect("row"), before, "{why}");
    }
    assert_eq!(store.writes(), writes, "nothing written");
    assert!(bell.rings().is_empty(), "a refused park rings nothing");
    assert_eq!(before.park_token.as_deref(), Some("tok-2"));
    assert_eq!(before.epoch, 2);
}

#[tokio::test]
async fn a_park_whose_wake_already_ran_is_refused() {
    // The park timed out before its invoke ran; the wake ended it. Its late invoke must
    // not store a token nobody waits on (nor reopen the watchers' fence).
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    park(&store, &bell, 1, "tok-1").await;
    let woken = store.end_park(ID, 2).await.expect("woken");
    assert_eq!((woken.epoch, woken.woken), (1, 2));
    assert!(!woken.is_parked(), "park 1 is over once a later wake ran");
    assert_eq!(
        doorbell::store_park(&store, &bell, ID, 2, "tok-2").await,
        Ok(None)
    );
    let row = store.snapshot(ID).expect("row");
    assert_eq!(
        (row.epoch, row.park_token.as_deref()),
        (1, Some("tok-1")),
        "the refused park changed nothing"
    );
    // A drain ends a park the same way.
    store.drain(ID, None, 3).await.expect("drained");
    assert_eq!(
        store.park(ID, 3, "tok-3").await,
        Err(StoreError::Refused(ID.into()))
    );
    // The next number parks.
    assert_eq!(park(&store, &bell, 4, "tok-4").await.epoch, 4);
}

#[tokio::test]
async fn race_ring_between_drain_and_park_is_not_lost() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, 1, "tok-1").await.expect("parked");
    // The wake drains an empty row...
    assert_eq!(
        doorbell::drain(&store, ID, 1).await.expect("drained").event,
        None
    );
    // ...a reply lands now and rings the old, consumed token...
    doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("recorded");
    // ...and the next park sees it and rings itself at once.
    park(&store, &bell, 2, "tok-2").await;
    assert_eq!(bell.rings(), ["tok-1", "tok-2"]);
    assert_eq!(
        doorbell::drain(&store, ID, 2).await.expect("drained").event,
        Some(reply("blue"))
    );
}

#[tokio::test]
async fn park_on_a_closed_row_is_refused() {
    // Changed rule: a refused park is no longer an error but `Ok(None)` (the park step
    // treats it like a late invoke); the store still says Refused.
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.close(ID, None).await.expect("closed");
    assert_eq!(
        doorbell::store_park(&store, &bell, ID, 1, "tok").await,
        Ok(None)
    );
    assert_eq!(
        store.park(ID, 1, "tok").await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(store.snapshot(ID).expect("row").park_token, None);
}
