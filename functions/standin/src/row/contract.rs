//! The contract every [`RowStore`] keeps, as one suite run against each store: the
//! in-memory store in `functions/standin/tests/row_store.rs`, DynamoDB in
//! `tests/tests/dynamo_row_store.rs`. The doorbell's rules hold only if both stores
//! refuse, order and note alike, so they are checked by the same code.
//!
//! The macro `row_store_contract!` makes one test per check for a
//! store made by the given expression (a fresh, empty store each time).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a contract check fails loudly

use super::{Applied, RowStore, StoreError};
use crate::push::PushToken;
use crate::row::{
    FollowOutcome, FollowReport, Guard, Row, Rung, Taken, WakeEvent, Watch, WatchMode,
};
use crate::state::{RemoteOut, remote_out};
use standin_wire::TaskState;

/// One `#[tokio::test]` per check of the contract, each on a fresh store from `$store`
/// (an expression, awaited inside the test if it is async).
#[macro_export]
macro_rules! row_store_contract {
    (@each $store:expr; $($check:ident,)*) => {$(
        #[::tokio::test]
        async fn $check() {
            let store = $store;
            $crate::row::contract::$check(&store).await;
        }
    )*};
    ($store:expr) => {
        $crate::row_store_contract!(
            @each $store;
            rows_round_trip_and_parks_start_epochs,
            a_late_or_repeated_park_is_refused_and_changes_nothing,
            a_handed_on_park_is_claimed_once_per_hand_on,
            drain_takes_by_priority_and_leaves_the_rest,
            drain_is_idempotent_per_park,
            drain_from_a_copy_takes_what_the_row_holds,
            take_rung_takes_only_the_push_the_ring_carried,
            guards_hold_in_the_write_itself,
            the_watchers_fence_closes_at_the_wake,
            apply_changes_once_notes_each_change_and_is_fenced,
            apply_to_a_row_that_moved_decides_on_the_row_as_it_is,
            a_final_state_closes_the_row_with_its_note,
            close_is_first_final_and_writes_its_note_once,
            close_without_a_note_writes_none,
            the_note_log_reads_after_a_number_up_to_a_limit,
            list_pages_through_every_row_once,
            replies_queue_up_to_the_bound_in_the_write_itself,
            a_named_reply_is_queued_once_in_the_write_itself,
            a_long_conversation_keeps_the_latest_reply_ids_only,
            a_roll_ends_the_park_and_keeps_its_first_lease,
        );
    };
}

const ID: &str = "local/1?#";
const REMOTE: &str = "remote-1";

async fn push_row<S: RowStore>(store: &S) -> PushToken {
    let token = PushToken::generate();
    let row = Row::new(ID, "agent-a");
    store.create(&row).await.expect("created");
    assert_eq!(
        store.create(&row).await,
        Err(StoreError::AlreadyExists(ID.into()))
    );
    store
        .set_remote(ID, REMOTE, Some("ctx-1"))
        .await
        .expect("remote");
    let watch = Watch {
        mode: WatchMode::Push,
        config_id: Some("cfg".into()),
        token_digest: Some(token.digest()),
    };
    store.set_watch(ID, &watch).await.expect("watch");
    token
}

fn working(text: &str) -> RemoteOut {
    remote_out(REMOTE, TaskState::Working, text)
}

fn reply(text: &str) -> WakeEvent {
    WakeEvent::reply(text)
}

/// (seq, state, is_final) of every note of the stand-in, read back from the note log.
async fn notes<S: RowStore>(store: &S) -> Vec<(u64, TaskState, bool)> {
    store
        .notes(ID, 0, 100)
        .await
        .expect("notes")
        .into_iter()
        .map(|n| (n.seq, n.state, n.is_final))
        .collect()
}

pub async fn rows_round_trip_and_parks_start_epochs<S: RowStore>(store: &S) {
    push_row(store).await;
    let row = store.get(ID).await.expect("get").expect("row");
    assert_eq!(
        (
            row.remote_task_id.as_deref(),
            row.context_id.as_deref(),
            row.mode()
        ),
        (Some(REMOTE), Some("ctx-1"), WatchMode::Push)
    );
    assert_eq!(store.park(ID, 1, "t1").await.expect("park").epoch, 1);
    let second = store.park(ID, 2, "t2").await.expect("park");
    assert_eq!(
        (second.epoch, second.park_token.as_deref()),
        (2, Some("t2"))
    );
    assert!(second.is_parked());
    assert_eq!(store.get("nobody").await.expect("get"), None);
    assert_eq!(
        store.park("nobody", 1, "t").await,
        Err(StoreError::NotFound("nobody".into()))
    );
}

