//! Rule 4: the fence: a late follow changes nothing, and a park's watchers write nothing once its wake has run.

use super::*;

// Rule 4: the fence. A late follow from an earlier park changes nothing, and a park's
// watchers can write nothing once its wake has run.

#[tokio::test]
async fn race_late_follow_from_an_old_epoch_is_fenced_out() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    let old = park(&store, &bell, 1, "tok-1").await;
    // A reply woke the stand-in; it turned and parked again before the old follow ended.
    let new = park(&store, &bell, 2, "tok-2").await;
    let before = store.snapshot(ID).expect("row");
    let err = doorbell::follow_report(
        &Teller::new(&store),
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
        &Teller::new(&store),
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
                store.drain(ID, None, 1).await.expect("drained");
            }
            _ => {
                store.end_park(ID, 1).await.expect("woken");
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
                &Teller::new(&store),
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
            doorbell::follow_report(
                &Teller::new(&store),
                &bell,
                &parked,
                1,
                None,
                FollowOutcome::Failed
            )
            .await,
            Err(StoreError::Refused(ID.into())),
            "{end_park}: a report without a change"
        );
        assert_eq!(
            doorbell::apply(&Teller::new(&store), ID, &working("late"), &Guard::Epoch(1)).await,
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
        &Teller::new(&store),
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
        &Teller::new(&store),
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
