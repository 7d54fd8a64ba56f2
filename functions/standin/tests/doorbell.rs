//! ARCHITECTURE.md §3, one test (or more) per rule, with the races run step by step
//! against the in-memory store (each store call is atomic, like one UpdateItem).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use standin::a2a::{A2aError, EventStream, Message, Task, TaskPushNotificationConfig, TaskState};
use standin::domain::doorbell::{self, EndCause, follow_should_stop};
use standin::domain::push::PushToken;
use standin::domain::receiver;
use standin::domain::remote::{RemoteOut, remote_out};
use standin::domain::row::{FollowOutcome, FollowReport, Guard, Row, WakeEvent, Watch, WatchMode};
use standin::memory::{FakeAgent, MemoryDoorbell, MemoryQueue, MemoryStore};
use standin::ports::{AgentPort, DoorbellError, RowStore, StoreError};

use std::sync::Arc;

const ID: &str = "local-1";
const REMOTE: &str = "remote-1";

async fn open_row(store: &MemoryStore, mode: WatchMode) -> PushToken {
    let token = PushToken::generate();
    let mut row = Row::new(ID, "agent-a");
    row.remote_task_id = Some(REMOTE.into());
    row.watch = Some(Watch {
        mode,
        config_id: Some("standin-local-1".into()),
        token_digest: (mode == WatchMode::Push).then(|| token.digest()),
    });
    row.last = Some(remote_out(
        REMOTE,
        TaskState::InputRequired,
        None,
        "What colour?",
    ));
    store.create(&row).await.expect("row created");
    token
}

fn reply(text: &str) -> WakeEvent {
    WakeEvent::Reply { text: text.into() }
}

// Rule 1: ring = record (never on a closed row), then SendTaskSuccess with the stored token.

#[tokio::test]
async fn ring_records_then_rings_the_stored_token() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, "tok-1").await.expect("parked");
    let row = doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("rung");
    assert_eq!(row.pending.replies, ["blue"]);
    assert_eq!(bell.rings(), ["tok-1"]);
}

#[tokio::test]
async fn ring_without_a_park_token_only_records() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("recorded");
    assert!(bell.rings().is_empty());
    assert_eq!(store.snapshot(ID).expect("row").pending.replies, ["blue"]);
}

#[tokio::test]
async fn ring_on_a_closed_row_records_nothing_and_rings_nothing() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, "tok-1").await.expect("parked");
    store.close(ID, true).await.expect("closed");
    let writes = store.writes();
    let err = doorbell::ring(&store, &bell, ID, &reply("late"), &Guard::Open)
        .await
        .expect_err("closed rows take no events");
    assert_eq!(err, StoreError::Refused(ID.into()));
    assert_eq!(store.writes(), writes);
    assert!(bell.rings().is_empty());
}

#[tokio::test]
async fn a_failed_or_refused_ring_is_harmless_and_the_next_park_sees_the_event() {
    for failure in [
        DoorbellError::ParkOver,
        DoorbellError::Backend("throttled".into()),
    ] {
        let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
        open_row(&store, WatchMode::Off).await;
        store.park(ID, "tok-1").await.expect("parked");
        bell.fail_with(Some(failure.clone()));
        doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
            .await
            .expect("a failed ring is not an error");
        bell.fail_with(None);
        doorbell::park(&store, &bell, ID, "tok-2")
            .await
            .expect("parked");
        assert_eq!(
            bell.rings(),
            ["tok-1", "tok-2"],
            "{failure:?}: the new park rang itself"
        );
        let drained = doorbell::drain(&store, ID).await.expect("drained");
        assert_eq!(drained.event, Some(reply("blue")));
    }
}

// Rule 2: park = store the token (new epoch); ring yourself if anything is pending.

#[tokio::test]
async fn park_with_nothing_pending_waits_and_starts_a_new_epoch() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    let first = doorbell::park(&store, &bell, ID, "tok-1")
        .await
        .expect("parked");
    let second = doorbell::park(&store, &bell, ID, "tok-2")
        .await
        .expect("parked");
    assert_eq!((first.epoch, second.epoch), (1, 2));
    assert_eq!(second.park_token.as_deref(), Some("tok-2"));
    assert!(bell.rings().is_empty());
}