/// A follow request SQS delivers twice, or an old one it delivers late, is followed by
/// one follower only: each hand-on of a standing park is claimed once, in the write.
pub async fn a_handed_on_park_is_claimed_once_per_hand_on<S: RowStore>(store: &S) {
    push_row(store).await;
    store.park(ID, 2, "t2").await.expect("park");
    let claimed = store
        .claim_follow(ID, 2, "t2", 1)
        .await
        .expect("first claim");
    assert_eq!(claimed.epoch, 2);
    for (park, token, hop, why) in [
        (2, "t2", 1, "the same hand-on again"),
        (2, "t2", 0, "an earlier one"),
        (2, "forged", 2, "another token"),
        (1, "t2", 5, "an older park"),
    ] {
        assert_eq!(
            store.claim_follow(ID, park, token, hop).await,
            Err(StoreError::Refused(ID.into())),
            "{why}"
        );
    }
    store
        .claim_follow(ID, 2, "t2", 2)
        .await
        .expect("the next hand-on");
    // A newer park starts its hand-ons again, and a woken park is claimed by no one.
    store.park(ID, 3, "t3").await.expect("park");
    store
        .claim_follow(ID, 3, "t3", 1)
        .await
        .expect("a new park's first");
    store.wake(ID, 3).await.expect("woken");
    assert_eq!(
        store.claim_follow(ID, 3, "t3", 2).await,
        Err(StoreError::Refused(ID.into())),
        "a woken park"
    );
}

pub async fn a_late_or_repeated_park_is_refused_and_changes_nothing<S: RowStore>(store: &S) {
    push_row(store).await;
    store.park(ID, 2, "t2").await.expect("park");
    let before = store.get(ID).await.unwrap().unwrap();
    assert_eq!(
        store.park(ID, 1, "late").await,
        Err(StoreError::Refused(ID.into())),
        "a lower number"
    );
    assert_eq!(
        store.park(ID, 2, "again").await,
        Err(StoreError::Refused(ID.into())),
        "the same number"
    );
    assert_eq!(store.get(ID).await.unwrap().unwrap(), before);
    assert_eq!(
        (before.epoch, before.park_token.as_deref()),
        (2, Some("t2"))
    );
    // A park whose wake already ran (it timed out before its invoke) is refused too.
    let woken = store.wake(ID, 3).await.expect("woken");
    assert_eq!((woken.epoch, woken.woken), (2, 3));
    assert!(!woken.is_parked());
    assert_eq!(
        store.park(ID, 3, "t3").await,
        Err(StoreError::Refused(ID.into()))
    );
    // A retried wake of the same park changes nothing and is not an error.
    assert_eq!(store.wake(ID, 3).await.expect("again").woken, 3);
    assert_eq!(
        store.wake(ID, 2).await.expect("older").woken,
        3,
        "woken never goes back"
    );
    let row = store
        .park(ID, 4, "t4")
        .await
        .expect("the next number parks");
    assert_eq!((row.epoch, row.park_token.as_deref()), (4, Some("t4")));
}

pub async fn drain_takes_by_priority_and_leaves_the_rest<S: RowStore>(store: &S) {
    push_row(store).await;
    let events = [
        WakeEvent::Follow {
            epoch: 3,
            outcome: FollowOutcome::Changed { is_final: false },
        },
        WakeEvent::Push { claimed: None },
        reply("first"),
        reply("second"),
        WakeEvent::Cancel {
            reason: "stop".into(),
        },
        WakeEvent::Cancel {
            reason: "ignored: the first reason stays".into(),
        },
    ];
    for e in &events {
        store.record(ID, e, &Guard::Open).await.expect("recorded");
    }
    let row = store.get(ID).await.unwrap().unwrap();
    assert_eq!(
        row.pending.push.map(|push| push.claimed),
        Some(None),
        "a push with no claim is kept"
    );
    assert_eq!(
        row.pending.follow,
        Some(FollowReport {
            epoch: 3,
            outcome: FollowOutcome::Changed { is_final: false }
        })
    );
    // One event per park: each wake drains under its own park's number.
    let mut order = Vec::new();
    let mut park = 1;
    while let Some(e) = store.drain(ID, park).await.expect("drain").event {
        order.push(e);
        park += 1;
    }
    assert_eq!(
        order,
        [
            WakeEvent::Cancel {
                reason: "stop".into()
            },
            reply("first"),
            reply("second"),
            WakeEvent::Push { claimed: None },
            WakeEvent::Follow {
                epoch: 3,
                outcome: FollowOutcome::Changed { is_final: false }
            },
        ]
    );
}

