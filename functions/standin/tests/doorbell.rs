//! The doorbell protocol (docs/architecture.md), one test (or more) per rule, with the
//! races run step by step
//! against the in-memory store (each store call is atomic, like one UpdateItem or one
//! transaction with the note it records).
//! The row store's own rules, which both stores keep, are checked in `row_store.rs`
//! (`standin::row::contract`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use standin::doorbell::DoorbellError;
use standin::doorbell::memory::MemoryDoorbell;
use standin::doorbell::{self, EndCause, follow_should_stop};
use standin::outbox::ParentNote;
use standin::outbox::ParentQueue;
use standin::outbox::QueueError;
use standin::outbox::deliver as notify;
use standin::outbox::memory::MemoryQueue;
use standin::push::receiver;
use standin::push::token::PushToken;
use standin::row::Applied;
use standin::row::Closed;
use standin::row::RowStore;
use standin::row::StoreError;
use standin::row::memory::MemoryStore;
use standin::row::{FollowOutcome, FollowReport, Guard, Row, Taken, WakeEvent, Watch, WatchMode};
use standin::state::{RemoteOut, remote_out};
use standin_remote::Agent;
use standin_remote::PushRequest;
use standin_remote::RemoteError;
use standin_remote::Sent;
use standin_remote::Status;
use standin_remote::Turn;
use standin_remote::UpdateStream;
use standin_remote::fake::FakeAgent;
use standin_wire::TaskState;

use std::sync::Arc;
use std::time::Duration;

const ID: &str = "local-1";
const REMOTE: &str = "remote-1";

async fn open_row(store: &MemoryStore, mode: WatchMode) -> PushToken {
    let token = PushToken::generate();
    let mut row = Row::new(ID, "agent-a");
    row.remote_task_id = Some(REMOTE.into());
    row.watch = Some(Watch {
        mode,
        config_id: Some("standin-local-1".into()),
        token_digest: (mode == WatchMode::Push).then(|| token.digest()),
    });
    row.last = Some(remote_out(REMOTE, TaskState::InputRequired, "What colour?"));
    store.create(&row).await.expect("row created");
    token
}

fn reply(text: &str) -> WakeEvent {
    WakeEvent::reply(text)
}

/// Parks park number `park`, which must be the newest.
async fn park(store: &MemoryStore, bell: &MemoryDoorbell, park: u64, token: &str) -> Row {
    doorbell::park(store, bell, ID, park, token)
        .await
        .expect("parked")
        .expect("the newest park stores its token")
}

/// (seq, state, is_final) of every note in the outbox.
fn outbox(store: &MemoryStore) -> Vec<(u64, String, bool)> {
    store
        .outbox()
        .into_iter()
        .map(|n| (n.seq, n.state.as_str().to_owned(), n.is_final))
        .collect()
}

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
    store.drain(ID, 1).await.expect("drained");
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
            doorbell::park(&store, &bell, ID, number, token).await,
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
    let woken = store.wake(ID, 2).await.expect("woken");
    assert_eq!((woken.epoch, woken.woken), (1, 2));
    assert!(!woken.is_parked(), "park 1 is over once a later wake ran");
    assert_eq!(
        doorbell::park(&store, &bell, ID, 2, "tok-2").await,
        Ok(None)
    );
    let row = store.snapshot(ID).expect("row");
    assert_eq!(
        (row.epoch, row.park_token.as_deref()),
        (1, Some("tok-1")),
        "the refused park changed nothing"
    );
    // A drain ends a park the same way.
    store.drain(ID, 3).await.expect("drained");
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
    assert_eq!(doorbell::park(&store, &bell, ID, 1, "tok").await, Ok(None));
    assert_eq!(
        store.park(ID, 1, "tok").await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(store.snapshot(ID).expect("row").park_token, None);
}

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

// Rule 4: the fence. A late follow from an earlier park changes nothing, and a park's
// watchers can write nothing once its wake has run.

fn working(text: &str) -> RemoteOut {
    remote_out(REMOTE, TaskState::Working, text)
}