#[tokio::test]
async fn race_ring_between_drain_and_park_is_not_lost() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, "tok-1").await.expect("parked");
    // The wake drains an empty row...
    assert_eq!(
        doorbell::drain(&store, ID).await.expect("drained").event,
        None
    );
    // ...a reply lands now and rings the old, consumed token...
    doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("recorded");
    // ...and the next park sees it and rings itself at once.
    doorbell::park(&store, &bell, ID, "tok-2")
        .await
        .expect("parked");
    assert_eq!(bell.rings(), ["tok-1", "tok-2"]);
    assert_eq!(
        doorbell::drain(&store, ID).await.expect("drained").event,
        Some(reply("blue"))
    );
}

#[tokio::test]
async fn park_on_a_closed_row_is_refused() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.close(ID, true).await.expect("closed");
    let err = doorbell::park(&store, &bell, ID, "tok")
        .await
        .expect_err("closed");
    assert_eq!(err, StoreError::Refused(ID.into()));
}

// Rule 3: drain takes by priority; one reply per turn; the rest stay.

#[tokio::test]
async fn drain_priority_is_cancel_reply_push_follow() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Push).await;
    let events = [
        WakeEvent::Follow {
            epoch: 0,
            outcome: FollowOutcome::WindowOver,
        },
        WakeEvent::Push {
            claimed: Some(TaskState::Working),
        },
        reply("first"),
        reply("second"),
        WakeEvent::Cancel {
            reason: "parent gave up".into(),
        },
    ];
    for e in &events {
        store.record(ID, e, &Guard::Open).await.expect("recorded");
    }
    let mut order = Vec::new();
    while let Some(e) = doorbell::drain(&store, ID).await.expect("drained").event {
        order.push(e);
    }
    assert_eq!(
        order,
        [
            WakeEvent::Cancel {
                reason: "parent gave up".into()
            },
            reply("first"),
            reply("second"),
            WakeEvent::Push {
                claimed: Some(TaskState::Working)
            },
            WakeEvent::Follow {
                epoch: 0,
                outcome: FollowOutcome::WindowOver
            },
        ]
    );
    drop(bell);
}

#[tokio::test]
async fn race_ring_during_a_drain_stays_for_the_next_park() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Off).await;
    store.park(ID, "tok-1").await.expect("parked");
    store
        .record(ID, &reply("one"), &Guard::Open)
        .await
        .expect("recorded");
    let drained = doorbell::drain(&store, ID).await.expect("drained");
    assert_eq!(drained.event, Some(reply("one")));
    // A second reply arrives while the wake works on the first.
    doorbell::ring(&store, &bell, ID, &reply("two"), &Guard::Open)
        .await
        .expect("recorded");
    doorbell::park(&store, &bell, ID, "tok-2")
        .await
        .expect("parked");
    assert_eq!(bell.rings().last().map(String::as_str), Some("tok-2"));
    assert_eq!(
        doorbell::drain(&store, ID).await.expect("drained").event,
        Some(reply("two"))
    );
}

#[tokio::test]
async fn a_newer_push_replaces_the_older_claim() {
    let store = MemoryStore::new();
    open_row(&store, WatchMode::Push).await;
    for claimed in [Some(TaskState::Working), Some(TaskState::Completed)] {
        store
            .record(ID, &WakeEvent::Push { claimed }, &Guard::Open)
            .await
            .expect("recorded");
    }
    let drained = doorbell::drain(&store, ID).await.expect("drained");
    assert_eq!(
        drained.event,
        Some(WakeEvent::Push {
            claimed: Some(TaskState::Completed)
        })
    );
    assert_eq!(
        doorbell::drain(&store, ID).await.expect("drained").event,
        None
    );
}

// Rule 4: the fence. A late follow from an earlier park changes nothing.

fn working(text: &str) -> RemoteOut {
    remote_out(REMOTE, TaskState::Working, None, text)
}

