//! Rule 3: the drain takes by priority, one event per park.

use super::*;

// Rule 3: drain takes by priority; one reply per turn; the rest stay. One event per park.

#[tokio::test]
async fn drain_priority_is_cancel_reply_push_follow() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Push).await;
    let events = [
        WakeEvent::Follow {
            epoch: 0,
            outcome: FollowOutcome::WindowOver,
        },
        WakeEvent::Push {
            claimed: Some(TaskState::Working),
        },
        reply("first"),
        reply("second"),
        WakeEvent::Cancel {
            reason: "parent gave up".into(),
        },
    ];
    for e in &events {
        store.record(ID, e, &Guard::Open).await.expect("recorded");
    }
    // Each wake ends its own park: one event per park number.
    let mut order = Vec::new();
    let mut number = 1;
    while let Some(e) = doorbell::drain(&store, ID, number)
        .await
        .expect("drained")
        .event
    {
        order.push(e);
        number += 1;
    }
    assert_eq!(
        order,
        [
            WakeEvent::Cancel {
                reason: "parent gave up".into()
            },
            reply("first"),
            reply("second"),
            WakeEvent::Push {
                claimed: Some(TaskState::Working)
            },
            WakeEvent::Follow {
                epoch: 0,
                outcome: FollowOutcome::WindowOver
            },
        ]
    );
    drop(bell);
}

#[tokio::test]
async fn race_ring_during_a_drain_stays_for_the_next_park() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, 1, "tok-1").await.expect("parked");
    store
        .record(ID, &reply("one"), &Guard::Open)
        .await
        .expect("recorded");
    let drained = doorbell::drain(&store, ID, 1).await.expect("drained");
    assert_eq!(drained.event, Some(reply("one")));
    // A second reply arrives while the wake works on the first.
    doorbell::ring(&store, &bell, ID, &reply("two"), &Guard::Open)
        .await
        .expect("recorded");
    park(&store, &bell, 2, "tok-2").await;
    assert_eq!(bell.rings().last().map(String::as_str), Some("tok-2"));
    assert_eq!(
        doorbell::drain(&store, ID, 2).await.expect("drained").event,
        Some(reply("two"))
    );
}

#[tokio::test]
async fn a_newer_push_replaces_the_older_claim() {
    let store = MemoryStore::new();
    open_row(&store, WatchMode::Push).await;
    for claimed in [Some(TaskState::Working), Some(TaskState::Completed)] {
        store
            .record(ID, &WakeEvent::Push { claimed }, &Guard::Open)
            .await
            .expect("recorded");
    }
    let drained = doorbell::drain(&store, ID, 1).await.expect("drained");
    assert_eq!(
        drained.event,
        Some(WakeEvent::Push {
            claimed: Some(TaskState::Completed)
        })
    );
    assert_eq!(
        doorbell::drain(&store, ID, 2).await.expect("drained").event,
        None
    );
}

#[tokio::test]
async fn a_retried_drain_of_the_same_park_returns_the_same_event() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    park(&store, &bell, 1, "tok-1").await;
    for text in ["one", "two"] {
        store
            .record(ID, &reply(text), &Guard::Open)
            .await
            .expect("recorded");
    }
    let first = doorbell::drain(&store, ID, 1).await.expect("drained");
    assert_eq!(first.event, Some(reply("one")));
    assert_eq!(
        first.row.taken,
        Some(Taken {
            park: 1,
            event: Some(reply("one"))
        })
    );
    // The wake's Lambda is retried (its answer was lost): same park, same event...
    let retried = doorbell::drain(&store, ID, 1).await.expect("drained");
    assert_eq!(retried.event, Some(reply("one")));
    // ...and the next event is still pending, untouched by the retry.
    assert_eq!(retried.row.pending.replies, ["two"]);
    assert_eq!(retried.row.woken, 1);
    // The next park's wake takes the next event.
    park(&store, &bell, 2, "tok-2").await;
    let next = doorbell::drain(&store, ID, 2).await.expect("drained");
    assert_eq!(next.event, Some(reply("two")));
    assert!(next.row.pending.is_empty());
    assert_eq!(
        doorbell::drain(&store, ID, 2).await.expect("again").event,
        Some(reply("two")),
        "that one is idempotent too"
    );
}
