//! The follow watch: subscriptions, their failures, and windows handed on between followers.

use super::*;

#[tokio::test]
async fn follow_watch_hears_a_change_through_subscribe() {
    let w = World::new(false).await;
    let spec = spec(Updates::Auto);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    assert_eq!(park_shape(&step), FOLLOW, "no push on the card: follow");
    // The first subscription ends unchanged; the second shows a change.
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::InputRequired, "q"))]));
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "working now"))]));
    let end = w.follow(&step, "f1").await;
    assert!(
        matches!(
            end,
            FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
        ),
        "{end:?}"
    );
    assert_eq!(
        w.agent.count("SubscribeToTask"),
        2,
        "re-subscribed after an unchanged end"
    );
    assert_eq!(w.bell.rings(), ["f1"]);
    let first = park_no(&step);
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), FOLLOW);
    assert_eq!(park_no(&step), first + 1);
    assert_eq!(
        w.notes().last().map(|n| n.1.clone()),
        Some("TASK_STATE_WORKING".into())
    );
}

/// A followed agent that cannot be reached was retried by its followers, unseen, until
/// the deadline: three failed subscriptions in a row are reported, so the stand-in counts
/// its agent unreachable.
#[tokio::test]
async fn failed_subscriptions_are_reported_so_the_stand_in_can_count_them() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    for _ in 0..5 {
        w.agent
            .script_stream(Err(RemoteError::Transport("connection refused".into())));
    }
    let end = w.follow(&step, "f1").await;
    assert_eq!(end, FollowEnd::Reported(FollowOutcome::Failed), "{end:?}");
    assert_eq!(w.agent.count("SubscribeToTask"), 3);
}

/// A Step Functions parent writes the execution's whole input: a cursor in it with a
/// deadline years away (or an agent "unreachable" since the future) is not kept; the
/// first turn starts its own.
#[tokio::test]
async fn a_first_turn_starts_its_own_cursor_whatever_the_input_carried() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let mut start = Step::start(ID, "widgets", "go");
    start.cursor.deadline_at = Some(u64::MAX);
    start.cursor.unreachable_since = Some(u64::MAX);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let step = w.run(start, &spec).await;
    assert_eq!(
        step.cursor.deadline_at,
        Some(PACING.now_secs + PACING.deadline_secs)
    );
    assert_eq!(step.cursor.unreachable_since, None);
}

/// An event past the 1 MiB bound made a followed stand-in subscribe for ever: each
/// subscription replays the task, streams the same event, and reading it fails. Past a
/// bound the stand-in polls instead (GetTask reads the task its own way), after one
/// subscription.
#[tokio::test]
async fn an_event_past_the_bound_turns_a_follow_into_a_poll() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let too_large = || RemoteError::TooLarge {
        what: "a stream event",
        limit: 1024 * 1024,
    };
    for _ in 0..4 {
        w.agent.script_stream(Ok(vec![
            Ok(update(TaskState::InputRequired, "q")),
            Err(too_large()),
        ]));
    }
    let end = w.follow(&step, "f1").await;
    assert_eq!(end, FollowEnd::Reported(FollowOutcome::Gone), "{end:?}");
    assert_eq!(w.agent.count("SubscribeToTask"), 1, "not subscribed again");
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
}

#[tokio::test]
async fn a_terminal_subscribe_fetches_and_a_gone_task_turns_the_watch_off_a_refused_one_polls() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Err(RemoteError::UnsupportedOperation("terminal".into())));
    w.agent.set_task(task(TaskState::Completed, "done"));
    assert_eq!(
        w.follow(&step, "f1").await,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: true })
    );
    // The final state closed the row in its apply; the follow rang its park directly and
    // the wake ends on the closed row.
    assert!(w.store.snapshot(ID).unwrap().closed);
    assert_eq!(w.bell.rings(), ["f1"]);
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true))
    );

    // Neither subscribe nor GetTask knows the task: nothing more can be heard.
    let w = World::new(false).await;
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Err(RemoteError::TaskNotFound("gone".into())));
    w.agent
        .fail_gets(vec![RemoteError::TaskNotFound("gone".into()); 2]);
    w.follow(&step, "f1").await;
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Off);
    // The wake asks at once, and re-checks before it ends the stand-in.
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), (false, 1));

    // The subscribe says "not found" (a2a-sdk 0.3 on an input-required task, a2a-go) or
    // lacks the method, while GetTask knows the task: the stand-in polls it.
    for refusal in [
        RemoteError::TaskNotFound("Task not found".into()),
        RemoteError::Rpc {
            code: -32601,
            message: "Method not found".into(),
        },
    ] {
        let w = World::new(false).await;
        let step = first_turn(&w, &spec).await;
        w.agent.script_stream(Err(refusal));
        w.follow(&step, "f1").await;
        assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
        let asked = w.agent.count("GetTask");
        let step = w.wake(step, Woke::Rung, &spec).await;
        // The wake polls at once; nothing changed, so the next poll waits twice as long.
        assert_eq!(w.agent.count("GetTask"), asked + 1);
        assert_eq!(
            park_shape(&step),
            (false, 2 * standin::steps::next::POLL_FIRST_SECS)
        );
    }
}