pub async fn drain_is_idempotent_per_park<S: RowStore>(store: &S) {
    push_row(store).await;
    store.park(ID, 1, "t1").await.unwrap();
    for text in ["one", "two"] {
        store.record(ID, &reply(text), &Guard::Open).await.unwrap();
    }
    let first = store.drain(ID, 1).await.expect("drain");
    assert_eq!(first.event, Some(reply("one")));
    assert_eq!(
        first.row.taken,
        Some(Taken {
            park: 1,
            event: Some(reply("one"))
        })
    );
    assert_eq!(first.row.woken, 1);
    let retried = store.drain(ID, 1).await.expect("retried");
    assert_eq!(retried.event, Some(reply("one")), "the same event again");
    assert_eq!(retried.row.pending.replies, ["two"], "the next one stays");
    store.park(ID, 2, "t2").await.unwrap();
    let next = store.drain(ID, 2).await.expect("next park");
    assert_eq!(next.event, Some(reply("two")));
    assert!(next.row.pending.is_empty());
    assert_eq!(
        store.drain(ID, 2).await.expect("retried").event,
        Some(reply("two"))
    );
    assert_eq!(store.drain(ID, 3).await.expect("empty").event, None);
}

/// `drain_from` a copy of the row: the event the row holds is taken once, the park
/// ended, whatever the copy says (a newer push, a close, a retried wake).
pub async fn drain_from_a_copy_takes_what_the_row_holds<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    let guard = |claimed| {
        (
            WakeEvent::Push { claimed },
            Guard::Push {
                digest: token.digest(),
                remote_task_id: REMOTE.into(),
            },
        )
    };
    store.park(ID, 1, "t1").await.unwrap();
    let (event, push) = guard(Some(TaskState::Working));
    store.record(ID, &event, &push).await.unwrap();
    let seen = store.get(ID).await.unwrap().unwrap();
    let drained = store.drain_from(&seen, 1).await.unwrap();
    assert_eq!(drained.event, Some(event.clone()));
    assert!(drained.as_seen, "the push the copy showed");
    assert!(drained.row.pending.is_empty());
    assert_eq!(drained.row.woken, 1);
    let again = store.drain_from(&seen, 1).await.unwrap();
    assert_eq!(
        again.event,
        Some(event),
        "a retried wake takes the same event"
    );
    assert!(!again.as_seen, "taken by the first wake, not from the copy");

    store.park(ID, 2, "t2").await.unwrap();
    let (first, push) = guard(Some(TaskState::Working));
    store.record(ID, &first, &push).await.unwrap();
    let seen = store.get(ID).await.unwrap().unwrap();
    let (newer, push) = guard(Some(TaskState::Completed));
    store.record(ID, &newer, &push).await.unwrap();
    let drained = store.drain_from(&seen, 2).await.unwrap();
    assert_eq!(
        drained.event,
        Some(newer),
        "the row's event, not the copy's"
    );
    assert!(!drained.as_seen);
    assert!(drained.row.pending.is_empty());

    // A later push claiming the same state is still another push.
    store.park(ID, 4, "t4").await.unwrap();
    let (first, push) = guard(Some(TaskState::Working));
    store.record(ID, &first, &push).await.unwrap();
    let seen = store.get(ID).await.unwrap().unwrap();
    store.record(ID, &first, &push).await.unwrap();
    let drained = store.drain_from(&seen, 4).await.unwrap();
    assert_eq!(drained.event, Some(first));
    assert!(
        !drained.as_seen,
        "a push recorded after the copy was read is not the copy's"
    );
    assert!(drained.row.pending.is_empty());

    store.park(ID, 5, "t5").await.unwrap();
    let (event, push) = guard(None);
    store.record(ID, &event, &push).await.unwrap();
    let seen = store.get(ID).await.unwrap().unwrap();
    store.close(ID, None).await.unwrap();
    let drained = store.drain_from(&seen, 5).await.unwrap();
    assert_eq!(drained.event, None, "a row closed since takes nothing");
}

