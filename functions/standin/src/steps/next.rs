//! What comes after each step of the state machine: pure decisions over the execution's
//! cursor, so Step Functions only routes on `next`.

use serde::{Deserialize, Serialize};

use crate::doorbell::EndCause;
use crate::row::{FollowOutcome, WakeEvent, WatchMode};
use crate::state::RemoteOut;
use standin_wire::TaskState;

/// Waits between push-triggered fetches that disagree with the claimed state: an agent
/// may push a change before its GetTask shows it.
pub const PUSH_RECHECKS_SECS: [u64; 3] = [1, 2, 4];
/// Pause before a new follow after one failed.
pub const FOLLOW_RETRY_SECS: u64 = 5;
/// Longest one follower holds a stream before it hands the park to the next.
pub const FOLLOW_WINDOW_SECS: u64 = 600;
/// A follow park's own timeout: an hour, handed from follower to follower meanwhile
/// with no state transition (its heartbeat timeout catches a follower that died much
/// sooner). Its end re-parks the stand-in, as a window's report once did every 10 min.
pub const FOLLOW_PARK_SECS: u64 = 3600;
/// The default for the longest a push or off park waits with nothing heard before the
/// stand-in re-checks (GetTask) and parks again. Each re-check costs a handful of state
/// transitions, so an hour keeps a long idle stand-in near free (docs/performance.md).
pub const IDLE_RECHECK_SECS: u64 = 3600;

/// The first idle re-check, and the first again after anything moved the task; each that
/// finds nothing new doubles the wait up to `idle_recheck_secs`. A task whose last push is
/// lost is heard within a minute; a long idle one soon re-checks as seldom as before.
pub const BACKSTOP_FIRST_SECS: u64 = 30;

/// The first wait of a poll, and the wait after a poll that heard a change.
pub const POLL_FIRST_SECS: u64 = crate::agents::POLL_FIRST_INTERVAL.as_secs();
/// The longest wait between polls, when the agent does not set `poll_max_interval`.
pub const POLL_MAX_SECS: u64 = crate::agents::DEFAULT_POLL_MAX_INTERVAL.as_secs();

/// The longest a stand-in lives when nothing shorter is asked: a week (the stack's
/// `MaxStandInSecs`, which is also the most a start or an agent entry may ask).
pub const MAX_STANDIN_SECS: u64 = 7 * 24 * 3600;

/// How long an agent may stay unreachable (or refuse fresh credentials) before its
/// stand-in ends failed, when its entry does not set `max_unreachable`.
pub const MAX_UNREACHABLE_SECS: u64 = crate::agents::DEFAULT_MAX_UNREACHABLE.as_secs();

/// The timings the decisions need that a deployment (or the stand-in's agent) may set,
/// and the moment the step decides at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// How long a push or off park waits before re-checking (`IDLE_RECHECK_SECS`).
    pub idle_recheck_secs: u64,
    /// The longest wait between two polls (the agent's `poll_max_interval`).
    pub poll_max_secs: u64,
    /// How long the stand-in lives, counted from its first turn (the start's
    /// `deadline_secs`, its agent's `max_duration`, or the stack's `MaxStandInSecs`).
    pub deadline_secs: u64,
    /// How long its agent may stay unreachable (the agent's `max_unreachable`).
    pub max_unreachable_secs: u64,
    /// Now, in seconds since the epoch.
    pub now_secs: u64,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            idle_recheck_secs: IDLE_RECHECK_SECS,
            poll_max_secs: POLL_MAX_SECS,
            deadline_secs: MAX_STANDIN_SECS,
            max_unreachable_secs: MAX_UNREACHABLE_SECS,
            now_secs: 0,
        }
    }
}

impl Pacing {
    /// The pacing of a stand-in on an agent whose `poll_max_interval` is `poll_max`.
    pub fn with_poll_max(self, poll_max: std::time::Duration) -> Self {
        Self {
            poll_max_secs: poll_max.as_secs().max(POLL_FIRST_SECS),
            ..self
        }
    }
}

/// Where the push-triggered recheck sequence stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recheck {
    pub claimed: Option<TaskState>,
    /// Waits already scheduled (0 ..= 3).
    pub waits: u8,
}

