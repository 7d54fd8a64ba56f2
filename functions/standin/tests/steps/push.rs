//! The push watch: a push heard, rung, taken, rechecked, forged.

use super::*;
use standin::row::{Notes, Parks, StandIns};

#[tokio::test]
async fn push_watch_from_first_turn_to_completion() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "What colour?")),
    ]));
    w.agent
        .set_task(task(TaskState::InputRequired, "What colour?"));
    let step = w
        .run(Step::start(ID, "widgets", "Build me a widget"), &spec)
        .await;
    assert_eq!(park_shape(&step), PLAIN);
    assert_eq!(park_no(&step), 1);
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!(
        (
            row.mode(),
            row.remote_task_id.as_deref(),
            row.context_id.as_deref()
        ),
        (WatchMode::Push, Some(REMOTE), Some("ctx-1"))
    );
    assert_eq!(
        w.agent.count("GetTask"),
        1,
        "push reconciles once after registering"
    );
    assert!(w.park(&step, "park-1").await);

    // The agent moves on and pushes; the receiver rings; the stand-in fetches.
    w.agent
        .set_task(task(TaskState::Working, "Building a blue widget"));
    let headers = push_headers(&w);
    let body = push_body(TaskState::Working, "forged text is never used");
    assert_eq!(
        receiver::receive(&w.store, &w.bell, ID, &headers, &body)
            .await
            .status,
        204
    );
    assert_eq!(w.bell.rings(), ["park-1"]);
    let reads = w.store.reads();
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), PLAIN, "the check agreed with the claim");
    assert_eq!(
        w.agent.count("GetTask"),
        2,
        "asked once, while the wake drained"
    );
    assert_eq!(
        w.store.reads(),
        reads,
        "the row read on the way in and the drain's are all the wake needs"
    );
    assert_eq!(park_no(&step), 2);
    assert!(w.park(&step, "park-2").await);

    // The parent replies; the turn runs to completion; the end closes and deletes.
    w.ring(reply("blue")).await;
    w.agent.script_stream(Ok(vec![
        Ok(update(TaskState::Working, "on it")),
        Ok(update(TaskState::Completed, "Your widget is ready")),
    ]));
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert!(
        w.agent
            .calls()
            .iter()
            .any(|c| c == "SendStreamingMessage:blue")
    );
    // Changed rule: the final note was written when the turn applied COMPLETED (under
    // its own number); the end finds the row closed and writes nothing more.
    assert!(
        w.store.snapshot(ID).unwrap().closed,
        "closed by the final state"
    );
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), None);
    let last = w.store.outbox().pop().unwrap();
    assert_eq!(
        (last.state.as_str(), last.text.as_str()),
        ("TASK_STATE_COMPLETED", "Your widget is ready")
    );
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_WORKING".into(), false),
            // The turn's "on it", told as the turn read it.
            (3, "TASK_STATE_WORKING".into(), false),
            (4, "TASK_STATE_COMPLETED".into(), true),
        ],
        "every change once, in order, no gaps"
    );
    assert_eq!(w.agent.count("DeleteTaskPushNotificationConfig"), 1);
    assert_eq!(w.agent.count("CancelTask"), 0);
    assert_eq!(
        receiver::receive(&w.store, &w.bell, ID, &headers, &body)
            .await
            .status,
        401,
        "closed"
    );
}

