//! The steps driven the way the state machine drives them, over in-memory ports and a
//! scripted agent: a whole stand-in's life without AWS.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::time::Duration;

use http::HeaderMap;
use standin::a2a::{
    A2aError, Message, Part, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use standin::config::{AgentSpec, Updates};
use standin::domain::doorbell::{self, EndCause};
use standin::domain::receiver;
use standin::domain::row::{Guard, Row, WakeEvent, WatchMode};
use standin::domain::wake::{Next, Woke};
use standin::handlers::{self, FollowEnd, FollowTiming, ParkOutcome, Step};
use standin::memory::{FakeAgent, MemoryDoorbell, MemoryQueue, MemoryStore};
use standin::ports::RowStore;

const ID: &str = "sub-1";
const REMOTE: &str = "r-1";
const BASE: &str = "https://push.example/Prod";

fn status(state: TaskState, text: &str) -> TaskStatus {
    TaskStatus {
        state,
        message: Some(Message {
            parts: vec![Part::text(text)],
            ..Message::default()
        }),
        timestamp: None,
    }
}

fn task(state: TaskState, text: &str) -> Task {
    Task {
        id: REMOTE.into(),
        context_id: "ctx-1".into(),
        status: status(state, text),
        ..Task::default()
    }
}

fn update(state: TaskState, text: &str) -> StreamResponse {
    StreamResponse {
        status_update: Some(TaskStatusUpdateEvent {
            task_id: REMOTE.into(),
            context_id: "ctx-1".into(),
            status: status(state, text),
            metadata: None,
        }),
        ..StreamResponse::default()
    }
}

fn first_event() -> StreamResponse {
    StreamResponse {
        task: Some(task(TaskState::Submitted, "")),
        ..StreamResponse::default()
    }
}

fn spec(updates: Updates) -> AgentSpec {
    AgentSpec {
        id: "widgets".into(),
        url: "http://127.0.0.1:1".into(),
        version: None,
        updates,
        follow_interval: Duration::from_secs(1),
        participant: None,
    }
}

struct World {
    store: MemoryStore,
    bell: MemoryDoorbell,
    queue: MemoryQueue,
    agent: FakeAgent,
}

impl World {
    async fn new(push: bool) -> Self {
        let w = Self {
            store: MemoryStore::new(),
            bell: MemoryDoorbell::new(),
            queue: MemoryQueue::new(),
            agent: FakeAgent::new(push),
        };
        w.store.create(&Row::new(ID, "widgets")).await.unwrap();
        w
    }

    /// Runs steps as the state machine routes them, until a park or the end.
    async fn run(&self, mut step: Step, spec: &AgentSpec) -> Step {
        loop {
            match step.next.clone() {
                None | Some(Next::Turn { .. }) => {
                    step = handlers::steps::turn(
                        &self.store,
                        &self.agent,
                        &self.queue,
                        step,
                        Duration::from_secs(5),
                    )
                    .await
                    .unwrap();
                }
                Some(Next::Register) => {
                    step = handlers::steps::register_watch(
                        &self.store,
                        &self.agent,
                        Some(spec),
                        Some(BASE),
                        step,
                    )
                    .await
                    .unwrap();
                }
                Some(Next::Fetch { .. }) => {
                    step = handlers::steps::fetch(&self.store, &self.agent, &self.queue, step)
                        .await
                        .unwrap();
                }
                Some(Next::Park { .. }) | Some(Next::End(_)) | Some(Next::Roll) => return step,
            }
        }
    }

    async fn wake(&self, mut step: Step, woke: Woke, spec: &AgentSpec) -> Step {
        step.park = Some(ParkOutcome { woke });
        let step = handlers::steps::wake_up(&self.store, step, 100)
            .await
            .unwrap();
        self.run(step, spec).await
    }

    fn notes(&self) -> Vec<(u64, String, bool)> {
        self.queue
            .notes()
            .into_iter()
            .map(|n| (n.seq, n.state, n.is_final))
            .collect()
    }
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
    assert_eq!(
        step.next,
        Some(Next::Park {
            follow: false,
            timeout_secs: None
        })
    );
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
    handlers::steps::park(&w.store, &w.bell, ID, "park-1")
        .await
        .unwrap();

    // The agent moves on and pushes; the receiver rings; the stand-in fetches.
    w.agent
        .set_task(task(TaskState::Working, "Building a blue widget"));
    let token = w.agent.configs()[0].token.clone().unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("x-a2a-notification-token", token.parse().unwrap());
    let body =
        serde_json::to_vec(&update(TaskState::Working, "forged text is never used")).unwrap();
    assert_eq!(
        receiver::receive(&w.store, &w.bell, ID, &headers, &body)
            .await
            .status,
        204
    );
    assert_eq!(w.bell.rings(), ["park-1"]);
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::Park {
            follow: false,
            timeout_secs: None
        }),
        "fetch agreed with the claim"
    );
    handlers::steps::park(&w.store, &w.bell, ID, "park-2")
        .await
        .unwrap();

    // The parent replies; the turn runs to completion; the end closes and deletes.
    doorbell::ring(
        &w.store,
        &w.bell,
        ID,
        &WakeEvent::Reply {
            text: "blue".into(),
        },
        &Guard::Open,
    )
    .await
    .unwrap();
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
    let note = handlers::steps::finish(&w.store, Some(&w.agent), &w.queue, &step)
        .await
        .unwrap();
    assert_eq!(
        (note.state.as_str(), note.text.as_str()),
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
    assert_eq!(
        receiver::receive(&w.store, &w.bell, ID, &headers, &body)
            .await
            .status,
        401,
        "closed"
    );
}

