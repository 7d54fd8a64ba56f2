//! Polls, gone tasks, the deadline and an unreachable agent.

use super::*;

/// A polled stand-in asks GetTask at growing intervals: 2 s doubling to the agent's
/// `poll_max_interval`, back to 2 s after a change or a turn; a poll park's timeout is a
/// check, never a re-park.
#[test]
fn a_poll_waits_two_seconds_doubling_to_its_bound_and_starts_over_after_a_change() {
    let pacing = PACING.with_poll_max(std::time::Duration::from_secs(20));
    let mut c = Cursor::default();
    let mut waits = Vec::new();
    let mut next = after_register(&mut c, WatchMode::Poll, pacing);
    for changed in [false, false, false, false, true, false] {
        let Next::Park { timeout_secs, .. } = next else {
            panic!("a poll parks: {next:?}")
        };
        waits.push(timeout_secs);
        let woke = after_wake(
            &mut c,
            "agent",
            WatchMode::Poll,
            Woke::TimedOut,
            None,
            pacing,
        );
        assert_eq!(
            woke,
            Next::Check {
                push_triggered: false
            },
            "its wait over, it asks"
        );
        next = after_check(
            &mut c,
            WatchMode::Poll,
            Some(&out(TaskState::Working)),
            changed,
            pacing,
        );
    }
    let Next::Park { timeout_secs, .. } = next else {
        panic!("{next:?}")
    };
    waits.push(timeout_secs);
    assert_eq!(waits, [2, 4, 8, 16, 20, 2, 4]);
    let after_reply = after_turn(
        &mut c,
        &out(TaskState::Working),
        Some(WatchMode::Poll),
        pacing,
    );
    assert!(
        matches!(
            after_reply,
            Next::Park {
                timeout_secs: 2,
                ..
            }
        ),
        "{after_reply:?}"
    );
    let done = after_check(
        &mut c,
        WatchMode::Poll,
        Some(&out(TaskState::Completed)),
        true,
        pacing,
    );
    assert_eq!(done, Next::End(EndCause::Final));
}

/// A follow whose subscribe was refused (the row now polls) or that found the task gone
/// (the row is off): the wake asks at once, and the check decides.
#[test]
fn a_follow_gone_asks_at_once() {
    let gone = || {
        Some(WakeEvent::Follow {
            epoch: 1,
            outcome: FollowOutcome::Gone,
        })
    };
    for mode in [WatchMode::Poll, WatchMode::Off] {
        let mut c = Cursor::default();
        let next = after_wake(&mut c, "agent", mode, Woke::Rung, gone(), PACING);
        assert_eq!(
            next,
            Next::Check {
                push_triggered: false
            },
            "{mode:?}"
        );
    }
}

/// Found gone by a check: re-checked in 1 s, then 2 s, and the third ends the stand-in.
#[test]
fn a_gone_task_is_rechecked_twice_then_ends() {
    let mut c = Cursor::default();
    let first = after_gone(&mut c, WatchMode::Push, PACING);
    assert!(
        matches!(
            first,
            Next::Park {
                timeout_secs: 1,
                ..
            }
        ),
        "{first:?}"
    );
    let timer = after_wake(
        &mut c,
        "agent",
        WatchMode::Push,
        Woke::TimedOut,
        None,
        PACING,
    );
    assert_eq!(
        timer,
        Next::Check {
            push_triggered: true
        }
    );
    let second = after_gone(&mut c, WatchMode::Push, PACING);
    assert!(
        matches!(
            second,
            Next::Park {
                timeout_secs: 2,
                ..
            }
        ),
        "{second:?}"
    );
    let third = after_gone(&mut c, WatchMode::Push, PACING);
    assert_eq!(third, Next::End(EndCause::failed(GONE_REASON)));
}

fn at(now_secs: u64) -> Pacing {
    Pacing {
        deadline_secs: 600,
        max_unreachable_secs: 300,
        now_secs,
        ..PACING
    }
}

/// The deadline counts from the first turn, shortens every park that would outlast it
/// (a follow park too) and, once passed, ends the stand-in whatever it watches.
#[test]
fn every_park_ends_by_the_deadline_and_the_deadline_ends_the_stand_in() {
    for mode in [
        WatchMode::Push,
        WatchMode::Follow,
        WatchMode::Poll,
        WatchMode::Off,
    ] {
        let mut c = Cursor::default();
        assert_eq!(
            after_turn(&mut c, &out(TaskState::Working), None, at(1_000)),
            Next::Register
        );
        assert_eq!(c.deadline_at, Some(1_600), "counted from the first turn");
        let early = park_for(&mut c, mode, at(1_000));
        let late = park_for(&mut c, mode, at(1_590));
        let timeout = |next: &Next| match next {
            Next::Park { timeout_secs, .. } | Next::Follow { timeout_secs, .. } => *timeout_secs,
            other => panic!("{mode:?}: not a park: {other:?}"),
        };
        assert!(timeout(&early) <= 600, "{mode:?}: {early:?}");
        assert_eq!(
            timeout(&late),
            timeout(&early).min(10),
            "{mode:?}: the park ends by the deadline"
        );
        let ended = park_for(&mut c, mode, at(1_600));
        assert!(
            matches!(&ended, Next::End(EndCause::Deadline { reason }) if reason.contains("deadline")),
            "{mode:?}: {ended:?}"
        );
    }
}

