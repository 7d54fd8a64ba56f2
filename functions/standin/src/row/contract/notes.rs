//! The notes' writes: apply, close, and the note log.

use super::*;

pub async fn apply_changes_once_notes_each_change_and_is_fenced<S: RowStore>(store: &S) {
    push_row(store).await;
    let building = working("building");
    assert!(matches!(
        store.apply(ID, None, &building, &Guard::Open).await,
        Ok(Applied::Changed { ref note, .. }) if note.seq == 1
    ));
    assert_eq!(
        store.apply(ID, None, &building, &Guard::Open).await,
        Ok(Applied::Unchanged)
    );
    let asked = remote_out(REMOTE, TaskState::InputRequired, "colour?");
    let epoch = store.park(ID, 1, "t").await.unwrap().epoch;
    assert_eq!(
        store
            .apply(ID, None, &asked, &Guard::Epoch(epoch - 1))
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    let Ok(Applied::Changed { note, row }) =
        store.apply(ID, None, &asked, &Guard::Epoch(epoch)).await
    else {
        panic!("the current epoch applies");
    };
    assert_eq!((note.seq, row.seq), (2, 2));
    assert!(!row.closed);
    let stored = store.get(ID).await.unwrap().unwrap();
    assert_eq!((stored.last, stored.seq), (Some(asked), 2));
    assert_eq!(
        notes(store).await,
        [
            (1, TaskState::Working, false),
            (2, TaskState::InputRequired, false),
        ],
        "one note per change, written with it"
    );
    let note = store.notes(ID, 1, 1).await.unwrap().remove(0);
    assert_eq!(
        (
            note.task_id.as_str(),
            note.remote_task_id.as_deref(),
            note.agent.as_str(),
            note.text.as_str()
        ),
        (ID, Some(REMOTE), "agent-a", "colour?"),
        "the note's body round-trips"
    );
}

/// A turn tells an artifact completed while the agent works, its state and text
/// unchanged: the note that carries it is a change of its own (the journey puts on a
/// change only artifacts not yet told). Not so for a question, nor for a watch's change.
pub async fn a_change_carrying_artifacts_is_noted_though_its_state_stayed<S: RowStore>(store: &S) {
    push_row(store).await;
    let drafting = working("drafting");
    store
        .apply(ID, None, &drafting, &Guard::Open)
        .await
        .unwrap();
    let with_report = RemoteOut {
        artifacts: vec![standin_wire::ArtifactView {
            artifact_id: "report".into(),
            name: None,
            description: None,
            metadata: None,
            parts: Vec::new(),
            complete: true,
            truncated: false,
        }],
        artifacts_are_news: true,
        ..drafting.clone()
    };
    let Ok(Applied::Changed { note, .. }) = store.apply(ID, None, &with_report, &Guard::Open).await
    else {
        panic!("a note carrying an artifact is news");
    };
    assert_eq!((note.seq, note.artifacts.len()), (2, 1));
    assert_eq!(
        store.apply(ID, None, &drafting, &Guard::Open).await,
        Ok(Applied::Unchanged),
        "without artifacts the same state is no news"
    );
    let checked_with_report = RemoteOut {
        artifacts_are_news: false,
        ..with_report.clone()
    };
    assert_eq!(
        store
            .apply(ID, None, &checked_with_report, &Guard::Open)
            .await,
        Ok(Applied::Unchanged),
        "a watch's unchanged state is no news, artifacts or not"
    );
    // A question is told once: repeated to carry an artifact it would read as asked again.
    let asked = remote_out(REMOTE, TaskState::InputRequired, "colour?");
    store.apply(ID, None, &asked, &Guard::Open).await.unwrap();
    let asked_with_report = RemoteOut {
        artifacts: with_report.artifacts.clone(),
        ..asked
    };
    assert_eq!(
        store
            .apply(ID, None, &asked_with_report, &Guard::Open)
            .await,
        Ok(Applied::Unchanged)
    );
}

/// `apply` to a copy of the row (`seen`): a copy that is still the row writes without a read; a
/// stale one is never written on, nor is "unchanged" or a refusal decided on it.
pub async fn an_apply_to_a_copy_that_moved_decides_on_the_row_as_it_is<S: RowStore>(store: &S) {
    push_row(store).await;
    let seen = store.get(ID).await.unwrap().unwrap();
    let Ok(Applied::Changed { note, .. }) = store
        .apply(&seen.task_id, Some(&seen), &working("one"), &Guard::Open)
        .await
    else {
        panic!("the row as read applies");
    };
    assert_eq!(note.seq, 1);
    let Ok(Applied::Changed { note, row }) = store
        .apply(&seen.task_id, Some(&seen), &working("two"), &Guard::Open)
        .await
    else {
        panic!("a copy behind the row applies to the row as it is");
    };
    assert_eq!((note.seq, row.seq), (2, 2));
    let mut behind = seen.clone();
    behind.last = Some(working("one"));
    behind.seq = 1;
    let Ok(Applied::Changed { note, .. }) = store
        .apply(
            &behind.task_id,
            Some(&behind),
            &working("one"),
            &Guard::Open,
        )
        .await
    else {
        panic!("unchanged on a stale copy is not unchanged on the row (it says two)");
    };
    assert_eq!(note.seq, 3);
    assert_eq!(
        store
            .apply(&seen.task_id, Some(&seen), &working("one"), &Guard::Open)
            .await,
        Ok(Applied::Unchanged)
    );
    store.close(ID, None).await.unwrap();
    assert_eq!(
        store
            .apply(&seen.task_id, Some(&seen), &working("three"), &Guard::Open)
            .await,
        Err(StoreError::Refused(ID.into())),
        "a copy from before the close is refused"
    );
    let texts: Vec<String> = store
        .notes(ID, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.text)
        .collect();
    assert_eq!(texts, ["one", "two", "one"]);
}

pub async fn a_final_state_closes_the_row_with_its_note<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    store.park(ID, 1, "t1").await.unwrap();
    store
        .apply(ID, None, &working("building"), &Guard::Open)
        .await
        .unwrap();
    let done = remote_out(REMOTE, TaskState::Completed, "ready");
    let Ok(Applied::Changed { note, row }) = store.apply(ID, None, &done, &Guard::Open).await
    else {
        panic!("a final state is a change");
    };
    assert_eq!(note.seq, 2);
    assert!(row.closed);
    assert_eq!(row.park_token.as_deref(), Some("t1"), "kept for the ring");
    let stored = store.get(ID).await.unwrap().unwrap();
    assert!(stored.closed && !stored.is_parked());
    assert_eq!(stored.last, Some(done));
    // Everything later is refused.
    for late in [
        reply("too late"),
        WakeEvent::Cancel {
            reason: "stop".into(),
        },
    ] {
        assert_eq!(
            store.record(ID, &late, &Guard::Open).await,
            Err(StoreError::Refused(ID.into())),
            "{late:?}"
        );
    }
    assert_eq!(
        store
            .record(
                ID,
                &WakeEvent::Push { claimed: None },
                &Guard::Push {
                    digest: token.digest(),
                    remote_task_id: REMOTE.into(),
                }
            )
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.apply(ID, None, &working("after"), &Guard::Open).await,
        Err(StoreError::Refused(ID.into()))
    );
    // The end of a cancel that came too late writes nothing.
    let canceled = remote_out(REMOTE, TaskState::Canceled, "stop");
    let closed = store.close(ID, Some(&canceled)).await.expect("close");
    assert_eq!(closed.seq(), None);
    assert_eq!(closed.row.last.map(|l| l.state), Some(TaskState::Completed));
    assert_eq!(
        notes(store).await,
        [
            (1, TaskState::Working, false),
            (2, TaskState::Completed, true),
        ],
        "1..n without gaps, the final one last, no second final note"
    );
}