#[tokio::test]
async fn a_push_before_get_task_agrees_is_found_by_a_recheck() {
    let w = World::new(true).await;
    let spec = spec(Updates::Auto);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    handlers::steps::park(&w.store, &w.bell, ID, "p1")
        .await
        .unwrap();
    let token = w.agent.configs()[0].token.clone().unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("x-a2a-notification-token", token.parse().unwrap());
    let body = serde_json::to_vec(&update(TaskState::Canceled, "")).unwrap();
    assert_eq!(
        receiver::receive(&w.store, &w.bell, ID, &headers, &body)
            .await
            .status,
        204
    );
    // GetTask still says INPUT_REQUIRED: wait 1 s and look again.
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::Park {
            follow: false,
            timeout_secs: Some(1)
        })
    );
    w.agent
        .set_task(task(TaskState::Canceled, "cancelled by the agent"));
    let step = w.wake(step, Woke::TimedOut, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(
        w.agent.count("GetTask"),
        3,
        "reconcile, push fetch, one recheck"
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
    assert_eq!(
        step.next,
        Some(Next::Park {
            follow: true,
            timeout_secs: None
        }),
        "no push on the card: follow"
    );
    // The first subscription ends unchanged; the second shows a change.
    w.agent.script_stream(Ok(vec![Ok(StreamResponse {
        task: Some(task(TaskState::InputRequired, "q")),
        ..StreamResponse::default()
    })]));
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Working, "working now"))]));
    let timing = FollowTiming {
        window: Duration::from_secs(30),
        interval: Duration::from_millis(10),
        heartbeat: Duration::from_secs(10),
    };
    let end = handlers::follow(&w.store, &w.bell, &w.queue, &w.agent, ID, "f1", timing)
        .await
        .unwrap();
    assert!(
        matches!(
            end,
            FollowEnd::Reported(standin::domain::row::FollowOutcome::Changed { is_final: false })
        ),
        "{end:?}"
    );
    assert_eq!(
        w.agent.count("SubscribeToTask"),
        2,
        "re-subscribed after an unchanged end"
    );
    assert_eq!(w.bell.rings(), ["f1"]);
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::Park {
            follow: true,
            timeout_secs: None
        })
    );
    assert_eq!(
        w.notes().last().map(|n| n.1.clone()),
        Some("TASK_STATE_WORKING".into())
    );
}

