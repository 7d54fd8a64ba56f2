//! The truth at the end when the parent races the remote task, agents that cannot stream, replies refused.

use super::*;

// The truth at the end, when the parent's cancel or reply races the remote task.

#[tokio::test]
async fn a_cancel_whose_remote_task_had_already_completed_reports_the_completion() {
    // The agent finished while the cancel was on its way and nothing told the stand-in
    // (its push was lost): the remote cancel's answer is the truth.
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.agent
        .set_task(task(TaskState::Completed, "finished first"));
    w.ring(WakeEvent::Cancel {
        reason: "no longer needed".into(),
    })
    .await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert!(matches!(
        step.next,
        Some(Next::End(EndCause::Cancelled { .. }))
    ));
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(2));
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true)
        ]
    );
    assert_eq!(w.store.outbox()[1].text, "finished first");
    assert_eq!(w.agent.count("CancelTask"), 1);
    // A retried end writes nothing more.
    assert_eq!(w.end(&step).await.seq(), None);
    assert_eq!(w.notes().len(), 2);
}

/// Nothing moved after the rechecks (GetTask shows the same question at once, after 1 s,
/// 2 s and 4 s): parking would leave the parent and the agent waiting on each other, so
/// the parent is told.
#[tokio::test]
async fn a_reply_the_agent_refuses_while_it_still_waits_for_input_ends_the_stand_in_after_the_rechecks()
 {
    let refusals: Vec<(&str, StreamScript)> = vec![
        (
            "refused up front",
            Err(RemoteError::Rpc {
                code: -32602,
                message: "invalid params".into(),
            }),
        ),
        // Accepted (200), then broken: not sent again, but not waited on for ever either.
        (
            "a stream that broke before its first event",
            Ok(vec![Err(RemoteError::Transport("stream broke".into()))]),
        ),
    ];
    for (why, script) in refusals {
        let w = World::new(false).await;
        let spec = spec(Updates::Off);
        let step = first_turn(&w, &spec).await;
        w.agent.script_stream(script);
        w.ring(reply("blue")).await;
        let mut step = w.wake(step, Woke::Rung, &spec).await;
        for secs in [1, 2, 4] {
            assert_eq!(
                park_shape(&step),
                (false, secs),
                "{why}: rechecked in {secs} s"
            );
            step = w.wake(step, Woke::TimedOut, &spec).await;
        }
        match &step.next {
            Some(Next::End(EndCause::Failed { reason })) => {
                assert!(reason.contains("did not take the reply"), "{why}: {reason}");
            }
            other => panic!("{why}: expected a failure, got {other:?}"),
        }
        assert_eq!(w.agent.count("SendStreamingMessage"), 2, "{why}: sent once");
    }
}

/// Measured with @a2a-js/sdk: it refuses a follow-up stream that begins with a status
/// update (-32004) while its executor takes the reply and completes a second later. The
/// stand-in judged the reply at once and ended FAILED; now a recheck hears the task move.
#[tokio::test]
async fn a_refused_reply_the_agent_took_after_all_is_heard_by_a_recheck() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.agent.script_stream(Err(RemoteError::UnsupportedOperation(
        "Task is in a terminal state or stream ended".into(),
    )));
    w.ring(reply("blue")).await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), (false, 1), "not judged at once");
    w.agent
        .set_task(task(TaskState::Completed, "Your blue widget is ready."));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true))
    );
    assert_eq!(step.cursor.unconfirmed_reply, None);
}

// Agents that cannot stream.

