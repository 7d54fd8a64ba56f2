//! The steps driven the way the state machine drives them, over in-memory ports and a
//! scripted agent: a whole stand-in's life without AWS.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use http::HeaderMap;
use standin::agents::{AgentSpec, Updates};
use standin::doorbell::memory::MemoryDoorbell;
use standin::doorbell::{self, EndCause};
use standin::follow::FollowEnd;
use standin::follow::{FollowTiming, WindowEnd};
use standin::push::receiver;
use standin::row::Closed;
use standin::row::RowStore;
use standin::row::memory::MemoryStore;
use standin::row::{Drained, StoreError};
use standin::row::{FollowOutcome, Guard, Row, WakeEvent, WatchMode};
use standin::steps;
use standin::steps::ParkOutcome;
use standin::steps::next::{
    BACKSTOP_FIRST_SECS, FOLLOW_PARK_SECS, FOLLOW_RETRY_SECS, GONE_REASON, IDLE_RECHECK_SECS, Next,
    Pacing, Woke,
};
use standin::steps::{Bound, Owner, Step, StepError};
use standin_remote::fake::FakeAgent;
use standin_remote::fake::StreamScript;
use standin_remote::{RemoteError, Status, Update};
use standin_wire::TaskState;

const ID: &str = "sub-1";
const REMOTE: &str = "r-1";
const BASE: &str = "https://push.example/Prod";

fn task(state: TaskState, text: &str) -> Status {
    Status {
        context_id: Some("ctx-1".into()),
        ..Status::new(REMOTE, state, Some(text))
    }
}

fn update(state: TaskState, text: &str) -> Update {
    Update::Status(task(state, text))
}

/// A push body as an A2A 1.0 sender posts it: a status update.
fn push_body(state: TaskState, text: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"statusUpdate": {
        "taskId": REMOTE,
        "contextId": "ctx-1",
        "status": {"state": state.as_str(), "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": text}]}},
    }}))
    .unwrap()
}

fn first_event() -> Update {
    update(TaskState::Submitted, "")
}

fn spec(updates: Updates) -> AgentSpec {
    AgentSpec {
        id: "widgets".into(),
        url: "http://127.0.0.1:1".into(),
        version: None,
        updates,
        follow_interval: Duration::from_secs(1),
        participant: None,
        allowed_origins: Vec::new(),
        card_url: None,
        headers: Vec::new(),
        session_header: None,
        extensions: Vec::new(),
        poll_max_interval: standin::agents::DEFAULT_POLL_MAX_INTERVAL,
        max_duration: None,
        max_unreachable: standin::agents::DEFAULT_MAX_UNREACHABLE,
        auth: None,
    }
}

const PACING: Pacing = Pacing {
    idle_recheck_secs: IDLE_RECHECK_SECS,
    poll_max_secs: standin::steps::next::POLL_MAX_SECS,
    deadline_secs: standin::steps::next::MAX_STANDIN_SECS,
    max_unreachable_secs: standin::steps::next::MAX_UNREACHABLE_SECS,
    now_secs: 0,
};

/// (follow, timeout_secs) of a plain idle park (the backstop's first wait) and of a
/// follow park.
const PLAIN: (bool, u64) = (false, BACKSTOP_FIRST_SECS);
const FOLLOW: (bool, u64) = (true, FOLLOW_PARK_SECS);

/// The shape of the park a step decided on: (follow, timeout_secs).
fn park_shape(step: &Step) -> (bool, u64) {
    match step.next {
        Some(Next::Park { timeout_secs, .. }) => (false, timeout_secs),
        Some(Next::Follow { .. }) => FOLLOW,
        ref other => panic!("expected a park, got {other:?}"),
    }
}

/// The number of the park a step decided on.
fn park_no(step: &Step) -> u64 {
    match step.next {
        Some(Next::Park { park, .. } | Next::Follow { park, .. }) => park,
        ref other => panic!("expected a park, got {other:?}"),
    }
}

const TIMING: FollowTiming = FollowTiming {
    window: Duration::from_secs(30),
    interval: Duration::from_millis(10),
    heartbeat: Duration::from_secs(10),
    at_window_end: WindowEnd::Report,
    ends_by: None,
};

struct World {
    store: MemoryStore,
    bell: MemoryDoorbell,
    agent: FakeAgent,
    /// How many rings there were when the last park stored its token: the first ring
    /// after it is the one Step Functions hands the wake (it refuses the others).
    rings_at_park: std::sync::Mutex<usize>,
}

impl World {
    async fn new(push: bool) -> Self {
        let w = Self {
            store: MemoryStore::new(),
            bell: MemoryDoorbell::new(),
            agent: FakeAgent::new(push),
            rings_at_park: std::sync::Mutex::new(0),
        };
        w.store.create(&Row::new(ID, "widgets")).await.unwrap();
        w
    }

    /// Runs steps as the state machine routes them, until a park or the end.
    async fn run(&self, mut step: Step, spec: &AgentSpec) -> Step {
        loop {
            match step.next.clone() {
                None | Some(Next::Turn { .. }) => {
                    step = steps::turn(
                        &self.store,
                        steps::ready(&self.agent),
                        Some(spec),
                        step,
                        Duration::from_secs(5),
                        PACING,
                    )
                    .await
                    .unwrap();
                }
                Some(Next::Register) => {
                    step = steps::register(
                        &self.store,
                        steps::ready(&self.agent),
                        Some(spec),
                        Some(BASE),
                        step,
                        PACING,
                    )
                    .await
                    .unwrap();
                }
                Some(Next::Park { .. } | Next::Follow { .. } | Next::End(_) | Next::Roll) => {
                    return step;
                }
                Some(Next::Check { .. }) => panic!("a check is done inside its step"),
            }
        }
    }

    /// The wake as the wake function runs it: the push the last ring carried taken
    /// first, else the row read on the way in and the drain.
    async fn wake(&self, step: Step, woke: Woke, spec: &AgentSpec) -> Step {
        self.wake_paced(step, woke, spec, PACING).await
    }

    /// `wake`, at the moment and with the bounds `pacing` gives.
    async fn wake_paced(
        &self,
        mut step: Step,
        woke: Woke,
        spec: &AgentSpec,
        pacing: Pacing,
    ) -> Step {
        let push = match woke {
            Woke::Rung => {
                let first = *self.rings_at_park.lock().unwrap();
                self.bell.rung_pushes().get(first).cloned().flatten()
            }
            _ => None,
        };
        step.park = Some(ParkOutcome { woke, push });
        let taken = steps::take_rung(&self.store, &step, 100).await.unwrap();
        let step = match taken {
            Some(taken) => steps::wake_taken(
                &self.store,
                steps::ready(&self.agent),
                step,
                taken,
                100,
                pacing,
            )
            .await
            .unwrap(),
            None => {
                let known = self.store.snapshot(ID);
                steps::wake(
                    &self.store,
                    steps::ready(&self.agent),
                    step,
                    known.as_ref(),
                    100,
                    pacing,
                )
                .await
                .unwrap()
            }
        };
        self.run(step, spec).await
    }

    /// The park function for the park `step` decided on: true when it stored its token.
    async fn park(&self, step: &Step, token: &str) -> bool {
        *self.rings_at_park.lock().unwrap() = self.bell.rings().len();
        steps::park(
            &self.store,
            &self.bell,
            ID,
            park_no(step),
            token,
            &Owner::default(),
        )
        .await
        .unwrap()
    }

    /// The follow function for the park `step` decided on.
    async fn follow(&self, step: &Step, token: &str) -> FollowEnd {
        standin::follow::follow(
            &self.store,
            &self.bell,
            &self.agent,
            ID,
            park_no(step),
            token,
            TIMING,
        )
        .await
        .unwrap()
    }