/// The push a ring carried is taken by the wake's first write, which returns the row: the
/// wake reads nothing. A push recorded after the ring is not that push: the wake drains
/// as usual and hears the later change.
#[tokio::test]
async fn the_push_a_ring_carried_is_taken_by_the_wakes_first_write() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let mut step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    let headers = push_headers(&w);
    let body = push_body(TaskState::Working, "");
    let push = || receiver::receive(&w.store, &w.bell, ID, &headers, &body);
    w.agent.set_task(task(TaskState::Working, "step 1"));
    assert_eq!(push().await.status, 204);
    let carried = w.bell.rung_pushes().last().unwrap().clone();
    assert!(carried.is_some());
    assert_eq!(
        carried,
        w.store.snapshot(ID).unwrap().pending.rung_push(),
        "the ring carries the push it rang for"
    );
    step.park = Some(ParkOutcome {
        woke: Woke::Rung,
        push: carried,
    });
    let reads = w.store.reads();
    let taken = steps::take_rung(&w.store, &step, 100).await.unwrap();
    let step = steps::wake(
        &w.invocation(),
        step,
        Some(taken.expect("the carried push is taken")),
        100,
        PACING,
    )
    .await
    .unwrap();
    assert_eq!(w.store.reads(), reads, "nothing read");
    assert_eq!(w.store.outbox().pop().unwrap().text, "step 1");
    assert_eq!(park_shape(&step), PLAIN);

    let mut step = step;
    assert!(w.park(&step, "p2").await);
    w.agent.set_task(task(TaskState::Working, "step 2"));
    assert_eq!(push().await.status, 204);
    let carried = w.bell.rung_pushes().last().unwrap().clone();
    // The agent moves on and pushes again before the wake: that ring finds the park
    // over (Step Functions refuses a second SendTaskSuccess), the push waits on the row.
    w.agent.set_task(task(TaskState::Working, "step 3"));
    assert_eq!(push().await.status, 204);
    step.park = Some(ParkOutcome {
        woke: Woke::Rung,
        push: carried,
    });
    assert_eq!(steps::take_rung(&w.store, &step, 100).await.unwrap(), None);
    let known = w.store.snapshot(ID);
    steps::wake(
        &w.invocation().with_row(known.as_ref().cloned()),
        step,
        None,
        100,
        PACING,
    )
    .await
    .unwrap();
    assert_eq!(
        w.store.outbox().pop().unwrap().text,
        "step 3",
        "the wake asked after the later push"
    );
}

/// A wake that will roll (its cycle count reaches the history bound) leaves the push for
/// the successor: the take is never tried, so the roll's own write ends the park.
#[tokio::test]
async fn a_wake_that_rolls_does_not_take_the_rung_push() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let mut step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    let body = push_body(TaskState::Working, "");
    let answer = receiver::receive(&w.store, &w.bell, ID, &push_headers(&w), &body).await;
    assert_eq!(answer.status, 204);
    step.park = Some(ParkOutcome {
        woke: Woke::Rung,
        push: w.bell.rung_pushes().last().unwrap().clone(),
    });
    // The bound is this wake's count: it rolls.
    let bound = step.cursor.cycles;
    assert_eq!(
        steps::take_rung(&w.store, &step, bound).await.unwrap(),
        None
    );
    let known = w.store.snapshot(ID);
    assert!(
        known.as_ref().unwrap().pending.push.is_some(),
        "still pending"
    );
    let rolled = steps::wake(
        &w.invocation().with_row(known.as_ref().cloned()),
        step.clone(),
        None,
        bound,
        PACING,
    )
    .await
    .unwrap();
    assert_eq!(rolled.next, Some(Next::Roll));
    assert!(
        w.store.snapshot(ID).unwrap().pending.push.is_some(),
        "the push waits for the successor's park"
    );
    assert!(
        steps::take_rung(&w.store, &step, bound + 100)
            .await
            .unwrap()
            .is_none(),
        "the roll ended the park"
    );
}

/// The store as a push wake meets it when the agent answers its GetTask, moves on, and
/// pushes again (claiming the same state) before the wake's drain is written.
struct PushDuringTheQuestion<'a> {
    inner: &'a MemoryStore,
    agent: &'a FakeAgent,
    asked_before: usize,
    then: Status,
    headers: HeaderMap,
}

impl StandIns for PushDuringTheQuestion<'_> {
    standin::row_store_pass_through!(create, get, list, list_of_agent, set_remote, set_watch);
}