#[tokio::test]
async fn off_watch_and_a_cancel_while_parked() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert_eq!(park_shape(&step), PLAIN);
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Off);
    assert!(w.agent.configs().is_empty());
    assert!(w.park(&step, "p1").await);
    w.ring(WakeEvent::Cancel {
        reason: "not needed".into(),
    })
    .await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::End(EndCause::Cancelled {
            reason: "not needed".into()
        }))
    );
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(2));
    let note = w.store.outbox().pop().unwrap();
    assert_eq!(
        (note.state.as_str(), note.text.as_str(), note.is_final),
        ("TASK_STATE_CANCELED", "not needed", true)
    );
    assert_eq!(w.agent.count("CancelTask"), 1);
    // A retried end (the End function is retried) writes no second note; cancelling
    // again is harmless.
    let again = w.end(&step).await;
    assert_eq!(again.seq(), None);
    assert_eq!(w.store.outbox().len(), 2);
}

// Multiplexed follows: a window that heard nothing hands its park to the next follower,
// which follows it on only while it stands.

const HAND_BACK: FollowTiming = FollowTiming {
    window: Duration::from_millis(300),
    at_window_end: WindowEnd::HandBack,
    ..TIMING
};

#[tokio::test]
async fn a_window_that_hears_nothing_hands_its_park_back_without_waking_the_stand_in() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    // No stream scripted: each subscribe fails and is tried again until the window ends.
    let end = standin::follow::follow(
        &w.teller(),
        &w.bell,
        &w.agent,
        ID,
        park_no(&step),
        "f1",
        HAND_BACK,
    )
    .await
    .unwrap();
    assert_eq!(end, FollowEnd::HandedBack);
    let row = w.store.get(ID).await.unwrap().unwrap();
    assert!(row.is_parked() && row.pending.is_empty(), "{row:?}");
    assert_eq!(row.park_token.as_deref(), Some("f1"));
    assert!(
        w.bell.rings().is_empty(),
        "nothing rang: {:?}",
        w.bell.rings()
    );
}

/// Park `park` with token `token` as the follower after `hop` hand-ons has it.
fn handed_on(park: u64, token: &str, hop: u64) -> standin::follow::Park<'_> {
    standin::follow::Park {
        task_id: ID,
        number: park,
        token,
        owner: Owner::default(),
        hop,
    }
}

#[tokio::test]
async fn a_handed_back_park_is_followed_on_and_beats_at_once() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let park = park_no(&step);
    let first =
        standin::follow::follow(&w.teller(), &w.bell, &w.agent, ID, park, "f1", HAND_BACK).await;
    assert_eq!(first.unwrap(), FollowEnd::HandedBack);
    let beats_before = w.bell.heartbeats().len();
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "now"))]));
    let on = handed_on(park, "f1", 1);
    let end = standin::follow::resume(&w.teller(), &w.bell, &w.agent, &on, HAND_BACK)
        .await
        .unwrap();
    assert_eq!(
        end,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
    );
    assert!(
        w.bell.heartbeats().len() > beats_before,
        "the next follower beats before it listens (the last beat was the other's)"
    );
    assert_eq!(
        w.bell.rings(),
        vec!["f1".to_owned()],
        "the change rang the park"
    );
}

#[tokio::test]
async fn a_hand_on_delivered_twice_is_followed_once() {
    // SQS standard delivers at least once: the second copy of a handed-on request
    // finds its hop claimed and does not follow (nor beat, nor subscribe).
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let park = park_no(&step);
    let first =
        standin::follow::follow(&w.teller(), &w.bell, &w.agent, ID, park, "f1", HAND_BACK).await;
    assert_eq!(first.unwrap(), FollowEnd::HandedBack);
    let on = handed_on(park, "f1", 1);
    let taken = standin::follow::resume(&w.teller(), &w.bell, &w.agent, &on, HAND_BACK).await;
    assert_eq!(taken.unwrap(), FollowEnd::HandedBack);
    let subscribes = w.agent.count("SubscribeToTask");
    let again = standin::follow::resume(&w.teller(), &w.bell, &w.agent, &on, HAND_BACK).await;
    assert_eq!(again.unwrap(), FollowEnd::ParkOver);
    assert_eq!(
        w.agent.count("SubscribeToTask"),
        subscribes,
        "no second follow"
    );
    // The next hand-on of the one that followed is taken as before.
    let next = handed_on(park, "f1", 2);
    let taken = standin::follow::resume(&w.teller(), &w.bell, &w.agent, &next, HAND_BACK).await;
    assert_eq!(taken.unwrap(), FollowEnd::HandedBack);
}

