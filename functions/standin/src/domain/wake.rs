//! What comes after each step of the state machine: pure decisions over the execution's
//! cursor, so Step Functions only routes on `next`.

use serde::{Deserialize, Serialize};

use super::doorbell::EndCause;
use super::remote::RemoteOut;
use super::row::{FollowOutcome, WakeEvent, WatchMode};
use crate::a2a::TaskState;

/// Waits between push-triggered fetches that disagree with the claimed state (seed R2.9).
pub const PUSH_RECHECKS_SECS: [u64; 3] = [1, 2, 4];
/// Pause before a new follow after one failed.
pub const FOLLOW_RETRY_SECS: u64 = 5;
/// Longest a follow holds SubscribeToTask open before handing back.
pub const FOLLOW_WINDOW_SECS: u64 = 600;

/// Where the push-triggered recheck sequence stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recheck {
    pub claimed: Option<TaskState>,
    /// Waits already scheduled (0 ..= 3).
    pub waits: u8,
}

/// The execution's own state between steps (carried across a roll, except `cycles`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    #[serde(default)]
    pub cycles: u32,
    #[serde(default)]
    pub recheck: Option<Recheck>,
    #[serde(default)]
    pub follow_retry: bool,
}

impl Cursor {
    /// The successor's cursor: a fresh cycle count, the same pending timers.
    pub fn rolled(&self) -> Self {
        Self {
            cycles: 0,
            ..self.clone()
        }
    }
}

/// How the park ended: rung, its timeout (States.Timeout or States.HeartbeatTimeout), or
/// the park task itself failed (a follow function that errored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Woke {
    Rung,
    TimedOut,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "step")]
pub enum Next {
    End(EndCause),
    Turn {
        reply: String,
    },
    /// Choose the watch once (after the first turn that leaves the task open).
    Register,
    /// GetTask and apply; one attempt when a push triggered it (the rechecks retry).
    Fetch {
        push_triggered: bool,
    },
    /// Park: the follow function when `follow`, else the park function; `timeout_secs`
    /// ends it on time when no ring comes.
    Park {
        follow: bool,
        timeout_secs: Option<u64>,
    },
    /// Past the history bound: start the successor and succeed.
    Roll,
}

/// The park that fits the cursor: a recheck wait, a follow retry, a follow, or a plain park.
pub fn park_for(cursor: &Cursor, mode: WatchMode) -> Next {
    if let Some(r) = cursor.recheck.filter(|r| r.waits > 0) {
        let i = usize::from(r.waits - 1).min(PUSH_RECHECKS_SECS.len() - 1);
        return Next::Park {
            follow: false,
            timeout_secs: Some(PUSH_RECHECKS_SECS[i]),
        };
    }
    if cursor.follow_retry {
        return Next::Park {
            follow: false,
            timeout_secs: Some(FOLLOW_RETRY_SECS),
        };
    }
    Next::Park {
        follow: mode == WatchMode::Follow,
        timeout_secs: None,
    }
}

/// Before draining: past the bound the stand-in rolls and leaves every pending event on
/// the row for its successor's first park.
pub fn count_cycle(cursor: &mut Cursor, history_bound: u32) -> bool {
    cursor.cycles += 1;
    cursor.cycles > history_bound
}

/// After a wake, given the event the drain took (if any).
pub fn after_wake(
    cursor: &mut Cursor,
    mode: WatchMode,
    woke: Woke,
    event: Option<WakeEvent>,
) -> Next {
    match event {
        Some(WakeEvent::Cancel { reason }) => {
            cursor.recheck = None;
            Next::End(EndCause::Cancelled { reason })
        }
        Some(WakeEvent::Reply { text }) => {
            cursor.recheck = None;
            cursor.follow_retry = false;
            Next::Turn { reply: text }
        }
        Some(WakeEvent::Push { claimed }) if mode == WatchMode::Push => {
            // A new push restarts the recheck sequence.
            cursor.recheck = Some(Recheck { claimed, waits: 0 });
            Next::Fetch {
                push_triggered: true,
            }
        }
        // A push recorded before the watch changed (cannot pass the guard now): ignore.
        Some(WakeEvent::Push { .. }) => park_for(cursor, mode),
        Some(WakeEvent::Follow { outcome, .. }) => match outcome {
            FollowOutcome::Changed { is_final: true } => Next::End(EndCause::Final),
            FollowOutcome::Changed { is_final: false } | FollowOutcome::WindowOver => {
                park_for(cursor, mode)
            }
            FollowOutcome::Unchanged | FollowOutcome::Failed => {
                cursor.follow_retry = true;
                park_for(cursor, mode)
            }
            // The follow function turned the watch off on the row.
            FollowOutcome::Gone => park_for(cursor, WatchMode::Off),
        },
        None => match woke {
            Woke::TimedOut if cursor.recheck.is_some_and(|r| r.waits > 0) => Next::Fetch {
                push_triggered: true,
            },
            Woke::TimedOut => {
                // A follow retry has waited its time; a follow that stopped heartbeating
                // (crashed) is simply followed again.
                cursor.follow_retry = false;
                park_for(cursor, mode)
            }
            // Rung with nothing pending: an earlier drain took it. Park as before.
            Woke::Rung => park_for(cursor, mode),
            // The follow function failed outright: wait FOLLOW_RETRY, then follow again.
            Woke::Failed => {
                cursor.follow_retry = mode == WatchMode::Follow;
                park_for(cursor, mode)
            }
        },
    }
}

/// After a fetch: `fetched` is `None` when GetTask failed (fail closed: the row keeps its
/// last state, and a disagreeing push still gets its rechecks).
pub fn after_fetch(cursor: &mut Cursor, mode: WatchMode, fetched: Option<&RemoteOut>) -> Next {
    if fetched.is_some_and(|out| out.is_final) {
        cursor.recheck = None;
        return Next::End(EndCause::Final);
    }
    if let Some(r) = cursor.recheck.as_mut() {
        let agrees = matches!((r.claimed, fetched), (Some(c), Some(out)) if c == out.state);
        let left = usize::from(r.waits) < PUSH_RECHECKS_SECS.len();
        if r.claimed.is_some() && !agrees && left {
            r.waits += 1;
            return park_for(cursor, mode);
        }
        cursor.recheck = None;
    }
    park_for(cursor, mode)
}

/// After a turn: end when final, choose the watch the first time, else park.
pub fn after_turn(cursor: &mut Cursor, out: &RemoteOut, watch: Option<WatchMode>) -> Next {
    if out.is_final {
        return Next::End(EndCause::Final);
    }
    match watch {
        None => Next::Register,
        Some(mode) => park_for(cursor, mode),
    }
}

/// After registration: push reconciles once with GetTask (a change may have happened
/// before the config existed); follow and off park.
pub fn after_register(cursor: &mut Cursor, mode: WatchMode) -> Next {
    match mode {
        WatchMode::Push => Next::Fetch {
            push_triggered: false,
        },
        _ => park_for(cursor, mode),
    }
}
