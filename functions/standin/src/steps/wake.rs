//! The wake: after a park, count the cycle, drain one event, decide.

use std::future::Future;

use super::check::{Answered, Asked, checked};
use super::next::{self, Next, Pacing, Woke};
use super::{Step, StepError, Successor, check, ensure_ours, execution_name};
use crate::doorbell::EndCause;
use crate::outbox::Teller;
use crate::row::{Drained, Row, RowStore, Rung, WatchMode};
use standin_remote::{Agent, RemoteError};

/// After a park: count the cycle (roll past the bound), end the park, drain one event,
/// decide. A row closed by a final state (a follow applied it) ends the stand-in. A push
/// heard (or an idle push park that ran its time) is checked in the same invocation, so
/// a push-heard change costs one invocation after the park; `connect` runs only then. A
/// retried wake drains the same event again (the drain is idempotent per park), so
/// nothing is lost when the check's write fails and the whole step is retried. `known`
/// is the row as the invocation read it on its way in (for the agent's entry), when it
/// did: whether the step is its stand-in's is judged on it instead of a second read.
pub async fn wake<S, A, C, F>(
    teller: &Teller<'_, S>,
    connect: C,
    step: Step,
    known: Option<&Row>,
    history_bound: u32,
    pacing: Pacing,
) -> Result<Step, StepError>
where
    S: RowStore,
    A: Agent,
    C: FnOnce() -> F,
    F: Future<Output = Result<A, RemoteError>>,
{
    let store = teller.rows();
    match known {
        Some(row) => step.refuse_if_not_ours(Some(row))?,
        None => ensure_ours(store, &step).await?,
    }
    // A push rang: the drain will decide to check, so the agent is asked while the
    // drain is written (GetTask only reads; an answer the drain makes moot is dropped).
    let ahead = known
        .filter(|row| row.mode() == WatchMode::Push)
        .and_then(|row| row.remote_task_id.clone())
        .filter(|_| step.park.as_ref().is_some_and(|p| p.woke == Woke::Rung));
    let Some(remote) = ahead else {
        let (step, drained, _) = drain(store, step, known, history_bound, pacing).await?;
        return check_if_decided(teller, connect, step, drained, pacing).await;
    };
    let asking = async {
        match connect().await {
            Ok(agent) => {
                let answer = agent.get(&remote).await;
                (Ok(agent), Some(answer))
            }
            Err(err) => (Err(err), None),
        }
    };
    let (drained, (agent, answer)) =
        tokio::join!(drain(store, step, known, history_bound, pacing), asking);
    let (step, drained, as_seen) = drained?;
    // An answer to a question asked before a push the drain took (one recorded after the
    // row was read) may not know that push's change: asked again.
    let answer = answer.filter(|_| as_seen);
    match step.next {
        Some(Next::Check { .. }) => {
            let asked = Asked::<A, fn() -> F>::Already(Box::new(Answered {
                agent,
                remote,
                answer,
            }));
            checked(teller, asked, step, drained, pacing).await
        }
        _ => Ok(step),
    }
}

/// The push that rang the park, taken as the wake's first call: one conditional write
/// that ends the park, takes the push the ring carried and returns the row, with no read
/// before it. Only for a push ring of the live generation's park that will not roll;
/// None when anything differs (the row moved since the ring: nothing was written), and
/// the wake goes as usual.
pub async fn take_rung<S: RowStore>(
    store: &S,
    step: &Step,
    history_bound: u32,
) -> Result<Option<Drained>, StepError> {
    let Some(park) = next::park_number(step.next.as_ref()) else {
        return Ok(None);
    };
    let Some(push) = step
        .park
        .as_ref()
        .filter(|p| p.woke == Woke::Rung)
        .and_then(|p| p.push.as_ref())
    else {
        return Ok(None);
    };
    // As `refuse_if_not_ours` judges a step with no execution named (the write's
    // condition checks the generation and lease).
    let own_name = step
        .execution
        .as_ref()
        .is_none_or(|e| e.name == execution_name(&step.task_id, step.generation));
    if !own_name || next::would_roll(&step.cursor, history_bound) {
        return Ok(None);
    }
    let rung = Rung {
        park,
        push,
        agent: &step.agent,
        generation: step.generation,
        lease: step.lease.as_deref(),
    };
    Ok(store.take_rung(&step.task_id, &rung).await?)
}