pub async fn take_rung_takes_only_the_push_the_ring_carried<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    let push = Guard::Push {
        digest: token.digest(),
        remote_task_id: REMOTE.into(),
    };
    let working = WakeEvent::Push {
        claimed: Some(TaskState::Working),
    };
    let pending = |row: Row| row.pending.rung_push().expect("a numbered push pending");
    let rung = |park, push| Rung {
        park,
        push,
        agent: "agent-a",
        generation: 0,
        lease: None,
    };
    store.park(ID, 1, "t1").await.unwrap();
    let rang = pending(store.record(ID, &working, &push).await.unwrap());
    let later = pending(store.record(ID, &working, &push).await.unwrap());
    assert_ne!(rang, later, "two pushes claiming the same state differ");
    assert_eq!(
        store.take_rung(ID, &rung(1, &rang)).await.unwrap(),
        None,
        "a push recorded since the ring: nothing taken"
    );
    let row = store.get(ID).await.unwrap().unwrap();
    assert_eq!(
        (row.woken, row.pending.rung_push()),
        (0, Some(later.clone())),
        "nothing written"
    );

    let mut other = rung(1, &later);
    for (field, differs) in [
        (
            "agent",
            Rung {
                agent: "agent-b",
                ..other
            },
        ),
        (
            "generation",
            Rung {
                generation: 1,
                ..other
            },
        ),
        (
            "lease",
            Rung {
                lease: Some("l"),
                ..other
            },
        ),
        ("park woken", Rung { park: 0, ..other }),
    ] {
        assert_eq!(
            store.take_rung(ID, &differs).await.unwrap(),
            None,
            "another {field}: nothing taken"
        );
    }
    let taken = store.take_rung(ID, &other).await.unwrap().expect("taken");
    assert_eq!(taken.event, Some(working.clone()));
    assert!(taken.as_seen);
    assert_eq!(
        (
            taken.row.woken,
            taken.row.pending.push,
            taken.row.pending.push_id
        ),
        (1, None, None)
    );
    assert_eq!(
        taken.row.remote_task_id.as_deref(),
        Some(REMOTE),
        "the whole row back"
    );
    assert_eq!(
        store.take_rung(ID, &other).await.unwrap(),
        None,
        "taken once"
    );
    let retried = store.drain(ID, 1).await.unwrap();
    assert_eq!(
        retried.event,
        Some(working.clone()),
        "a retried wake drains what it took"
    );

    store.park(ID, 2, "t2").await.unwrap();
    let rang = pending(store.record(ID, &working, &push).await.unwrap());
    store
        .record(ID, &reply("first"), &Guard::Open)
        .await
        .unwrap();
    other = rung(2, &rang);
    assert_eq!(
        store.take_rung(ID, &other).await.unwrap(),
        None,
        "a reply goes first"
    );
    assert_eq!(
        store.drain(ID, 2).await.unwrap().event,
        Some(reply("first"))
    );

    store.park(ID, 3, "t3").await.unwrap();
    let rang = pending(store.record(ID, &working, &push).await.unwrap());
    let cancel = WakeEvent::Cancel {
        reason: "stop".into(),
    };
    store.record(ID, &cancel, &Guard::Open).await.unwrap();
    assert_eq!(
        store.take_rung(ID, &rung(3, &rang)).await.unwrap(),
        None,
        "a cancel goes first"
    );
    assert_eq!(store.drain(ID, 3).await.unwrap().event, Some(cancel));

    // A later generation, with its lease.
    store.park(ID, 4, "t4").await.unwrap();
    store.roll(ID, 4, 1, "lease-1", None).await.unwrap();
    store.park(ID, 5, "t5").await.unwrap();
    let rang = pending(store.record(ID, &working, &push).await.unwrap());
    let first_generation = rung(5, &rang);
    assert_eq!(
        store.take_rung(ID, &first_generation).await.unwrap(),
        None,
        "the generation before the roll"
    );
    let live = Rung {
        generation: 1,
        lease: Some("lease-1"),
        ..first_generation
    };
    assert!(
        store.take_rung(ID, &live).await.unwrap().is_some(),
        "the live one"
    );

    store.park(ID, 6, "t6").await.unwrap();
    let rang = pending(store.record(ID, &working, &push).await.unwrap());
    store.close(ID, None).await.unwrap();
    let closed = Rung {
        park: 6,
        push: &rang,
        ..live
    };
    assert_eq!(
        store.take_rung(ID, &closed).await.unwrap(),
        None,
        "a closed row"
    );
}