#[tokio::test]
async fn race_late_follow_from_an_old_epoch_is_fenced_out() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    let old = park(&store, &bell, 1, "tok-1").await;
    // A reply woke the stand-in; it turned and parked again before the old follow ended.
    let new = park(&store, &bell, 2, "tok-2").await;
    let before = store.snapshot(ID).expect("row");
    let err = doorbell::follow_report(
        &store,
        &bell,
        &old,
        old.epoch,
        Some(&working("stale")),
        FollowOutcome::WindowOver,
    )
    .await
    .expect_err("fenced");
    assert_eq!(err, StoreError::Refused(ID.into()));
    assert_eq!(store.snapshot(ID).expect("row"), before, "nothing written");
    assert!(store.outbox().is_empty() && bell.rings().is_empty());
    // The current follow's report goes through: applied, noted, recorded, rung.
    doorbell::follow_report(
        &store,
        &bell,
        &new,
        new.epoch,
        Some(&working("fresh")),
        FollowOutcome::WindowOver,
    )
    .await
    .expect("current epoch");
    let row = store.snapshot(ID).expect("row");
    assert_eq!(row.last.as_ref().map(|l| l.text.as_str()), Some("fresh"));
    assert_eq!(outbox(&store), [(1, "TASK_STATE_WORKING".into(), false)]);
    assert_eq!(bell.rings(), ["tok-2"]);
    assert_eq!(
        row.pending.follow,
        Some(FollowReport {
            epoch: new.epoch,
            outcome: FollowOutcome::Changed { is_final: false }
        })
    );
}

#[tokio::test]
async fn the_watchers_fence_closes_at_the_wake() {
    // The park timed out (or was rung) and its wake drained; the follow of that park is
    // still running and reports late. Same epoch, but the park is over: nothing lands.
    for end_park in ["drain", "wake"] {
        let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
        open_row(&store, WatchMode::Follow).await;
        let parked = park(&store, &bell, 1, "tok-1").await;
        assert!(Guard::Epoch(1).admits(&parked));
        match end_park {
            "drain" => {
                store.drain(ID, 1).await.expect("drained");
            }
            _ => {
                store.wake(ID, 1).await.expect("woken");
            }
        }
        let before = store.snapshot(ID).expect("row");
        assert!(!Guard::Epoch(1).admits(&before), "{end_park}");
        assert!(
            follow_should_stop(&before, 1),
            "{end_park}: the follow stops"
        );
        let writes = store.writes();
        assert_eq!(
            doorbell::follow_report(
                &store,
                &bell,
                &parked,
                1,
                Some(&working("late")),
                FollowOutcome::WindowOver,
            )
            .await,
            Err(StoreError::Refused(ID.into())),
            "{end_park}: a change"
        );
        assert_eq!(
            doorbell::follow_report(&store, &bell, &parked, 1, None, FollowOutcome::Failed).await,
            Err(StoreError::Refused(ID.into())),
            "{end_park}: a report without a change"
        );
        assert_eq!(
            doorbell::apply(&store, ID, &working("late"), &Guard::Epoch(1)).await,
            Err(StoreError::Refused(ID.into())),
            "{end_park}: a plain apply"
        );
        assert_eq!(store.snapshot(ID).expect("row"), before, "{end_park}");
        assert_eq!(store.writes(), writes, "{end_park}");
        assert!(store.outbox().is_empty(), "{end_park}: no note");
        assert!(bell.rings().is_empty(), "{end_park}: no ring");
    }
}

#[tokio::test]
async fn a_follow_that_finds_nothing_new_reports_unchanged() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    let row = park(&store, &bell, 1, "tok-1").await;
    let same = remote_out(REMOTE, TaskState::InputRequired, "What colour?");
    doorbell::follow_report(
        &store,
        &bell,
        &row,
        row.epoch,
        Some(&same),
        FollowOutcome::WindowOver,
    )
    .await
    .expect("reported");
    assert!(store.outbox().is_empty());
    assert_eq!(
        store.snapshot(ID).expect("row").pending.follow,
        Some(FollowReport {
            epoch: 1,
            outcome: FollowOutcome::Unchanged
        })
    );
}

#[tokio::test]
async fn a_follow_that_applies_a_final_state_rings_its_park_directly() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    let row = park(&store, &bell, 1, "tok-1").await;
    let done = remote_out(REMOTE, TaskState::Completed, "done");
    let outcome = doorbell::follow_report(
        &store,
        &bell,
        &row,
        row.epoch,
        Some(&done),
        FollowOutcome::WindowOver,
    )
    .await
    .expect("reported");
    assert_eq!(outcome, FollowOutcome::Changed { is_final: true });
    let after = store.snapshot(ID).expect("row");
    assert!(after.closed, "the final state closed the row");
    assert!(
        after.pending.follow.is_none(),
        "nothing can be recorded on a closed row"
    );
    assert_eq!(bell.rings(), ["tok-1"], "so the park is rung directly");
    assert_eq!(outbox(&store), [(1, "TASK_STATE_COMPLETED".into(), true)]);
}

