//! The wake decision: what follows each wake, fetch, turn and registration.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use standin::a2a::TaskState;
use standin::domain::doorbell::EndCause;
use standin::domain::remote::{RemoteOut, remote_out};
use standin::domain::row::{FollowOutcome, WakeEvent, WatchMode};
use standin::domain::wake::*;

fn out(state: TaskState) -> RemoteOut {
    remote_out("r", state, None, "")
}

fn push(claimed: TaskState) -> Option<WakeEvent> {
    Some(WakeEvent::Push {
        claimed: Some(claimed),
    })
}

const PLAIN_PARK: Next = Next::Park {
    follow: false,
    timeout_secs: None,
};
const FOLLOW_PARK: Next = Next::Park {
    follow: true,
    timeout_secs: None,
};

fn timed_park(secs: u64) -> Next {
    Next::Park {
        follow: false,
        timeout_secs: Some(secs),
    }
}

#[test]
fn cancel_ends_and_reply_turns() {
    let mut c = Cursor::default();
    let next = after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        Some(WakeEvent::Cancel {
            reason: "stop".into(),
        }),
    );
    assert_eq!(
        next,
        Next::End(EndCause::Cancelled {
            reason: "stop".into()
        })
    );
    let next = after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        Some(WakeEvent::Reply {
            text: "blue".into(),
        }),
    );
    assert_eq!(
        next,
        Next::Turn {
            reply: "blue".into()
        }
    );
}

/// Drives a forged push against an agent whose GetTask never agrees: the pattern is
/// fetch, wait 1 s, fetch, 2 s, fetch, 4 s, fetch, then a plain park. Four GetTask calls.
#[test]
fn a_disagreeing_push_gets_three_rechecks_and_no_more() {
    let mut c = Cursor::default();
    let mut next = after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Completed),
    );
    let mut fetches = 0;
    let mut waits = Vec::new();
    loop {
        match next {
            Next::Fetch {
                push_triggered: true,
            } => {
                fetches += 1;
                next = after_fetch(
                    &mut c,
                    WatchMode::Push,
                    Some(&out(TaskState::InputRequired)),
                );
            }
            Next::Park {
                follow: false,
                timeout_secs: Some(s),
            } => {
                waits.push(s);
                next = after_wake(&mut c, WatchMode::Push, Woke::TimedOut, None);
            }
            other => {
                assert_eq!(other, PLAIN_PARK);
                break;
            }
        }
    }
    assert_eq!((fetches, waits), (4, vec![1, 2, 4]));
    assert_eq!(c.recheck, None);
}

#[test]
fn agreement_stops_the_rechecks() {
    let mut c = Cursor::default();
    after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Working),
    );
    assert_eq!(
        after_fetch(&mut c, WatchMode::Push, Some(&out(TaskState::Working))),
        PLAIN_PARK
    );
    assert_eq!(c.recheck, None);
}

#[test]
fn a_new_push_during_rechecks_restarts_them() {
    let mut c = Cursor::default();
    after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Canceled),
    );
    after_fetch(
        &mut c,
        WatchMode::Push,
        Some(&out(TaskState::InputRequired)),
    );
    assert_eq!(
        after_wake(&mut c, WatchMode::Push, Woke::TimedOut, None),
        Next::Fetch {
            push_triggered: true
        }
    );
    assert_eq!(
        after_fetch(
            &mut c,
            WatchMode::Push,
            Some(&out(TaskState::InputRequired))
        ),
        timed_park(2)
    );
    // A push rings during the 2 s wait: back to the start of the sequence.
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Push,
            Woke::Rung,
            push(TaskState::Canceled)
        ),
        Next::Fetch {
            push_triggered: true
        }
    );
    assert_eq!(
        after_fetch(
            &mut c,
            WatchMode::Push,
            Some(&out(TaskState::InputRequired))
        ),
        timed_park(1)
    );
}

#[test]
fn the_seeds_canceled_race_is_found_by_a_recheck() {
    let mut c = Cursor::default();
    after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Canceled),
    );
    assert_eq!(
        after_fetch(
            &mut c,
            WatchMode::Push,
            Some(&out(TaskState::InputRequired))
        ),
        timed_park(1)
    );
    assert_eq!(
        after_wake(&mut c, WatchMode::Push, Woke::TimedOut, None),
        Next::Fetch {
            push_triggered: true
        }
    );
    assert_eq!(
        after_fetch(&mut c, WatchMode::Push, Some(&out(TaskState::Canceled))),
        Next::End(EndCause::Final)
    );
}

#[test]
fn a_failed_fetch_keeps_the_rechecks_going_and_a_reply_clears_them() {
    let mut c = Cursor::default();
    after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Working),
    );
    assert_eq!(after_fetch(&mut c, WatchMode::Push, None), timed_park(1));
    let next = after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        Some(WakeEvent::Reply { text: "x".into() }),
    );
    assert_eq!(next, Next::Turn { reply: "x".into() });
    assert_eq!(c.recheck, None);
    assert_eq!(park_for(&c, WatchMode::Push), PLAIN_PARK);
}