pub async fn guards_hold_in_the_write_itself<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    let push = |digest, rid: &str| Guard::Push {
        digest,
        remote_task_id: rid.into(),
    };
    let event = WakeEvent::Push {
        claimed: Some(TaskState::Completed),
    };
    assert!(
        store
            .record(ID, &event, &push(token.digest(), REMOTE))
            .await
            .is_ok()
    );
    let other = PushToken::generate();
    assert_eq!(
        store
            .record(ID, &event, &push(other.digest(), REMOTE))
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store
            .record(ID, &event, &push(token.digest(), "remote-2"))
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    let parked = store.park(ID, 1, "t").await.unwrap();
    let reply = reply("x");
    assert!(
        store
            .record(ID, &reply, &Guard::Epoch(parked.epoch))
            .await
            .is_ok()
    );
    assert_eq!(
        store
            .record(ID, &reply, &Guard::Epoch(parked.epoch - 1))
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.record("nobody", &reply, &Guard::Open).await,
        Err(StoreError::NotFound("nobody".into()))
    );
}

pub async fn the_watchers_fence_closes_at_the_wake<S: RowStore>(store: &S) {
    // A follow of park 1 reports after park 1's wake ran: same epoch, but the park is
    // over, so neither its event nor its state lands (Guard::Epoch admits only while
    // woken < epoch).
    push_row(store).await;
    store.set_watch(ID, &Watch::follow()).await.unwrap();
    store.park(ID, 1, "t1").await.unwrap();
    store.drain(ID, 1).await.expect("drained");
    let before = store.get(ID).await.unwrap().unwrap();
    let report = WakeEvent::Follow {
        epoch: 1,
        outcome: FollowOutcome::WindowOver,
    };
    assert_eq!(
        store.record(ID, &report, &Guard::Epoch(1)).await,
        Err(StoreError::Refused(ID.into())),
        "a follow report after the wake"
    );
    assert_eq!(
        store.apply(ID, &working("late"), &Guard::Epoch(1)).await,
        Err(StoreError::Refused(ID.into())),
        "a follow's apply after the wake"
    );
    assert_eq!(store.get(ID).await.unwrap().unwrap(), before);
    assert!(notes(store).await.is_empty(), "no note");
    // The same holds after a roll's wake (no drain).
    store.park(ID, 2, "t2").await.unwrap();
    store.wake(ID, 2).await.unwrap();
    assert_eq!(
        store.record(ID, &report, &Guard::Epoch(2)).await,
        Err(StoreError::Refused(ID.into()))
    );
}

pub async fn apply_changes_once_notes_each_change_and_is_fenced<S: RowStore>(store: &S) {
    push_row(store).await;
    let building = working("building");
    assert!(matches!(
        store.apply(ID, &building, &Guard::Open).await,
        Ok(Applied::Changed { ref note, .. }) if note.seq == 1
    ));
    assert_eq!(
        store.apply(ID, &building, &Guard::Open).await,
        Ok(Applied::Unchanged)
    );
    let asked = remote_out(REMOTE, TaskState::InputRequired, "colour?");
    let epoch = store.park(ID, 1, "t").await.unwrap().epoch;
    assert_eq!(
        store.apply(ID, &asked, &Guard::Epoch(epoch - 1)).await,
        Err(StoreError::Refused(ID.into()))
    );
    let Ok(Applied::Changed { note, row }) = store.apply(ID, &asked, &Guard::Epoch(epoch)).await
    else {
        panic!("the current epoch applies");
    };
    assert_eq!((note.seq, row.seq), (2, 2));
    assert!(!row.closed);
    let stored = store.get(ID).await.unwrap().unwrap();
    assert_eq!((stored.last, stored.seq), (Some(asked), 2));
    assert_eq!(
        notes(store).await,
        [
            (1, TaskState::Working, false),
            (2, TaskState::InputRequired, false),
        ],
        "one note per change, written with it"
    );
    let note = store.notes(ID, 1, 1).await.unwrap().remove(0);
    assert_eq!(
        (
            note.task_id.as_str(),
            note.remote_task_id.as_deref(),
            note.agent.as_str(),
            note.text.as_str()
        ),
        (ID, Some(REMOTE), "agent-a", "colour?"),
        "the note's body round-trips"
    );
}

