//! The decisions of steps/next.rs: what follows each wake, check, turn and registration.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use standin::doorbell::EndCause;
use standin::row::{FollowOutcome, WakeEvent, WatchMode};
use standin::state::{RemoteOut, remote_out};
use standin::steps::next::*;
use standin_wire::TaskState;

const PACING: Pacing = Pacing {
    idle_recheck_secs: IDLE_RECHECK_SECS,
    poll_max_secs: POLL_MAX_SECS,
    deadline_secs: MAX_STANDIN_SECS,
    max_unreachable_secs: MAX_UNREACHABLE_SECS,
    now_secs: 0,
};

fn out(state: TaskState) -> RemoteOut {
    remote_out("r", state, "")
}

fn push(claimed: TaskState) -> Option<WakeEvent> {
    Some(WakeEvent::Push {
        claimed: Some(claimed),
    })
}

/// The park's shape with its number left out (`park: 0`); the numbers are checked by
/// `numbered` and by their own tests. A plain park is the idle backstop's first wait.
const PLAIN_PARK: Next = Next::Park {
    park: 0,
    timeout_secs: BACKSTOP_FIRST_SECS,
};
const FOLLOW_PARK: Next = Next::Follow {
    park: 0,
    timeout_secs: FOLLOW_PARK_SECS,
};

fn timed_park(secs: u64) -> Next {
    Next::Park {
        park: 0,
        timeout_secs: secs,
    }
}

/// Every park a decision returns carries the cursor's newest number; returns the
/// decision with the number blanked so the tests compare shapes.
fn numbered(c: &Cursor, next: Next) -> Next {
    let check = |park: u64| {
        assert_eq!(park, c.parks, "a park carries the newest number");
        assert!(park > 0, "park numbers start at 1");
    };
    match next {
        Next::Park { park, timeout_secs } => {
            check(park);
            Next::Park {
                park: 0,
                timeout_secs,
            }
        }
        Next::Follow { park, timeout_secs } => {
            check(park);
            Next::Follow {
                park: 0,
                timeout_secs,
            }
        }
        other => other,
    }
}

fn wake(c: &mut Cursor, mode: WatchMode, woke: Woke, event: Option<WakeEvent>) -> Next {
    let next = after_wake(c, "agent", mode, woke, event, PACING);
    numbered(c, next)
}

fn checked(c: &mut Cursor, mode: WatchMode, fetched: Option<&RemoteOut>) -> Next {
    let next = after_check(c, mode, fetched, false, PACING);
    numbered(c, next)
}

fn registered(c: &mut Cursor, mode: WatchMode) -> Next {
    let next = after_register(c, mode, PACING);
    numbered(c, next)
}

fn turned(c: &mut Cursor, out: &RemoteOut, watch: Option<WatchMode>) -> Next {
    let next = after_turn(c, out, watch, PACING);
    numbered(c, next)
}

fn parked(c: &mut Cursor, mode: WatchMode) -> Next {
    let next = park_for(c, mode, PACING);
    numbered(c, next)
}

#[test]
fn cancel_ends_and_reply_turns() {
    let mut c = Cursor::default();
    let next = wake(
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
    let next = wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        Some(WakeEvent::reply("blue")),
    );
    assert_eq!(
        next,
        Next::Turn {
            reply: "blue".into()
        }
    );
    assert_eq!(c.parks, 0, "no park was decided");
}

/// Drives a forged push against an agent whose GetTask never agrees: the pattern is
/// check, wait 1 s, check, 2 s, check, 4 s, check, then a plain park. Four GetTask calls.
#[test]
fn a_disagreeing_push_gets_three_rechecks_and_no_more() {
    let mut c = Cursor::default();
    let mut next = wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Completed),
    );
    let mut fetches = 0;
    let mut waits = Vec::new();
    loop {
        match next {
            Next::Check {
                push_triggered: true,
            } => {
                fetches += 1;
                next = checked(
                    &mut c,
                    WatchMode::Push,
                    Some(&out(TaskState::InputRequired)),
                );
            }
            Next::Park {
                timeout_secs: s, ..
            } if s < BACKSTOP_FIRST_SECS => {
                waits.push(s);
                next = wake(&mut c, WatchMode::Push, Woke::TimedOut, None);
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
    wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Working),
    );
    assert_eq!(
        checked(&mut c, WatchMode::Push, Some(&out(TaskState::Working))),
        PLAIN_PARK
    );
    assert_eq!(c.recheck, None);
}