#[tokio::test]
async fn a_follow_stops_when_its_park_is_over() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    let row = park(&store, &bell, 1, "tok-1").await;
    assert!(!follow_should_stop(&row, row.epoch));
    let rung = doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("rung");
    assert!(follow_should_stop(&rung, row.epoch), "a reply is waiting");
    let reparked = store.park(ID, 2, "tok-2").await.expect("parked");
    assert!(follow_should_stop(&reparked, row.epoch), "a newer park");
    let Closed { row: closed, .. } = store.close(ID, None).await.expect("closed");
    assert!(follow_should_stop(&closed, closed.epoch), "closed");
}

// Apply: every change reaches the outbox once, in order, in the same write as the row.

#[tokio::test]
async fn apply_notes_each_change_once_in_order() {
    let store = MemoryStore::new();
    open_row(&store, WatchMode::Push).await;
    let steps = [
        working("a"),
        working("a"),
        working("b"),
        remote_out(REMOTE, TaskState::InputRequired, "again?"),
    ];
    let mut seqs = Vec::new();
    for out in &steps {
        seqs.push(
            match doorbell::apply(&store, ID, out, &Guard::Open)
                .await
                .expect("applied")
            {
                Applied::Changed { note, row } => {
                    assert_eq!((row.seq, row.last.as_ref()), (note.seq, Some(out)));
                    Some(note.seq)
                }
                Applied::Unchanged => None,
            },
        );
    }
    assert_eq!(seqs, [Some(1), None, Some(2), Some(3)]);
    let notes = store.outbox();
    assert_eq!(notes.iter().map(|n| n.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        notes.iter().map(|n| n.text.as_str()).collect::<Vec<_>>(),
        ["a", "b", "again?"]
    );
    assert!(notes.iter().all(|n| !n.is_final
        && n.remote_task_id.as_deref() == Some(REMOTE)
        && n.agent == "agent-a"));
    assert!(!store.snapshot(ID).expect("row").closed);
}

#[tokio::test]
async fn a_refused_apply_writes_no_note() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    park(&store, &bell, 2, "tok-2").await;
    assert_eq!(
        doorbell::apply(&store, ID, &working("stale"), &Guard::Epoch(1)).await,
        Err(StoreError::Refused(ID.into()))
    );
    assert!(store.outbox().is_empty());
    assert_eq!(store.snapshot(ID).expect("row").seq, 0, "no number taken");
}