#[tokio::test]
async fn race_late_follow_from_an_old_epoch_is_fenced_out() {
    let (store, bell, queue) = (
        MemoryStore::new(),
        MemoryDoorbell::new(),
        MemoryQueue::new(),
    );
    open_row(&store, WatchMode::Follow).await;
    let old = doorbell::park(&store, &bell, ID, "tok-1")
        .await
        .expect("parked");
    // A reply woke the stand-in; it turned and parked again before the old follow ended.
    let new = doorbell::park(&store, &bell, ID, "tok-2")
        .await
        .expect("parked");
    let before = store.snapshot(ID).expect("row");
    let err = doorbell::follow_report(
        &store,
        &bell,
        &queue,
        &old,
        old.epoch,
        Some(&working("stale")),
        FollowOutcome::WindowOver,
    )
    .await
    .expect_err("fenced");
    assert_eq!(err, StoreError::Refused(ID.into()));
    assert_eq!(store.snapshot(ID).expect("row"), before, "nothing written");
    assert!(queue.notes().is_empty() && bell.rings().is_empty());
    // The current follow's report goes through: applied, told, recorded, rung.
    doorbell::follow_report(
        &store,
        &bell,
        &queue,
        &new,
        new.epoch,
        Some(&working("fresh")),
        FollowOutcome::WindowOver,
    )
    .await
    .expect("current epoch");
    let row = store.snapshot(ID).expect("row");
    assert_eq!(row.last.as_ref().map(|l| l.text.as_str()), Some("fresh"));
    assert_eq!(queue.notes().len(), 1);
    assert_eq!(bell.rings(), ["tok-2"]);
    assert_eq!(
        row.pending.follow,
        Some(FollowReport {
            epoch: new.epoch,
            outcome: FollowOutcome::Changed { is_final: false }
        })
    );
}

#[tokio::test]
async fn a_follow_that_finds_nothing_new_reports_unchanged() {
    let (store, bell, queue) = (
        MemoryStore::new(),
        MemoryDoorbell::new(),
        MemoryQueue::new(),
    );
    open_row(&store, WatchMode::Follow).await;
    let row = doorbell::park(&store, &bell, ID, "tok-1")
        .await
        .expect("parked");
    let same = remote_out(REMOTE, TaskState::InputRequired, None, "What colour?");
    doorbell::follow_report(
        &store,
        &bell,
        &queue,
        &row,
        row.epoch,
        Some(&same),
        FollowOutcome::WindowOver,
    )
    .await
    .expect("reported");
    assert!(queue.notes().is_empty());
    assert_eq!(
        store.snapshot(ID).expect("row").pending.follow,
        Some(FollowReport {
            epoch: 1,
            outcome: FollowOutcome::Unchanged
        })
    );
}

#[tokio::test]
async fn a_follow_stops_when_its_park_is_over() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    let row = doorbell::park(&store, &bell, ID, "tok-1")
        .await
        .expect("parked");
    assert!(!follow_should_stop(&row, row.epoch));
    let rung = doorbell::ring(&store, &bell, ID, &reply("blue"), &Guard::Open)
        .await
        .expect("rung");
    assert!(follow_should_stop(&rung, row.epoch), "a reply is waiting");
    let reparked = store.park(ID, "tok-2").await.expect("parked");
    assert!(follow_should_stop(&reparked, row.epoch), "a newer park");
    let (closed, _) = store.close(ID, true).await.expect("closed");
    assert!(follow_should_stop(&closed, closed.epoch), "closed");
}

// Apply: every change reaches the parent once, in order; final states only via the end.