/// A reply that waited past the deadline is not sent; a cancel still wins; the deadline
/// rolls over with the cursor.
#[test]
fn past_the_deadline_a_reply_is_not_sent_and_a_roll_keeps_the_deadline() {
    let mut c = Cursor::default();
    park_for(&mut c, WatchMode::Push, at(0));
    let rolled = c.rolled();
    assert_eq!(rolled.deadline_at, Some(600));
    let mut late = rolled.clone();
    let reply = after_wake(
        &mut late,
        "agent",
        WatchMode::Push,
        Woke::Rung,
        Some(WakeEvent::reply("go on")),
        at(601),
    );
    assert!(
        matches!(reply, Next::End(EndCause::Deadline { .. })),
        "{reply:?}"
    );
    let mut cancelled = rolled;
    let cancel = after_wake(
        &mut cancelled,
        "agent",
        WatchMode::Push,
        Woke::Rung,
        Some(WakeEvent::Cancel {
            reason: "stop".into(),
        }),
        at(601),
    );
    assert_eq!(
        cancel,
        Next::End(EndCause::Cancelled {
            reason: "stop".into()
        })
    );
}

/// An agent that cannot be reached keeps its stand-in only for its `max_unreachable`:
/// any answer starts the count again, and past it the stand-in ends failed, naming the
/// agent and the cause.
#[test]
fn an_agent_unreachable_past_its_bound_ends_the_stand_in_failed() {
    let mut c = Cursor::default();
    assert_eq!(
        unreachable(&mut c, "billing", "connection refused", at(100)),
        None
    );
    assert_eq!(
        unreachable(&mut c, "billing", "connection refused", at(399)),
        None
    );
    c.reached();
    assert_eq!(unreachable(&mut c, "billing", "HTTP 401", at(400)), None);
    assert_eq!(unreachable(&mut c, "billing", "HTTP 401", at(699)), None);
    match unreachable(&mut c, "billing", "HTTP 401", at(700)) {
        Some(Next::End(EndCause::Failed { reason })) => {
            assert!(reason.contains("\"billing\""), "{reason}");
            assert!(reason.contains("HTTP 401"), "{reason}");
            assert!(reason.contains("300 s"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A follow that keeps failing counts the same way; one that hears the task resets.
    let mut f = Cursor::default();
    let failed = |c: &mut Cursor, now| {
        let event = Some(WakeEvent::Follow {
            epoch: 1,
            outcome: FollowOutcome::Failed,
        });
        after_wake(c, "billing", WatchMode::Follow, Woke::Rung, event, at(now))
    };
    assert!(matches!(failed(&mut f, 0), Next::Park { .. }));
    assert!(matches!(failed(&mut f, 299), Next::Park { .. }));
    assert!(
        matches!(failed(&mut f, 300), Next::End(EndCause::Failed { ref reason }) if reason.contains(FOLLOW_FAILED)),
    );
}

/// Within a follow's heartbeat of the deadline a plain park waits out the rest (a Follow
/// whose timeout is under its heartbeat would be refused); an agent found unreachable is
/// asked again by the time its `max_unreachable` is up, not an idle re-check later.
#[test]
fn near_the_end_parks_are_plain_and_an_unreachable_agent_is_asked_in_time() {
    let mut c = Cursor::default();
    park_for(&mut c, WatchMode::Follow, at(0));
    let near = park_for(&mut c, WatchMode::Follow, at(600 - FOLLOW_LEAST_SECS));
    assert!(
        matches!(near, Next::Park { timeout_secs, .. } if timeout_secs == FOLLOW_LEAST_SECS),
        "{near:?}"
    );
    let mut idle = Cursor {
        idle_wait: 3600,
        ..Cursor::default()
    };
    let long = Pacing {
        deadline_secs: MAX_STANDIN_SECS,
        ..at(0)
    };
    assert!(matches!(
        park_for(&mut idle, WatchMode::Off, long),
        Next::Park {
            timeout_secs: 3600,
            ..
        }
    ));
    assert_eq!(
        unreachable(
            &mut idle,
            "billing",
            "down",
            Pacing {
                now_secs: 100,
                ..long
            }
        ),
        None
    );
    let soon = park_for(
        &mut idle,
        WatchMode::Off,
        Pacing {
            now_secs: 100,
            ..long
        },
    );
    assert!(
        matches!(
            soon,
            Next::Park {
                timeout_secs: 300,
                ..
            }
        ),
        "{soon:?}"
    );
}