#[tokio::test]
async fn a_final_state_is_noted_and_closes_the_row_in_its_apply() {
    let (store, bell, agent) = (
        MemoryStore::new(),
        MemoryDoorbell::new(),
        FakeAgent::new(true),
    );
    open_row(&store, WatchMode::Push).await;
    park(&store, &bell, 1, "tok-1").await;
    doorbell::apply(&store, ID, &working("building"), &Guard::Open)
        .await
        .expect("applied");
    let done = remote_out(REMOTE, TaskState::Completed, "ready");
    let Applied::Changed { note, row } = doorbell::apply(&store, ID, &done, &Guard::Open)
        .await
        .expect("applied")
    else {
        panic!("a final state is a change");
    };
    assert_eq!(note.seq, 2);
    assert!(row.closed, "closed in the same write as its note");
    assert_eq!(
        row.park_token.as_deref(),
        Some("tok-1"),
        "the park token stays so the applier can ring it"
    );
    // Anything later is refused: a reply, a cancel, another state.
    for late in [
        reply("too late"),
        WakeEvent::Cancel {
            reason: "parent gave up".into(),
        },
    ] {
        assert_eq!(
            doorbell::ring(&store, &bell, ID, &late, &Guard::Open).await,
            Err(StoreError::Refused(ID.into())),
            "{late:?}"
        );
    }
    assert_eq!(
        doorbell::apply(&store, ID, &working("after"), &Guard::Open).await,
        Err(StoreError::Refused(ID.into()))
    );
    assert!(bell.rings().is_empty());
    // The end that a cancel would have caused: the final already applied wins, so it
    // writes no second note and does not cancel the remote task.
    let cause = EndCause::Cancelled {
        reason: "parent gave up".into(),
    };
    let closed = end(&store, Some(&agent), &cause).await;
    assert_eq!(closed.seq(), None, "no second note");
    assert_eq!(
        closed.row.last.as_ref().map(|l| l.state),
        Some(TaskState::Completed)
    );
    assert_eq!(
        agent.count("CancelTask"),
        0,
        "the remote task is not cancelled"
    );
    assert_eq!(
        agent.calls(),
        ["DeleteTaskPushNotificationConfig:remote-1/standin-local-1"]
    );
    assert_eq!(
        outbox(&store),
        [
            (1, "TASK_STATE_WORKING".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ],
        "numbers run 1..n without gaps, the final one last"
    );
}

// Rule 5: close first, with the final note in the same write.

/// The end as the End function runs it, with `agent` as what its connector finds.
async fn end<A: Agent>(store: &MemoryStore, agent: Option<&A>, cause: &EndCause) -> Closed {
    doorbell::end(store, ID, cause, || async move { agent })
        .await
        .expect("ended")
}

/// An agent that looks at the store when the end reaches it: whether the row is closed
/// at each push-config delete, and whether the final note is written at the cancel.
struct WatchingAgent {
    inner: FakeAgent,
    store: Arc<MemoryStore>,
    observed: std::sync::Mutex<Vec<bool>>,
}

impl Agent for WatchingAgent {
    fn can_push(&self) -> bool {
        true
    }
    fn can_stream(&self) -> bool {
        true
    }
    async fn send_streaming(&self, turn: &Turn) -> Result<UpdateStream, RemoteError> {
        self.inner.send_streaming(turn).await
    }
    async fn send(&self, turn: &Turn) -> Result<Sent, RemoteError> {
        self.inner.send(turn).await
    }
    async fn get(&self, id: &str) -> Result<Status, RemoteError> {
        self.inner.get(id).await
    }
    async fn subscribe(&self, id: &str) -> Result<UpdateStream, RemoteError> {
        self.inner.subscribe(id).await
    }
    async fn register_push(&self, push: &PushRequest) -> Result<Option<String>, RemoteError> {
        self.inner.register_push(push).await
    }
    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), RemoteError> {
        let closed = self.store.snapshot(ID).is_some_and(|r| r.closed);
        self.observed.lock().expect("lock").push(closed);
        self.inner.delete_push(task_id, config_id).await
    }
    async fn cancel(&self, id: &str) -> Result<Status, RemoteError> {
        let closed = self.store.snapshot(ID).is_some_and(|r| r.closed);
        let noted = self.store.outbox().iter().any(|n| n.is_final);
        self.observed.lock().expect("lock").extend([closed, noted]);
        self.inner.cancel(id).await
    }
}

#[tokio::test]
async fn end_closes_before_deleting_the_push_config_and_a_failing_delete_does_not_stop_it() {
    let store = Arc::new(MemoryStore::new());
    let token = open_row(&store, WatchMode::Push).await;
    let agent = WatchingAgent {
        inner: FakeAgent::new(true),
        store: store.clone(),
        observed: Default::default(),
    };
    agent.inner.fail_deletes(5);
    let cause = EndCause::Cancelled {
        reason: "no longer needed".into(),
    };
    let closed = end(store.as_ref(), Some(&agent), &cause).await;
    assert_eq!(
        *agent.observed.lock().expect("lock"),
        [true, false, true, true],
        "closed first; the remote asked before the note (its answer is the truth); \
         then two delete attempts, after the note"
    );
    assert_eq!(agent.inner.count("CancelTask"), 1);
    assert_eq!(closed.seq(), Some(1));
    let notes = store.outbox();
    assert_eq!(notes.len(), 1);
    assert_eq!(
        (notes[0].state.as_str(), notes[0].is_final, notes[0].seq),
        ("TASK_STATE_CANCELED", true, 1)
    );
    // From now on every push is refused, and nothing is written.
    let writes = store.writes();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-a2a-notification-token",
        token.expose().parse().expect("header"),
    );
    let body = format!(
        r#"{{"statusUpdate":{{"taskId":"{REMOTE}","status":{{"state":"TASK_STATE_WORKING"}}}}}}"#
    );
    let bell = MemoryDoorbell::new();
    let answer = receiver::receive(store.as_ref(), &bell, ID, &headers, body.as_bytes()).await;
    assert_eq!(answer.status, 401);
    assert_eq!(store.writes(), writes);
    assert!(bell.rings().is_empty());
}

