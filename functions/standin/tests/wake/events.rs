//! What a wake does with each event: cancel, reply, push and its rechecks, follow outcomes, turns and rolls.

use super::*;

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
            reply: "blue".into(),
            parts: Vec::new()
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
    assert_eq!(
        next,
        Next::Turn {
            reply: "x".into(),
            parts: Vec::new()
        }
    );
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

/// A push's hearer told a change in the park just woken: the wake does what a check that
/// heard it would (rechecks, an unconfirmed reply and the backstop start over). A report
/// left from an earlier park (a reply was taken before it) changes none of that.
#[test]
fn a_hearers_report_counts_as_a_check_that_heard_only_in_its_own_park() {
    let seeded = || {
        let mut c = Cursor::default();
        parked(&mut c, WatchMode::Push);
        c.recheck = Some(Recheck {
            claimed: Some(TaskState::Completed),
            waits: 1,
        });
        c.unconfirmed_reply = Some("refused".into());
        c.idle_wait = 240;
        c.gone_checks = 2;
        c
    };
    let report = |epoch| {
        Some(WakeEvent::Follow {
            epoch,
            outcome: FollowOutcome::Changed { is_final: false },
        })
    };
    let mut c = seeded();
    let own = c.parks;
    let next = wake(&mut c, WatchMode::Push, Woke::Rung, report(own));
    assert_eq!(next, PLAIN_PARK, "the backstop's first wait");
    assert_eq!(
        (
            c.recheck,
            c.unconfirmed_reply.as_deref(),
            c.idle_wait,
            c.gone_checks
        ),
        (None, None, 0, 0)
    );

    let mut c = seeded();
    let earlier = c.parks - 1;
    wake(&mut c, WatchMode::Push, Woke::Rung, report(earlier));
    assert_eq!(
        (c.unconfirmed_reply.as_deref(), c.gone_checks),
        (Some("refused"), 2),
        "an earlier park's report judges no reply"
    );
    assert!(c.recheck.is_some(), "nor ends the rechecks");
}