    /// The end as the End function runs it: close, tell the parent, clean up.
    async fn end(&self, step: &Step) -> Closed {
        let agent = &self.agent;
        steps::end(&self.store, step, steps::ready(agent))
            .await
            .unwrap()
            .unwrap()
    }

    async fn ring(&self, event: WakeEvent) {
        doorbell::ring(&self.store, &self.bell, ID, &event, &Guard::Open)
            .await
            .unwrap();
    }

    /// (seq, state, is_final) of every note in the outbox.
    fn notes(&self) -> Vec<(u64, String, bool)> {
        self.store
            .outbox()
            .into_iter()
            .map(|n| (n.seq, n.state.as_str().to_owned(), n.is_final))
            .collect()
    }
}

fn reply(text: &str) -> WakeEvent {
    WakeEvent::reply(text)
}

/// A first turn that ends INPUT_REQUIRED "q", on a stand-in whose watch is `spec`'s.
async fn first_turn(w: &World, spec: &AgentSpec) -> Step {
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    w.run(Step::start(ID, "widgets", "go"), spec).await
}

fn push_headers(w: &World) -> HeaderMap {
    let token = w.agent.configs()[0].token.clone();
    let mut headers = HeaderMap::new();
    headers.insert("x-a2a-notification-token", token.parse().unwrap());
    headers
}

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
            (3, "TASK_STATE_COMPLETED".into(), true),
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
    let step = steps::wake_taken(
        &w.store,
        steps::ready(&w.agent),
        step,
        taken.expect("the carried push is taken"),
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
        &w.store,
        steps::ready(&w.agent),
        step,
        known.as_ref(),
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
        &w.store,
        steps::ready(&w.agent),
        step.clone(),
        known.as_ref(),
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

impl RowStore for PushDuringTheQuestion<'_> {
    standin::row_store_pass_through!(
        create,
        get,
        list,
        record,
        park,
        claim_follow,
        wake,
        roll,
        drain,
        take_rung,
        apply,
        apply_to,
        set_remote,
        set_watch,
        close,
        notes,
    );

    async fn drain_from(&self, seen: &Row, park: u64) -> Result<Drained, StoreError> {
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
        self.inner.drain_from(seen, park).await
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
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    let known = w.store.snapshot(ID);
    steps::wake(
        &store,
        steps::ready(&w.agent),
        step,
        known.as_ref(),
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

#[tokio::test]
async fn follow_watch_hears_a_change_through_subscribe() {
    let w = World::new(false).await;
    let spec = spec(Updates::Auto);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    assert_eq!(park_shape(&step), FOLLOW, "no push on the card: follow");
    // The first subscription ends unchanged; the second shows a change.
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::InputRequired, "q"))]));
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "working now"))]));
    let end = w.follow(&step, "f1").await;
    assert!(
        matches!(
            end,
            FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
        ),
        "{end:?}"
    );
    assert_eq!(
        w.agent.count("SubscribeToTask"),
        2,
        "re-subscribed after an unchanged end"
    );
    assert_eq!(w.bell.rings(), ["f1"]);
    let first = park_no(&step);
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), FOLLOW);
    assert_eq!(park_no(&step), first + 1);
    assert_eq!(
        w.notes().last().map(|n| n.1.clone()),
        Some("TASK_STATE_WORKING".into())
    );
}

/// A followed agent that cannot be reached was retried by its followers, unseen, until
/// the deadline: three failed subscriptions in a row are reported, so the stand-in counts
/// its agent unreachable.
#[tokio::test]
async fn failed_subscriptions_are_reported_so_the_stand_in_can_count_them() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    for _ in 0..5 {
        w.agent
            .script_stream(Err(RemoteError::Transport("connection refused".into())));
    }
    let end = w.follow(&step, "f1").await;
    assert_eq!(end, FollowEnd::Reported(FollowOutcome::Failed), "{end:?}");
    assert_eq!(w.agent.count("SubscribeToTask"), 3);
}

/// A Step Functions parent writes the execution's whole input: a cursor in it with a
/// deadline years away (or an agent "unreachable" since the future) is not kept; the
/// first turn starts its own.
#[tokio::test]
async fn a_first_turn_starts_its_own_cursor_whatever_the_input_carried() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let mut start = Step::start(ID, "widgets", "go");
    start.cursor.deadline_at = Some(u64::MAX);
    start.cursor.unreachable_since = Some(u64::MAX);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let step = w.run(start, &spec).await;
    assert_eq!(
        step.cursor.deadline_at,
        Some(PACING.now_secs + PACING.deadline_secs)
    );
    assert_eq!(step.cursor.unreachable_since, None);
}

/// An event past the 1 MiB bound made a followed stand-in subscribe for ever: each
/// subscription replays the task, streams the same event, and reading it fails. Past a
/// bound the stand-in polls instead (GetTask reads the task its own way), after one
/// subscription.
#[tokio::test]
async fn an_event_past_the_bound_turns_a_follow_into_a_poll() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let too_large = || RemoteError::TooLarge {
        what: "a stream event",
        limit: 1024 * 1024,
    };
    for _ in 0..4 {
        w.agent.script_stream(Ok(vec![
            Ok(update(TaskState::InputRequired, "q")),
            Err(too_large()),
        ]));
    }
    let end = w.follow(&step, "f1").await;
    assert_eq!(end, FollowEnd::Reported(FollowOutcome::Gone), "{end:?}");
    assert_eq!(w.agent.count("SubscribeToTask"), 1, "not subscribed again");
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
}

#[tokio::test]
async fn a_terminal_subscribe_fetches_and_a_gone_task_turns_the_watch_off_a_refused_one_polls() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Err(RemoteError::UnsupportedOperation("terminal".into())));
    w.agent.set_task(task(TaskState::Completed, "done"));
    assert_eq!(
        w.follow(&step, "f1").await,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: true })
    );
    // The final state closed the row in its apply; the follow rang its park directly and
    // the wake ends on the closed row.
    assert!(w.store.snapshot(ID).unwrap().closed);
    assert_eq!(w.bell.rings(), ["f1"]);
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true))
    );

    // Neither subscribe nor GetTask knows the task: nothing more can be heard.
    let w = World::new(false).await;
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Err(RemoteError::TaskNotFound("gone".into())));
    w.agent
        .fail_gets(vec![RemoteError::TaskNotFound("gone".into()); 2]);
    w.follow(&step, "f1").await;
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Off);
    // The wake asks at once, and re-checks before it ends the stand-in.
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), (false, 1));

    // The subscribe says "not found" (a2a-sdk 0.3 on an input-required task, a2a-go) or
    // lacks the method, while GetTask knows the task: the stand-in polls it.
    for refusal in [
        RemoteError::TaskNotFound("Task not found".into()),
        RemoteError::Rpc {
            code: -32601,
            message: "Method not found".into(),
        },
    ] {
        let w = World::new(false).await;
        let step = first_turn(&w, &spec).await;
        w.agent.script_stream(Err(refusal));
        w.follow(&step, "f1").await;
        assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
        let asked = w.agent.count("GetTask");
        let step = w.wake(step, Woke::Rung, &spec).await;
        // The wake polls at once; nothing changed, so the next poll waits twice as long.
        assert_eq!(w.agent.count("GetTask"), asked + 1);
        assert_eq!(
            park_shape(&step),
            (false, 2 * standin::steps::next::POLL_FIRST_SECS)
        );
    }
}