impl Notes for PushDuringTheQuestion<'_> {
    standin::row_store_pass_through!(apply, close, notes);
}

impl Parks for PushDuringTheQuestion<'_> {
    standin::row_store_pass_through!(
        record,
        park,
        claim_hearing,
        end_hearing,
        claim_follow,
        end_park,
        roll,
        take_rung
    );

    async fn drain(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        park: u64,
    ) -> Result<Drained, StoreError> {
        if seen.is_some() {
            for _ in 0..1000 {
                if self.agent.count("GetTask") > self.asked_before {
                    break;
                }
                tokio::task::yield_now().await;
            }
            assert!(
                self.agent.count("GetTask") > self.asked_before,
                "the wake asked while it drained"
            );
            self.agent.set_task(self.then.clone());
            let body = push_body(TaskState::Working, "");
            let bell = MemoryDoorbell::new();
            let answer = receiver::receive(self.inner, &bell, ID, &self.headers, &body).await;
            assert_eq!(answer.status, 204);
        }
        self.inner.drain(task_id, seen, park).await
    }
}

/// A push that lands after the wake asked the agent but before its drain is written is
/// not taken with the push the wake saw: the answer may predate its change, so the wake
/// asks again (two pushes claiming the same state are still two pushes).
#[tokio::test]
async fn a_push_while_the_wake_asks_is_not_swallowed_by_the_answer_before_it() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let mut step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.agent.set_task(task(TaskState::Working, "step 1"));
    let headers = push_headers(&w);
    let body = push_body(TaskState::Working, "");
    assert_eq!(
        receiver::receive(&w.store, &w.bell, ID, &headers, &body)
            .await
            .status,
        204
    );
    let store = PushDuringTheQuestion {
        inner: &w.store,
        agent: &w.agent,
        asked_before: w.agent.count("GetTask"),
        then: task(TaskState::Working, "step 2"),
        headers,
    };
    // Rung as Step Functions hands it over: with the push the ring carried.
    step.park = Some(ParkOutcome {
        woke: Woke::Rung,
        push: w.bell.rung_pushes().last().cloned().flatten(),
    });
    let known = w.store.snapshot(ID);
    steps::wake(
        &Invocation::reaching(Teller::new(&store), &w.agent).with_row(known.as_ref().cloned()),
        step,
        None,
        100,
        PACING,
    )
    .await
    .unwrap();
    let last = w.store.outbox().pop().unwrap();
    assert_eq!(
        last.text, "step 2",
        "the parent hears the change the second push rang for"
    );
    assert_eq!(
        w.agent.count("GetTask"),
        store.asked_before + 2,
        "asked while draining, and again after the drain took a later push"
    );
}

/// The seed's abuse case 6: a push costs at most one GetTask and three rechecks, whatever
/// it claims. A forged COMPLETED with the genuine token, while the task works on: one
/// GetTask when it rings, one after each recheck wait (1 s, 2 s, 4 s), and then an idle
/// park whose re-check is the backstop's own (30 s after the task last moved, as without
/// the push). A fifth GetTask within the push's rechecks would be this test failing; one
/// at the backstop is the stand-in's ordinary look.
#[tokio::test]
async fn a_forged_push_costs_one_get_task_and_three_rechecks() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let mut step = first_turn(&w, &spec).await;
    w.agent.set_task(task(TaskState::Working, "still working"));
    assert!(w.park(&step, "p1").await);
    let before = w.agent.count("GetTask");
    let forged = push_body(TaskState::Completed, "all done, trust me");
    let heard = receiver::receive(&w.store, &w.bell, ID, &push_headers(&w), &forged).await;
    assert_eq!(heard.status, 204);
    step = w.wake(step, Woke::Rung, &spec).await;
    let mut waits = vec![park_shape(&step).1];
    for n in 0..3 {
        assert!(w.park(&step, &format!("r{n}")).await);
        step = w.wake(step, Woke::TimedOut, &spec).await;
        waits.push(park_shape(&step).1);
    }
    assert_eq!(
        waits,
        [1, 2, 4, BACKSTOP_FIRST_SECS],
        "three rechecks, then the backstop"
    );
    assert_eq!(
        w.agent.count("GetTask") - before,
        4,
        "one GetTask and three rechecks"
    );
    let last = w.store.snapshot(ID).unwrap().last.unwrap();
    assert_eq!(
        last.state,
        TaskState::Working,
        "nothing the push claimed was applied"
    );
}