pub async fn close_is_first_final_and_writes_its_note_once<S: RowStore>(store: &S) {
    let token = push_row(store).await;
    store.park(ID, 1, "t").await.unwrap();
    store
        .record(ID, &reply("late"), &Guard::Open)
        .await
        .unwrap();
    let failed = remote_out(REMOTE, TaskState::Failed, "a step failed");
    let closed = store.close(ID, Some(&failed)).await.expect("closed");
    let row = &closed.row;
    assert!(row.closed && row.park_token.is_none() && row.pending.is_empty());
    assert_eq!(closed.seq(), Some(1));
    assert_eq!(row.last, Some(failed.clone()));
    let again = store.close(ID, Some(&failed)).await.expect("again");
    assert_eq!(again.seq(), None, "a second close writes nothing");
    assert_eq!(notes(store).await, [(1, TaskState::Failed, true)]);
    let stored = store.get(ID).await.unwrap().unwrap();
    assert!(stored.closed && stored.park_token.is_none() && stored.pending.is_empty());
    assert_eq!(stored.seq, 1);
    let push = Guard::Push {
        digest: token.digest(),
        remote_task_id: REMOTE.into(),
    };
    assert_eq!(
        store
            .record(ID, &WakeEvent::Push { claimed: None }, &push)
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.park(ID, 2, "t2").await,
        Err(StoreError::Refused(ID.into()))
    );
    let raw = store.get(ID).await.unwrap().unwrap();
    assert!(
        !serde_json::to_string(&raw)
            .unwrap()
            .contains(token.expose()),
        "only the digest is stored"
    );
}

pub async fn close_without_a_note_writes_none<S: RowStore>(store: &S) {
    push_row(store).await;
    store.park(ID, 1, "t").await.unwrap();
    let closed = store.close(ID, None).await.expect("closed");
    assert_eq!(closed.seq(), None);
    assert!(closed.row.closed && closed.row.park_token.is_none());
    assert!(notes(store).await.is_empty());
    assert_eq!(
        store.close("nobody", None).await.map(|c| c.seq()),
        Err(StoreError::NotFound("nobody".into()))
    );
}

pub async fn the_note_log_reads_after_a_number_up_to_a_limit<S: RowStore>(store: &S) {
    push_row(store).await;
    store.create(&Row::new("other", "agent-a")).await.unwrap();
    for text in ["a", "b", "c", "d"] {
        store
            .apply(ID, None, &working(text), &Guard::Open)
            .await
            .unwrap();
    }
    store
        .apply("other", None, &working("x"), &Guard::Open)
        .await
        .unwrap();
    let read = |after, limit| async move {
        store
            .notes(ID, after, limit)
            .await
            .expect("notes")
            .into_iter()
            .map(|n| (n.seq, n.text))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        read(0, 100).await,
        [
            (1, "a".into()),
            (2, "b".into()),
            (3, "c".into()),
            (4, "d".into())
        ]
    );
    assert_eq!(read(1, 2).await, [(2, "b".into()), (3, "c".into())]);
    assert_eq!(read(3, 10).await, [(4, "d".into())]);
    assert!(read(4, 10).await.is_empty());
    assert_eq!(
        store.notes("other", 0, 10).await.unwrap().len(),
        1,
        "each stand-in's own notes"
    );
    assert!(store.notes("nobody", 0, 10).await.unwrap().is_empty());
}
