//! A push's hearing: claimed in the push's own write, one per park at a time, and the
//! only hearing whose commit the row takes.

use super::*;
use crate::row::HearingClaim;

fn push_guard(token: &PushToken) -> Guard {
    Guard::Push {
        digest: token.digest(),
        remote_task_id: REMOTE.into(),
    }
}

fn hearing(epoch: u64, id: &str) -> Guard {
    Guard::Hearing {
        epoch,
        id: id.into(),
    }
}

async fn claim<S: RowStore>(store: &S, token: &PushToken, id: &str, now: u64) -> HearingClaim {
    store
        .claim_hearing(ID, &push_guard(token), id, now, now + 1_000)
        .await
        .expect("a push of the stand-in")
}

fn claimed(claim: HearingClaim) -> Row {
    match claim {
        HearingClaim::Claimed(row) => *row,
        other => panic!("the hearing was not claimed: {other:?}"),
    }
}

pub async fn a_hearing_is_claimed_only_by_the_push_s_guard_while_parked<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    assert_eq!(
        claim(store, &token, "h0", 10).await,
        HearingClaim::Busy,
        "not parked"
    );
    store.park(ID, 1, "t1").await.expect("park");
    let stranger = PushToken::generate();
    assert_eq!(
        store
            .claim_hearing(ID, &push_guard(&stranger), "h1", 10, 20)
            .await,
        Err(StoreError::Refused(ID.into())),
        "another token"
    );
    assert_eq!(
        store
            .claim_hearing("nobody", &push_guard(&token), "h1", 10, 20)
            .await,
        Err(StoreError::NotFound("nobody".into()))
    );
    let row = claimed(claim(store, &token, "h1", 10).await);
    assert_eq!(
        (row.hearing.as_deref(), row.hearing_park, row.hearing_until),
        (Some("h1"), 1, 1_010)
    );
    assert_eq!(
        store.get(ID).await.unwrap().unwrap(),
        row,
        "the claim returns the row as written"
    );
}

pub async fn one_hearing_runs_at_a_time_until_its_lease_or_its_park_ends<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    store.park(ID, 1, "t1").await.expect("park");
    claimed(claim(store, &token, "h1", 10).await);
    assert_eq!(
        claim(store, &token, "h2", 500).await,
        HearingClaim::Busy,
        "the lease runs"
    );
    let after_lease = claimed(claim(store, &token, "h2", 1_011).await);
    assert_eq!(after_lease.hearing.as_deref(), Some("h2"));
    // A new park ends the lease; an event waiting on the row (a ring on its way) and a
    // closed row admit no hearing.
    store.park(ID, 2, "t2").await.expect("park");
    claimed(claim(store, &token, "h3", 1_012).await);
    store.park(ID, 3, "t3").await.expect("park");
    store
        .record(ID, &reply("go on"), &Guard::Open)
        .await
        .expect("reply");
    assert_eq!(claim(store, &token, "h4", 1_013).await, HearingClaim::Busy);
    store.close(ID, None).await.expect("close");
    assert_eq!(
        store
            .claim_hearing(ID, &push_guard(&token), "h5", 1_014, 2_000)
            .await,
        Err(StoreError::Refused(ID.into())),
        "closed"
    );
}

pub async fn only_the_hearing_in_its_park_commits_once_with_its_report<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    store.park(ID, 1, "t1").await.expect("park");
    let row = claimed(claim(store, &token, "h1", 10).await);
    assert_eq!(
        store
            .apply(ID, Some(&row), &working("other"), &hearing(1, "h0"))
            .await,
        Err(StoreError::Refused(ID.into())),
        "another hearing's id"
    );
    assert_eq!(
        store
            .apply(ID, Some(&row), &working("later park"), &hearing(2, "h1"))
            .await,
        Err(StoreError::Refused(ID.into())),
        "another park"
    );
    // The lease lapsed and another push claimed the park: the first hearer commits
    // nothing.
    let again = claimed(claim(store, &token, "h2", 2_000).await);
    assert_eq!(
        store
            .apply(ID, Some(&again), &working("late"), &hearing(1, "h1"))
            .await,
        Err(StoreError::Refused(ID.into())),
        "a hearer that outlived its lease"
    );
    let applied = store
        .apply(ID, Some(&again), &working("heard"), &hearing(1, "h2"))
        .await
        .expect("the hearing's commit");
    let Applied::Changed { row: returned, .. } = applied else {
        panic!("a change: {applied:?}")
    };
    let stored = store.get(ID).await.unwrap().unwrap();
    for (row, which) in [(&*returned, "returned"), (&stored, "stored")] {
        assert_eq!(row.hearing, None, "the commit ends the hearing ({which})");
        assert_eq!(
            row.pending.follow,
            Some(FollowReport {
                epoch: 1,
                outcome: FollowOutcome::Changed { is_final: false },
            }),
            "the report for the wake, in the same write ({which})"
        );
    }
    assert_eq!(
        store
            .apply(ID, None, &working("twice"), &hearing(1, "h2"))
            .await,
        Err(StoreError::Refused(ID.into())),
        "a hearing run twice commits once"
    );
    // The wake overtakes a hearing: once the park is woken, it commits nothing.
    store.drain(ID, None, 1).await.expect("drain");
    store.park(ID, 2, "t2").await.expect("park");
    claimed(claim(store, &token, "h3", 3_000).await);
    store.drain(ID, None, 2).await.expect("drain");
    assert_eq!(
        store
            .apply(ID, None, &working("after the wake"), &hearing(2, "h3"))
            .await,
        Err(StoreError::Refused(ID.into())),
        "a woken park"
    );
    // A final state closes the row and leaves no report: its wake ends the stand-in.
    store.park(ID, 3, "t3").await.expect("park");
    claimed(claim(store, &token, "h4", 4_000).await);
    let done = remote_out(REMOTE, TaskState::Completed, "done");
    store
        .apply(ID, None, &done, &hearing(3, "h4"))
        .await
        .expect("the final commit");
    let closed = store.get(ID).await.unwrap().unwrap();
    assert!(closed.closed);
    assert_eq!(closed.pending.follow, None);
    assert_eq!(
        notes(store).await,
        vec![
            (1, TaskState::Working, false),
            (2, TaskState::Completed, true)
        ],
        "one note per hearing that held its claim"
    );
}

pub async fn a_hearing_that_told_nothing_ends_and_the_next_push_claims<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    store.park(ID, 1, "t1").await.expect("park");
    claimed(claim(store, &token, "h1", 10).await);
    for (epoch, id, why) in [(1, "h0", "another id"), (2, "h1", "another park")] {
        assert_eq!(
            store.end_hearing(ID, epoch, id).await,
            Err(StoreError::Refused(ID.into())),
            "{why}"
        );
    }
    store.end_hearing(ID, 1, "h1").await.expect("ended");
    assert_eq!(store.get(ID).await.unwrap().unwrap().hearing, None);
    assert_eq!(
        store.end_hearing(ID, 1, "h1").await,
        Err(StoreError::Refused(ID.into())),
        "once"
    );
    let next = claimed(claim(store, &token, "h2", 20).await);
    assert_eq!(
        next.hearing.as_deref(),
        Some("h2"),
        "within the first lease"
    );
}
