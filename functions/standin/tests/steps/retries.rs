//! Retries and slow agents.

use super::*;

// Retries and slow agents.

#[tokio::test]
async fn a_retried_wake_after_its_check_applied_a_final_state_ends_final() {
    // The Wake state retries a function error; if the first attempt's check applied a
    // final state (and closed the row) before failing, the retry must end the stand-in,
    // not fail it.
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.agent.set_task(task(TaskState::Completed, "done"));
    let mut woken = step.clone();
    woken.park = Some(ParkOutcome::woke(Woke::TimedOut));
    let asked = w.agent.count("GetTask");
    let first = steps::wake(&w.invocation(), woken.clone(), None, 100, PACING)
        .await
        .unwrap();
    assert_eq!(
        w.agent.count("GetTask"),
        asked + 1,
        "the idle push park was checked"
    );
    let retried = steps::wake(&w.invocation(), woken, None, 100, PACING)
        .await
        .unwrap();
    assert_eq!(first.next, Some(Next::End(EndCause::Final)));
    assert_eq!(retried.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true)),
        "told once"
    );
    assert_eq!(w.notes().len(), 2);
}

#[tokio::test]
async fn a_follow_without_an_agent_leaves_no_stale_report_when_an_event_waits() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.ring(reply("blue")).await;
    let end = standin::follow::follow_unavailable(&w.teller(), &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap();
    assert_eq!(
        end,
        FollowEnd::ParkOver,
        "the park rang itself for the reply"
    );
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!(
        row.pending.follow, None,
        "no failure report outlives the reply"
    );
    assert_eq!(row.pending.replies, ["blue"]);
}

#[tokio::test]
async fn the_follow_heartbeats_while_the_agent_is_slow_to_open_the_stream() {
    // SubscribeToTask answers only after several heartbeat periods (on AWS: beyond the
    // park's 30 s heartbeat timeout): the follow must keep the park alive meanwhile.
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent.answer_slowly(Duration::from_millis(350));
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "now"))]));
    let timing = FollowTiming {
        heartbeat: Duration::from_millis(100),
        ..TIMING
    };
    let end = standin::follow::follow(
        &w.teller(),
        &w.bell,
        &w.agent,
        ID,
        park_no(&step),
        "f1",
        timing,
    )
    .await
    .unwrap();
    assert_eq!(
        end,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
    );
    let beats = w.bell.heartbeats();
    assert!(
        beats.len() >= 3,
        "a heartbeat every period while the stream opened: {beats:?}"
    );
}
