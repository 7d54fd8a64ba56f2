//! The doorbell's writes: rows and parks, hand-ons, drains and takes, guards, the fence, rolls.

use super::*;

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
    store.end_park(ID, 3).await.expect("woken");
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
    let woken = store.end_park(ID, 3).await.expect("woken");
    assert_eq!((woken.epoch, woken.woken), (2, 3));
    assert!(!woken.is_parked());
    assert_eq!(
        store.park(ID, 3, "t3").await,
        Err(StoreError::Refused(ID.into()))
    );
    // A retried wake of the same park changes nothing and is not an error.
    assert_eq!(store.end_park(ID, 3).await.expect("again").woken, 3);
    assert_eq!(
        store.end_park(ID, 2).await.expect("older").woken,
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
    while let Some(e) = store.drain(ID, None, park).await.expect("drain").event {
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
    let first = store.drain(ID, None, 1).await.expect("drain");
    assert_eq!(first.event, Some(reply("one")));
    assert_eq!(
        first.row.taken,
        Some(Taken {
            park: 1,
            event: Some(reply("one"))
        })
    );
    assert_eq!(first.row.woken, 1);
    let retried = store.drain(ID, None, 1).await.expect("retried");
    assert_eq!(retried.event, Some(reply("one")), "the same event again");
    assert_eq!(retried.row.pending.replies, ["two"], "the next one stays");
    store.park(ID, 2, "t2").await.unwrap();
    let next = store.drain(ID, None, 2).await.expect("next park");
    assert_eq!(next.event, Some(reply("two")));
    assert!(next.row.pending.is_empty());
    assert_eq!(
        store.drain(ID, None, 2).await.expect("retried").event,
        Some(reply("two"))
    );
    assert_eq!(store.drain(ID, None, 3).await.expect("empty").event, None);
}

/// `drain` from a copy of the row (`seen`): the event the row holds is taken once, the park
/// ended, whatever the copy says (a newer push, a close, a retried wake).
pub async fn a_drain_from_a_copy_takes_what_the_row_holds<S: RowStore>(store: &S) {
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
    let drained = store.drain(&seen.task_id, Some(&seen), 1).await.unwrap();
    assert_eq!(drained.event, Some(event.clone()));
    assert!(drained.as_seen, "the push the copy showed");
    assert!(drained.row.pending.is_empty());
    assert_eq!(drained.row.woken, 1);
    let again = store.drain(&seen.task_id, Some(&seen), 1).await.unwrap();
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
    let drained = store.drain(&seen.task_id, Some(&seen), 2).await.unwrap();
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
    let drained = store.drain(&seen.task_id, Some(&seen), 4).await.unwrap();
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
    let drained = store.drain(&seen.task_id, Some(&seen), 5).await.unwrap();
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
    let retried = store.drain(ID, None, 1).await.unwrap();
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
        store.drain(ID, None, 2).await.unwrap().event,
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
    assert_eq!(store.drain(ID, None, 3).await.unwrap().event, Some(cancel));

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
    store.drain(ID, None, 1).await.expect("drained");
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
        store
            .apply(ID, None, &working("late"), &Guard::Epoch(1))
            .await,
        Err(StoreError::Refused(ID.into())),
        "a follow's apply after the wake"
    );
    assert_eq!(store.get(ID).await.unwrap().unwrap(), before);
    assert!(notes(store).await.is_empty(), "no note");
    // The same holds after a roll's wake (no drain).
    store.park(ID, 2, "t2").await.unwrap();
    store.end_park(ID, 2).await.unwrap();
    assert_eq!(
        store.record(ID, &report, &Guard::Epoch(2)).await,
        Err(StoreError::Refused(ID.into()))
    );
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
