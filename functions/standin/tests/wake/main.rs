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

mod events;
mod polls_and_deadlines;
mod timeouts;