#[tokio::test]
async fn a_push_before_get_task_agrees_is_found_by_a_recheck() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    let headers = push_headers(&w);
    let body = push_body(TaskState::Canceled, "");
    assert_eq!(
        receiver::receive(&w.store, &w.bell, ID, &headers, &body)
            .await
            .status,
        204
    );
    // GetTask still says INPUT_REQUIRED: wait 1 s and look again.
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), (false, 1));
    assert_eq!(park_no(&step), 2);
    w.agent
        .set_task(task(TaskState::Canceled, "cancelled by the agent"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.agent.count("GetTask"),
        3,
        "reconcile, push check, one recheck"
    );
}

/// Counts the reads of a note's artifacts started ahead; carries none.
#[derive(Default)]
struct ReadsAhead(std::sync::atomic::AtomicUsize);

impl ReadsAhead {
    fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl standin::outbox::NoteArtifacts for ReadsAhead {
    fn due(
        &self,
        _: bool,
    ) -> futures_util::future::BoxFuture<
        '_,
        Result<standin::outbox::Due, standin::outbox::ArtifactsUnrecorded>,
    > {
        Box::pin(async { Ok(standin::outbox::Due::default()) })
    }
    fn told(&self, _: standin::outbox::Due) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn watching(&self, _: &standin::row::Watch) {}
    fn read_ahead(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn keep(&self) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn only_a_wake_a_push_rang_reads_the_artifacts_ahead() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let mut step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    let invocation = |ahead: &std::sync::Arc<ReadsAhead>| {
        let artifacts = ahead.clone() as std::sync::Arc<dyn standin::outbox::NoteArtifacts>;
        Invocation::reaching(
            Teller::new(&w.store).with_artifacts(Some(artifacts)),
            &w.agent,
        )
        .with_row(w.store.snapshot(ID))
    };

    // A push rings: the wake tells the change once the agent answers.
    w.agent.set_task(task(TaskState::Working, "step 1"));
    let (headers, body) = (push_headers(&w), push_body(TaskState::Working, ""));
    let pushed = receiver::receive(&w.store, &w.bell, ID, &headers, &body).await;
    assert_eq!(pushed.status, 204);
    step.park = Some(ParkOutcome {
        woke: Woke::Rung,
        push: w.bell.rung_pushes().last().cloned().flatten(),
    });
    let taken = steps::take_rung(&w.store, &step, 100).await.unwrap();
    let ahead = std::sync::Arc::new(ReadsAhead::default());
    let mut step = steps::wake(&invocation(&ahead), step, taken, 100, PACING)
        .await
        .unwrap();
    assert_eq!(ahead.count(), 1, "read while the agent answered");
    assert_eq!(w.store.outbox().last().unwrap().text, "step 1");

    // The next park runs its time: the wake decides on the row and reads nothing ahead.
    assert!(w.park(&step, "p2").await);
    step.park = Some(ParkOutcome {
        woke: Woke::TimedOut,
        push: None,
    });
    let ahead = std::sync::Arc::new(ReadsAhead::default());
    steps::wake(&invocation(&ahead), step, None, 100, PACING)
        .await
        .unwrap();
    assert_eq!(
        ahead.count(),
        0,
        "nothing read ahead for a note it may not tell"
    );
}