#[tokio::test]
async fn off_watch_and_a_cancel_while_parked() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert_eq!(park_shape(&step), PLAIN);
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Off);
    assert!(w.agent.configs().is_empty());
    assert!(w.park(&step, "p1").await);
    w.ring(WakeEvent::Cancel {
        reason: "not needed".into(),
    })
    .await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::End(EndCause::Cancelled {
            reason: "not needed".into()
        }))
    );
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(2));
    let note = w.store.outbox().pop().unwrap();
    assert_eq!(
        (note.state.as_str(), note.text.as_str(), note.is_final),
        ("TASK_STATE_CANCELED", "not needed", true)
    );
    assert_eq!(w.agent.count("CancelTask"), 1);
    // A retried end (the End function is retried) writes no second note; cancelling
    // again is harmless.
    let again = w.end(&step).await;
    assert_eq!(again.seq(), None);
    assert_eq!(w.store.outbox().len(), 2);
}

#[tokio::test]
async fn a_turn_that_cannot_reach_the_agent_ends_as_failed() {
    let w = World::new(true).await;
    w.agent
        .script_stream(Err(RemoteError::Transport("connection failed".into())));
    let step = w
        .run(Step::start(ID, "widgets", "go"), &spec(Updates::Auto))
        .await;
    assert!(
        matches!(step.next, Some(Next::End(EndCause::Failed { .. }))),
        "{:?}",
        step.next
    );
    assert_eq!(
        w.agent.count("GetTask"),
        0,
        "a first turn has no remote task to ask about"
    );
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(1));
    assert_eq!(w.notes(), [(1, "TASK_STATE_FAILED".into(), true)]);
}

#[tokio::test]
async fn a_first_turn_without_a_task_state_ends_as_failed() {
    let w = World::new(true).await;
    w.agent.script_stream(Ok(vec![]));
    let step = w
        .run(Step::start(ID, "widgets", "go"), &spec(Updates::Auto))
        .await;
    assert!(
        matches!(step.next, Some(Next::End(EndCause::Failed { .. }))),
        "{:?}",
        step.next
    );
    assert_eq!(w.agent.count("GetTask"), 0);
}

// The truth at the end: a refused follow-up asks GetTask before anything ends.

#[tokio::test]
async fn a_follow_up_refused_as_finished_ends_with_what_get_task_shows() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(reply("blue")).await;
    // The task completed before the reply reached it: the agent refuses the message as
    // sent to a terminal task (-32004), and GetTask shows how it ended.
    w.agent.script_stream(Err(RemoteError::UnsupportedOperation(
        "task is in a terminal state".into(),
    )));
    w.agent
        .set_task(task(TaskState::Completed, "Finished before your reply"));
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert!(
        w.agent
            .calls()
            .iter()
            .any(|c| c == "SendStreamingMessage:blue")
    );
    assert_eq!(
        w.agent.calls().last().map(String::as_str),
        Some("GetTask:r-1")
    );
    let closed = w.end(&step).await;
    assert_eq!(
        closed.seq(),
        None,
        "the final state already told the parent"
    );
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ],
        "COMPLETED, not FAILED"
    );
    assert_eq!(
        w.store.outbox()[1].text,
        "Finished before your reply",
        "the agent's own words"
    );
    assert_eq!(w.agent.count("CancelTask"), 0);
}

#[tokio::test]
async fn a_follow_up_that_breaks_before_its_first_event_parks_on_what_get_task_shows() {
    let refusals: Vec<(&str, StreamScript)> = vec![
        (
            "a stream that errors before its first event",
            Ok(vec![Err(RemoteError::Transport("stream broke".into()))]),
        ),
        ("a stream with no task state", Ok(vec![])),
        (
            "task not found",
            Err(RemoteError::TaskNotFound("unknown".into())),
        ),
    ];
    for (why, script) in refusals {
        let w = World::new(true).await;
        let spec = spec(Updates::Off);
        let step = first_turn(&w, &spec).await;
        assert!(w.park(&step, "p1").await);
        w.ring(reply("blue")).await;
        w.agent.script_stream(script);
        w.agent.set_task(task(TaskState::Working, "on it"));
        let step = w.wake(step, Woke::Rung, &spec).await;
        assert_eq!(park_shape(&step), PLAIN, "{why}");
        assert_eq!(park_no(&step), 2, "{why}");
        assert_eq!(
            w.notes(),
            [
                (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
                (2, "TASK_STATE_WORKING".into(), false),
            ],
            "{why}: GetTask's state applied"
        );
        assert!(!w.store.snapshot(ID).unwrap().closed, "{why}");
        // The agent may have the reply: it is not sent a second time.
        assert_eq!(
            w.agent.count("SendStreamingMessage"),
            2,
            "{why}: the first turn and the reply, once"
        );
    }
}

/// The first turn reached the agent (the row has its task), then the Lambda failed with
/// a service error and Step Functions ran the step again with the same input: sent again,
/// the prompt would arrive as a follow-up, taken for the answer to the agent's question.
#[tokio::test]
async fn a_first_turn_run_again_after_it_reached_the_agent_sends_nothing_and_asks() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    first_turn(&w, &spec).await;
    assert_eq!(w.agent.count("SendStreamingMessage"), 1);
    let gets = w.agent.count("GetTask");
    let again = steps::turn(
        &w.store,
        steps::ready(&w.agent),
        Some(&spec),
        Step::start(ID, "widgets", "go"),
        Duration::from_secs(5),
        PACING,
    )
    .await
    .unwrap();
    assert_eq!(w.agent.count("SendStreamingMessage"), 1, "not sent twice");
    assert_eq!(w.agent.count("GetTask"), gets + 1, "asked instead");
    assert!(
        matches!(again.next, Some(Next::Park { .. })),
        "parks on the question: {:?}",
        again.next
    );
    assert_eq!(w.notes().len(), 1, "nothing new to tell");
}

#[tokio::test]
async fn a_turn_that_step_functions_runs_again_sends_the_same_message_id() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.ring(reply("blue")).await;
    let mut woke = step.clone();
    woke.park = Some(ParkOutcome::woke(Woke::Rung));
    let turn = steps::wake(&w.store, steps::ready(&w.agent), woke, None, 100, PACING)
        .await
        .unwrap();
    assert!(
        matches!(turn.next, Some(Next::Turn { .. })),
        "{:?}",
        turn.next
    );
    // The Turn state's Lambda fails after sending (a service error), and Step Functions
    // retries it with the same input.
    for _ in 0..2 {
        w.agent
            .script_stream(Ok(vec![Ok(update(TaskState::Working, "on it"))]));
        steps::turn(
            &w.store,
            steps::ready(&w.agent),
            Some(&spec),
            turn.clone(),
            Duration::from_secs(5),
            PACING,
        )
        .await
        .unwrap();
    }
    let ids = w.agent.message_ids();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[1], ids[2], "the retried reply keeps its message id");
    assert_ne!(
        ids[0], ids[1],
        "the first turn and the reply are two messages"
    );
}

#[tokio::test]
async fn a_follow_up_refused_while_get_task_fails_too_ends_as_failed() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(reply("blue")).await;
    w.agent
        .script_stream(Err(RemoteError::UnsupportedOperation("terminal".into())));
    w.agent
        .fail_gets(vec![RemoteError::Transport("connection failed".into())]);
    let step = w.wake(step, Woke::Rung, &spec).await;
    let Some(Next::End(EndCause::Failed { reason })) = &step.next else {
        panic!("expected a failed end, got {:?}", step.next);
    };
    assert!(reason.contains("GetTask failed too"), "{reason}");
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(2));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_FAILED".into(), true))
    );
    assert_eq!(w.agent.count("CancelTask"), 0, "a failure cancels nothing");
}

// A final state a follow applied wins over anything recorded or decided after it.

