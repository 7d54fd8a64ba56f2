//! Apply and rule 5: every change noted once in order, and the end closes before anything slow.

use super::*;

// Apply: every change reaches the outbox once, in order, in the same write as the row.

#[tokio::test]
async fn apply_notes_each_change_once_in_order() {
    let store = MemoryStore::new();
    open_row(&store, WatchMode::Push).await;
    let steps = [
        working("a"),
        working("a"),
        working("b"),
        remote_out(REMOTE, TaskState::InputRequired, "again?"),
    ];
    let mut seqs = Vec::new();
    for out in &steps {
        seqs.push(
            match doorbell::apply(&Teller::new(&store), ID, out, &Guard::Open)
                .await
                .expect("applied")
            {
                Applied::Changed { note, row } => {
                    // The row keeps the change as applied, and when its note was told.
                    let kept = RemoteOut {
                        noted_at: Some(note.at.clone()),
                        ..out.clone()
                    };
                    assert_eq!((row.seq, row.last.as_ref()), (note.seq, Some(&kept)));
                    Some(note.seq)
                }
                Applied::Unchanged => None,
            },
        );
    }
    assert_eq!(seqs, [Some(1), None, Some(2), Some(3)]);
    let notes = store.outbox();
    assert_eq!(notes.iter().map(|n| n.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        notes.iter().map(|n| n.text.as_str()).collect::<Vec<_>>(),
        ["a", "b", "again?"]
    );
    assert!(notes.iter().all(|n| !n.is_final
        && n.remote_task_id.as_deref() == Some(REMOTE)
        && n.agent == "agent-a"));
    assert!(!store.snapshot(ID).expect("row").closed);
}

#[tokio::test]
async fn a_refused_apply_writes_no_note() {
    let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
    open_row(&store, WatchMode::Follow).await;
    park(&store, &bell, 2, "tok-2").await;
    assert_eq!(
        doorbell::apply(
            &Teller::new(&store),
            ID,
            &working("stale"),
            &Guard::Epoch(1)
        )
        .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert!(store.outbox().is_empty());
    assert_eq!(store.snapshot(ID).expect("row").seq, 0, "no number taken");
}

#[tokio::test]
async fn a_final_state_is_noted_and_closes_the_row_in_its_apply() {
    let (store, bell, agent) = (
        MemoryStore::new(),
        MemoryDoorbell::new(),
        FakeAgent::new(true),
    );
    open_row(&store, WatchMode::Push).await;
    park(&store, &bell, 1, "tok-1").await;
    doorbell::apply(&Teller::new(&store), ID, &working("building"), &Guard::Open)
        .await
        .expect("applied");
    let done = remote_out(REMOTE, TaskState::Completed, "ready");
    let Applied::Changed { note, row } =
        doorbell::apply(&Teller::new(&store), ID, &done, &Guard::Open)
            .await
            .expect("applied")
    else {
        panic!("a final state is a change");
    };
    assert_eq!(note.seq, 2);
    assert!(row.closed, "closed in the same write as its note");
    assert_eq!(
        row.park_token.as_deref(),
        Some("tok-1"),
        "the park token stays so the applier can ring it"
    );
    // Anything later is refused: a reply, a cancel, another state.
    for late in [
        reply("too late"),
        WakeEvent::Cancel {
            reason: "parent gave up".into(),
        },
    ] {
        assert_eq!(
            doorbell::ring(&store, &bell, ID, &late, &Guard::Open).await,
            Err(StoreError::Refused(ID.into())),
            "{late:?}"
        );
    }
    assert_eq!(
        doorbell::apply(&Teller::new(&store), ID, &working("after"), &Guard::Open).await,
        Err(StoreError::Refused(ID.into()))
    );
    assert!(bell.rings().is_empty());
    // The end that a cancel would have caused: the final already applied wins, so it
    // writes no second note and does not cancel the remote task.
    let cause = EndCause::Cancelled {
        reason: "parent gave up".into(),
    };
    let closed = end(&store, Some(&agent), &cause).await;
    assert_eq!(closed.seq(), None, "no second note");
    assert_eq!(
        closed.row.last.as_ref().map(|l| l.state),
        Some(TaskState::Completed)
    );
    assert_eq!(
        agent.count("CancelTask"),
        0,
        "the remote task is not cancelled"
    );
    assert_eq!(
        agent.calls(),
        ["DeleteTaskPushNotificationConfig:remote-1/standin-local-1"]
    );
    assert_eq!(
        outbox(&store),
        [
            (1, "TASK_STATE_WORKING".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ],
        "numbers run 1..n without gaps, the final one last"
    );
}

// Rule 5: close first, with the final note in the same write.

/// The end as the End function runs it, with `agent` as what its connector finds.
async fn end<A: Agent>(store: &MemoryStore, agent: Option<&A>, cause: &EndCause) -> Closed {
    doorbell::end_in_order(&Teller::new(store), ID, cause, || async move { agent })
        .await
        .expect("ended")
}

/// An agent that looks at the store when the end reaches it: whether the row is closed
/// at each push-config delete, and whether the final note is written at the cancel.
struct WatchingAgent {
    inner: FakeAgent,
    store: Arc<MemoryStore>,
    observed: std::sync::Mutex<Vec<bool>>,
}

impl Agent for WatchingAgent {
    fn can_push(&self) -> bool {
        true
    }
    fn can_stream(&self) -> bool {
        true
    }
    async fn send_streaming(&self, turn: &Turn) -> Result<UpdateStream, RemoteError> {
        self.inner.send_streaming(turn).await
    }
    async fn send(&self, turn: &Turn) -> Result<Sent, RemoteError> {
        self.inner.send(turn).await
    }
    async fn get(&self, id: &str) -> Result<Status, RemoteError> {
        self.inner.get(id).await
    }
    async fn subscribe(&self, id: &str) -> Result<UpdateStream, RemoteError> {
        self.inner.subscribe(id).await
    }
    async fn register_push(&self, push: &PushRequest) -> Result<Option<String>, RemoteError> {
        self.inner.register_push(push).await
    }
    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), RemoteError> {
        let closed = self.store.snapshot(ID).is_some_and(|r| r.closed);
        self.observed.lock().expect("lock").push(closed);
        self.inner.delete_push(task_id, config_id).await
    }
    async fn cancel(&self, id: &str) -> Result<Status, RemoteError> {
        let closed = self.store.snapshot(ID).is_some_and(|r| r.closed);
        let noted = self.store.outbox().iter().any(|n| n.is_final);
        self.observed.lock().expect("lock").extend([closed, noted]);
        self.inner.cancel(id).await
    }
}

#[tokio::test]
async fn end_closes_before_deleting_the_push_config_and_a_failing_delete_does_not_stop_it() {
    let store = Arc::new(MemoryStore::new());
    let token = open_row(&store, WatchMode::Push).await;
    let agent = WatchingAgent {
        inner: FakeAgent::new(true),
        store: store.clone(),
        observed: Default::default(),
    };
    agent.inner.fail_deletes(5);
    let cause = EndCause::Cancelled {
        reason: "no longer needed".into(),
    };
    let closed = end(store.as_ref(), Some(&agent), &cause).await;
    assert_eq!(
        *agent.observed.lock().expect("lock"),
        [true, false, true, true],
        "closed first; the remote asked before the note (its answer is the truth); \
         then two delete attempts, after the note"
    );
    assert_eq!(agent.inner.count("CancelTask"), 1);
    assert_eq!(closed.seq(), Some(1));
    let notes = store.outbox();
    assert_eq!(notes.len(), 1);
    assert_eq!(
        (notes[0].state.as_str(), notes[0].is_final, notes[0].seq),
        ("TASK_STATE_CANCELED", true, 1)
    );
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
async fn end_on_a_final_state_notes_it_once_and_cancels_nothing() {
    // Changed rule: the final note is written when the final state is applied, under its
    // own number (it used to be held back and sent by the end); the end adds nothing.
    let (store, agent) = (MemoryStore::new(), FakeAgent::new(true));
    open_row(&store, WatchMode::Push).await;
    let done = remote_out(REMOTE, TaskState::Completed, "Your blue widget is ready.");
    doorbell::apply(&Teller::new(&store), ID, &done, &Guard::Open)
        .await
        .expect("applied");
    let notes = store.outbox();
    assert_eq!(notes.len(), 1, "the final note is in the outbox at once");
    assert_eq!(
        (
            notes[0].state.as_str(),
            notes[0].text.as_str(),
            notes[0].is_final,
            notes[0].seq
        ),
        (
            "TASK_STATE_COMPLETED",
            "Your blue widget is ready.",
            true,
            1
        )
    );
    let closed = end(&store, Some(&agent), &EndCause::Final).await;
    assert_eq!(closed.seq(), None);
    assert_eq!(
        agent.calls(),
        ["DeleteTaskPushNotificationConfig:remote-1/standin-local-1"]
    );
    assert_eq!(store.outbox(), notes, "no second note");
}

#[tokio::test]
async fn end_in_follow_or_off_mode_deletes_nothing() {
    for mode in [WatchMode::Follow, WatchMode::Off] {
        let (store, agent) = (MemoryStore::new(), FakeAgent::new(true));
        open_row(&store, mode).await;
        let done = remote_out(REMOTE, TaskState::Completed, "done");
        doorbell::apply(&Teller::new(&store), ID, &done, &Guard::Open)
            .await
            .expect("applied");
        end(&store, Some(&agent), &EndCause::Final).await;
        assert_eq!(
            agent.count("DeleteTaskPushNotificationConfig"),
            0,
            "{mode:?}"
        );
        assert!(store.snapshot(ID).expect("row").closed);
    }
}

#[tokio::test]
async fn close_writes_a_canceled_or_failed_note_once() {
    let causes = [
        (
            EndCause::Cancelled {
                reason: "parent gave up".into(),
            },
            "TASK_STATE_CANCELED",
            "parent gave up",
        ),
        (
            EndCause::Failed {
                reason: "a step failed".into(),
            },
            "TASK_STATE_FAILED",
            "a step failed",
        ),
    ];
    for (cause, state, text) in causes {
        let (store, bell) = (MemoryStore::new(), MemoryDoorbell::new());
        open_row(&store, WatchMode::Off).await;
        park(&store, &bell, 1, "tok-1").await;
        store
            .record(ID, &reply("unread"), &Guard::Open)
            .await
            .expect("recorded");
        doorbell::apply(&Teller::new(&store), ID, &working("busy"), &Guard::Open)
            .await
            .expect("applied");
        let first = end::<FakeAgent>(&store, None, &cause).await;
        assert_eq!(first.seq(), Some(2), "{state}: the next number");
        let row = &first.row;
        assert!(row.closed && row.park_token.is_none() && row.pending.is_empty());
        assert_eq!(
            row.last
                .as_ref()
                .map(|l| (l.state.as_str(), l.text.as_str(), l.is_final)),
            Some((state, text, true)),
            "{state}: the note's state is the row's last"
        );
        let writes = store.writes();
        let again = end::<FakeAgent>(&store, None, &cause).await;
        assert_eq!(again.seq(), None, "{state}: a second close writes nothing");
        assert_eq!(again.row, first.row);
        assert_eq!(store.writes(), writes);
        let store_again = store
            .close(ID, Some(&working("ignored")))
            .await
            .expect("again");
        assert_eq!(store_again.seq(), None, "{state}: the store's close too");
        let notes = store.outbox();
        assert_eq!(
            notes
                .iter()
                .map(|n| (n.seq, n.state.as_str(), n.is_final))
                .collect::<Vec<_>>(),
            [(1, "TASK_STATE_WORKING", false), (2, state, true)],
            "{state}"
        );
        assert_eq!(notes[1].text, text);
        assert_eq!(notes[1].remote_task_id.as_deref(), Some(REMOTE));
    }
}

#[tokio::test]
async fn a_close_reason_is_scrubbed_before_it_is_noted() {
    let store = MemoryStore::new();
    open_row(&store, WatchMode::Off).await;
    let secret = "Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL";
    let cause = EndCause::Failed {
        reason: format!("agent said {secret}"),
    };
    end::<FakeAgent>(&store, None, &cause).await;
    let notes = store.outbox();
    assert_eq!(notes.len(), 1);
    assert!(!notes[0].text.contains(secret), "{}", notes[0].text);
}