/// The execution's own state between steps (carried across a roll, except `cycles`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cursor {
    pub cycles: u32,
    pub recheck: Option<Recheck>,
    pub follow_retry: bool,
    /// The number of the newest park this stand-in decided on (across rolls): each park
    /// stores its token only if its number is the newest the row has seen.
    pub parks: u64,
    /// A polled stand-in's next wait, in seconds (0: none yet, so `POLL_FIRST_SECS`):
    /// doubled after each poll that heard nothing, reset after a change and after a turn.
    #[serde(skip_serializing_if = "is_zero")]
    pub poll_wait: u64,
    /// A push or off stand-in's next idle re-check, in seconds (0: `BACKSTOP_FIRST_SECS`),
    /// doubled and reset likewise.
    #[serde(skip_serializing_if = "is_zero")]
    pub idle_wait: u64,
    /// Checks in a row that found the remote task unknown to the agent (an agent that
    /// restarted with an in-memory store forgets its tasks).
    #[serde(skip_serializing_if = "is_zero")]
    pub gone_checks: u32,
    /// A reply the agent refused while the task looked unmoved: why it was refused. The
    /// rechecks (1 s, 2 s, 4 s) look whether the agent took it after all (an SDK may
    /// refuse the stream and still run the turn); unmoved after them, the stand-in ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unconfirmed_reply: Option<String>,
    /// When the stand-in ends whatever the agent does (seconds since the epoch): set at
    /// its first turn, carried across rolls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<u64>,
    /// Since when every attempt to reach the agent has failed (seconds since the epoch):
    /// none once one succeeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable_since: Option<u64>,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// The cause an unreachable end names when following failed (the follow function's log
/// has the agent's own answer).
pub const FOLLOW_FAILED: &str = "following the task failed (the follow function's log says why)";

/// Checks in a row that must find the remote task gone (the first, then after 1 s and
/// 2 s) before the stand-in ends: an agent's replicas may disagree for a moment, an agent
/// that forgot the task never remembers it.
pub const GONE_CHECKS: u32 = 3;
/// The reason the parent hears when the agent no longer knows the task.
pub const GONE_REASON: &str = "the agent no longer knows the task";

/// After a refused reply whose task looked unmoved: recheck before judging it.
pub fn after_refused_reply(
    cursor: &mut Cursor,
    why: String,
    mode: WatchMode,
    pacing: Pacing,
) -> Next {
    cursor.unconfirmed_reply = Some(why);
    recheck(cursor, 1, mode, pacing)
}

/// Rechecks (with no claim to judge) after wait number `waits`.
fn recheck(cursor: &mut Cursor, waits: u8, mode: WatchMode, pacing: Pacing) -> Next {
    cursor.recheck = Some(Recheck {
        claimed: None,
        waits,
    });
    park_for(cursor, mode, pacing)
}

/// A refused reply's recheck: a task that moved took it; one still unmoved is rechecked
/// until the sequence is spent, and then the stand-in ends. None when there is no such
/// reply, or it was taken.
fn judge_reply(
    cursor: &mut Cursor,
    changed: bool,
    mode: WatchMode,
    pacing: Pacing,
) -> Option<Next> {
    let why = cursor.unconfirmed_reply.take()?;
    if changed {
        cursor.recheck = None;
        return None;
    }
    let waits = cursor.recheck.map_or(0, |r| r.waits);
    if usize::from(waits) < PUSH_RECHECKS_SECS.len() {
        cursor.unconfirmed_reply = Some(why);
        return Some(recheck(cursor, waits + 1, mode, pacing));
    }
    cursor.recheck = None;
    Some(Next::End(EndCause::failed(&format!(
        "the agent did not take the reply ({why})"
    ))))
}

/// After a check found the remote task unknown: re-check, or end failed at `GONE_CHECKS`.
pub fn after_gone(cursor: &mut Cursor, mode: WatchMode, pacing: Pacing) -> Next {
    cursor.gone_checks += 1;
    if cursor.gone_checks >= GONE_CHECKS {
        cursor.recheck = None;
        return Next::End(EndCause::failed(GONE_REASON));
    }
    let waits = u8::try_from(cursor.gone_checks).unwrap_or(u8::MAX);
    recheck(cursor, waits, mode, pacing)
}

impl Cursor {
    fn poll_park_secs(&self, pacing: Pacing) -> u64 {
        match self.poll_wait {
            0 => POLL_FIRST_SECS,
            wait => wait,
        }
        .min(pacing.poll_max_secs)
    }

    fn idle_park_secs(&self, pacing: Pacing) -> u64 {
        match self.idle_wait {
            0 => BACKSTOP_FIRST_SECS,
            wait => wait,
        }
        .min(pacing.idle_recheck_secs)
        .max(1)
    }