/// `apply_to` a copy of the row: a copy that is still the row writes without a read; a
/// stale one is never written on, nor is "unchanged" or a refusal decided on it.
pub async fn apply_to_a_row_that_moved_decides_on_the_row_as_it_is<S: RowStore>(store: &S) {
    push_row(store).await;
    let seen = store.get(ID).await.unwrap().unwrap();
    let Ok(Applied::Changed { note, .. }) =
        store.apply_to(&seen, &working("one"), &Guard::Open).await
    else {
        panic!("the row as read applies");
    };
    assert_eq!(note.seq, 1);
    let Ok(Applied::Changed { note, row }) =
        store.apply_to(&seen, &working("two"), &Guard::Open).await
    else {
        panic!("a copy behind the row applies to the row as it is");
    };
    assert_eq!((note.seq, row.seq), (2, 2));
    let mut behind = seen.clone();
    behind.last = Some(working("one"));
    behind.seq = 1;
    let Ok(Applied::Changed { note, .. }) =
        store.apply_to(&behind, &working("one"), &Guard::Open).await
    else {
        panic!("unchanged on a stale copy is not unchanged on the row (it says two)");
    };
    assert_eq!(note.seq, 3);
    assert_eq!(
        store.apply_to(&seen, &working("one"), &Guard::Open).await,
        Ok(Applied::Unchanged)
    );
    store.close(ID, None).await.unwrap();
    assert_eq!(
        store.apply_to(&seen, &working("three"), &Guard::Open).await,
        Err(StoreError::Refused(ID.into())),
        "a copy from before the close is refused"
    );
    let texts: Vec<String> = store
        .notes(ID, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.text)
        .collect();
    assert_eq!(texts, ["one", "two", "one"]);
}

pub async fn a_final_state_closes_the_row_with_its_note<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    store.park(ID, 1, "t1").await.unwrap();
    store
        .apply(ID, &working("building"), &Guard::Open)
        .await
        .unwrap();
    let done = remote_out(REMOTE, TaskState::Completed, "ready");
    let Ok(Applied::Changed { note, row }) = store.apply(ID, &done, &Guard::Open).await else {
        panic!("a final state is a change");
    };
    assert_eq!(note.seq, 2);
    assert!(row.closed);
    assert_eq!(row.park_token.as_deref(), Some("t1"), "kept for the ring");
    let stored = store.get(ID).await.unwrap().unwrap();
    assert!(stored.closed && !stored.is_parked());
    assert_eq!(stored.last, Some(done));
    // Everything later is refused.
    for late in [
        reply("too late"),
        WakeEvent::Cancel {
            reason: "stop".into(),
        },
    ] {
        assert_eq!(
            store.record(ID, &late, &Guard::Open).await,
            Err(StoreError::Refused(ID.into())),
            "{late:?}"
        );
    }
    assert_eq!(
        store
            .record(
                ID,
                &WakeEvent::Push { claimed: None },
                &Guard::Push {
                    digest: token.digest(),
                    remote_task_id: REMOTE.into(),
                }
            )
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.apply(ID, &working("after"), &Guard::Open).await,
        Err(StoreError::Refused(ID.into()))
    );
    // The end of a cancel that came too late writes nothing.
    let canceled = remote_out(REMOTE, TaskState::Canceled, "stop");
    let closed = store.close(ID, Some(&canceled)).await.expect("close");
    assert_eq!(closed.seq(), None);
    assert_eq!(closed.row.last.map(|l| l.state), Some(TaskState::Completed));
    assert_eq!(
        notes(store).await,
        [
            (1, TaskState::Working, false),
            (2, TaskState::Completed, true),
        ],
        "1..n without gaps, the final one last, no second final note"
    );
}