#[tokio::test]
async fn a_final_state_applied_by_a_follow_wins_over_a_pending_reply() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let parked = doorbell::park(&w.store, &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap()
        .unwrap();
    // The parent's reply lands, and before the wake runs the follow applies COMPLETED.
    w.ring(reply("blue")).await;
    let done = standin::state::remote_out(REMOTE, TaskState::Completed, "done");
    doorbell::follow_report(
        &w.store,
        &w.bell,
        &parked,
        parked.epoch,
        Some(&done),
        FollowOutcome::WindowOver,
    )
    .await
    .unwrap();
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::End(EndCause::Final)),
        "the closed row ends the stand-in; the reply is not sent"
    );
    assert_eq!(
        w.agent.count("SendStreamingMessage"),
        1,
        "only the first turn"
    );
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), None);
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ]
    );
}

#[tokio::test]
async fn a_cancel_decided_before_a_final_state_writes_no_second_note() {
    // The wake took the parent's cancel, and a final state reached the row before the
    // end's close (applied here directly: the rule is the store's, whoever applies it).
    // The final applied first wins: the end writes no CANCELED note and does not cancel
    // the remote task.
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(WakeEvent::Cancel {
        reason: "stop".into(),
    })
    .await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert!(matches!(
        step.next,
        Some(Next::End(EndCause::Cancelled { .. }))
    ));
    let done = standin::state::remote_out(REMOTE, TaskState::Completed, "done");
    doorbell::apply(&w.store, ID, &done, &Guard::Open)
        .await
        .unwrap();
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), None);
    assert_eq!(w.agent.count("CancelTask"), 0);
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ]
    );
}

// Fenced parks through the steps.

#[tokio::test]
async fn the_park_step_stores_only_the_newest_park() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert_eq!(park_no(&step), 1);
    assert!(w.park(&step, "p1").await);
    let writes = w.store.writes();
    for (number, token) in [(1, "p1-again"), (0, "p0")] {
        assert!(
            !steps::park(&w.store, &w.bell, ID, number, token, &Owner::default())
                .await
                .unwrap(),
            "park {number}"
        );
    }
    assert_eq!(w.store.writes(), writes);
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!((row.epoch, row.park_token.as_deref()), (1, Some("p1")));
}

#[tokio::test]
async fn a_late_park_invoke_after_its_wake_changes_nothing() {
    // Park 1's invoke is delayed past the park's timeout: the wake ran, the stand-in
    // parked again (2) and then the old invoke arrives.
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    let first = step.clone();
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    // Nothing new: the backstop waits twice as long.
    assert_eq!(
        (park_shape(&step), park_no(&step)),
        ((false, 2 * BACKSTOP_FIRST_SECS), 2)
    );
    assert!(!w.park(&first, "p1-late").await, "its wake already ran");
    assert!(w.park(&step, "p2").await);
    assert!(
        !w.park(&first, "p1-later").await,
        "older than the stored park"
    );
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!((row.epoch, row.park_token.as_deref()), (2, Some("p2")));
}

#[tokio::test]
async fn a_late_follow_invoke_is_fenced_and_subscribes_to_nothing() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let first = step.clone();
    // Its invoke never ran in time: the heartbeat timeout woke the stand-in.
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!((park_shape(&step), park_no(&step)), (FOLLOW, 2));
    assert_eq!(w.follow(&first, "f1-late").await, FollowEnd::Fenced);
    assert_eq!(w.agent.count("SubscribeToTask"), 0);
    assert!(w.bell.rings().is_empty());
    assert_eq!(w.store.snapshot(ID).unwrap().park_token, None);
    // The current park follows.
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "now"))]));
    assert_eq!(
        w.follow(&step, "f2").await,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
    );
    assert_eq!(w.bell.rings(), ["f2"]);
}

#[tokio::test]
async fn a_follow_that_outlives_its_park_is_fenced_at_the_wake() {
    // The follow is still subscribed when its park times out and the wake runs: what it
    // hears afterwards lands nowhere (no note, no event) and the next follow is not
    // woken by it.
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let parked = doorbell::park(&w.store, &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap()
        .unwrap();
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(park_no(&step), 2);
    let late = standin::state::remote_out(REMOTE, TaskState::Working, "late");
    assert_eq!(
        doorbell::follow_report(
            &w.store,
            &w.bell,
            &parked,
            parked.epoch,
            Some(&late),
            FollowOutcome::WindowOver,
        )
        .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(w.notes().len(), 1, "only the first turn's note");
    assert!(w.store.snapshot(ID).unwrap().pending.is_empty());
}

#[tokio::test]
async fn a_follow_without_an_agent_reports_a_failure_and_retries_later() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let end = standin::follow::follow_unavailable(&w.store, &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap();
    assert_eq!(end, FollowEnd::Reported(FollowOutcome::Failed));
    assert_eq!(
        w.bell.rings(),
        ["f1"],
        "the park ends now, not at its timeout"
    );
    let first = step.clone();
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), (false, FOLLOW_RETRY_SECS));
    assert_eq!(
        standin::follow::follow_unavailable(&w.store, &w.bell, ID, park_no(&first), "f1-again")
            .await
            .unwrap(),
        FollowEnd::Fenced,
        "a repeated invoke of the same park"
    );
}

#[tokio::test]
async fn heartbeats_run_while_the_agent_is_slow() {
    let bell = MemoryDoorbell::new();
    let answer = standin::follow::with_heartbeats(&bell, "f1", Duration::from_millis(20), async {
        tokio::time::sleep(Duration::from_millis(110)).await;
        42
    })
    .await;
    assert_eq!(answer, 42);
    let beats = bell.heartbeats();
    assert!(beats.len() >= 2, "{beats:?}");
    assert!(beats.iter().all(|t| t == "f1"));
    assert!(bell.rings().is_empty());
}

// The wake: idempotent per park, and idle parks re-check on time.

#[tokio::test]
async fn a_retried_wake_decides_the_same_and_leaves_the_next_event() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let mut step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(reply("one")).await;
    w.ring(reply("two")).await;
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    let first = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        step.clone(),
        None,
        100,
        PACING,
    )
    .await
    .unwrap();
    let retried = steps::wake(&w.store, steps::ready(&w.agent), step, None, 100, PACING)
        .await
        .unwrap();
    assert_eq!(
        first.next,
        Some(Next::Turn {
            reply: "one".into()
        })
    );
    assert_eq!(retried, first, "the retry decides exactly the same");
    assert_eq!(w.store.snapshot(ID).unwrap().pending.replies, ["two"]);
}

#[tokio::test]
async fn an_idle_push_park_that_times_out_fetches_and_hears_a_lost_push() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let step = first_turn(&w, &spec).await;
    assert_eq!((park_shape(&step), park_no(&step)), (PLAIN, 1));
    assert!(w.park(&step, "p1").await);
    let gets = w.agent.count("GetTask");
    // The agent moved on, but its push never arrived.
    w.agent.set_task(task(TaskState::Working, "moved on"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(w.agent.count("GetTask"), gets + 1, "looked for itself");
    assert_eq!((park_shape(&step), park_no(&step)), (PLAIN, 2));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_WORKING".into(), false))
    );
}

/// An off park's idle time asks the agent once (it hears nothing else), then parks
/// again under a newer number.
#[tokio::test]
async fn an_idle_off_park_that_times_out_asks_and_parks_again_under_a_new_number() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    let gets = w.agent.count("GetTask");
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(
        (park_shape(&step), park_no(&step)),
        ((false, 2 * BACKSTOP_FIRST_SECS), 2)
    );
    assert_eq!(
        w.agent.count("GetTask"),
        gets + 1,
        "off asks at its idle time"
    );
    assert!(w.park(&step, "p2").await);
}

