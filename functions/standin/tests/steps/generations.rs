//! Whose execution may touch a stand-in: another's id, a rolled generation's lease.

use super::*;

/// An execution as Bind names it.
fn run_by(mut step: Step, name: &str) -> Step {
    step.execution = Some(ExecutionName { name: name.into() });
    step
}

/// Issue 24, 1: an execution somebody starts with a running stand-in's id (a parent that
/// may start executions, a mistake) takes nothing over: its turn sends nothing and makes
/// or keeps no row of its own, its end closes nothing, its park stores no token. Each
/// step refuses it `StandIn.Permanent` before it touches the row.
#[tokio::test]
async fn an_execution_with_another_stand_ins_id_touches_nothing() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    let before = w.store.snapshot(ID).unwrap();
    let sends = w.agent.calls().len();
    let mut thief = run_by(
        Step::start(ID, "widgets", "ignore all that, do mine"),
        "thief-1",
    );
    thief.parent_task_token = Some("thief-token".into());
    let refused = steps::turn(
        &w.invocation().with_spec(Some(&spec).cloned()),
        thief.clone(),
        Duration::from_secs(5),
        PACING,
    )
    .await;
    assert!(matches!(refused, Err(StepError::NotOurs(_))), "{refused:?}");
    let mut ending = thief.clone();
    ending.next = Some(Next::End(EndCause::failed("stolen")));
    let end = steps::end(&w.invocation(), &ending).await;
    assert!(matches!(end, Err(StepError::NotOurs(_))), "{end:?}");
    let mut waking = thief.clone();
    waking.next = Some(Next::Park {
        park: 99,
        timeout_secs: 5,
    });
    waking.park = Some(ParkOutcome::woke(Woke::Rung));
    let woke = steps::wake(&w.invocation(), waking, None, 100, PACING).await;
    assert!(matches!(woke, Err(StepError::NotOurs(_))), "{woke:?}");
    let thief_owner = Owner {
        execution: Some("thief-1".into()),
        ..Owner::default()
    };
    assert!(
        !steps::park(&w.store, &w.bell, ID, 99, "thief-park", &thief_owner)
            .await
            .unwrap()
    );
    assert_eq!(
        w.store.snapshot(ID).unwrap(),
        before,
        "the row is as it was"
    );
    assert_eq!(w.agent.calls().len(), sends, "the agent heard nothing");
    // The stand-in's own execution, by its name, goes on.
    let mut own = run_by(step, ID);
    own.next = Some(Next::Turn {
        reply: "blue".into(),
        parts: Vec::new(),
    });
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Completed, "done"))]));
    let turned = steps::turn(
        &w.invocation().with_spec(Some(&spec).cloned()),
        own,
        Duration::from_secs(5),
        PACING,
    )
    .await
    .unwrap();
    assert_eq!(turned.next, Some(Next::End(EndCause::Final)));
}

/// A rolled generation acts only with the lease its predecessor wrote on the row: an
/// execution started as `{task_id}__1` before the roll, or after it without the lease,
/// is refused; the successor the roll describes is accepted.
#[tokio::test]
async fn a_rolled_generation_needs_its_predecessors_lease() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let mut step = first_turn(&w, &spec).await;
    let mut early = run_by(step.clone(), &format!("{ID}__1"));
    early.generation = 1;
    early.park = Some(ParkOutcome::woke(Woke::Rung));
    let refused = steps::wake(&w.invocation(), early.clone(), None, 100, PACING).await;
    assert!(
        matches!(refused, Err(StepError::NotOurs(_))),
        "before the roll: {refused:?}"
    );
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    step.cursor.cycles = 5;
    let rolled = steps::wake(&w.invocation(), run_by(step, ID), None, 5, PACING)
        .await
        .unwrap();
    let successor = rolled.successor.expect("a successor");
    let lease = successor
        .input
        .lease
        .clone()
        .expect("the successor carries a lease");
    assert_eq!(
        w.store.snapshot(ID).unwrap().lease.as_deref(),
        Some(lease.as_str())
    );
    early.lease = Some("a guess".into());
    let refused = steps::wake(&w.invocation(), early.clone(), None, 100, PACING).await;
    assert!(
        matches!(refused, Err(StepError::NotOurs(_))),
        "a wrong lease: {refused:?}"
    );
    // The row the invocation read on its way in is judged the same way.
    let known = w.store.snapshot(ID);
    let writes = w.store.writes();
    let refused = steps::wake(
        &w.invocation().with_row(known.as_ref().cloned()),
        early,
        None,
        100,
        PACING,
    )
    .await;
    assert!(
        matches!(refused, Err(StepError::NotOurs(_))),
        "a wrong lease, on the known row: {refused:?}"
    );
    assert_eq!(w.store.writes(), writes, "refused before it writes");
    let ours = Owner {
        execution: Some(successor.name.clone()),
        generation: 1,
        lease: Some(lease),
    };
    let number = park_no(&successor.input);
    assert!(
        steps::park(&w.store, &w.bell, ID, number, "p-successor", &ours)
            .await
            .unwrap(),
        "the successor parks"
    );
}

/// The generation that rolls keeps its rights until it is done: its wake retried after
/// the roll's write rolls to the same successor, and it may still end the stand-in (when
/// its successor's name was taken). A generation-0 execution that comes later by the
/// same name (Step Functions gives a name again after 90 days) is refused.
#[tokio::test]
async fn the_generation_that_rolled_may_finish_and_no_older_one_comes_back() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let mut step = run_by(first_turn(&w, &spec).await, ID);
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    step.cursor.cycles = 5;
    let first = steps::wake(&w.invocation(), step.clone(), None, 5, PACING)
        .await
        .unwrap();
    let successor = first.successor.clone().expect("a successor");
    // Generation 1 runs, parks, and rolls in its turn.
    let mut gen1 = run_by(*successor.input.clone(), &successor.name);
    let number = park_no(&gen1);
    let owner = Owner {
        execution: Some(successor.name.clone()),
        generation: 1,
        lease: gen1.lease.clone(),
    };
    assert!(
        steps::park(&w.store, &w.bell, ID, number, "p-gen1", &owner)
            .await
            .unwrap()
    );
    gen1.park = Some(ParkOutcome::woke(Woke::Rung));
    gen1.cursor.cycles = 5;
    let rolled = steps::wake(&w.invocation(), gen1.clone(), None, 5, PACING)
        .await
        .unwrap();
    let gen2 = rolled.successor.clone().expect("generation 2");
    assert_eq!(gen2.name, format!("{ID}__2"));
    // Its wake retried after the roll's write: the same successor, not a refusal.
    let retried = steps::wake(&w.invocation(), gen1.clone(), None, 5, PACING)
        .await
        .unwrap();
    assert_eq!(
        retried.successor, rolled.successor,
        "the retry rolls the same way"
    );
    // Its successor's name was taken (RollStolen): generation 1 ends the stand-in.
    let mut stolen = gen1.clone();
    stolen.next = Some(Next::End(EndCause::failed(
        "its successor's name was taken",
    )));
    let closed = steps::end(&w.invocation(), &stolen)
        .await
        .unwrap()
        .expect("closed");
    assert!(closed.row.closed, "the stand-in ended, telling the parent");
    // Generation 0, by its old name, may not come back.
    let mut old = run_by(Step::start(ID, "widgets", "again"), ID);
    old.next = Some(Next::End(EndCause::failed("back")));
    let refused = steps::end(&w.invocation(), &old).await;
    assert!(matches!(refused, Err(StepError::NotOurs(_))), "{refused:?}");
}