#[tokio::test]
async fn end_on_a_final_state_notes_it_once_and_cancels_nothing() {
    // Changed rule: the final note is written when the final state is applied, under its
    // own number (it used to be held back and sent by the end); the end adds nothing.
    let (store, agent) = (MemoryStore::new(), FakeAgent::new(true));
    open_row(&store, WatchMode::Push).await;
    let done = remote_out(REMOTE, TaskState::Completed, "Your blue widget is ready.");
    doorbell::apply(&store, ID, &done, &Guard::Open)
        .await
        .expect("applied");
    let notes = store.outbox();
    assert_eq!(notes.len(), 1, "the final note is in the outbox at once");
    assert_eq!(
        (
            notes[0].state.as_str(),
            notes[0].text.as_str(),
            notes[0].is_final,
            notes[0].seq
        ),
        (
            "TASK_STATE_COMPLETED",
            "Your blue widget is ready.",
            true,
            1
        )
    );
    let closed = end(&store, Some(&agent), &EndCause::Final).await;
    assert_eq!(closed.seq(), None);
    assert_eq!(
        agent.calls(),
        ["DeleteTaskPushNotificationConfig:remote-1/standin-local-1"]
    );
    assert_eq!(store.outbox(), notes, "no second note");
}

#[tokio::test]
async fn end_in_follow_or_off_mode_deletes_nothing() {
    for mode in [WatchMode::Follow, WatchMode::Off] {
        let (store, agent) = (MemoryStore::new(), FakeAgent::new(true));
        open_row(&store, mode).await;
        let done = remote_out(REMOTE, TaskState::Completed, "done");
        doorbell::apply(&store, ID, &done, &Guard::Open)
            .await
            .expect("applied");
        end(&store, Some(&agent), &EndCause::Final).await;
        assert_eq!(
            agent.count("DeleteTaskPushNotificationConfig"),
            0,
            "{mode:?}"
        );
        assert!(store.snapshot(ID).expect("row").closed);
    }
}

#[tokio::test]
async fn close_writes_a_canceled_or_failed_note_once() {
    let causes = [
        (
            EndCause::Cancelled {
                reason: "parent gave up".into(),
            },
            "TASK_STATE_CANCELED",
            "parent gave up",
        ),
        (
            EndCause::Failed {
                reason: "a step failed".into(),
            },
            "TASK_STATE_FAILED",
            "a step failed",
        ),
    ];
    for (cause, state, text) in causes {
        let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
        open_row(&store, WatchMode::Off).await;
        park(&store, &bell, 1, "tok-1").await;
        store
            .record(ID, &reply("unread"), &Guard::Open)
            .await
            .expect("recorded");
        doorbell::apply(&store, ID, &working("busy"), &Guard::Open)
            .await
            .expect("applied");
        let first = end::<FakeAgent>(&store, None, &cause).await;
        assert_eq!(first.seq(), Some(2), "{state}: the next number");
        let row = &first.row;
        assert!(row.closed && row.park_token.is_none() && row.pending.is_empty());
        assert_eq!(
            row.last
                .as_ref()
                .map(|l| (l.state.as_str(), l.text.as_str(), l.is_final)),
            Some((state, text, true)),
            "{state}: the note's state is the row's last"
        );
        let writes = store.writes();
        let again = end::<FakeAgent>(&store, None, &cause).await;
        assert_eq!(again.seq(), None, "{state}: a second close writes nothing");
        assert_eq!(again.row, first.row);
        assert_eq!(store.writes(), writes);
        let store_again = store
            .close(ID, Some(&working("ignored")))
            .await
            .expect("again");
        assert_eq!(store_again.seq(), None, "{state}: the store's close too");
        let notes = store.outbox();
        assert_eq!(
            notes
                .iter()
                .map(|n| (n.seq, n.state.as_str(), n.is_final))
                .collect::<Vec<_>>(),
            [(1, "TASK_STATE_WORKING", false), (2, state, true)],
            "{state}"
        );
        assert_eq!(notes[1].text, text);
        assert_eq!(notes[1].remote_task_id.as_deref(), Some(REMOTE));
    }
}

