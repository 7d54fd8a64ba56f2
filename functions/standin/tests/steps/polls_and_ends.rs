//! Polled stand-ins, direct answers, forgotten tasks, deadlines and unreachable agents.

use super::*;

/// `updates = "poll"`: no push, no stream held; each park waits its poll interval in
/// Step Functions, and its timeout asks GetTask, until the task ends.
#[tokio::test]
async fn a_polled_stand_in_asks_gettask_each_time_its_wait_is_over() {
    let w = World::new(true).await;
    let spec = spec(Updates::Poll);
    let step = first_turn(&w, &spec).await;
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
    assert!(w.agent.configs().is_empty(), "no push registered");
    assert_eq!(park_shape(&step), (false, 2));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(
        park_shape(&step),
        (false, 4),
        "nothing new: the wait doubles"
    );
    w.agent.set_task(task(TaskState::Working, "on it"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(
        park_shape(&step),
        (false, 2),
        "a change: back to the first wait"
    );
    w.agent.set_task(task(TaskState::Completed, "done"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(w.agent.count("SubscribeToTask"), 0);
    assert_eq!(
        w.notes().last().cloned(),
        Some((3, "TASK_STATE_COMPLETED".into(), true))
    );
}

/// A direct answer (a message, no task) is a finished exchange: COMPLETED with its text,
/// streamed or not, and no watch is chosen for a task that does not exist.
#[tokio::test]
async fn a_direct_answer_completes_the_stand_in_with_its_text() {
    for streaming in [true, false] {
        let mut w = World::new(false).await;
        w.agent.streaming = streaming;
        let spec = spec(Updates::Auto);
        if streaming {
            w.agent
                .script_stream(Ok(vec![Ok(Update::Answer("The answer is 42.".into()))]));
        } else {
            w.agent
                .script_send(Ok(standin_remote::Sent::Answer("The answer is 42.".into())));
        }
        let step = w
            .run(Step::start(ID, "widgets", "What is it?"), &spec)
            .await;
        assert_eq!(
            step.next,
            Some(Next::End(EndCause::Final)),
            "streaming: {streaming}"
        );
        let notes = w.store.outbox();
        let last = notes.last().expect("a note");
        assert_eq!(
            (
                last.state,
                last.text.as_str(),
                last.is_final,
                last.remote_task_id.as_deref()
            ),
            (TaskState::Completed, "The answer is 42.", true, None),
            "streaming: {streaming}"
        );
        assert_eq!(w.store.snapshot(ID).unwrap().watch, None);
    }
}

/// a2a-sdk 0.3's HTTP+JSON cuts every subscribe of an input-required task before its
/// first event: after a few in a row the stand-in polls, since GetTask knows the task.
#[tokio::test]
async fn subscriptions_that_break_before_their_first_event_turn_into_a_poll() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    for _ in 0..standin::follow::SUBSCRIBES_BROKEN_BEFORE_POLL {
        w.agent.script_stream(Ok(vec![Err(RemoteError::Transport(
            "peer closed connection without sending complete message body".into(),
        ))]));
    }
    assert_eq!(
        w.follow(&step, "f1").await,
        FollowEnd::Reported(FollowOutcome::Gone)
    );
    assert_eq!(
        w.agent.count("SubscribeToTask"),
        standin::follow::SUBSCRIBES_BROKEN_BEFORE_POLL as usize
    );
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
}

/// A follow-up answered by a bare message says nothing of the task: GetTask decides,
/// and the stand-in does not end COMPLETED on the agent's word.
#[tokio::test]
async fn a_bare_message_answering_a_follow_up_leaves_the_task_to_get_task() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Ok(vec![Ok(Update::Answer("noted".into()))]));
    w.agent.set_task(task(TaskState::Working, "painting"));
    let mut step = step;
    step.next = Some(Next::Turn {
        reply: "blue".into(),
        parts: Vec::new(),
    });
    let step = w.run(step, &spec).await;
    assert_ne!(
        step.next,
        Some(Next::End(EndCause::Final)),
        "{:?}",
        step.next
    );
    let last = w.notes().last().cloned();
    assert_eq!(
        last,
        Some((2, "TASK_STATE_WORKING".into(), false)),
        "GetTask's state"
    );
}

/// A task the agent no longer knows (it restarted with an in-memory store) ends the
/// stand-in FAILED after a bounded re-check (1 s, 2 s), whatever its watch: before, a
/// poll turned off and a push or off stand-in kept its last state for ever.
#[tokio::test]
async fn a_task_the_agent_forgot_ends_the_stand_in_after_a_bounded_recheck() {
    for updates in [Updates::Poll, Updates::Auto, Updates::Off] {
        let w = World::new(updates == Updates::Auto).await;
        let spec = spec(updates);
        let step = first_turn(&w, &spec).await;
        let asked = w.agent.count("GetTask");
        w.agent
            .fail_gets(vec![RemoteError::TaskNotFound("gone".into()); 3]);
        let step = w.wake(step, Woke::TimedOut, &spec).await;
        assert_eq!(
            park_shape(&step),
            (false, 1),
            "{updates:?}: re-checked in 1 s"
        );
        let step = w.wake(step, Woke::TimedOut, &spec).await;
        assert_eq!(park_shape(&step), (false, 2), "{updates:?}: then in 2 s");
        let step = w.wake(step, Woke::TimedOut, &spec).await;
        assert_eq!(
            step.next,
            Some(Next::End(EndCause::failed(GONE_REASON))),
            "{updates:?}"
        );
        assert_eq!(w.agent.count("GetTask"), asked + 3, "{updates:?}");
    }
}

/// One answer between two "not found"s: the count starts again.
#[tokio::test]
async fn a_task_found_again_resets_the_gone_count() {
    let w = World::new(false).await;
    let spec = spec(Updates::Poll);
    let step = first_turn(&w, &spec).await;
    w.agent
        .fail_gets(vec![RemoteError::TaskNotFound("gone".into()); 2]);
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.cursor.gone_checks, 2);
    w.agent
        .set_task(task(TaskState::InputRequired, "Which colour?"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.cursor.gone_checks, 0);
    assert!(
        matches!(step.next, Some(Next::Park { .. })),
        "{:?}",
        step.next
    );
}

/// An off stand-in hears nothing by itself: at its idle timeout it asks, and a task that
/// ended meanwhile ends it (before, it re-parked for ever).
#[tokio::test]
async fn an_off_stand_in_asks_at_its_idle_timeout() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert_eq!(park_shape(&step), PLAIN);
    w.agent.set_task(task(TaskState::Completed, "done"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(w.agent.count("GetTask"), 1);
}

/// At its deadline a stand-in cancels the remote task and tells the parent, in a final
/// note, that the deadline ended it.
#[tokio::test]
async fn a_stand_in_past_its_deadline_cancels_the_remote_task_and_says_so() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    let deadline = step
        .cursor
        .deadline_at
        .expect("a deadline from the first turn");
    assert!(w.park(&step, "p1").await);
    let late = Pacing {
        now_secs: deadline,
        ..PACING
    };
    let step = w.wake_paced(step, Woke::TimedOut, &spec, late).await;
    assert!(
        matches!(step.next, Some(Next::End(EndCause::Deadline { .. }))),
        "{:?}",
        step.next
    );
    w.end(&step).await;
    assert_eq!(w.agent.count("CancelTask"), 1);
    let note = w.store.outbox().pop().unwrap();
    assert_eq!(note.state, TaskState::Canceled);
    assert!(note.is_final);
    assert!(note.text.contains("deadline"), "{}", note.text);
}

/// A polled agent that stops answering ends its stand-in failed once it has been
/// unreachable for its `max_unreachable`, not before; the note names the agent.
#[tokio::test]
async fn an_agent_unreachable_for_its_bound_ends_its_stand_in_failed() {
    let w = World::new(true).await;
    let spec = spec(Updates::Poll);
    let mut step = first_turn(&w, &spec).await;
    let down = || RemoteError::Transport("connection refused".into());
    let paced = |now_secs| Pacing {
        max_unreachable_secs: 120,
        now_secs,
        ..PACING
    };
    for now in [1_000, 1_060, 1_119] {
        w.agent.fail_gets(vec![down(), down(), down()]);
        assert!(w.park(&step, &format!("p{now}")).await);
        step = w.wake_paced(step, Woke::TimedOut, &spec, paced(now)).await;
        assert!(
            matches!(step.next, Some(Next::Park { .. })),
            "{now}: {:?}",
            step.next
        );
    }
    w.agent.fail_gets(vec![down(), down(), down()]);
    assert!(w.park(&step, "p-last").await);
    step = w
        .wake_paced(step, Woke::TimedOut, &spec, paced(1_120))
        .await;
    match &step.next {
        Some(Next::End(EndCause::Failed { reason })) => {
            assert!(reason.contains("\"widgets\""), "{reason}");
            assert!(reason.contains("transport"), "{reason}");
            assert!(
                !reason.contains("connection refused"),
                "no transport text: {reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    w.end(&step).await;
    let note = w.store.outbox().pop().unwrap();
    assert_eq!((note.state, note.is_final), (TaskState::Failed, true));
}
