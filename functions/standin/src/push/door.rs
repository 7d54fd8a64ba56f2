//! The door's hearing: once a push passed its checks, claim a hearing of it on the row (in
//! the one conditional write that checks the token's digest) and hand it to the hearer,
//! waiting a bounded time. A push heard there is answered with its note sent; any other
//! rings the park as before there was a hearer, so nothing depends on it: a hearing that
//! cannot be claimed (not parked, an event waiting, another under way), passes, fails or
//! outlasts the wait ends in the ring. The door tells the receiver whether its claim found
//! the push the stand-in's: only a claim that met another transaction on the row did not.

use std::time::Duration;

use tracing::info;

use super::hearer::{HearRequest, Heard, Hearer};
use super::token::truncate_for_log;
use crate::row::{Guard, HearingClaim, RowStore, StoreError, WakeEvent};
use standin_wire::TaskState;

/// What came of a push at the door.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Door {
    /// Its hearing told the change: answered with the note sent.
    Told,
    /// Record this event and ring the park.
    Ring {
        event: WakeEvent,
        /// The claim's write found the push the stand-in's. A ring refused after that met
        /// a row that moved on since (often through this push's own hearing, when the
        /// hearer outlasted the wait): the push was still accepted.
        admitted: bool,
        /// Why the door rings rather than tells: the receiver logs it once the ring is
        /// made ("...; the park is rung"), how often the hearer does not keep up.
        why: &'static str,
    },
}

/// How long the door waits for its hearer before it rings instead. The hearing asks the
/// agent that pushed: one that answers GetTask only once its push is answered would wait
/// on itself, and an agent's pushes wait on their answers. It also bounds how long a push
/// holds a push function: at the push stage's rate of 50 a second, a second's wait needs
/// its burst of 50 reserved (`PushConcurrency`), which is the default.
pub const HEARING_WAIT: Duration = Duration::from_secs(1);

/// How long a claimed hearing keeps other pushes' hearings off the row: about a hearer's
/// longest run (its function's timeout). A push that meets a running lease rings instead;
/// a new park ends the lease. It spares the agent a second GetTask meanwhile; that two
/// hearings never both commit is the commit's own condition (the hearing's id it removes).
pub const HEARING_LEASE: Duration = Duration::from_secs(60);

/// Claims a hearing and waits for it: told, or the event to ring the park with, and why.
/// `Refused`/`NotFound` when the push's guard fails (nothing was written).
pub async fn hear_first<S: RowStore, H: Hearer>(
    store: &S,
    hearer: &H,
    task_id: &str,
    guard: &Guard,
    claimed: Option<TaskState>,
) -> Result<Door, StoreError> {
    let ring = |event, admitted, why| Door::Ring {
        event,
        admitted,
        why,
    };
    let pushed = WakeEvent::Push { claimed };
    let hearing = super::token::unguessable_id();
    let now = crate::clock::now_ms();
    let until = now.saturating_add(HEARING_LEASE.as_millis() as u64);
    let row = match store
        .claim_hearing(task_id, guard, &hearing, now, until)
        .await?
    {
        HearingClaim::Claimed(row) => *row,
        HearingClaim::Busy => {
            let why = "no hearing could be claimed (not parked, an event waiting, or a hearing under way)";
            return Ok(ring(pushed, true, why));
        }
        HearingClaim::Contended => {
            let why = "the hearing's claim met another write to the row";
            return Ok(ring(pushed, false, why));
        }
    };
    let request = HearRequest {
        row,
        hearing,
        claimed,
    };
    match tokio::time::timeout(HEARING_WAIT, hearer.hear(&request)).await {
        Ok(Ok(Heard::Told | Heard::Unchanged)) => Ok(Door::Told),
        Ok(Ok(Heard::Passed)) => Ok(ring(pushed, true, "the hearing told nothing")),
        Ok(Ok(Heard::Disagreed)) => Ok(ring(
            WakeEvent::Asked { claimed },
            true,
            "the agent's answer disagreed with the push",
        )),
        Ok(Err(err)) => {
            info!(task_id = %truncate_for_log(task_id), error = %err, "the hearer failed");
            Ok(ring(pushed, true, "the hearer failed"))
        }
        Err(_) => Ok(ring(pushed, true, "the hearer outlasted the door's wait")),
    }
}
