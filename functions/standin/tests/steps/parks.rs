//! Parks and wakes: fenced, idempotent, timed out, rolled.

use super::*;

// Fenced parks through the steps.

#[tokio::test]
async fn the_park_step_stores_only_the_newest_park() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert_eq!(park_no(&step), 1);
    assert!(w.park(&step, "p1").await);
    let writes = w.store.writes();
    for (number, token) in [(1, "p1-again"), (0, "p0")] {
        assert!(
            !steps::park(&w.store, &w.bell, ID, number, token, &Owner::default())
                .await
                .unwrap(),
            "park {number}"
        );
    }
    assert_eq!(w.store.writes(), writes);
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!((row.epoch, row.park_token.as_deref()), (1, Some("p1")));
}

#[tokio::test]
async fn a_late_park_invoke_after_its_wake_changes_nothing() {
    // Park 1's invoke is delayed past the park's timeout: the wake ran, the stand-in
    // parked again (2) and then the old invoke arrives.
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    let first = step.clone();
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    // Nothing new: the backstop waits twice as long.
    assert_eq!(
        (park_shape(&step), park_no(&step)),
        ((false, 2 * BACKSTOP_FIRST_SECS), 2)
    );
    assert!(!w.park(&first, "p1-late").await, "its wake already ran");
    assert!(w.park(&step, "p2").await);
    assert!(
        !w.park(&first, "p1-later").await,
        "older than the stored park"
    );
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!((row.epoch, row.park_token.as_deref()), (2, Some("p2")));
}

#[tokio::test]
async fn a_late_follow_invoke_is_fenced_and_subscribes_to_nothing() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let first = step.clone();
    // Its invoke never ran in time: the heartbeat timeout woke the stand-in.
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!((park_shape(&step), park_no(&step)), (FOLLOW, 2));
    assert_eq!(w.follow(&first, "f1-late").await, FollowEnd::Fenced);
    assert_eq!(w.agent.count("SubscribeToTask"), 0);
    assert!(w.bell.rings().is_empty());
    assert_eq!(w.store.snapshot(ID).unwrap().park_token, None);
    // The current park follows.
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "now"))]));
    assert_eq!(
        w.follow(&step, "f2").await,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
    );
    assert_eq!(w.bell.rings(), ["f2"]);
}

#[tokio::test]
async fn a_follow_that_outlives_its_park_is_fenced_at_the_wake() {
    // The follow is still subscribed when its park times out and the wake runs: what it
    // hears afterwards lands nowhere (no note, no event) and the next follow is not
    // woken by it.
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let parked = doorbell::store_park(&w.store, &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap()
        .unwrap();
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(park_no(&step), 2);
    let late = standin::state::remote_out(REMOTE, TaskState::Working, "late");
    assert_eq!(
        doorbell::follow_report(
            &w.teller(),
            &w.bell,
            &parked,
            parked.epoch,
            Some(&late),
            FollowOutcome::WindowOver,
        )
        .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(w.notes().len(), 1, "only the first turn's note");
    assert!(w.store.snapshot(ID).unwrap().pending.is_empty());
}

#[tokio::test]
async fn a_follow_without_an_agent_reports_a_failure_and_retries_later() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let end = standin::follow::follow_unavailable(&w.teller(), &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap();
    assert_eq!(end, FollowEnd::Reported(FollowOutcome::Failed));
    assert_eq!(
        w.bell.rings(),
        ["f1"],
        "the park ends now, not at its timeout"
    );
    let first = step.clone();
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), (false, FOLLOW_RETRY_SECS));
    assert_eq!(
        standin::follow::follow_unavailable(&w.teller(), &w.bell, ID, park_no(&first), "f1-again")
            .await
            .unwrap(),
        FollowEnd::Fenced,
        "a repeated invoke of the same park"
    );
}

#[tokio::test]
async fn heartbeats_run_while_the_agent_is_slow() {
    let bell = MemoryDoorbell::new();
    let answer = standin::follow::with_heartbeats(&bell, "f1", Duration::from_millis(20), async {
        tokio::time::sleep(Duration::from_millis(110)).await;
        42
    })
    .await;
    assert_eq!(answer, 42);
    let beats = bell.heartbeats();
    assert!(beats.len() >= 2, "{beats:?}");
    assert!(beats.iter().all(|t| t == "f1"));
    assert!(bell.rings().is_empty());
}

// The wake: idempotent per park, and idle parks re-check on time.

#[tokio::test]
async fn a_retried_wake_decides_the_same_and_leaves_the_next_event() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let mut step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(reply("one")).await;
    w.ring(reply("two")).await;
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    let first = steps::wake(&w.invocation(), step.clone(), None, 100, PACING)
        .await
        .unwrap();
    let retried = steps::wake(&w.invocation(), step, None, 100, PACING)
        .await
        .unwrap();
    assert_eq!(
        first.next,
        Some(Next::Turn {
            reply: "one".into(),
            parts: Vec::new()
        })
    );
    assert_eq!(retried, first, "the retry decides exactly the same");
    assert_eq!(w.store.snapshot(ID).unwrap().pending.replies, ["two"]);
}

