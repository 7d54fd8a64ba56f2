//! The wake: after a park, count the cycle (roll past the bound), drain one event, decide.

use super::check::{AskedAhead, check_if_decided, checked};
use super::next::{self, Next, Pacing, Woke};
use super::{Invocation, Step, StepError, Successor, ensure_ours, execution_name};
use crate::doorbell::EndCause;
use crate::row::{Drained, Row, RowStore, Rung, WatchMode};
use standin_remote::Agent;

/// After a park: with the push the ring carried already `taken` (`take_rung`), check on
/// the row the take returned; else count the cycle (roll past the bound), end the park,
/// drain one event, decide.
pub async fn wake<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    step: Step,
    taken: Option<Drained>,
    history_bound: u32,
    pacing: Pacing,
) -> Result<Step, StepError> {
    // The change a push tells is noted after the agent answers: its artifacts are read
    // meanwhile. Other wakes seldom tell anything (a follow told its change itself; a
    // reply's or a cancel's ring goes to the agent), so they read them only when they do.
    if step.park.as_ref().is_some_and(|p| p.push.is_some()) {
        invocation.teller.read_ahead();
    }
    match taken {
        Some(taken) => wake_taken(invocation, step, taken, history_bound, pacing).await,
        None => wake_draining(invocation, step, history_bound, pacing).await,
    }
}

/// A row closed by a final state (a follow applied it) ends the stand-in. A push heard (or
/// an idle push park run out) is checked in the same invocation, so its change costs one
/// invocation after the park; the agent is reached only then. A retried wake drains the
/// same event again (idempotent per park): a failed check write loses nothing on retry.
async fn wake_draining<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    step: Step,
    history_bound: u32,
    pacing: Pacing,
) -> Result<Step, StepError> {
    let (store, known) = (invocation.rows(), invocation.row.as_ref());
    ensure_ours(store, &step, known).await?;
    // A push rang: the drain will decide to check, so the agent is asked while the
    // drain is written (GetTask only reads; an answer the drain makes moot is dropped).
    // A ring with no push (a hearer's report, a reply, a cancel) asks nothing.
    let ahead = known
        .filter(|row| row.mode() == WatchMode::Push)
        .and_then(|row| row.remote_task_id.clone())
        .filter(|_| {
            step.park
                .as_ref()
                .is_some_and(|p| p.woke == Woke::Rung && p.push.as_ref().is_some_and(|p| !p.asked))
        });
    let Some(remote) = ahead else {
        let (step, drained, _) = drain(store, step, known, history_bound, pacing).await?;
        return check_if_decided(invocation, step, drained, pacing).await;
    };
    let asking = async { Some(invocation.agent().await.ok()?.get(&remote).await) };
    let (drained, answer) = tokio::join!(drain(store, step, known, history_bound, pacing), asking);
    let (step, drained, as_seen) = drained?;
    // An answer to a question asked before a push the drain took (one recorded after the
    // row was read) may not know that push's change: asked again.
    let ahead = answer
        .filter(|_| as_seen)
        .map(|answer| AskedAhead { remote, answer });
    match step.next {
        Some(Next::Check { .. }) => checked(invocation, ahead, step, drained, pacing).await,
        _ => Ok(step),
    }
}

/// The push that rang the park, taken as the wake's first call: one conditional write,
/// with no read before it, that ends the park, takes the push the ring carried and returns
/// the row. Only for a push ring of the live generation's park that will not roll; None
/// when anything differs (the row moved since the ring: nothing written): the usual wake.
pub async fn take_rung<S: RowStore>(
    store: &S,
    step: &Step,
    history_bound: u32,
) -> Result<Option<Drained>, StepError> {
    let rung = step.park.as_ref().filter(|p| p.woke == Woke::Rung);
    let (Some(park), Some(push)) = (
        next::park_number(step.next.as_ref()),
        rung.and_then(|p| p.push.as_ref()),
    ) else {
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
async fn wake_taken<S: RowStore, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    mut step: Step,
    taken: Drained,
    history_bound: u32,
    pacing: Pacing,
) -> Result<Step, StepError> {
    step.refuse_if_not_ours(Some(&taken.row))?;
    // `take_rung` took it only where the count stays within the bound.
    next::count_cycle(&mut step.cursor, history_bound);
    let (step, row, _) = decided(step, taken, Woke::Rung, pacing);
    check_if_decided(invocation, step, row, pacing).await
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

/// The step with what the drain decided, the row it left (none after a roll), and whether
/// it took the event `known` showed. `known`: the row as the invocation read it on its way
/// in (a write less while it still is the row).
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
                &crate::push::token::unguessable_id(),
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
    let drained = store.drain(&step.task_id, known, park).await?;
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
        next: Some(next),
        cursor,
        generation: step.generation + 1,
        traceparent: step.traceparent.clone(),
        ..Step::default()
    }
}