/// The wake after `take_rung` took the push: the check, on the row the take returned.
pub async fn wake_taken<S, A, C, F>(
    teller: &Teller<'_, S>,
    connect: C,
    mut step: Step,
    taken: Drained,
    history_bound: u32,
    pacing: Pacing,
) -> Result<Step, StepError>
where
    S: RowStore,
    A: Agent,
    C: FnOnce() -> F,
    F: Future<Output = Result<A, RemoteError>>,
{
    step.refuse_if_not_ours(Some(&taken.row))?;
    // `take_rung` took it only where the count stays within the bound.
    next::count_cycle(&mut step.cursor, history_bound);
    let (step, row, _) = decided(step, taken, Woke::Rung, pacing);
    check_if_decided(teller, connect, step, row, pacing).await
}

/// The check, when the wake decided on one (on the row the drain left).
async fn check_if_decided<S, A, C, F>(
    teller: &Teller<'_, S>,
    connect: C,
    step: Step,
    row: Option<Row>,
    pacing: Pacing,
) -> Result<Step, StepError>
where
    S: RowStore,
    A: Agent,
    C: FnOnce() -> F,
    F: Future<Output = Result<A, RemoteError>>,
{
    match step.next {
        Some(Next::Check { .. }) => check(teller, connect, step, row, pacing).await,
        _ => Ok(step),
    }
}

/// What follows the event a drain took: the step with its decision, the row the drain
/// left (none once closed: the stand-in ends), and whether the event is the one the
/// caller's row showed.
fn decided(
    mut step: Step,
    drained: Drained,
    woke: Woke,
    pacing: Pacing,
) -> (Step, Option<Row>, bool) {
    if drained.row.closed {
        return (step.then(Next::End(EndCause::Final)), None, false);
    }
    let next = next::after_wake(
        &mut step.cursor,
        &step.agent,
        drained.row.mode(),
        woke,
        drained.event,
        pacing,
    );
    (step.then(next), Some(drained.row), drained.as_seen)
}

/// The step with what follows the drain decided, the row the drain left (none after a
/// roll), and whether the event it took is the one `known` showed.
/// `known`: the row as the invocation read it on its way in (a write less while it
/// still is the row).
async fn drain<S: RowStore>(
    store: &S,
    mut step: Step,
    known: Option<&Row>,
    history_bound: u32,
    pacing: Pacing,
) -> Result<(Step, Option<Row>, bool), StepError> {
    let park = next::park_number(step.next.as_ref()).unwrap_or(step.cursor.parks);
    if next::count_cycle(&mut step.cursor, history_bound) {
        // Nothing is drained: pending events wait on the row for the successor's park.
        let row = store
            .roll(
                &step.task_id,
                park,
                step.generation + 1,
                &new_lease(),
                step.lease.as_deref(),
            )
            .await?;
        let mut input = successor(&step, row.mode(), pacing);
        input.lease = row.lease.clone();
        step.successor = Some(Successor {
            name: execution_name(&step.task_id, input.generation),
            input: Box::new(input),
        });
        return Ok((step.then(Next::Roll), None, false));
    }
    let woke = step.park.as_ref().map_or(Woke::Rung, |p| p.woke);
    let drained = match known {
        Some(row) => store.drain_from(row, park).await?,
        None => store.drain(&step.task_id, park).await?,
    };
    Ok(decided(step, drained, woke, pacing))
}

/// The successor's input after a roll: same stand-in, fresh cycle count, same timers and
/// park numbers, starting with the park its watch needs.
pub fn successor(step: &Step, mode: WatchMode, pacing: Pacing) -> Step {
    let mut cursor = step.cursor.rolled();
    let next = next::park_for(&mut cursor, mode, pacing);
    Step {
        task_id: step.task_id.clone(),
        agent: step.agent.clone(),
        message: None,
        next: Some(next),
        cursor,
        park: None,
        generation: step.generation + 1,
        successor: None,
        parent_task_token: None,
        execution: None,
        lease: None,
        deadline_secs: None,
    }
}

/// A lease no one can guess: 128 bits from the OS's generator, as hex.
fn new_lease() -> String {
    let mut bytes = [0u8; 16];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
    hex::encode(bytes)
}