pub async fn close_is_first_final_and_writes_its_note_once<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    store.park(ID, 1, "t").await.unwrap();
    store
        .record(ID, &reply("late"), &Guard::Open)
        .await
        .unwrap();
    let failed = remote_out(REMOTE, TaskState::Failed, "a step failed");
    let closed = store.close(ID, Some(&failed)).await.expect("closed");
    let row = &closed.row;
    assert!(row.closed && row.park_token.is_none() && row.pending.is_empty());
    assert_eq!(closed.seq(), Some(1));
    assert_eq!(row.last, Some(failed.clone()));
    let again = store.close(ID, Some(&failed)).await.expect("again");
    assert_eq!(again.seq(), None, "a second close writes nothing");
    assert_eq!(notes(store).await, [(1, TaskState::Failed, true)]);
    let stored = store.get(ID).await.unwrap().unwrap();
    assert!(stored.closed && stored.park_token.is_none() && stored.pending.is_empty());
    assert_eq!(stored.seq, 1);
    let push = Guard::Push {
        digest: token.digest(),
        remote_task_id: REMOTE.into(),
    };
    assert_eq!(
        store
            .record(ID, &WakeEvent::Push { claimed: None }, &push)
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.park(ID, 2, "t2").await,
        Err(StoreError::Refused(ID.into()))
    );
    let raw = store.get(ID).await.unwrap().unwrap();
    assert!(
        !serde_json::to_string(&raw)
            .unwrap()
            .contains(token.expose()),
        "only the digest is stored"
    );
}

pub async fn close_without_a_note_writes_none<S: RowStore>(store: &S) {
    push_row(store).await;
    store.park(ID, 1, "t").await.unwrap();
    let closed = store.close(ID, None).await.expect("closed");
    assert_eq!(closed.seq(), None);
    assert!(closed.row.closed && closed.row.park_token.is_none());
    assert!(notes(store).await.is_empty());
    assert_eq!(
        store.close("nobody", None).await.map(|c| c.seq()),
        Err(StoreError::NotFound("nobody".into()))
    );
}

pub async fn the_note_log_reads_after_a_number_up_to_a_limit<S: RowStore>(store: &S) {
    push_row(store).await;
    store.create(&Row::new("other", "agent-a")).await.unwrap();
    for text in ["a", "b", "c", "d"] {
        store.apply(ID, &working(text), &Guard::Open).await.unwrap();
    }
    store
        .apply("other", &working("x"), &Guard::Open)
        .await
        .unwrap();
    let read = |after, limit| async move {
        store
            .notes(ID, after, limit)
            .await
            .expect("notes")
            .into_iter()
            .map(|n| (n.seq, n.text))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        read(0, 100).await,
        [
            (1, "a".into()),
            (2, "b".into()),
            (3, "c".into()),
            (4, "d".into())
        ]
    );
    assert_eq!(read(1, 2).await, [(2, "b".into()), (3, "c".into())]);
    assert_eq!(read(3, 10).await, [(4, "d".into())]);
    assert!(read(4, 10).await.is_empty());
    assert_eq!(
        store.notes("other", 0, 10).await.unwrap().len(),
        1,
        "each stand-in's own notes"
    );
    assert!(store.notes("nobody", 0, 10).await.unwrap().is_empty());
}