#[tokio::test]
async fn the_idle_backstop_grows_to_the_pacing_and_starts_again_on_a_change() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let pacing = Pacing {
        idle_recheck_secs: 90,
        ..PACING
    };
    let step = steps::turn(
        &w.store,
        steps::ready(&w.agent),
        Some(&spec),
        Step::start(ID, "widgets", "go"),
        Duration::from_secs(5),
        pacing,
    )
    .await
    .unwrap();
    let step = steps::register(
        &w.store,
        steps::ready(&w.agent),
        Some(&spec),
        None,
        step,
        pacing,
    )
    .await
    .unwrap();
    // The backstop starts short, doubles while nothing moves, and stops at the pacing.
    assert_eq!(park_shape(&step), (false, BACKSTOP_FIRST_SECS));
    let mut step = step;
    let mut waits = vec![];
    for _ in 0..3 {
        step.park = Some(ParkOutcome::woke(Woke::TimedOut));
        step = steps::wake(&w.store, steps::ready(&w.agent), step, None, 100, pacing)
            .await
            .unwrap();
        waits.push(park_shape(&step).1);
    }
    assert_eq!(waits, [60, 90, 90]);
    // The task moves: the next re-check comes soon again.
    w.agent.set_task(task(TaskState::Working, "moved on"));
    step.park = Some(ParkOutcome::woke(Woke::TimedOut));
    let step = steps::wake(&w.store, steps::ready(&w.agent), step, None, 100, pacing)
        .await
        .unwrap();
    assert_eq!(park_shape(&step), (false, BACKSTOP_FIRST_SECS));
}

#[tokio::test]
async fn rolling_keeps_pending_events_for_the_successor() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let mut step = first_turn(&w, &spec).await;
    let last = park_no(&step);
    w.ring(reply("kept")).await;
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    step.cursor.cycles = 5;
    let rolled = steps::wake(&w.store, steps::ready(&w.agent), step, None, 5, PACING)
        .await
        .unwrap();
    assert_eq!(rolled.next, Some(Next::Roll));
    let successor = rolled.successor.expect("successor");
    assert_eq!(successor.name, format!("{ID}__1"));
    assert_eq!(
        park_shape(&successor.input),
        FOLLOW,
        "the successor follows too"
    );
    assert_eq!(successor.input.cursor.cycles, 0);
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!(
        row.pending.replies,
        ["kept"],
        "nothing drained before the roll"
    );
    assert_eq!(row.woken, last, "the roll ended the predecessor's park");
    // The successor's park numbers go on from the predecessor's.
    let next = park_no(&successor.input);
    assert!(next > last, "{next} > {last}");
    let parked = doorbell::park(&w.store, &w.bell, ID, last, "old")
        .await
        .unwrap();
    assert_eq!(parked, None, "the predecessor's park is over");
    let parked = doorbell::park(&w.store, &w.bell, ID, next, "new")
        .await
        .unwrap()
        .expect("the successor's park is the newest");
    assert_eq!(parked.epoch, next);
    assert_eq!(
        w.bell.rings(),
        ["new"],
        "and it rings itself for the kept reply"
    );
    let step = w.wake(*successor.input, Woke::Rung, &spec).await;
    assert!(
        w.agent
            .calls()
            .iter()
            .any(|c| c == "SendStreamingMessage:kept"),
        "{:?}",
        step.next
    );
}

// Retries and slow agents.

#[tokio::test]
async fn a_retried_wake_after_its_check_applied_a_final_state_ends_final() {
    // The Wake state retries a function error; if the first attempt's check applied a
    // final state (and closed the row) before failing, the retry must end the stand-in,
    // not fail it.
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.agent.set_task(task(TaskState::Completed, "done"));
    let mut woken = step.clone();
    woken.park = Some(ParkOutcome::woke(Woke::TimedOut));
    let asked = w.agent.count("GetTask");
    let first = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        woken.clone(),
        None,
        100,
        PACING,
    )
    .await
    .unwrap();
    assert_eq!(
        w.agent.count("GetTask"),
        asked + 1,
        "the idle push park was checked"
    );
    let retried = steps::wake(&w.store, steps::ready(&w.agent), woken, None, 100, PACING)
        .await
        .unwrap();
    assert_eq!(first.next, Some(Next::End(EndCause::Final)));
    assert_eq!(retried.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true)),
        "told once"
    );
    assert_eq!(w.notes().len(), 2);
}

#[tokio::test]
async fn a_follow_without_an_agent_leaves_no_stale_report_when_an_event_waits() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.ring(reply("blue")).await;
    let end = standin::follow::follow_unavailable(&w.store, &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap();
    assert_eq!(
        end,
        FollowEnd::ParkOver,
        "the park rang itself for the reply"
    );
    let row = w.store.snapshot(ID).unwrap();
    assert_eq!(
        row.pending.follow, None,
        "no failure report outlives the reply"
    );
    assert_eq!(row.pending.replies, ["blue"]);
}

#[tokio::test]
async fn the_follow_heartbeats_while_the_agent_is_slow_to_open_the_stream() {
    // SubscribeToTask answers only after several heartbeat periods (on AWS: beyond the
    // park's 30 s heartbeat timeout): the follow must keep the park alive meanwhile.
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent.answer_slowly(Duration::from_millis(350));
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "now"))]));
    let timing = FollowTiming {
        heartbeat: Duration::from_millis(100),
        ..TIMING
    };
    let end = standin::follow::follow(
        &w.store,
        &w.bell,
        &w.agent,
        ID,
        park_no(&step),
        "f1",
        timing,
    )
    .await
    .unwrap();
    assert_eq!(
        end,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
    );
    let beats = w.bell.heartbeats();
    assert!(
        beats.len() >= 3,
        "a heartbeat every period while the stream opened: {beats:?}"
    );
}

// Multiplexed follows: a window that heard nothing hands its park to the next follower,
// which follows it on only while it stands.

const HAND_BACK: FollowTiming = FollowTiming {
    window: Duration::from_millis(300),
    at_window_end: WindowEnd::HandBack,
    ..TIMING
};

#[tokio::test]
async fn a_window_that_hears_nothing_hands_its_park_back_without_waking_the_stand_in() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    // No stream scripted: each subscribe fails and is tried again until the window ends.
    let end = standin::follow::follow(
        &w.store,
        &w.bell,
        &w.agent,
        ID,
        park_no(&step),
        "f1",
        HAND_BACK,
    )
    .await
    .unwrap();
    assert_eq!(end, FollowEnd::HandedBack);
    let row = w.store.get(ID).await.unwrap().unwrap();
    assert!(row.is_parked() && row.pending.is_empty(), "{row:?}");
    assert_eq!(row.park_token.as_deref(), Some("f1"));
    assert!(
        w.bell.rings().is_empty(),
        "nothing rang: {:?}",
        w.bell.rings()
    );
}

/// Park `park` with token `token` as the follower after `hop` hand-ons has it.
fn handed_on(park: u64, token: &str, hop: u64) -> standin::follow::Park<'_> {
    standin::follow::Park {
        task_id: ID,
        number: park,
        token,
        owner: Owner::default(),
        hop,
    }
}