    /// An idle park ran its time with nothing heard: the next one waits twice as long
    /// (at most `idle_recheck_secs`).
    fn idle_park_over(&mut self, pacing: Pacing) {
        self.idle_wait = (self.idle_park_secs(pacing) * 2).min(pacing.idle_recheck_secs.max(1));
    }

    /// After a poll: back to the first wait if it heard a change, else twice the wait
    /// (at most `poll_max_secs`).
    fn after_poll(&mut self, changed: bool, pacing: Pacing) {
        self.poll_wait = if changed {
            POLL_FIRST_SECS
        } else {
            (self.poll_park_secs(pacing) * 2).min(pacing.poll_max_secs)
        };
    }

    /// Seconds left before the deadline (at least one), starting its clock the first
    /// time; none once it has passed.
    fn time_left(&mut self, pacing: Pacing) -> Option<u64> {
        let deadline = *self
            .deadline_at
            .get_or_insert(pacing.now_secs.saturating_add(pacing.deadline_secs));
        deadline
            .checked_sub(pacing.now_secs)
            .filter(|left| *left > 0)
    }

    /// The agent answered: whatever failed before is over.
    pub fn reached(&mut self) {
        self.unreachable_since = None;
    }

    /// The successor's cursor: a fresh cycle count, the same pending timers.
    pub fn rolled(&self) -> Self {
        Self {
            cycles: 0,
            ..self.clone()
        }
    }
}