#[tokio::test]
async fn a_handed_back_park_that_ended_meanwhile_is_not_followed() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let park = park_no(&step);
    let first =
        standin::follow::follow(&w.teller(), &w.bell, &w.agent, ID, park, "f1", HAND_BACK).await;
    assert_eq!(first.unwrap(), FollowEnd::HandedBack);
    // A reply arrived while the park was on its way to the next follower.
    w.ring(WakeEvent::reply("blue")).await;
    let subscribes = w.agent.count("SubscribeToTask");
    let on = handed_on(park, "f1", 1);
    let end = standin::follow::resume(&w.teller(), &w.bell, &w.agent, &on, HAND_BACK)
        .await
        .unwrap();
    assert_eq!(end, FollowEnd::ParkOver);
    assert_eq!(w.agent.count("SubscribeToTask"), subscribes, "no subscribe");
    // A wrong token or an older park number is not followed either.
    for (number, token) in [(park, "forged"), (park.saturating_sub(1), "f1")] {
        let on = handed_on(number, token, 2);
        let end = standin::follow::resume(&w.teller(), &w.bell, &w.agent, &on, HAND_BACK).await;
        assert_eq!(end.unwrap(), FollowEnd::ParkOver, "{number} {token}");
    }
}

/// A window long enough that only the park's end stops the follow.
const HOUR_LONG: FollowTiming = FollowTiming {
    window: Duration::from_secs(3600),
    ..TIMING
};

/// A first turn that parks to follow, with the agent's stream then open and silent:
/// only the beats go on. The park's number.
async fn quiet_follow_park(w: &World) -> u64 {
    let step = first_turn(w, &spec(Updates::Follow)).await;
    w.agent.keep_streams_open();
    w.agent.script_stream(Ok(vec![]));
    park_no(&step)
}

#[tokio::test(start_paused = true)]
async fn a_followed_park_that_is_rung_ends_at_its_next_beat_and_its_row_is_read_once_a_minute() {
    let w = World::new(false).await;
    let park = quiet_follow_park(&w).await;
    let teller = w.teller();
    let follow = standin::follow::follow(&teller, &w.bell, &w.agent, ID, park, "f1", HOUR_LONG);
    tokio::pin!(follow);
    let reads_before = w.store.reads();
    tokio::select! {
        end = &mut follow => panic!("the follow ended while its park stood: {end:?}"),
        () = tokio::time::sleep(Duration::from_secs(300) + Duration::from_millis(1)) => {}
    }
    assert!(
        w.bell.heartbeats().len() >= 30,
        "a beat every 10 s: {}",
        w.bell.heartbeats().len()
    );
    let reads = w.store.reads() - reads_before;
    assert_eq!(
        reads,
        (300 / standin::follow::ROW_READ_EVERY.as_secs()) as usize,
        "the row is read once a minute, not with every beat"
    );
    // A reply rings the park: its task is closed, and the next beat is refused.
    w.ring(reply("answer")).await;
    let end = tokio::time::timeout(TIMING.heartbeat + Duration::from_millis(1), &mut follow)
        .await
        .expect("the follow ends at its next beat");
    assert_eq!(end.unwrap(), FollowEnd::ParkOver);
}

#[tokio::test(start_paused = true)]
async fn an_event_whose_ring_failed_is_rung_again_when_the_follow_reads_its_row() {
    let w = World::new(false).await;
    let park = quiet_follow_park(&w).await;
    let teller = w.teller();
    let follow = standin::follow::follow(&teller, &w.bell, &w.agent, ID, park, "f1", HOUR_LONG);
    tokio::pin!(follow);
    tokio::select! {
        end = &mut follow => panic!("the follow ended while its park stood: {end:?}"),
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
    // A reply's ring fails (Step Functions throttled): the reply waits on the row and
    // the park's task still takes its beats.
    w.bell
        .fail_rings_with(Some(standin::doorbell::DoorbellError::Backend(
            "throttled".into(),
        )));
    w.ring(reply("answer")).await;
    w.bell.fail_rings_with(None);
    let end = tokio::time::timeout(
        standin::follow::ROW_READ_EVERY + TIMING.heartbeat,
        &mut follow,
    )
    .await
    .expect("the row read finds the reply");
    assert_eq!(end.unwrap(), FollowEnd::ParkOver);
    assert_eq!(
        w.bell.rings(),
        ["f1", "f1"],
        "rung again: the wake comes now, not at the park's heartbeat timeout"
    );
}