#[tokio::test]
async fn a_handed_back_park_is_followed_on_and_beats_at_once() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let park = park_no(&step);
    let first = standin::follow::follow(&w.store, &w.bell, &w.agent, ID, park, "f1", HAND_BACK);
    assert_eq!(first.await.unwrap(), FollowEnd::HandedBack);
    let beats_before = w.bell.heartbeats().len();
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "now"))]));
    let on = handed_on(park, "f1", 1);
    let end = standin::follow::resume(&w.store, &w.bell, &w.agent, &on, HAND_BACK)
        .await
        .unwrap();
    assert_eq!(
        end,
        FollowEnd::Reported(FollowOutcome::Changed { is_final: false })
    );
    assert!(
        w.bell.heartbeats().len() > beats_before,
        "the next follower beats before it listens (the last beat was the other's)"
    );
    assert_eq!(
        w.bell.rings(),
        vec!["f1".to_owned()],
        "the change rang the park"
    );
}

#[tokio::test]
async fn a_hand_on_delivered_twice_is_followed_once() {
    // SQS standard delivers at least once: the second copy of a handed-on request
    // finds its hop claimed and does not follow (nor beat, nor subscribe).
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let park = park_no(&step);
    let first = standin::follow::follow(&w.store, &w.bell, &w.agent, ID, park, "f1", HAND_BACK);
    assert_eq!(first.await.unwrap(), FollowEnd::HandedBack);
    let on = handed_on(park, "f1", 1);
    let taken = standin::follow::resume(&w.store, &w.bell, &w.agent, &on, HAND_BACK);
    assert_eq!(taken.await.unwrap(), FollowEnd::HandedBack);
    let subscribes = w.agent.count("SubscribeToTask");
    let again = standin::follow::resume(&w.store, &w.bell, &w.agent, &on, HAND_BACK);
    assert_eq!(again.await.unwrap(), FollowEnd::ParkOver);
    assert_eq!(
        w.agent.count("SubscribeToTask"),
        subscribes,
        "no second follow"
    );
    // The next hand-on of the one that followed is taken as before.
    let next = handed_on(park, "f1", 2);
    let taken = standin::follow::resume(&w.store, &w.bell, &w.agent, &next, HAND_BACK);
    assert_eq!(taken.await.unwrap(), FollowEnd::HandedBack);
}

#[tokio::test]
async fn a_handed_back_park_that_ended_meanwhile_is_not_followed() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let park = park_no(&step);
    let first = standin::follow::follow(&w.store, &w.bell, &w.agent, ID, park, "f1", HAND_BACK);
    assert_eq!(first.await.unwrap(), FollowEnd::HandedBack);
    // A reply arrived while the park was on its way to the next follower.
    w.ring(WakeEvent::reply("blue")).await;
    let subscribes = w.agent.count("SubscribeToTask");
    let on = handed_on(park, "f1", 1);
    let end = standin::follow::resume(&w.store, &w.bell, &w.agent, &on, HAND_BACK)
        .await
        .unwrap();
    assert_eq!(end, FollowEnd::ParkOver);
    assert_eq!(w.agent.count("SubscribeToTask"), subscribes, "no subscribe");
    // A wrong token or an older park number is not followed either.
    for (number, token) in [(park, "forged"), (park.saturating_sub(1), "f1")] {
        let on = handed_on(number, token, 2);
        let end = standin::follow::resume(&w.store, &w.bell, &w.agent, &on, HAND_BACK);
        assert_eq!(end.await.unwrap(), FollowEnd::ParkOver, "{number} {token}");
    }
}

// The truth at the end, when the parent's cancel or reply races the remote task.

#[tokio::test]
async fn a_cancel_whose_remote_task_had_already_completed_reports_the_completion() {
    // The agent finished while the cancel was on its way and nothing told the stand-in
    // (its push was lost): the remote cancel's answer is the truth.
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.agent
        .set_task(task(TaskState::Completed, "finished first"));
    w.ring(WakeEvent::Cancel {
        reason: "no longer needed".into(),
    })
    .await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert!(matches!(
        step.next,
        Some(Next::End(EndCause::Cancelled { .. }))
    ));
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(2));
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true)
        ]
    );
    assert_eq!(w.store.outbox()[1].text, "finished first");
    assert_eq!(w.agent.count("CancelTask"), 1);
    // A retried end writes nothing more.
    assert_eq!(w.end(&step).await.seq(), None);
    assert_eq!(w.notes().len(), 2);
}

/// Nothing moved after the rechecks (GetTask shows the same question at once, after 1 s,
/// 2 s and 4 s): parking would leave the parent and the agent waiting on each other, so
/// the parent is told.
#[tokio::test]
async fn a_reply_the_agent_refuses_while_it_still_waits_for_input_ends_the_stand_in_after_the_rechecks()
 {
    let refusals: Vec<(&str, StreamScript)> = vec![
        (
            "refused up front",
            Err(RemoteError::Rpc {
                code: -32602,
                message: "invalid params".into(),
            }),
        ),
        // Accepted (200), then broken: not sent again, but not waited on for ever either.
        (
            "a stream that broke before its first event",
            Ok(vec![Err(RemoteError::Transport("stream broke".into()))]),
        ),
    ];
    for (why, script) in refusals {
        let w = World::new(false).await;
        let spec = spec(Updates::Off);
        let step = first_turn(&w, &spec).await;
        w.agent.script_stream(script);
        w.ring(reply("blue")).await;
        let mut step = w.wake(step, Woke::Rung, &spec).await;
        for secs in [1, 2, 4] {
            assert_eq!(
                park_shape(&step),
                (false, secs),
                "{why}: rechecked in {secs} s"
            );
            step = w.wake(step, Woke::TimedOut, &spec).await;
        }
        match &step.next {
            Some(Next::End(EndCause::Failed { reason })) => {
                assert!(reason.contains("did not take the reply"), "{why}: {reason}");
            }
            other => panic!("{why}: expected a failure, got {other:?}"),
        }
        assert_eq!(w.agent.count("SendStreamingMessage"), 2, "{why}: sent once");
    }
}

/// Measured with @a2a-js/sdk: it refuses a follow-up stream that begins with a status
/// update (-32004) while its executor takes the reply and completes a second later. The
/// stand-in judged the reply at once and ended FAILED; now a recheck hears the task move.
#[tokio::test]
async fn a_refused_reply_the_agent_took_after_all_is_heard_by_a_recheck() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.agent.script_stream(Err(RemoteError::UnsupportedOperation(
        "Task is in a terminal state or stream ended".into(),
    )));
    w.ring(reply("blue")).await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(park_shape(&step), (false, 1), "not judged at once");
    w.agent
        .set_task(task(TaskState::Completed, "Your blue widget is ready."));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true))
    );
    assert_eq!(step.cursor.unconfirmed_reply, None);
}

// Agents that cannot stream.

#[tokio::test]
async fn an_agent_that_cannot_stream_takes_turns_by_send_message_and_get_task() {
    let mut w = World::new(true).await;
    w.agent.streaming = false;
    let spec = spec(Updates::Auto);
    // SendMessage answers at once with WORKING; GetTask then shows the question.
    w.agent.script_send(Ok(standin_remote::Sent::Task(task(
        TaskState::Working,
        "thinking",
    ))));
    w.agent
        .set_task(task(TaskState::InputRequired, "Which colour?"));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    assert_eq!(w.agent.count("SendStreamingMessage"), 0);
    assert_eq!(w.agent.count("SendMessage"), 1);
    assert!(w.agent.count("GetTask") >= 1, "followed by GetTask");
    assert_eq!(
        w.notes(),
        [(1, "TASK_STATE_INPUT_REQUIRED".into(), false)],
        "the turn ends where GetTask found the task waiting"
    );
    assert!(matches!(step.next, Some(Next::Park { .. })));
    assert_eq!(
        w.store.snapshot(ID).unwrap().mode(),
        WatchMode::Push,
        "heard by push"
    );
}