#[tokio::test]
async fn a_close_reason_is_scrubbed_before_it_is_noted() {
    let store = MemoryStore::new();
    open_row(&store, WatchMode::Off).await;
    let secret = "Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL";
    let cause = EndCause::Failed {
        reason: format!("agent said {secret}"),
    };
    end::<FakeAgent>(&store, None, &cause).await;
    let notes = store.outbox();
    assert_eq!(notes.len(), 1);
    assert!(!notes[0].text.contains(secret), "{}", notes[0].text);
}

// The outbox's delivery: in order, stopping at the first refusal.

fn note(seq: u64) -> ParentNote {
    note_of(ID, seq)
}

fn note_of(task_id: &str, seq: u64) -> ParentNote {
    let row = Row::new(task_id, "agent-a");
    standin::outbox::note_of(&row, &working(&format!("step {seq}")), seq)
}

/// A deadline no test reaches.
fn later() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(3600)
}

/// A queue that refuses its `nth` send (counting from 1) and passes the others on.
struct RefuseNth<'a> {
    queue: &'a MemoryQueue,
    nth: u32,
    sends: std::sync::Mutex<u32>,
}

impl ParentQueue for RefuseNth<'_> {
    async fn send(&self, n: &ParentNote) -> Result<(), QueueError> {
        let sent = {
            let mut sends = self.sends.lock().expect("lock");
            *sends += 1;
            *sends
        };
        if sent == self.nth {
            self.queue.refuse(1);
        }
        self.queue.send(n).await
    }
}

fn seqs(queue: &MemoryQueue) -> Vec<u64> {
    queue.notes().iter().map(|n| n.seq).collect()
}

#[tokio::test]
async fn deliver_stops_at_the_first_refusal_and_returns_its_index() {
    let notes: Vec<ParentNote> = (1..=4).map(note).collect();
    let queue = MemoryQueue::new();
    let third = RefuseNth {
        queue: &queue,
        nth: 3,
        sends: Default::default(),
    };
    assert_eq!(notify::deliver(&third, &notes, later()).await, Some(2));
    assert_eq!(
        *third.sends.lock().expect("lock"),
        3,
        "nothing tried after it"
    );
    assert_eq!(
        seqs(&queue),
        [1, 2],
        "nothing after the refused note overtook it"
    );
    // Refused at once: nothing delivered, index 0.
    let queue = MemoryQueue::new();
    queue.refuse(1);
    assert_eq!(notify::deliver(&queue, &notes, later()).await, Some(0));
    assert!(queue.notes().is_empty());
    // Nothing refused: None.
    assert_eq!(notify::deliver(&queue, &notes, later()).await, None);
    assert_eq!(seqs(&queue), [1, 2, 3, 4]);
}

#[tokio::test]
async fn delivering_again_after_a_refusal_delivers_each_note_once_in_order() {
    let notes: Vec<ParentNote> = (1..=4).map(note).collect();
    let queue = MemoryQueue::new();
    let third = RefuseNth {
        queue: &queue,
        nth: 3,
        sends: Default::default(),
    };
    assert_eq!(notify::deliver(&third, &notes, later()).await, Some(2));
    // The event source retries the batch (from its start, or from the refused note):
    // the queue deduplicates by task_id and seq, so each reaches the parent once.
    assert_eq!(notify::deliver(&queue, &notes, later()).await, None);
    assert_eq!(notify::deliver(&queue, &notes[2..], later()).await, None);
    assert_eq!(seqs(&queue), [1, 2, 3, 4]);
    // Another stand-in's note under the same number is not a duplicate.
    let mut other = note(1);
    other.task_id = "other".into();
    assert_eq!(notify::deliver(&queue, &[other], later()).await, None);
    assert_eq!(queue.notes().len(), 5);
}

/// Records each call's notes; refuses the notes named, hangs from the call numbered.
#[derive(Default)]
struct Rounds {
    queue: MemoryQueue,
    calls: std::sync::Mutex<Vec<Vec<(String, u64)>>>,
    refuse: Vec<(&'static str, u64)>,
    hang_from_call: Option<usize>,
}

impl ParentQueue for Rounds {
    async fn send(&self, _: &ParentNote) -> Result<(), QueueError> {
        unreachable!("deliver sends rounds")
    }