#[tokio::test]
async fn a_terminal_subscribe_fetches_and_a_gone_task_turns_the_watch_off() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    let timing = FollowTiming {
        window: Duration::from_secs(30),
        interval: Duration::from_millis(10),
        heartbeat: Duration::from_secs(10),
    };
    w.agent
        .script_stream(Err(A2aError::UnsupportedOperation("terminal".into())));
    w.agent.set_task(task(TaskState::Completed, "done"));
    handlers::follow(&w.store, &w.bell, &w.queue, &w.agent, ID, "f1", timing)
        .await
        .unwrap();
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));

    let w = World::new(false).await;
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    w.agent
        .script_stream(Err(A2aError::TaskNotFound("gone".into())));
    handlers::follow(&w.store, &w.bell, &w.queue, &w.agent, ID, "f1", timing)
        .await
        .unwrap();
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Off);
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::Park {
            follow: false,
            timeout_secs: None
        })
    );
}

#[tokio::test]
async fn off_watch_and_a_cancel_while_parked() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    assert_eq!(
        step.next,
        Some(Next::Park {
            follow: false,
            timeout_secs: None
        })
    );
    assert_eq!(w.store.snapshot(ID).unwrap().mode(), WatchMode::Off);
    assert!(w.agent.configs().is_empty());
    handlers::steps::park(&w.store, &w.bell, ID, "p1")
        .await
        .unwrap();
    doorbell::ring(
        &w.store,
        &w.bell,
        ID,
        &WakeEvent::Cancel {
            reason: "not needed".into(),
        },
        &Guard::Open,
    )
    .await
    .unwrap();
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::End(EndCause::Cancelled {
            reason: "not needed".into()
        }))
    );
    let note = handlers::steps::finish(&w.store, Some(&w.agent), &w.queue, &step)
        .await
        .unwrap();
    assert_eq!(
        (note.state.as_str(), note.is_final),
        ("TASK_STATE_CANCELED", true)
    );
    assert_eq!(w.agent.count("CancelTask"), 1);
}

#[tokio::test]
async fn a_turn_that_cannot_reach_the_agent_ends_as_failed() {
    let w = World::new(true).await;
    w.agent
        .script_stream(Err(A2aError::Transport("connection failed".into())));
    let step = w
        .run(Step::start(ID, "widgets", "go"), &spec(Updates::Auto))
        .await;
    assert!(
        matches!(step.next, Some(Next::End(EndCause::Failed { .. }))),
        "{:?}",
        step.next
    );
}

#[tokio::test]
async fn rolling_keeps_pending_events_for_the_successor() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    let mut step = w.run(Step::start(ID, "widgets", "go"), &spec).await;
    doorbell::ring(
        &w.store,
        &w.bell,
        ID,
        &WakeEvent::Reply {
            text: "kept".into(),
        },
        &Guard::Open,
    )
    .await
    .unwrap();
    step.park = Some(ParkOutcome { woke: Woke::Rung });
    step.cursor.cycles = 5;
    let rolled = handlers::steps::wake_up(&w.store, step, 5).await.unwrap();
    assert_eq!(rolled.next, Some(Next::Roll));
    let successor = rolled.successor.expect("successor");
    assert_eq!(successor.name, format!("{ID}__1"));
    assert_eq!(
        successor.input.next,
        Some(Next::Park {
            follow: true,
            timeout_secs: None
        }),
        "the successor follows too"
    );
    assert_eq!(successor.input.cursor.cycles, 0);
    assert_eq!(
        w.store.snapshot(ID).unwrap().pending.replies,
        ["kept"],
        "nothing drained before the roll"
    );
}