#[tokio::test]
async fn without_streaming_or_push_the_watch_polls_and_follow_is_refused() {
    use standin::watch::{fit_to_streaming, misconfigured};
    assert_eq!(
        fit_to_streaming(standin::row::Watch::follow(), false).mode,
        WatchMode::Poll
    );
    assert_eq!(
        fit_to_streaming(standin::row::Watch::follow(), true).mode,
        WatchMode::Follow
    );
    let reason = misconfigured("w", Updates::Follow, false).unwrap();
    assert!(
        reason.contains("configuration") && reason.contains("streaming"),
        "{reason}"
    );
    assert_eq!(misconfigured("w", Updates::Auto, false), None);
    assert_eq!(misconfigured("w", Updates::Follow, true), None);

    // A follow park on such an agent (its watch chosen without the card) polls instead.
    let mut w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent.streaming = false;
    assert_eq!(
        w.follow(&step, "f1").await,
        FollowEnd::Reported(FollowOutcome::Gone)
    );
    assert_eq!(w.agent.count("SubscribeToTask"), 0);
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
}

#[tokio::test]
async fn a_reply_refused_by_a_passing_error_is_sent_once_more() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Err(RemoteError::Http { status: 503 }));
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Completed, "done"))]));
    w.ring(reply("blue")).await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.agent.count("SendStreamingMessage"),
        3,
        "first turn, refused, again"
    );
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_COMPLETED".into(), true))
    );
}

#[tokio::test]
async fn a_reply_that_timed_out_may_have_been_taken_so_the_stand_in_parks() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.agent.script_stream(Err(RemoteError::Timeout {
        operation: "SendStreamingMessage",
        seconds: 30,
    }));
    w.ring(reply("blue")).await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert!(
        matches!(step.next, Some(Next::Park { .. } | Next::Follow { .. })),
        "{:?}",
        step.next
    );
    assert_eq!(w.agent.count("SendStreamingMessage"), 2, "not sent twice");
}

#[test]
fn a_failure_reason_is_scrubbed_and_bounded_before_it_enters_the_state() {
    let reason = format!(
        "Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL {}",
        "x".repeat(300 * 1024)
    );
    let EndCause::Failed { reason } = EndCause::failed(&reason) else {
        panic!("a failure")
    };
    assert!(reason.len() <= 4096 + 32, "{}", reason.len());
    assert!(!reason.contains("Zm9vYmFy"));
}

/// Issue 24, 1: nothing is sent on a closed row. An execution that reaches a turn for a
/// stand-in that has ended (another execution given its id, a retry after its end) sends
/// the agent nothing and ends, leaving the row as it was.
#[tokio::test]
async fn a_turn_on_an_ended_stand_in_sends_nothing() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.store
        .close(
            ID,
            Some(&standin::state::remote_out(
                REMOTE,
                TaskState::Completed,
                "done",
            )),
        )
        .await
        .unwrap();
    let before = w.store.snapshot(ID).unwrap();
    let sends = w.agent.count("SendStreamingMessage");
    let mut reply = step.clone();
    reply.next = Some(Next::Turn {
        reply: "take over".into(),
    });
    let after = w.run(reply, &spec).await;
    assert_eq!(after.next, Some(Next::End(EndCause::Final)));
    assert_eq!(w.agent.count("SendStreamingMessage"), sends, "nothing sent");
    assert_eq!(
        w.store.snapshot(ID).unwrap(),
        before,
        "the row is as it was"
    );
}

/// An execution as Bind names it.
fn run_by(mut step: Step, name: &str) -> Step {
    step.execution = Some(Bound { name: name.into() });
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
        &w.store,
        steps::ready(&w.agent),
        Some(&spec),
        thief.clone(),
        Duration::from_secs(5),
        PACING,
    )
    .await;
    assert!(matches!(refused, Err(StepError::NotOurs(_))), "{refused:?}");
    let mut ending = thief.clone();
    ending.next = Some(Next::End(EndCause::failed("stolen")));
    let end = steps::end(&w.store, &ending, steps::ready(&w.agent)).await;
    assert!(matches!(end, Err(StepError::NotOurs(_))), "{end:?}");
    let mut waking = thief.clone();
    waking.next = Some(Next::Park {
        park: 99,
        timeout_secs: 5,
    });
    waking.park = Some(ParkOutcome::woke(Woke::Rung));
    let woke = steps::wake(&w.store, steps::ready(&w.agent), waking, None, 100, PACING).await;
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
    });
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Completed, "done"))]));
    let turned = steps::turn(
        &w.store,
        steps::ready(&w.agent),
        Some(&spec),
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
    let refused = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        early.clone(),
        None,
        100,
        PACING,
    )
    .await;
    assert!(
        matches!(refused, Err(StepError::NotOurs(_))),
        "before the roll: {refused:?}"
    );
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    step.cursor.cycles = 5;
    let rolled = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        run_by(step, ID),
        None,
        5,
        PACING,
    )
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
    let refused = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        early.clone(),
        None,
        100,
        PACING,
    )
    .await;
    assert!(
        matches!(refused, Err(StepError::NotOurs(_))),
        "a wrong lease: {refused:?}"
    );
    // The row the invocation read on its way in is judged the same way.
    let known = w.store.snapshot(ID);
    let writes = w.store.writes();
    let refused = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        early,
        known.as_ref(),
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
    let first = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        step.clone(),
        None,
        5,
        PACING,
    )
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
    let rolled = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        gen1.clone(),
        None,
        5,
        PACING,
    )
    .await
    .unwrap();
    let gen2 = rolled.successor.clone().expect("generation 2");
    assert_eq!(gen2.name, format!("{ID}__2"));
    // Its wake retried after the roll's write: the same successor, not a refusal.
    let retried = steps::wake(
        &w.store,
        steps::ready(&w.agent),
        gen1.clone(),
        None,
        5,
        PACING,
    )
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
    let closed = steps::end(&w.store, &stolen, steps::ready(&w.agent))
        .await
        .unwrap()
        .expect("closed");
    assert!(closed.row.closed, "the stand-in ended, telling the parent");
    // Generation 0, by its old name, may not come back.
    let mut old = run_by(Step::start(ID, "widgets", "again"), ID);
    old.next = Some(Next::End(EndCause::failed("back")));
    let refused = steps::end(&w.store, &old, steps::ready(&w.agent)).await;
    assert!(matches!(refused, Err(StepError::NotOurs(_))), "{refused:?}");
}

