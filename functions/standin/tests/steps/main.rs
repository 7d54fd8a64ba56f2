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
use standin::outbox::Teller;
use standin::push::receiver;
use standin::row::Closed;
use standin::row::memory::MemoryStore;
use standin::row::{Drained, StoreError};
use standin::row::{FollowOutcome, Guard, Row, WakeEvent, WatchMode};
use standin::row::{Notes, StandIns};
use standin::steps;
use standin::steps::Invocation;
use standin::steps::ParkOutcome;
use standin::steps::next::{
    BACKSTOP_FIRST_SECS, FOLLOW_PARK_SECS, FOLLOW_RETRY_SECS, GONE_REASON, IDLE_RECHECK_SECS, Next,
    Pacing, Woke,
};
use standin::steps::{ExecutionName, Owner, Step, StepError};
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
        file_delivery: standin::agents::FileDelivery::Link,
        card_signing: None,
        preferred_binding: None,
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
    /// The teller a step of this world tells through: notes committed, nothing sent at
    /// once, no artifacts.
    fn teller(&self) -> Teller<'_, MemoryStore> {
        Teller::new(&self.store)
    }

    /// An invocation of this world's stand-in, its agent at hand.
    fn invocation(&self) -> Invocation<'_, MemoryStore, &FakeAgent> {
        Invocation::reaching(self.teller(), &self.agent)
    }

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
                        &self.invocation().with_spec(Some(spec).cloned()),
                        step,
                        Duration::from_secs(5),
                        PACING,
                    )
                    .await
                    .unwrap();
                }
                Some(Next::Register) => {
                    step = steps::register(
                        &self.invocation().with_spec(Some(spec).cloned()),
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
            Some(taken) => steps::wake(&self.invocation(), step, Some(taken), 100, pacing)
                .await
                .unwrap(),
            None => {
                let known = self.store.snapshot(ID);
                steps::wake(
                    &self.invocation().with_row(known.as_ref().cloned()),
                    step,
                    None,
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
            &self.teller(),
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
        steps::end(&Invocation::reaching(Teller::new(&self.store), agent), step)
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

mod follow;
mod generations;
mod heard;
mod invocation;
mod parks;
mod polls_and_ends;
mod push;
mod races;
mod retries;
mod turns;
mod uploads;