#[test]
fn a_reconcile_fetch_without_a_claim_does_not_recheck() {
    let mut c = Cursor::default();
    assert_eq!(
        after_register(&mut c, WatchMode::Push),
        Next::Fetch {
            push_triggered: false
        }
    );
    assert_eq!(
        after_fetch(&mut c, WatchMode::Push, Some(&out(TaskState::Working))),
        PLAIN_PARK
    );
    assert_eq!(after_register(&mut c, WatchMode::Follow), FOLLOW_PARK);
    assert_eq!(after_register(&mut c, WatchMode::Off), PLAIN_PARK);
}

#[test]
fn follow_outcomes() {
    let follow = |outcome| Some(WakeEvent::Follow { epoch: 1, outcome });
    let mut c = Cursor::default();
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Changed { is_final: true })
        ),
        Next::End(EndCause::Final)
    );
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Changed { is_final: false })
        ),
        FOLLOW_PARK
    );
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::WindowOver)
        ),
        FOLLOW_PARK
    );
    // A failed follow waits FOLLOW_RETRY in a plain park, then follows again.
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Failed)
        ),
        timed_park(FOLLOW_RETRY_SECS)
    );
    assert_eq!(
        after_wake(&mut c, WatchMode::Follow, Woke::TimedOut, None),
        FOLLOW_PARK
    );
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Unchanged)
        ),
        timed_park(FOLLOW_RETRY_SECS)
    );
    // A reply during the retry wait turns, and the retry is forgotten.
    after_wake(
        &mut c,
        WatchMode::Follow,
        Woke::Rung,
        Some(WakeEvent::Reply { text: "y".into() }),
    );
    assert_eq!(park_for(&c, WatchMode::Follow), FOLLOW_PARK);
    // The agent is gone: the watch is off from now on.
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Gone)
        ),
        PLAIN_PARK
    );
}

#[test]
fn a_killed_follow_times_out_and_is_followed_again() {
    let mut c = Cursor::default();
    assert_eq!(
        after_wake(&mut c, WatchMode::Follow, Woke::TimedOut, None),
        FOLLOW_PARK
    );
}

#[test]
fn a_failed_follow_task_waits_the_retry_before_following_again() {
    let mut c = Cursor::default();
    assert_eq!(
        after_wake(&mut c, WatchMode::Follow, Woke::Failed, None),
        timed_park(FOLLOW_RETRY_SECS)
    );
    assert_eq!(
        after_wake(&mut c, WatchMode::Follow, Woke::TimedOut, None),
        FOLLOW_PARK
    );
    assert_eq!(
        after_wake(&mut c, WatchMode::Off, Woke::Failed, None),
        PLAIN_PARK
    );
}

#[test]
fn a_ring_with_nothing_pending_parks_as_before() {
    let mut c = Cursor::default();
    assert_eq!(
        after_wake(&mut c, WatchMode::Off, Woke::Rung, None),
        PLAIN_PARK
    );
    after_wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Working),
    );
    after_fetch(
        &mut c,
        WatchMode::Push,
        Some(&out(TaskState::InputRequired)),
    );
    assert_eq!(
        after_wake(&mut c, WatchMode::Push, Woke::Rung, None),
        timed_park(1)
    );
}

#[test]
fn a_stale_push_for_a_non_push_watch_is_ignored() {
    let mut c = Cursor::default();
    assert_eq!(
        after_wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            push(TaskState::Completed)
        ),
        FOLLOW_PARK
    );
    assert_eq!(c.recheck, None);
}

#[test]
fn turns_end_register_or_park() {
    let mut c = Cursor::default();
    assert_eq!(
        after_turn(&mut c, &out(TaskState::Completed), None),
        Next::End(EndCause::Final)
    );
    assert_eq!(
        after_turn(&mut c, &out(TaskState::InputRequired), None),
        Next::Register
    );
    assert_eq!(
        after_turn(&mut c, &out(TaskState::Working), Some(WatchMode::Follow)),
        FOLLOW_PARK
    );
    let awaiting = remote_out(
        "r",
        TaskState::InputRequired,
        Some("awaiting-next-message"),
        "",
    );
    assert_eq!(
        after_turn(&mut c, &awaiting, Some(WatchMode::Push)),
        Next::End(EndCause::Final)
    );
}

#[test]
fn rolls_past_the_bound_and_the_successor_keeps_its_timers() {
    let mut c = Cursor::default();
    let bound = 3;
    let rolls: Vec<bool> = (0..4).map(|_| count_cycle(&mut c, bound)).collect();
    assert_eq!(rolls, [false, false, false, true]);
    c.recheck = Some(Recheck {
        claimed: Some(TaskState::Completed),
        waits: 2,
    });
    c.follow_retry = true;
    let successor = c.rolled();
    assert_eq!(successor.cycles, 0);
    assert_eq!(
        (successor.recheck, successor.follow_retry),
        (c.recheck, true)
    );
}

#[test]
fn next_steps_serialise_for_the_state_machine() {
    let json = serde_json::to_value(Next::Park {
        follow: true,
        timeout_secs: None,
    })
    .expect("json");
    assert_eq!(
        json,
        serde_json::json!({"step": "park", "follow": true, "timeout_secs": null})
    );
    let json = serde_json::to_value(Next::End(EndCause::Final)).expect("json");
    assert_eq!(json, serde_json::json!({"step": "end", "cause": "final"}));
}