pub async fn list_pages_through_every_row_once<S: RowStore>(store: &S) {
    let ids: Vec<String> = (0..7).map(|i| format!("list-{i}")).collect();
    for id in &ids {
        let mut row = Row::new(id, "agent-a");
        row.created_at = Some(format!("2026-11-30T10:00:0{}Z", id.len()));
        store.create(&row).await.expect("created");
    }
    let (mut seen, mut after, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let (rows, next) = store.list(after.as_deref(), 3).await.expect("listed");
        assert!(rows.len() <= 3, "a page holds at most the limit");
        seen.extend(rows.into_iter().map(|r| (r.task_id, r.created_at)));
        pages += 1;
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    let expected: Vec<(String, Option<String>)> = ids
        .iter()
        .map(|id| (id.clone(), Some(format!("2026-11-30T10:00:0{}Z", id.len()))))
        .collect();
    assert_eq!(seen, expected);
    assert!(
        pages >= 3,
        "7 rows at 3 a page take at least 3 pages, took {pages}"
    );
}

pub async fn replies_queue_up_to_the_bound_in_the_write_itself<S: RowStore>(store: &S) {
    push_row(store).await;
    let reply = |t: &str| WakeEvent::reply(t);
    for i in 0..crate::row::MAX_QUEUED_REPLIES {
        store
            .record(ID, &reply(&format!("r{i}")), &Guard::Open)
            .await
            .expect("queued");
    }
    assert_eq!(
        store.record(ID, &reply("one too many"), &Guard::Open).await,
        Err(StoreError::RepliesFull(ID.into()))
    );
    store.park(ID, 1, "t").await.expect("parked");
    store.drain(ID, 1).await.expect("drained");
    store
        .record(ID, &reply("room again"), &Guard::Open)
        .await
        .expect("queued");
}

pub async fn a_named_reply_is_queued_once_in_the_write_itself<S: RowStore>(store: &S) {
    push_row(store).await;
    let named = |text: &str, id: &str| WakeEvent::Reply {
        text: text.into(),
        id: Some(id.into()),
    };
    for _ in 0..3 {
        store
            .record(ID, &named("blue", "r1"), &Guard::Open)
            .await
            .expect("accepted");
    }
    let row = store
        .record(ID, &named("green", "r2"), &Guard::Open)
        .await
        .expect("accepted");
    assert_eq!(row.pending.replies, ["blue", "green"]);
    assert_eq!(row.reply_ids, ["r1", "r2"]);
    store.park(ID, 1, "t").await.expect("parked");
    store.drain(ID, 1).await.expect("drained");
    let row = store
        .record(ID, &named("blue", "r1"), &Guard::Open)
        .await
        .expect("a retry after its turn is accepted, not queued");
    assert_eq!(row.pending.replies, ["green"]);
}

/// Every reply is named, so a conversation of hundreds of replies must not grow the row
/// toward DynamoDB's item limit: the oldest ids go, the latest still refuse a retry.
pub async fn a_long_conversation_keeps_the_latest_reply_ids_only<S: RowStore>(store: &S) {
    use crate::row::{REPLY_IDS_KEPT, REPLY_IDS_MAX};
    push_row(store).await;
    let named = |i: usize| WakeEvent::Reply {
        text: format!("reply {i}"),
        id: Some(format!("r-{i}")),
    };
    let replies = REPLY_IDS_MAX + REPLY_IDS_KEPT + 5;
    for i in 0..replies {
        store
            .record(ID, &named(i), &Guard::Open)
            .await
            .expect("queued");
        let park = u64::try_from(i).unwrap() + 1;
        store.park(ID, park, "t").await.expect("parked");
        store.drain(ID, park).await.expect("drained");
    }
    let row = store.get(ID).await.unwrap().unwrap();
    assert!(
        (REPLY_IDS_KEPT..=REPLY_IDS_MAX).contains(&row.reply_ids.len()),
        "{} ids kept",
        row.reply_ids.len()
    );
    let latest: Vec<String> = (replies - REPLY_IDS_KEPT..replies)
        .map(|i| format!("r-{i}"))
        .collect();
    assert!(row.reply_ids.ends_with(&latest), "{:?}", row.reply_ids);
    let row = store
        .record(ID, &named(replies - REPLY_IDS_KEPT), &Guard::Open)
        .await
        .expect("a retry of a recent reply is accepted");
    assert!(row.pending.replies.is_empty(), "and not queued again");
}

/// The roll ends the park like a wake and writes the successor's lease once: a retried
/// roll of the same park (a Wake retried after its write) gets the first lease back, so
/// the successor it starts carries the lease the row holds.
pub async fn a_roll_ends_the_park_and_keeps_its_first_lease<S: RowStore>(store: &S) {
    store.create(&Row::new(ID, "agent-a")).await.unwrap();
    store.park(ID, 1, "t1").await.unwrap();
    assert_eq!(store.get(ID).await.unwrap().unwrap().lease, None);
    let rolled = store.roll(ID, 1, 1, "lease-a", None).await.unwrap();
    assert_eq!(
        (rolled.woken, rolled.generation, rolled.lease.as_deref()),
        (1, 1, Some("lease-a"))
    );
    assert_eq!(rolled.previous_lease, None, "generation 0 has no lease");
    assert!(!rolled.is_parked(), "the park is over");
    let again = store.roll(ID, 1, 1, "lease-b", None).await.unwrap();
    assert_eq!(
        again.lease.as_deref(),
        Some("lease-a"),
        "the first lease stays"
    );
    assert_eq!(
        store.get(ID).await.unwrap().unwrap().lease.as_deref(),
        Some("lease-a")
    );
    store.park(ID, 2, "t2").await.unwrap();
    let second = store
        .roll(ID, 2, 2, "lease-c", Some("lease-a"))
        .await
        .unwrap();
    assert_eq!(
        (
            second.generation,
            second.lease.as_deref(),
            second.previous_lease.as_deref()
        ),
        (2, Some("lease-c"), Some("lease-a")),
        "the generation that rolled keeps its lease as the previous one"
    );
}