/// `updates = "poll"`: no push, no stream held; each park waits its poll interval in
/// Step Functions, and its timeout asks GetTask, until the task ends.
#[tokio::test]
async fn a_polled_stand_in_asks_gettask_each_time_its_wait_is_over() {
    let w = World::new(true).await;
    let spec = spec(Updates::Poll);
    let step = first_turn(&w, &spec).await;
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
    assert!(w.agent.configs().is_empty(), "no push registered");
    assert_eq!(park_shape(&step), (false, 2));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(
        park_shape(&step),
        (false, 4),
        "nothing new: the wait doubles"
    );
    w.agent.set_task(task(TaskState::Working, "on it"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(
        park_shape(&step),
        (false, 2),
        "a change: back to the first wait"
    );
    w.agent.set_task(task(TaskState::Completed, "done"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(w.agent.count("SubscribeToTask"), 0);
    assert_eq!(
        w.notes().last().cloned(),
        Some((3, "TASK_STATE_COMPLETED".into(), true))
    );
}

/// A direct answer (a message, no task) is a finished exchange: COMPLETED with its text,
/// streamed or not, and no watch is chosen for a task that does not exist.
#[tokio::test]
async fn a_direct_answer_completes_the_stand_in_with_its_text() {
    for streaming in [true, false] {
        let mut w = World::new(false).await;
        w.agent.streaming = streaming;
        let spec = spec(Updates::Auto);
        if streaming {
            w.agent
                .script_stream(Ok(vec![Ok(Update::Answer("The answer is 42.".into()))]));
        } else {
            w.agent
                .script_send(Ok(standin_remote::Sent::Answer("The answer is 42.".into())));
        }
        let step = w
            .run(Step::start(ID, "widgets", "What is it?"), &spec)
            .await;
        assert_eq!(
            step.next,
            Some(Next::End(EndCause::Final)),
            "streaming: {streaming}"
        );
        let notes = w.store.outbox();
        let last = notes.last().expect("a note");
        assert_eq!(
            (
                last.state,
                last.text.as_str(),
                last.is_final,
                last.remote_task_id.as_deref()
            ),
            (TaskState::Completed, "The answer is 42.", true, None),
            "streaming: {streaming}"
        );
        assert_eq!(w.store.snapshot(ID).unwrap().watch, None);
    }
}

/// a2a-sdk 0.3's HTTP+JSON cuts every subscribe of an input-required task before its
/// first event: after a few in a row the stand-in polls, since GetTask knows the task.
#[tokio::test]
async fn subscriptions_that_break_before_their_first_event_turn_into_a_poll() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    for _ in 0..standin::follow::SUBSCRIBES_BROKEN_BEFORE_POLL {
        w.agent.script_stream(Ok(vec![Err(RemoteError::Transport(
            "peer closed connection without sending complete message body".into(),
        ))]));
    }
    assert_eq!(
        w.follow(&step, "f1").await,
        FollowEnd::Reported(FollowOutcome::Gone)
    );
    assert_eq!(
        w.agent.count("SubscribeToTask"),
        standin::follow::SUBSCRIBES_BROKEN_BEFORE_POLL as usize
    );
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Poll);
}

/// A follow-up answered by a bare message says nothing of the task: GetTask decides,
/// and the stand-in does not end COMPLETED on the agent's word.
#[tokio::test]
async fn a_bare_message_answering_a_follow_up_leaves_the_task_to_get_task() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    w.agent
        .script_stream(Ok(vec![Ok(Update::Answer("noted".into()))]));
    w.agent.set_task(task(TaskState::Working, "painting"));
    let mut step = step;
    step.next = Some(Next::Turn {
        reply: "blue".into(),
    });
    let step = w.run(step, &spec).await;
    assert_ne!(
        step.next,
        Some(Next::End(EndCause::Final)),
        "{:?}",
        step.next
    );
    let last = w.notes().last().cloned();
    assert_eq!(
        last,
        Some((2, "TASK_STATE_WORKING".into(), false)),
        "GetTask's state"
    );
}

/// A task the agent no longer knows (it restarted with an in-memory store) ends the
/// stand-in FAILED after a bounded re-check (1 s, 2 s), whatever its watch: before, a
/// poll turned off and a push or off stand-in kept its last state for ever.
#[tokio::test]
async fn a_task_the_agent_forgot_ends_the_stand_in_after_a_bounded_recheck() {
    for updates in [Updates::Poll, Updates::Auto, Updates::Off] {
        let w = World::new(updates == Updates::Auto).await;
        let spec = spec(updates);
        let step = first_turn(&w, &spec).await;
        let asked = w.agent.count("GetTask");
        w.agent
            .fail_gets(vec![RemoteError::TaskNotFound("gone".into()); 3]);
        let step = w.wake(step, Woke::TimedOut, &spec).await;
        assert_eq!(
            park_shape(&step),
            (false, 1),
            "{updates:?}: re-checked in 1 s"
        );
        let step = w.wake(step, Woke::TimedOut, &spec).await;
        assert_eq!(park_shape(&step), (false, 2), "{updates:?}: then in 2 s");
        let step = w.wake(step, Woke::TimedOut, &spec).await;
        assert_eq!(
            step.next,
            Some(Next::End(EndCause::failed(GONE_REASON))),
            "{updates:?}"
        );
        assert_eq!(w.agent.count("GetTask"), asked + 3, "{updates:?}");
    }
}

/// One answer between two "not found"s: the count starts again.
#[tokio::test]
async fn a_task_found_again_resets_the_gone_count() {
    let w = World::new(false).await;
    let spec = spec(Updates::Poll);
    let step = first_turn(&w, &spec).await;
    w.agent
        .fail_gets(vec![RemoteError::TaskNotFound("gone".into()); 2]);
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.cursor.gone_checks, 2);
    w.agent
        .set_task(task(TaskState::InputRequired, "Which colour?"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.cursor.gone_checks, 0);
    assert!(
        matches!(step.next, Some(Next::Park { .. })),
        "{:?}",
        step.next
    );
}

/// An off stand-in hears nothing by itself: at its idle timeout it asks, and a task that
/// ended meanwhile ends it (before, it re-parked for ever).
#[tokio::test]
async fn an_off_stand_in_asks_at_its_idle_timeout() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert_eq!(park_shape(&step), PLAIN);
    w.agent.set_task(task(TaskState::Completed, "done"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(w.agent.count("GetTask"), 1);
}

/// At its deadline a stand-in cancels the remote task and tells the parent, in a final
/// note, that the deadline ended it.
#[tokio::test]
async fn a_stand_in_past_its_deadline_cancels_the_remote_task_and_says_so() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    let deadline = step
        .cursor
        .deadline_at
        .expect("a deadline from the first turn");
    assert!(w.park(&step, "p1").await);
    let late = Pacing {
        now_secs: deadline,
        ..PACING
    };
    let step = w.wake_paced(step, Woke::TimedOut, &spec, late).await;
    assert!(
        matches!(step.next, Some(Next::End(EndCause::Deadline { .. }))),
        "{:?}",
        step.next
    );
    w.end(&step).await;
    assert_eq!(w.agent.count("CancelTask"), 1);
    let note = w.store.outbox().pop().unwrap();
    assert_eq!(note.state, TaskState::Canceled);
    assert!(note.is_final);
    assert!(note.text.contains("deadline"), "{}", note.text);
}

/// A polled agent that stops answering ends its stand-in failed once it has been
/// unreachable for its `max_unreachable`, not before; the note names the agent.
#[tokio::test]
async fn an_agent_unreachable_for_its_bound_ends_its_stand_in_failed() {
    let w = World::new(true).await;
    let spec = spec(Updates::Poll);
    let mut step = first_turn(&w, &spec).await;
    let down = || RemoteError::Transport("connection refused".into());
    let paced = |now_secs| Pacing {
        max_unreachable_secs: 120,
        now_secs,
        ..PACING
    };
    for now in [1_000, 1_060, 1_119] {
        w.agent.fail_gets(vec![down(), down(), down()]);
        assert!(w.park(&step, &format!("p{now}")).await);
        step = w.wake_paced(step, Woke::TimedOut, &spec, paced(now)).await;
        assert!(
            matches!(step.next, Some(Next::Park { .. })),
            "{now}: {:?}",
            step.next
        );
    }
    w.agent.fail_gets(vec![down(), down(), down()]);
    assert!(w.park(&step, "p-last").await);
    step = w
        .wake_paced(step, Woke::TimedOut, &spec, paced(1_120))
        .await;
    match &step.next {
        Some(Next::End(EndCause::Failed { reason })) => {
            assert!(reason.contains("\"widgets\""), "{reason}");
            assert!(reason.contains("transport"), "{reason}");
            assert!(
                !reason.contains("connection refused"),
                "no transport text: {reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    w.end(&step).await;
    let note = w.store.outbox().pop().unwrap();
    assert_eq!((note.state, note.is_final), (TaskState::Failed, true));
}