    async fn send_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        let call = {
            let mut calls = self.calls.lock().expect("lock");
            calls.push(notes.iter().map(|n| (n.task_id.clone(), n.seq)).collect());
            calls.len()
        };
        if self.hang_from_call.is_some_and(|from| call >= from) {
            std::future::pending::<()>().await;
        }
        let mut answers = vec![];
        for note in notes {
            if self.refuse.contains(&(note.task_id.as_str(), note.seq)) {
                answers.push(Err(QueueError::Unavailable("refused on purpose".into())));
            } else {
                answers.push(self.queue.send(note).await);
            }
        }
        answers
    }
}

fn delivered(queue: &MemoryQueue, task_id: &str) -> Vec<u64> {
    let notes = queue.notes();
    notes
        .iter()
        .filter(|n| n.task_id == task_id)
        .map(|n| n.seq)
        .collect()
}

#[tokio::test]
async fn deliver_sends_one_note_per_stand_in_per_round_and_a_refusal_stops_only_its_own() {
    // Written interleaved, as the stream hands them over: a1 b1 a2 c1 b2 a3 b3.
    let notes = vec![
        note_of("a", 1),
        note_of("b", 1),
        note_of("a", 2),
        note_of("c", 1),
        note_of("b", 2),
        note_of("a", 3),
        note_of("b", 3),
    ];
    let queue = Rounds {
        refuse: vec![("b", 2)],
        ..Default::default()
    };
    assert_eq!(
        notify::deliver(&queue, &notes, later()).await,
        Some(4),
        "b2 is the earliest note not taken: the retry starts there"
    );
    let calls = queue.calls.lock().expect("lock").clone();
    assert_eq!(
        calls,
        [
            vec![("a".into(), 1), ("b".into(), 1), ("c".into(), 1)],
            vec![("a".into(), 2), ("b".into(), 2)],
            vec![("a".into(), 3)],
        ],
        "each round carries the next note of every lane still open, and no lane twice"
    );
    assert_eq!(
        delivered(&queue.queue, "a"),
        [1, 2, 3],
        "a is not held up by b"
    );
    assert_eq!(
        delivered(&queue.queue, "b"),
        [1],
        "nothing of b overtook b2"
    );
    assert_eq!(delivered(&queue.queue, "c"), [1]);

    // The event source retries from b2: a3 again is deduplicated, b2 and b3 follow b1.
    let retry = Rounds::default();
    assert_eq!(notify::deliver(&retry, &notes[4..], later()).await, None);
    assert_eq!(delivered(&retry.queue, "b"), [2, 3]);
}

#[tokio::test]
async fn deliver_stops_before_its_deadline_and_names_the_earliest_note_not_taken() {
    // One stand-in's backlog and another's: the queue answers the first round, then
    // never answers again (a call that outlives the invocation).
    let notes = vec![
        note_of("a", 1),
        note_of("b", 1),
        note_of("a", 2),
        note_of("a", 3),
    ];
    let queue = Rounds {
        hang_from_call: Some(2),
        ..Default::default()
    };
    let stop_at = tokio::time::Instant::now() + Duration::from_millis(200);
    assert_eq!(
        notify::deliver(&queue, &notes, stop_at).await,
        Some(2),
        "a2 was in the round that did not answer: the retry starts there"
    );
    assert_eq!(delivered(&queue.queue, "a"), [1]);
    assert_eq!(delivered(&queue.queue, "b"), [1]);

    // Out of time before the first round: nothing is taken, the retry starts at 0.
    let queue = Rounds {
        hang_from_call: Some(1),
        ..Default::default()
    };
    assert_eq!(
        notify::deliver(&queue, &notes, tokio::time::Instant::now()).await,
        Some(0)
    );
}

#[tokio::test]
async fn race_push_after_close_is_refused_at_the_write() {
    // The close lands just before the receiver's write (it reads nothing before it).
    struct ClosingStore {
        inner: MemoryStore,
    }
    impl RowStore for ClosingStore {
        standin::row_store_pass_through!(
            create,
            get,
            list,
            park,
            claim_follow,
            wake,
            roll,
            drain,
            drain_from,
            take_rung,
            apply,
            apply_to,
            set_remote,
            set_watch,
            close,
            notes,
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
    store.drain(ID, 1).await.expect("drained");
    doorbell::ring(&store, &bell, ID, &reply("now there is room"), &Guard::Open)
        .await
        .expect("queued");
}