#[tokio::test]
async fn an_agent_that_cannot_stream_takes_turns_by_send_message_and_get_task() {
    let mut w = World::new(true).await;
    w.agent.streaming = false;
    let spec = spec(Updates::Auto);
    // SendMessage answers at once with WORKING; GetTask then shows the question.
    w.agent.script_send(Ok(standin_remote::Sent::Task(task(
        TaskState::Working,
        "thinking",
    ))));
    w.agent
        .set_task(task(TaskState::InputRequired, "Which colour?"));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    assert_eq!(w.agent.count("SendStreamingMessage"), 0);
    assert_eq!(w.agent.count("SendMessage"), 1);
    assert!(w.agent.count("GetTask") >= 1, "followed by GetTask");
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_WORKING".into(), false),
            (2, "TASK_STATE_INPUT_REQUIRED".into(), false)
        ],
        "the WORKING SendMessage answered is told at once; the turn ends where GetTask found the task waiting"
    );
    assert!(matches!(step.next, Some(Next::Park { .. })));
    assert_eq!(
        w.store.snapshot(ID).unwrap().mode(),
        WatchMode::Push,
        "heard by push"
    );
}

#[tokio::test]
async fn without_streaming_or_push_the_watch_polls_and_follow_is_refused() {
    use standin::watch::{fit_to_streaming, misconfigured};
    assert_eq!(
        fit_to_streaming(standin::row::Watch::follow(), false).mode,
        WatchMode::Poll
    );
    assert_eq!(
        fit_to_streaming(standin::row::Watch::follow(), true).mode,
        WatchMode::Follow
    );
    let reason = misconfigured("w", Updates::Follow, false).unwrap();
    assert!(
        reason.contains("configuration") && reason.contains("streaming"),
        "{reason}"
    );
    assert_eq!(misconfigured("w", Updates::Auto, false), None);
    assert_eq!(misconfigured("w", Updates::Follow, true), None);

    // A follow park on such an agent (its watch chosen without the card) polls instead.
    let mut w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent.streaming = false;
    assert_eq!(
        w.follow(&step, "f1").await,
        FollowEnd::Reported(FollowOutcome::Gone)
    );
    assert_eq!(w.agent.count("SubscribeToTask"), 0);
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
}

#[tokio::test]
async fn a_reply_refused_by_a_passing_error_is_sent_once_more() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Err(RemoteError::Http { status: 503 }));
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Completed, "done"))]));
    w.ring(reply("blue")).await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.agent.count("SendStreamingMessage"),
        3,
        "first turn, refused, again"
    );
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true))
    );
}

#[tokio::test]
async fn a_reply_that_timed_out_may_have_been_taken_so_the_stand_in_parks() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.agent.script_stream(Err(RemoteError::Timeout {
        operation: "SendStreamingMessage",
        seconds: 30,
    }));
    w.ring(reply("blue")).await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert!(
        matches!(step.next, Some(Next::Park { .. } | Next::Follow { .. })),
        "{:?}",
        step.next
    );
    assert_eq!(w.agent.count("SendStreamingMessage"), 2, "not sent twice");
}

#[test]
fn a_failure_reason_is_scrubbed_and_bounded_before_it_enters_the_state() {
    let reason = format!(
        "Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL {}",
        "x".repeat(300 * 1024)
    );
    let EndCause::Failed { reason } = EndCause::failed(&reason) else {
        panic!("a failure")
    };
    assert!(reason.len() <= 4096 + 32, "{}", reason.len());
    assert!(!reason.contains("Zm9vYmFy"));
}

/// Issue 24, 1: nothing is sent on a closed row. An execution that reaches a turn for a
/// stand-in that has ended (another execution given its id, a retry after its end) sends
/// the agent nothing and ends, leaving the row as it was.
#[tokio::test]
async fn a_turn_on_an_ended_stand_in_sends_nothing() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.store
        .close(
            ID,
            Some(&standin::state::remote_out(
                REMOTE,
                TaskState::Completed,
                "done",
            )),
        )
        .await
        .unwrap();
    let before = w.store.snapshot(ID).unwrap();
    let sends = w.agent.count("SendStreamingMessage");
    let mut reply = step.clone();
    reply.next = Some(Next::Turn {
        reply: "take over".into(),
        parts: Vec::new(),
    });
    let after = w.run(reply, &spec).await;
    assert_eq!(after.next, Some(Next::End(EndCause::Final)));
    assert_eq!(w.agent.count("SendStreamingMessage"), sends, "nothing sent");
    assert_eq!(
        w.store.snapshot(ID).unwrap(),
        before,
        "the row is as it was"
    );
}