#[tokio::test]
async fn an_idle_push_park_that_times_out_fetches_and_hears_a_lost_push() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let step = first_turn(&w, &spec).await;
    assert_eq!((park_shape(&step), park_no(&step)), (PLAIN, 1));
    assert!(w.park(&step, "p1").await);
    let gets = w.agent.count("GetTask");
    // The agent moved on, but its push never arrived.
    w.agent.set_task(task(TaskState::Working, "moved on"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(w.agent.count("GetTask"), gets + 1, "looked for itself");
    assert_eq!((park_shape(&step), park_no(&step)), (PLAIN, 2));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_WORKING".into(), false))
    );
}

/// An off park's idle time asks the agent once (it hears nothing else), then parks
/// again under a newer number.
#[tokio::test]
async fn an_idle_off_park_that_times_out_asks_and_parks_again_under_a_new_number() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    let gets = w.agent.count("GetTask");
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(
        (park_shape(&step), park_no(&step)),
        ((false, 2 * BACKSTOP_FIRST_SECS), 2)
    );
    assert_eq!(
        w.agent.count("GetTask"),
        gets + 1,
        "off asks at its idle time"
    );
    assert!(w.park(&step, "p2").await);
}

#[tokio::test]
async fn the_idle_backstop_grows_to_the_pacing_and_starts_again_on_a_change() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let pacing = Pacing {
        idle_recheck_secs: 90,
        ..PACING
    };
    let step = steps::turn(
        &w.invocation().with_spec(Some(&spec).cloned()),
        Step::start(ID, "widgets", "go"),
        Duration::from_secs(5),
        pacing,
    )
    .await
    .unwrap();
    let step = steps::register(
        &w.invocation().with_spec(Some(&spec).cloned()),
        None,
        step,
        pacing,
    )
    .await
    .unwrap();
    // The backstop starts short, doubles while nothing moves, and stops at the pacing.
    assert_eq!(park_shape(&step), (false, BACKSTOP_FIRST_SECS));
    let mut step = step;
    let mut waits = vec![];
    for _ in 0..3 {
        step.park = Some(ParkOutcome::woke(Woke::TimedOut));
        step = steps::wake(&w.invocation(), step, None, 100, pacing)
            .await
            .unwrap();
        waits.push(park_shape(&step).1);
    }
    assert_eq!(waits, [60, 90, 90]);
    // The task moves: the next re-check comes soon again.
    w.agent.set_task(task(TaskState::Working, "moved on"));
    step.park = Some(ParkOutcome::woke(Woke::TimedOut));
    let step = steps::wake(&w.invocation(), step, None, 100, pacing)
        .await
        .unwrap();
    assert_eq!(park_shape(&step), (false, BACKSTOP_FIRST_SECS));
}

#[tokio::test]
async fn rolling_keeps_pending_events_for_the_successor() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let mut step = first_turn(&w, &spec).await;
    let last = park_no(&step);
    w.ring(reply("kept")).await;
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    step.cursor.cycles = 5;
    let rolled = steps::wake(&w.invocation(), step, None, 5, PACING)
        .await
        .unwrap();
    assert_eq!(rolled.next, Some(Next::Roll));
    let successor = rolled.successor.expect("successor");
    assert_eq!(successor.name, format!("{ID}__1"));
    assert_eq!(
        park_shape(&successor.input),
        FOLLOW,
        "the successor follows too"
    );
    assert_eq!(successor.input.cursor.cycles, 0);
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!(
        row.pending.replies,
        ["kept"],
        "nothing drained before the roll"
    );
    assert_eq!(row.woken, last, "the roll ended the predecessor's park");
    // The successor's park numbers go on from the predecessor's.
    let next = park_no(&successor.input);
    assert!(next > last, "{next} > {last}");
    let parked = doorbell::store_park(&w.store, &w.bell, ID, last, "old")
        .await
        .unwrap();
    assert_eq!(parked, None, "the predecessor's park is over");
    let parked = doorbell::store_park(&w.store, &w.bell, ID, next, "new")
        .await
        .unwrap()
        .expect("the successor's park is the newest");
    assert_eq!(parked.epoch, next);
    assert_eq!(
        w.bell.rings(),
        ["new"],
        "and it rings itself for the kept reply"
    );
    let step = w.wake(*successor.input, Woke::Rung, &spec).await;
    assert!(
        w.agent
            .calls()
            .iter()
            .any(|c| c == "SendStreamingMessage:kept"),
        "{:?}",
        step.next
    );
}