/// An attempt to reach the agent failed (`cause`): the stand-in goes on until the agent
/// has been unreachable for `pacing.max_unreachable_secs`, and then ends failed, naming
/// `agent` and the cause.
pub fn unreachable(cursor: &mut Cursor, agent: &str, cause: &str, pacing: Pacing) -> Option<Next> {
    let since = *cursor.unreachable_since.get_or_insert(pacing.now_secs);
    let down = pacing.now_secs.saturating_sub(since);
    if down < pacing.max_unreachable_secs {
        return None;
    }
    cursor.unreachable_since = None;
    cursor.recheck = None;
    Some(Next::End(EndCause::failed(&format!(
        "agent {agent:?} has been unreachable for {down} s (its max_unreachable is {} s): {cause}",
        pacing.max_unreachable_secs
    ))))
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

/// What comes next, as a step returns it to the state machine (`$.next`), which routes on
/// `step` alone (see `Route` in `statemachine/stand_in.asl.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "step")]
pub enum Next {
    End(EndCause),
    Turn {
        reply: String,
        /// What the parent gave beside the reply's text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        parts: Vec<standin_wire::InputPart>,
    },
    /// Choose the watch once (after the first turn that leaves the task open).
    Register,
    /// Ask the agent where the task stands (GetTask) and apply; one attempt when a push
    /// triggered it (the rechecks retry). Done inside the wake or registration that
    /// decided it, so never routed and never written to the execution's state.
    #[serde(skip)]
    Check {
        push_triggered: bool,
    },
    /// Park number `park` with the park function until rung, or until `timeout_secs`
    /// pass with no ring (a recheck wait, a follow retry, the idle re-check).
    Park {
        park: u64,
        timeout_secs: u64,
    },
    /// Park number `park` with the follow function, which holds SubscribeToTask open for
    /// a window; the park ends after `timeout_secs` (`FOLLOW_PARK_SECS`, or less when
    /// the deadline comes first).
    Follow {
        park: u64,
        #[serde(default = "follow_park_secs")]
        timeout_secs: u64,
    },
    /// Past the history bound: start the successor and succeed.
    Roll,
}

fn follow_park_secs() -> u64 {
    FOLLOW_PARK_SECS
}

pub(crate) const CHECK: Next = Next::Check {
    push_triggered: false,
};
pub(crate) const PUSH_CHECK: Next = Next::Check {
    push_triggered: true,
};

/// The next park that fits the cursor, numbered: a recheck wait, a follow retry, a
/// follow, or an idle park that re-checks after `pacing.idle_recheck_secs`.
pub fn park_for(cursor: &mut Cursor, mode: WatchMode, pacing: Pacing) -> Next {
    let Some(deadline_left) = cursor.time_left(pacing) else {
        return past_deadline(cursor);
    };
    // An agent found unreachable is asked again by the time it would have been so for
    // its `max_unreachable`, so that two failures an idle re-check apart do not end it.
    let left = match cursor.unreachable_since {
        Some(since) => (since + pacing.max_unreachable_secs)
            .saturating_sub(pacing.now_secs)
            .clamp(1, deadline_left),
        None => deadline_left,
    };
    cursor.parks += 1;
    let park = cursor.parks;
    let timeout_secs = if let Some(r) = cursor.recheck.filter(|r| r.waits > 0) {
        PUSH_RECHECKS_SECS[usize::from(r.waits - 1).min(PUSH_RECHECKS_SECS.len() - 1)]
    } else if cursor.follow_retry {
        FOLLOW_RETRY_SECS
    } else if mode == WatchMode::Follow && deadline_left > FOLLOW_LEAST_SECS {
        return Next::Follow {
            park,
            timeout_secs: FOLLOW_PARK_SECS.min(deadline_left),
        };
    } else if mode == WatchMode::Follow {
        // Close to the deadline a follow would end within its own heartbeat: a plain
        // park waits out the rest.
        return Next::Park {
            park,
            timeout_secs: deadline_left,
        };
    } else if mode == WatchMode::Poll {
        cursor.poll_park_secs(pacing)
    } else {
        cursor.idle_park_secs(pacing)
    };
    Next::Park {
        park,
        timeout_secs: timeout_secs.min(left),
    }
}

/// The shortest follow park: the Follow state's heartbeat (30 s) and a minute.
pub const FOLLOW_LEAST_SECS: u64 = 90;

/// The end at the deadline: the remote task is cancelled, and the parent told why.
fn past_deadline(cursor: &mut Cursor) -> Next {
    cursor.recheck = None;
    let at = crate::clock::rfc3339(cursor.deadline_at.unwrap_or_default(), 0);
    Next::End(EndCause::Deadline {
        reason: format!("the stand-in reached its deadline ({at}); the remote task is cancelled"),
    })
}

/// The number of the park a wake ends, from the decision that led to it.
pub fn park_number(next: Option<&Next>) -> Option<u64> {
    match next {
        Some(Next::Park { park, .. } | Next::Follow { park, .. }) => Some(*park),
        _ => None,
    }
}

/// Before draining: past the bound the stand-in rolls and leaves every pending event on
/// the row for its successor's first park.
pub fn count_cycle(cursor: &mut Cursor, history_bound: u32) -> bool {
    let rolls = would_roll(cursor, history_bound);
    cursor.cycles += 1;
    rolls
}

/// Whether the next wake's count takes the stand-in past the bound.
pub fn would_roll(cursor: &Cursor, history_bound: u32) -> bool {
    cursor.cycles.saturating_add(1) > history_bound
}

/// After a wake, given the event the drain took (if any). A reply that comes past the
/// deadline is not sent: the stand-in ends instead.
pub fn after_wake(
    cursor: &mut Cursor,
    agent: &str,
    mode: WatchMode,
    woke: Woke,
    event: Option<WakeEvent>,
    pacing: Pacing,
) -> Next {
    match event {
        Some(WakeEvent::Cancel { reason }) => {
            cursor.recheck = None;
            Next::End(EndCause::Cancelled { reason })
        }
        Some(WakeEvent::Reply { .. }) if cursor.time_left(pacing).is_none() => {
            past_deadline(cursor)
        }
        Some(WakeEvent::Reply { text, parts, .. }) => {
            cursor.recheck = None;
            cursor.unconfirmed_reply = None;
            cursor.follow_retry = false;
            Next::Turn { reply: text, parts }
        }
        Some(WakeEvent::Push { claimed }) if mode == WatchMode::Push => {
            // A new push restarts the recheck sequence.
            cursor.recheck = Some(Recheck { claimed, waits: 0 });
            PUSH_CHECK
        }
        // Its hearing asked already and the agent disagreed with the claim: the rechecks
        // start at their first wait, as after a check that disagreed.
        Some(WakeEvent::Asked { claimed }) if mode == WatchMode::Push => {
            cursor.reached();
            cursor.recheck = Some(Recheck { claimed, waits: 1 });
            park_for(cursor, mode, pacing)
        }
        // A push recorded before the watch changed (cannot pass the guard now): ignore.
        Some(WakeEvent::Push { .. } | WakeEvent::Asked { .. }) => park_for(cursor, mode, pacing),
        Some(WakeEvent::Follow { epoch, outcome }) => match outcome {
            FollowOutcome::Changed { is_final: true } => Next::End(EndCause::Final),
            // A push's hearer told a change in the park just woken: what a check that
            // found it would do. A report of an earlier park (a reply was taken before
            // it) says nothing of a reply or a claim since.
            FollowOutcome::Changed { is_final: false }
                if mode == WatchMode::Push && epoch == cursor.parks =>
            {
                cursor.reached();
                cursor.recheck = None;
                cursor.unconfirmed_reply = None;
                cursor.idle_wait = 0;
                cursor.gone_checks = 0;
                park_for(cursor, mode, pacing)
            }
            FollowOutcome::Changed { is_final: false } | FollowOutcome::WindowOver => {
                cursor.reached();
                park_for(cursor, mode, pacing)
            }
            FollowOutcome::Unchanged => {
                cursor.reached();
                cursor.follow_retry = true;
                park_for(cursor, mode, pacing)
            }
            FollowOutcome::Failed => {
                if let Some(end) = unreachable(cursor, agent, FOLLOW_FAILED, pacing) {
                    return end;
                }
                cursor.follow_retry = true;
                park_for(cursor, mode, pacing)
            }
            // The follow function changed the watch on the row (to poll, or off when the
            // agent no longer knows the task): ask at once; a task that is gone is
            // re-checked and ends the stand-in, one the agent knows is polled.
            FollowOutcome::Gone => CHECK,
        },
        None => match woke {
            Woke::TimedOut if cursor.recheck.is_some_and(|r| r.waits > 0) => PUSH_CHECK,
            Woke::TimedOut if cursor.follow_retry => {
                // A follow retry has waited its time: follow again.
                cursor.follow_retry = false;
                park_for(cursor, mode, pacing)
            }
            // An idle push park ran its time with nothing heard: a push may have been lost
            // (senders do not retry), so look for ourselves. So does an off park (an off
            // stand-in hears nothing else, so a task that ended or was forgotten would
            // hold it for ever).
            Woke::TimedOut if matches!(mode, WatchMode::Push | WatchMode::Off) => {
                cursor.idle_park_over(pacing);
                CHECK
            }
            Woke::TimedOut if mode == WatchMode::Poll => CHECK,
            // A follow that stopped heartbeating (crashed) is simply followed again; rung
            // with nothing pending, an earlier drain took it: park as before.
            Woke::TimedOut | Woke::Rung => park_for(cursor, mode, pacing),
            // The follow function failed outright: wait FOLLOW_RETRY, then follow again.
            Woke::Failed => {
                cursor.follow_retry = mode == WatchMode::Follow;
                park_for(cursor, mode, pacing)
            }
        },
    }
}

/// After a check: `fetched` is `None` when GetTask failed (fail closed: the row keeps its
/// last state, and a disagreeing push still gets its rechecks); `changed` says whether
/// it told the parent something new (a poll's next wait depends on it).
pub fn after_check(
    cursor: &mut Cursor,
    mode: WatchMode,
    fetched: Option<&RemoteOut>,
    changed: bool,
    pacing: Pacing,
) -> Next {
    if fetched.is_some_and(|out| out.is_final) {
        cursor.recheck = None;
        cursor.unconfirmed_reply = None;
        return Next::End(EndCause::Final);
    }
    if let Some(next) = judge_reply(cursor, changed, mode, pacing) {
        return next;
    }
    match mode {
        WatchMode::Poll => cursor.after_poll(changed, pacing),
        // The task moved: the backstop starts again from its first wait.
        WatchMode::Push | WatchMode::Off if changed => cursor.idle_wait = 0,
        _ => {}
    }
    if let Some(r) = cursor.recheck.as_mut() {
        let agrees = matches!((r.claimed, fetched), (Some(c), Some(out)) if c == out.state);
        let left = usize::from(r.waits) < PUSH_RECHECKS_SECS.len();
        if r.claimed.is_some() && !agrees && left {
            r.waits += 1;
            return park_for(cursor, mode, pacing);
        }
        cursor.recheck = None;
    }
    park_for(cursor, mode, pacing)
}

/// After a turn: end when final, choose the watch the first time, else park.
pub fn after_turn(
    cursor: &mut Cursor,
    out: &RemoteOut,
    watch: Option<WatchMode>,
    pacing: Pacing,
) -> Next {
    if out.is_final {
        return Next::End(EndCause::Final);
    }
    cursor.reached();
    match watch {
        None => {
            // The deadline counts from the first turn.
            cursor.time_left(pacing);
            Next::Register
        }
        Some(mode) => {
            // A turn moves the task: poll, or re-check, soon again.
            cursor.poll_wait = 0;
            cursor.idle_wait = 0;
            park_for(cursor, mode, pacing)
        }
    }
}

/// After registration: push reconciles once with GetTask (a change may have happened
/// before the config existed); follow and off park.
pub fn after_register(cursor: &mut Cursor, mode: WatchMode, pacing: Pacing) -> Next {
    match mode {
        WatchMode::Push => CHECK,
        _ => park_for(cursor, mode, pacing),
    }
}