#[test]
fn a_new_push_during_rechecks_restarts_them() {
    let mut c = Cursor::default();
    wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Canceled),
    );
    checked(
        &mut c,
        WatchMode::Push,
        Some(&out(TaskState::InputRequired)),
    );
    assert_eq!(
        wake(&mut c, WatchMode::Push, Woke::TimedOut, None),
        Next::Check {
            push_triggered: true
        }
    );
    assert_eq!(
        checked(
            &mut c,
            WatchMode::Push,
            Some(&out(TaskState::InputRequired))
        ),
        timed_park(2)
    );
    // A push rings during the 2 s wait: back to the start of the sequence.
    assert_eq!(
        wake(
            &mut c,
            WatchMode::Push,
            Woke::Rung,
            push(TaskState::Canceled)
        ),
        Next::Check {
            push_triggered: true
        }
    );
    assert_eq!(
        checked(
            &mut c,
            WatchMode::Push,
            Some(&out(TaskState::InputRequired))
        ),
        timed_park(1)
    );
}

#[test]
fn a_canceled_push_ahead_of_get_task_is_found_by_a_recheck() {
    let mut c = Cursor::default();
    wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Canceled),
    );
    assert_eq!(
        checked(
            &mut c,
            WatchMode::Push,
            Some(&out(TaskState::InputRequired))
        ),
        timed_park(1)
    );
    assert_eq!(
        wake(&mut c, WatchMode::Push, Woke::TimedOut, None),
        Next::Check {
            push_triggered: true
        }
    );
    assert_eq!(
        checked(&mut c, WatchMode::Push, Some(&out(TaskState::Canceled))),
        Next::End(EndCause::Final)
    );
}

#[test]
fn a_failed_fetch_keeps_the_rechecks_going_and_a_reply_clears_them() {
    let mut c = Cursor::default();
    wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Working),
    );
    assert_eq!(checked(&mut c, WatchMode::Push, None), timed_park(1));
    let next = wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        Some(WakeEvent::reply("x")),
    );
    assert_eq!(next, Next::Turn { reply: "x".into() });
    assert_eq!(c.recheck, None);
    assert_eq!(parked(&mut c, WatchMode::Push), PLAIN_PARK);
}

#[test]
fn a_reconcile_fetch_without_a_claim_does_not_recheck() {
    let mut c = Cursor::default();
    assert_eq!(
        registered(&mut c, WatchMode::Push),
        Next::Check {
            push_triggered: false
        }
    );
    assert_eq!(
        checked(&mut c, WatchMode::Push, Some(&out(TaskState::Working))),
        PLAIN_PARK
    );
    assert_eq!(registered(&mut c, WatchMode::Follow), FOLLOW_PARK);
    assert_eq!(registered(&mut c, WatchMode::Off), PLAIN_PARK);
}

#[test]
fn follow_outcomes() {
    let follow = |outcome| Some(WakeEvent::Follow { epoch: 1, outcome });
    let mut c = Cursor::default();
    assert_eq!(
        wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Changed { is_final: true })
        ),
        Next::End(EndCause::Final)
    );
    assert_eq!(
        wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Changed { is_final: false })
        ),
        FOLLOW_PARK
    );
    assert_eq!(
        wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::WindowOver)
        ),
        FOLLOW_PARK
    );
    // A failed follow waits FOLLOW_RETRY in a plain park, then follows again.
    assert_eq!(
        wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Failed)
        ),
        timed_park(FOLLOW_RETRY_SECS)
    );
    assert_eq!(
        wake(&mut c, WatchMode::Follow, Woke::TimedOut, None),
        FOLLOW_PARK
    );
    assert_eq!(
        wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Unchanged)
        ),
        timed_park(FOLLOW_RETRY_SECS)
    );
    // A reply during the retry wait turns, and the retry is forgotten.
    wake(
        &mut c,
        WatchMode::Follow,
        Woke::Rung,
        Some(WakeEvent::reply("y")),
    );
    assert_eq!(parked(&mut c, WatchMode::Follow), FOLLOW_PARK);
    // The agent is gone: ask at once (the check re-checks, then ends the stand-in).
    assert_eq!(
        wake(
            &mut c,
            WatchMode::Follow,
            Woke::Rung,
            follow(FollowOutcome::Gone)
        ),
        Next::Check {
            push_triggered: false
        }
    );
}