#[tokio::test]
async fn apply_tells_each_change_once_in_order() {
    let (store, queue) = (MemoryStore::new(), MemoryQueue::new());
    open_row(&store, WatchMode::Push).await;
    let row = store.snapshot(ID).expect("row");
    let steps = [
        working("a"),
        working("a"),
        working("b"),
        remote_out(REMOTE, TaskState::InputRequired, None, "again?"),
    ];
    let mut changed = Vec::new();
    for out in &steps {
        changed.push(
            doorbell::apply(&store, &queue, &row, out, &Guard::Open)
                .await
                .expect("applied"),
        );
    }
    assert_eq!(changed, [true, false, true, true]);
    let notes = queue.notes();
    assert_eq!(notes.iter().map(|n| n.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        notes.iter().map(|n| n.text.as_str()).collect::<Vec<_>>(),
        ["a", "b", "again?"]
    );
    assert!(
        notes
            .iter()
            .all(|n| !n.is_final && n.remote_task_id == REMOTE && n.agent == "agent-a")
    );
}

// Rule 5: close first.

/// An agent that looks at the row when the end deletes its push config.
struct WatchingAgent {
    inner: FakeAgent,
    store: Arc<MemoryStore>,
    closed_at_delete: std::sync::Mutex<Vec<bool>>,
}

impl AgentPort for WatchingAgent {
    fn push_supported(&self) -> bool {
        true
    }
    fn streaming_supported(&self) -> bool {
        true
    }
    async fn send_streaming_message(&self, m: &Message) -> Result<EventStream, A2aError> {
        self.inner.send_streaming_message(m).await
    }
    async fn get_task(&self, id: &str) -> Result<Task, A2aError> {
        self.inner.get_task(id).await
    }
    async fn subscribe_to_task(&self, id: &str) -> Result<EventStream, A2aError> {
        self.inner.subscribe_to_task(id).await
    }
    async fn create_push_config(
        &self,
        c: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.inner.create_push_config(c).await
    }
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), A2aError> {
        let closed = self.store.snapshot(ID).is_some_and(|r| r.closed);
        self.closed_at_delete.lock().expect("lock").push(closed);
        self.inner.delete_push_config(task_id, config_id).await
    }
    async fn cancel_task(&self, id: &str) -> Result<Task, A2aError> {
        self.inner.cancel_task(id).await
    }
}

#[tokio::test]
async fn end_closes_before_deleting_the_push_config_and_a_failing_delete_does_not_stop_it() {
    let store = Arc::new(MemoryStore::new());
    let queue = MemoryQueue::new();
    let token = open_row(&store, WatchMode::Push).await;
    let agent = WatchingAgent {
        inner: FakeAgent::new(true),
        store: store.clone(),
        closed_at_delete: Default::default(),
    };
    agent.inner.fail_deletes(5);
    let cause = EndCause::Cancelled {
        reason: "no longer needed".into(),
    };
    let note = doorbell::end(store.as_ref(), Some(&agent), &queue, ID, &cause)
        .await
        .expect("ended");
    assert_eq!(
        *agent.closed_at_delete.lock().expect("lock"),
        [true, true],
        "closed first; two attempts"
    );
    assert_eq!(agent.inner.count("CancelTask"), 1);
    assert_eq!(
        (note.state.as_str(), note.is_final),
        ("TASK_STATE_CANCELED", true)
    );
    assert_eq!(queue.notes(), [note]);
    // From now on every push is refused, and nothing is written.
    let writes = store.writes();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-a2a-notification-token",
        token.expose().parse().expect("header"),
    );
    let body = format!(
        r#"{{"statusUpdate":{{"taskId":"{REMOTE}","status":{{"state":"TASK_STATE_WORKING"}}}}}}"#
    );
    let bell = MemoryDoorbell::new();
    let answer = receiver::receive(store.as_ref(), &bell, ID, &headers, body.as_bytes()).await;
    assert_eq!(answer.status, 401);
    assert_eq!(store.writes(), writes);
    assert!(bell.rings().is_empty());
}

#[tokio::test]
async fn end_on_a_final_state_sends_the_final_note_once_and_cancels_nothing() {
    let (store, queue, agent) = (MemoryStore::new(), MemoryQueue::new(), FakeAgent::new(true));
    open_row(&store, WatchMode::Push).await;
    let row = store.snapshot(ID).expect("row");
    let done = remote_out(
        REMOTE,
        TaskState::Completed,
        None,
        "Your blue widget is ready.",
    );
    doorbell::apply(&store, &queue, &row, &done, &Guard::Open)
        .await
        .expect("applied");
    assert!(queue.notes().is_empty(), "final states go out with the end");
    let note = doorbell::end(&store, Some(&agent), &queue, ID, &EndCause::Final)
        .await
        .expect("ended");
    assert_eq!(
        (note.state.as_str(), note.text.as_str(), note.is_final),
        ("TASK_STATE_COMPLETED", "Your blue widget is ready.", true)
    );
    assert_eq!(
        note.seq, 1,
        "the number the final state took when applied: no gap"
    );
    assert_eq!(
        agent.calls(),
        ["DeleteTaskPushNotificationConfig:remote-1/standin-local-1"]
    );
    assert_eq!(queue.notes().len(), 1);
}

