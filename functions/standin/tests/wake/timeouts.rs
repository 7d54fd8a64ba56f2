//! Every park has a finite timeout, and the idle ones re-check.

use super::*;

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