#[test]
fn a_killed_follow_times_out_and_is_followed_again() {
    let mut c = Cursor::default();
    assert_eq!(
        wake(&mut c, WatchMode::Follow, Woke::TimedOut, None),
        FOLLOW_PARK
    );
}

#[test]
fn a_failed_follow_task_waits_the_retry_before_following_again() {
    let mut c = Cursor::default();
    assert_eq!(
        wake(&mut c, WatchMode::Follow, Woke::Failed, None),
        timed_park(FOLLOW_RETRY_SECS)
    );
    assert_eq!(
        wake(&mut c, WatchMode::Follow, Woke::TimedOut, None),
        FOLLOW_PARK
    );
    assert_eq!(wake(&mut c, WatchMode::Off, Woke::Failed, None), PLAIN_PARK);
}

#[test]
fn a_ring_with_nothing_pending_parks_as_before() {
    let mut c = Cursor::default();
    assert_eq!(wake(&mut c, WatchMode::Off, Woke::Rung, None), PLAIN_PARK);
    wake(
        &mut c,
        WatchMode::Push,
        Woke::Rung,
        push(TaskState::Working),
    );
    checked(
        &mut c,
        WatchMode::Push,
        Some(&out(TaskState::InputRequired)),
    );
    assert_eq!(
        wake(&mut c, WatchMode::Push, Woke::Rung, None),
        timed_park(1)
    );
}