#[tokio::test]
async fn end_in_follow_or_off_mode_deletes_nothing() {
    for mode in [WatchMode::Follow, WatchMode::Off] {
        let (store, queue, agent) = (MemoryStore::new(), MemoryQueue::new(), FakeAgent::new(true));
        open_row(&store, mode).await;
        doorbell::end(&store, Some(&agent), &queue, ID, &EndCause::Final)
            .await
            .expect("ended");
        assert_eq!(
            agent.count("DeleteTaskPushNotificationConfig"),
            0,
            "{mode:?}"
        );
        assert!(store.snapshot(ID).expect("row").closed);
    }
}

#[tokio::test]
async fn race_push_after_close_is_refused_even_past_the_read() {
    // The close lands between the receiver's read of the row and its write.
    struct ClosingStore(MemoryStore);
    impl RowStore for ClosingStore {
        async fn create(&self, row: &Row) -> Result<Row, StoreError> {
            self.0.create(row).await
        }
        async fn get(&self, id: &str) -> Result<Option<Row>, StoreError> {
            let row = self.0.get(id).await;
            self.0.close(id, true).await?;
            row
        }
        async fn record(&self, id: &str, e: &WakeEvent, g: &Guard) -> Result<Row, StoreError> {
            self.0.record(id, e, g).await
        }
        async fn park(&self, id: &str, t: &str) -> Result<Row, StoreError> {
            self.0.park(id, t).await
        }
        async fn drain(&self, id: &str) -> Result<standin::ports::Drained, StoreError> {
            self.0.drain(id).await
        }
        async fn apply(
            &self,
            id: &str,
            o: &RemoteOut,
            g: &Guard,
        ) -> Result<standin::ports::Applied, StoreError> {
            self.0.apply(id, o, g).await
        }
        async fn set_remote(&self, id: &str, r: &str, c: Option<&str>) -> Result<Row, StoreError> {
            self.0.set_remote(id, r, c).await
        }
        async fn set_watch(&self, id: &str, w: &Watch) -> Result<Row, StoreError> {
            self.0.set_watch(id, w).await
        }
        async fn close(&self, id: &str, n: bool) -> Result<(Row, u64), StoreError> {
            self.0.close(id, n).await
        }
        async fn list(
            &self,
            after: Option<&str>,
            limit: u32,
        ) -> Result<(Vec<Row>, Option<String>), StoreError> {
            self.0.list(after, limit).await
        }
    }
    let store = ClosingStore(MemoryStore::new());
    let token = open_row(&store.0, WatchMode::Push).await;
    store.0.park(ID, "tok-1").await.expect("parked");
    let bell = MemoryDoorbell::new();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "x-a2a-notification-token",
        token.expose().parse().expect("header"),
    );
    let body = format!(
        r#"{{"statusUpdate":{{"taskId":"{REMOTE}","status":{{"state":"TASK_STATE_WORKING"}}}}}}"#
    );
    let answer = receiver::receive(&store, &bell, ID, &headers, body.as_bytes()).await;
    assert_eq!(answer.status, 401);
    assert!(bell.rings().is_empty());
    assert!(store.0.snapshot(ID).expect("row").pending.is_empty());
}

#[tokio::test]
async fn memory_store_lists_in_pages_without_repeats() {
    let store = MemoryStore::new();
    for i in 0..5 {
        store
            .create(&Row::new(format!("r{i}"), "a"))
            .await
            .expect("created");
    }
    let (first, next) = store.list(None, 2).await.expect("page 1");
    assert_eq!(
        first.iter().map(|r| r.task_id.as_str()).collect::<Vec<_>>(),
        ["r0", "r1"]
    );
    assert_eq!(next.as_deref(), Some("r1"));
    let (second, next) = store.list(next.as_deref(), 2).await.expect("page 2");
    assert_eq!(
        second
            .iter()
            .map(|r| r.task_id.as_str())
            .collect::<Vec<_>>(),
        ["r2", "r3"]
    );
    let (last, next) = store.list(next.as_deref(), 2).await.expect("page 3");
    assert_eq!(
        last.iter().map(|r| r.task_id.as_str()).collect::<Vec<_>>(),
        ["r4"]
    );
    assert_eq!(next, None);
}