#[test]
fn a_stale_push_for_a_non_push_watch_is_ignored() {
    let mut c = Cursor::default();
    assert_eq!(
        wake(
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
        turned(&mut c, &out(TaskState::Completed), None),
        Next::End(EndCause::Final)
    );
    assert_eq!(
        turned(&mut c, &out(TaskState::InputRequired), None),
        Next::Register
    );
    assert_eq!(
        turned(&mut c, &out(TaskState::Working), Some(WatchMode::Follow)),
        FOLLOW_PARK
    );
    // An agent's "awaiting the next message" reads as COMPLETED (the remote crate's map).
    let awaiting = remote_out("r", TaskState::Completed, "");
    assert_eq!(
        turned(&mut c, &awaiting, Some(WatchMode::Push)),
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
    c.parks = 7;
    let successor = c.rolled();
    assert_eq!(successor.cycles, 0);
    assert_eq!(
        (successor.recheck, successor.follow_retry),
        (c.recheck, true)
    );
    assert_eq!(successor.parks, 7, "park numbers carry across the roll");
}

#[test]
fn next_steps_serialise_for_the_state_machine() {
    // The park's number and its (always finite) timeout are what the state machine
    // reads as $.next.park and $.next.timeout_secs, a follow park's too (an hour, or
    // less before the deadline); one decided before follow parks had their own timeout
    // reads as the hour it had.
    let follow = serde_json::json!({"step": "follow", "park": 4, "timeout_secs": 3600});
    let older = serde_json::json!({"step": "follow", "park": 4});
    assert_eq!(
        serde_json::from_value::<Next>(older).expect("decodes"),
        Next::Follow {
            park: 4,
            timeout_secs: FOLLOW_PARK_SECS
        }
    );
    let park = serde_json::json!({"step": "park", "timeout_secs": 2, "park": 5});
    for (wire, next) in [
        (
            follow,
            Next::Follow {
                park: 4,
                timeout_secs: FOLLOW_PARK_SECS,
            },
        ),
        (
            park,
            Next::Park {
                park: 5,
                timeout_secs: 2,
            },
        ),
    ] {
        assert_eq!(serde_json::to_value(&next).expect("json"), wire);
        assert_eq!(serde_json::from_value::<Next>(wire).expect("decodes"), next);
    }
    let json = serde_json::to_value(Next::End(EndCause::Final)).expect("json");
    assert_eq!(json, serde_json::json!({"step": "end", "cause": "final"}));
}

// Every park has a finite timeout, and the idle ones re-check.

#[test]
fn an_idle_push_park_that_times_out_checks_for_itself() {
    let mut c = Cursor::default();
    assert_eq!(parked(&mut c, WatchMode::Push), PLAIN_PARK);
    assert_eq!(
        wake(&mut c, WatchMode::Push, Woke::TimedOut, None),
        Next::Check {
            push_triggered: false
        },
        "a lost push is heard within the idle re-check"
    );
    assert_eq!(c.recheck, None, "no claim to recheck against");
    assert_eq!(
        checked(&mut c, WatchMode::Push, Some(&out(TaskState::Working))),
        timed_park(2 * BACKSTOP_FIRST_SECS),
        "and parks idle again, twice as long: nothing was new"
    );
}

/// An off park that times out asks the agent (it hears nothing else), then parks again
/// under a newer number (a park whose invoke never ran is replaced this way too).
#[test]
fn an_idle_off_park_that_times_out_checks_then_parks_under_a_new_number() {
    let pacing = Pacing {
        idle_recheck_secs: 120,
        ..PACING
    };
    let mut c = Cursor::default();
    let first = park_for(&mut c, WatchMode::Off, pacing);
    let timer = after_wake(
        &mut c,
        "agent",
        WatchMode::Off,
        Woke::TimedOut,
        None,
        pacing,
    );
    assert_eq!(
        timer,
        Next::Check {
            push_triggered: false
        }
    );
    let again = after_check(
        &mut c,
        WatchMode::Off,
        Some(&out(TaskState::Working)),
        false,
        pacing,
    );
    assert_eq!(
        (first, again),
        (
            Next::Park {
                park: 1,
                timeout_secs: BACKSTOP_FIRST_SECS,
            },
            Next::Park {
                park: 2,
                timeout_secs: 2 * BACKSTOP_FIRST_SECS,
            }
        ),
        "the backstop's first wait, then twice it under a newer number than the park that timed out"
    );
}

#[test]
fn a_follow_park_times_out_after_an_hour_of_windows() {
    assert_eq!(FOLLOW_PARK_SECS, 3600);
    const { assert!(FOLLOW_PARK_SECS >= 6 * FOLLOW_WINDOW_SECS) };
    let mut c = Cursor::default();
    // The idle pacing does not touch a follow park's own timeout.
    let next = park_for(
        &mut c,
        WatchMode::Follow,
        Pacing {
            idle_recheck_secs: 5,
            ..PACING
        },
    );
    assert_eq!(
        next,
        Next::Follow {
            park: 1,
            timeout_secs: FOLLOW_PARK_SECS,
        }
    );
}

#[test]
fn every_park_has_a_finite_timeout_even_with_a_zero_pacing() {
    let pacing = Pacing {
        idle_recheck_secs: 0,
        ..PACING
    };
    let mut c = Cursor::default();
    let mut parks = Vec::new();
    for mode in [
        WatchMode::Push,
        WatchMode::Follow,
        WatchMode::Poll,
        WatchMode::Off,
    ] {
        parks.push(park_for(&mut c, mode, pacing));
        for woke in [Woke::Rung, Woke::TimedOut, Woke::Failed] {
            parks.push(after_wake(&mut c, "agent", mode, woke, None, pacing));
        }
        for outcome in [
            FollowOutcome::Unchanged,
            FollowOutcome::WindowOver,
            FollowOutcome::Failed,
            FollowOutcome::Gone,
        ] {
            parks.push(after_wake(
                &mut c,
                "agent",
                mode,
                Woke::Rung,
                Some(WakeEvent::Follow { epoch: 1, outcome }),
                pacing,
            ));
        }
        parks.push(after_register(&mut c, mode, pacing));
        parks.push(after_check(&mut c, mode, None, false, pacing));
    }
    let mut seen = 0;
    for next in parks {
        if let Next::Park { timeout_secs, .. } = next {
            seen += 1;
            assert!(
                (1..=FOLLOW_PARK_SECS.max(IDLE_RECHECK_SECS)).contains(&timeout_secs),
                "{next:?}"
            );
        }
    }
    assert!(seen > 10, "the sweep decided parks ({seen})");
}

#[test]
fn park_numbers_strictly_increase_and_carry_across_a_roll() {
    let mut c = Cursor::default();
    let mut numbers = Vec::new();
    let mut take = |next: Next| {
        if let Next::Park { park, .. } | Next::Follow { park, .. } = next {
            numbers.push(park);
        }
    };
    take(after_register(&mut c, WatchMode::Follow, PACING));
    take(after_wake(
        &mut c,
        "agent",
        WatchMode::Follow,
        Woke::Failed,
        None,
        PACING,
    ));
    take(after_wake(
        &mut c,
        "agent",
        WatchMode::Follow,
        Woke::TimedOut,
        None,
        PACING,
    ));
    let mut rolled = c.rolled();
    take(park_for(&mut rolled, WatchMode::Follow, PACING));
    take(after_wake(
        &mut rolled,
        "agent",
        WatchMode::Follow,
        Woke::Rung,
        None,
        PACING,
    ));
    assert_eq!(numbers, [1, 2, 3, 4, 5]);
}

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
