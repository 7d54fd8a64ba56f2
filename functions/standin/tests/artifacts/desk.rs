//! The desk through the steps: a turn's artifacts in its notes, the manifest read ahead, content shared and replaced.

use super::*;

fn status(state: TaskState, artifacts: Option<Vec<Artifact>>) -> Status {
    Status {
        context_id: Some("ctx".into()),
        artifacts,
        ..Status::new(REMOTE, state, Some("done"))
    }
}

/// A first turn with `fake` as the agent, its artifacts kept on `desk`; the agent as
/// the turn reached it.
async fn turn_through(
    rows: &MemoryStore,
    desk: &Arc<Desk>,
    fake: FakeAgent,
) -> Result<Collecting<FakeAgent>, steps::StepError> {
    let agent = Collecting::new(fake, Some(desk.clone()));
    let teller = Teller::new(rows).with_artifacts(Some(desk.clone() as Arc<dyn NoteArtifacts>));
    steps::turn(
        &Invocation::reaching(teller, &agent).with_spec(Some(&spec()).cloned()),
        Step::start(ID, "widgets", "write the report"),
        Duration::from_secs(5),
        PACING,
    )
    .await?;
    Ok(agent)
}

#[tokio::test]
async fn a_turn_s_streamed_artifacts_reach_the_final_note_with_the_task_s_own_account() {
    let rows = MemoryStore::new();
    rows.create(&Row::new(ID, "widgets")).await.unwrap();
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = Arc::new(Desk::new(
        blobs.clone() as Arc<dyn Blobs>,
        ID,
        Bounds::default(),
        Ours::default(),
        None,
    ));
    let fake = FakeAgent::new(false);
    fake.script_stream(Ok(vec![
        Ok(Update::Status(status(TaskState::Working, None))),
        Ok(Update::Artifact(ArtifactUpdate {
            artifact: artifact("report", "# Draft"),
            append: false,
            last_chunk: false,
        })),
        Ok(Update::Status(status(TaskState::Completed, None))),
    ]));
    // GetTask, asked for the truth at the end: the report as the task holds it.
    fake.set_task(status(
        TaskState::Completed,
        Some(vec![artifact("report", "# Report\nAll good.")]),
    ));
    let agent = turn_through(&rows, &desk, fake).await.unwrap();
    assert_eq!(
        agent.inner().count("GetTask"),
        1,
        "the task's own account asked"
    );
    let notes = rows.outbox();
    let last = notes.last().expect("a final note");
    assert!(last.is_final);
    let [report] = &last.artifacts[..] else {
        panic!("{:?}", last.artifacts);
    };
    assert_eq!(report.artifact_id, "report");
    assert!(report.complete);
    assert_eq!(report.parts[0].text.as_deref(), Some("# Report\nAll good."));
    assert_eq!(report.parts[0].media_type.as_deref(), Some("text/markdown"));
    let key = blobs
        .keys()
        .into_iter()
        .find(|k| k.contains("/parts/") && blobs.object(k).unwrap() == b"# Report\nAll good.")
        .expect("the final part stored");
    let manifest: Manifest =
        serde_json::from_slice(&blobs.object(&format!("{ID}/manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest.get("report").unwrap().parts[0].key.as_deref(),
        Some(key.as_str())
    );
    assert!(
        !blobs
            .keys()
            .iter()
            .any(|k| blobs.object(k).unwrap() == b"# Draft"),
        "the replaced draft is deleted"
    );
}

/// An artifact completed mid-turn, with the agent's state and text unchanged, reaches
/// the parent as a note of its own before the turn ends, and one still being written
/// does not.
#[tokio::test(start_paused = true)]
async fn an_artifact_completed_within_a_turn_is_told_as_it_completes() {
    let rows = MemoryStore::new();
    rows.create(&Row::new(ID, "widgets")).await.unwrap();
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = Arc::new(desk_on(&blobs));
    let fake = FakeAgent::new(false);
    fake.keep_streams_open();
    let complete = |id: &str, text: &str| {
        Ok(Update::Artifact(ArtifactUpdate {
            artifact: artifact(id, text),
            append: false,
            last_chunk: true,
        }))
    };
    fake.script_stream(Ok(vec![
        Ok(Update::Status(Status::new(
            REMOTE,
            TaskState::Working,
            Some("drafting"),
        ))),
        complete("outline", "# Outline"),
        // Still being written: not yet news.
        Ok(Update::Artifact(ArtifactUpdate {
            artifact: artifact("report", "# Rep"),
            append: false,
            last_chunk: false,
        })),
    ]));
    let agent = Collecting::new(fake, Some(desk.clone()));
    let store = Teller::new(&rows).with_artifacts(Some(desk.clone() as Arc<dyn NoteArtifacts>));
    let spec = spec();
    let invocation = Invocation::reaching(store, &agent).with_spec(Some(&spec).cloned());
    let turn = steps::turn(
        &invocation,
        Step::start(ID, "widgets", "write the report"),
        Duration::from_secs(3600),
        PACING,
    );
    tokio::pin!(turn);
    let told = |rows: &MemoryStore| -> Vec<(String, Vec<String>)> {
        rows.outbox()
            .into_iter()
            .map(|n| {
                let ids = n.artifacts.iter().map(|a| a.artifact_id.clone()).collect();
                (n.text, ids)
            })
            .collect()
    };
    tokio::select! {
        _ = &mut turn => panic!("the turn ended while the agent's stream was open"),
        () = tokio::time::sleep(steps::COALESCE * 4) => {}
    }
    assert_eq!(
        told(&rows),
        [
            ("drafting".to_owned(), Vec::<String>::new()),
            ("drafting".to_owned(), vec!["outline".to_owned()]),
        ],
        "the completed outline told on its own, the report still being written not"
    );
    let notes = rows.outbox();
    assert!(
        notes
            .iter()
            .all(|n| n.state == TaskState::Working && !n.is_final)
    );
    assert!(notes[1].artifacts[0].complete);
}

/// An artifact completed before the agent works (the task only SUBMITTED) adds no note:
/// a SUBMITTED state is not news, and the next change carries the artifact.
#[tokio::test(start_paused = true)]
async fn an_artifact_completed_before_the_agent_works_waits_for_the_next_change() {
    let rows = MemoryStore::new();
    rows.create(&Row::new(ID, "widgets")).await.unwrap();
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = Arc::new(desk_on(&blobs));
    let fake = FakeAgent::new(false);
    fake.keep_streams_open();
    fake.script_stream(Ok(vec![
        Ok(Update::Status(Status::new(
            REMOTE,
            TaskState::Submitted,
            None,
        ))),
        Ok(Update::Artifact(ArtifactUpdate {
            artifact: artifact("outline", "# Outline"),
            append: false,
            last_chunk: true,
        })),
    ]));
    let agent = Collecting::new(fake, Some(desk.clone()));
    let teller = Teller::new(&rows).with_artifacts(Some(desk.clone() as Arc<dyn NoteArtifacts>));
    let spec = spec();
    let invocation = Invocation::reaching(teller, &agent).with_spec(Some(&spec).cloned());
    let turn = steps::turn(
        &invocation,
        Step::start(ID, "widgets", "write the report"),
        Duration::from_secs(3600),
        PACING,
    );
    tokio::pin!(turn);
    tokio::select! {
        _ = &mut turn => panic!("the turn ended while the agent's stream was open"),
        () = tokio::time::sleep(steps::COALESCE * 4) => {}
    }
    assert!(rows.outbox().is_empty(), "{:?}", rows.outbox());
}

/// An artifact of one link: nothing of it is stored, so the manifest's reads are the
/// desk's own.
fn update(id: &str, url: &str) -> ArtifactUpdate {
    ArtifactUpdate {
        artifact: Artifact {
            id: id.into(),
            parts: vec![Part {
                media_type: None,
                filename: None,
                content: Content::Url(url.into()),
            }],
            ..Artifact::default()
        },
        append: false,
        last_chunk: true,
    }
}

/// Reads of the manifest until `n` have been made (a read ahead runs on its own task).
async fn until_gets(blobs: &MemoryBlobs, n: usize) {
    for _ in 0..1000 {
        if blobs.gets() >= n {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("{} reads, not {n}", blobs.gets());
}

/// A wake reads the manifest while the agent answers; the change then uses that read
/// instead of making its own, and a copy another writer replaced meanwhile is read
/// again (its write back is conditional), so nothing the other wrote is lost.
#[tokio::test]
async fn a_manifest_read_ahead_serves_the_change_and_a_copy_replaced_meanwhile_is_read_again() {
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = desk_on(&blobs);
    desk.read_ahead();
    until_gets(&blobs, 1).await;
    desk.observe_update(&update("report", "https://example.com/report"));
    let saved = desk.save().await.unwrap();
    assert_eq!(blobs.gets(), 1, "the change used the read made ahead");
    assert!(saved.get("report").is_some());

    let desk = desk_on(&blobs);
    desk.read_ahead();
    until_gets(&blobs, 2).await;
    let other = desk_on(&blobs);
    other.observe_update(&update("chart", "https://example.com/chart"));
    other.save().await.unwrap();
    desk.observe_update(&update("summary", "https://example.com/summary"));
    let saved = desk.save().await.unwrap();
    for id in ["report", "chart", "summary"] {
        assert!(saved.get(id).is_some(), "{id} kept");
    }
    let stored: Manifest =
        serde_json::from_slice(&blobs.object(&format!("{ID}/manifest.json")).unwrap()).unwrap();
    assert_eq!(stored, saved);
    assert_eq!(blobs.gets(), 4, "ahead, the other's, and the read again");
}

/// A note reads the manifest once: a note that tells no artifact marks nothing, so reads
/// nothing more, and one that tells some marks them on the copy its own write made (that
/// write conditional on the copy's version). What another writer adds meanwhile is read
/// before the next note, never missed, and a copy it replaced is read again, nothing lost.
#[tokio::test]
async fn a_note_reads_the_manifest_once_and_marks_what_it_told_on_the_copy_it_wrote() {
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = desk_on(&blobs);
    let due = NoteArtifacts::due(&desk, false).await.unwrap();
    assert!(due.views.is_empty());
    NoteArtifacts::told(&desk, due).await;
    assert_eq!(blobs.gets(), 1, "the note's read, and none to mark nothing");

    desk.observe_update(&update("report", "https://example.com/report"));
    let due = NoteArtifacts::due(&desk, false).await.unwrap();
    assert_eq!(due.versions.len(), 1);
    NoteArtifacts::told(&desk, due).await;
    assert_eq!(blobs.gets(), 2, "marked on the copy the note's write made");
    let key = format!("{ID}/manifest.json");
    let stored: Manifest = serde_json::from_slice(&blobs.object(&key).unwrap()).unwrap();
    assert!(
        stored.for_note(false).told.is_empty(),
        "the report marked told"
    );

    let other = desk_on(&blobs);
    other.observe_update(&update("chart", "https://example.com/chart"));
    other.save().await.unwrap();
    let due = NoteArtifacts::due(&desk, false).await.unwrap();
    let ids: Vec<&str> = due.views.iter().map(|v| v.artifact_id.as_str()).collect();
    assert_eq!(
        ids,
        ["chart"],
        "what the other wrote since is read, not missed"
    );
    NoteArtifacts::told(&desk, due).await;

    other.observe_update(&update("summary", "https://example.com/summary"));
    other.save().await.unwrap();
    desk.observe_update(&update("table", "https://example.com/table"));
    let saved = desk.save().await.unwrap();
    for id in ["report", "chart", "summary", "table"] {
        assert!(saved.get(id).is_some(), "{id} kept");
    }
    let stored: Manifest = serde_json::from_slice(&blobs.object(&key).unwrap()).unwrap();
    assert_eq!(stored, saved);
}

#[test]
fn a_note_carries_at_most_its_room_of_artifacts_and_says_how_many_more() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    let long = "n".repeat(2000);
    for n in 0..60 {
        let mut artifact = seen(&format!("a{n}"), &["x"]);
        artifact.description = Some(long.clone());
        m.update(artifact, false, true, b);
    }
    let note = m.for_note(true);
    let size = serde_json::to_string(&note.views).unwrap().len();
    assert!(
        size <= standin::artifacts::manifest::NOTE_ARTIFACT_BYTES,
        "{size}"
    );
    assert!(note.omitted > 0);
    assert_eq!(note.views.len() + note.omitted as usize, 60);
}

#[test]
fn content_two_artifacts_share_is_kept_when_one_of_them_is_replaced() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    m.update(seen("a", &["OK"]), false, true, b);
    m.update(seen("b", &["OK"]), false, true, b);
    let gone = m.update(seen("a", &["changed"]), false, true, b);
    assert!(
        gone.iter().any(|k| m.references(k)),
        "the manifest says what to keep; the desk deletes only what it no longer lists"
    );
}

#[tokio::test]
async fn content_a_manifest_lists_is_never_shared_by_a_later_invocation() {
    let blobs = Arc::new(MemoryBlobs::default());
    let bounds = Bounds {
        max_bytes: 3 * 1024 * 1024,
        max_count: 10,
    };
    let content = vec![5u8; 2 * 1024 * 1024];
    let first = sink(&blobs, bounds, Ours::default());
    spill(&first, "s", &content, 1 << 16).await;
    let kept = first.stored("s").await.unwrap();
    assert_eq!(kept.flag, None);
    let manifest = Manifest {
        artifacts: vec![standin::artifacts::manifest::Entry {
            artifact_id: "big".into(),
            name: None,
            description: None,
            metadata: None,
            parts: vec![StoredPart {
                view: PartView {
                    kind: PartKind::File,
                    media_type: None,
                    filename: None,
                    size: Some(kept.size),
                    sha256: Some(kept.sha256.clone()),
                    text: None,
                    data: None,
                    url: None,
                    stored: true,
                    flag: None,
                },
                key: kept.key.clone(),
                whole: None,
            }],
            complete: true,
            truncated: false,
            listed_only: false,
            version: 1,
            noted: 1,
            bytes: 0,
        }],
        stored_bytes: kept.size,
    };
    blobs
        .put(
            &format!("{ID}/manifest.json"),
            serde_json::to_vec(&manifest).unwrap(),
        )
        .await
        .unwrap();
    // A later invocation (a turn while a follower holds the stand-in) reads it again
    // with 1 MiB left of the bound. Meanwhile the other desk replaces the artifact and
    // deletes the key its manifest no longer lists. Had the later read reused that key
    // (it used to, from the manifest it loaded), its manifest would link to nothing.
    let again = sink(&blobs, bounds, Ours::default());
    spill(&again, "s2", &content, 1 << 16).await;
    blobs.delete(kept.key.as_deref().unwrap()).await.unwrap();
    let read = again.stored("s2").await.unwrap();
    assert_ne!(read.key, kept.key, "a key of its own");
    let own = blobs.object(read.key.as_deref().unwrap());
    assert_eq!(
        own.map(|b| b.len() as u64),
        Some(read.size),
        "its bytes are there"
    );
    // Truncated to the bound left, and known as that content read again: the fold keeps
    // the whole copy while the manifest lists it (the stored part is the same content).
    assert_eq!(read.flag, Some(PartFlag::Truncated));
    assert_eq!(read.whole.as_deref(), Some(kept.sha256.as_str()));
}

#[test]
fn a_truncated_part_read_again_keeps_what_was_kept_of_it() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    let truncated = |stored: &str| {
        let mut part = text_part(stored);
        part.view.flag = Some(PartFlag::Truncated);
        part.whole = Some("the whole content's digest".into());
        Seen {
            parts: vec![part],
            ..seen("extra", &[])
        }
    };
    m.reconcile(vec![truncated("four megabytes of it")], true, b);
    let gone = m.reconcile(vec![truncated("")], true, b);
    assert_eq!(texts(&m, "extra"), ["four megabytes of it"]);
    assert_eq!(gone.len(), 1, "the emptier copy goes");
    assert!(!m.references(&gone[0]));
}

/// A stand-in whose remote task is known: its row.
async fn remote_known() -> MemoryStore {
    let rows = MemoryStore::new();
    rows.create(&Row::new(ID, "widgets")).await.unwrap();
    rows.set_remote(ID, REMOTE, Some("ctx")).await.unwrap();
    rows
}

/// The End step for the parent's cancel, with `fake` as the agent and its artifacts
/// kept on `blobs`.
async fn end_cancelled(
    rows: &MemoryStore,
    blobs: &Arc<MemoryBlobs>,
    fake: FakeAgent,
) -> Result<standin::row::Closed, standin::row::StoreError> {
    let desk = Arc::new(desk_on(blobs));
    let agent = Collecting::new(fake, Some(desk.clone()));
    let teller = Teller::new(rows).with_artifacts(Some(desk as Arc<dyn NoteArtifacts>));
    let cause = standin::doorbell::EndCause::Cancelled {
        reason: "the parent cancelled".into(),
    };
    standin::doorbell::end_in_order(&teller, ID, &cause, || async { Some(&agent) }).await
}

/// An agent whose task, cancelled, lists a transcript.
fn cancelled_with_transcript() -> FakeAgent {
    let fake = FakeAgent::new(false);
    fake.set_task(status(
        TaskState::Canceled,
        Some(vec![artifact("transcript", "every word so far")]),
    ));
    fake
}

/// The parent cancels a stand-in whose agent made an artifact the stand-in had not yet
/// heard of: the remote cancel's answer lists it. While the manifest cannot be written
/// (S3 unavailable) the final note is not written without it: the end fails, to be
/// tried again, and the try after S3 is back tells it and lists it.
#[tokio::test]
async fn a_final_note_waits_for_artifacts_their_store_cannot_record_yet() {
    let rows = remote_known().await;
    let blobs = Arc::new(MemoryBlobs::default());

    blobs.fail_manifest_writes_with(Some(BlobError::Unavailable("S3 is down".into())));
    let refused = end_cancelled(&rows, &blobs, cancelled_with_transcript()).await;
    assert!(
        matches!(&refused, Err(standin::row::StoreError::Backend(why)) if why.contains("artifacts")),
        "{refused:?}"
    );
    assert!(
        rows.outbox().iter().all(|n| !n.is_final),
        "no final note without its artifacts: {:?}",
        rows.outbox()
    );

    blobs.fail_manifest_writes_with(None);
    let closed = end_cancelled(&rows, &blobs, cancelled_with_transcript())
        .await
        .unwrap();
    let note = closed.note.expect("the final note, on the try after");
    assert!(note.is_final);
    assert_eq!(note.state, TaskState::Canceled);
    let [transcript] = &note.artifacts[..] else {
        panic!("{:?}", note.artifacts);
    };
    assert_eq!(transcript.artifact_id, "transcript");
    let manifest: Manifest =
        serde_json::from_slice(&blobs.object(&format!("{ID}/manifest.json")).unwrap()).unwrap();
    assert_eq!(texts(&manifest, "transcript"), ["every word so far"]);
}

/// A turn whose agent answers COMPLETED while S3 refuses the manifest's writes: the
/// parent still hears COMPLETED (without the artifacts) rather than a failed stand-in.
/// A turn is not tried again (its message may not be sent twice), so only the End
/// step's note waits for its artifacts.
#[tokio::test]
async fn a_turn_s_final_answer_is_told_without_artifacts_their_store_cannot_record() {
    let rows = MemoryStore::new();
    rows.create(&Row::new(ID, "widgets")).await.unwrap();
    let blobs = Arc::new(MemoryBlobs::default());
    blobs.fail_manifest_writes_with(Some(BlobError::Unavailable("S3 is down".into())));
    let desk = Arc::new(desk_on(&blobs));
    let fake = FakeAgent::new(false);
    fake.script_stream(Ok(vec![
        Ok(Update::Status(status(TaskState::Working, None))),
        Ok(Update::Status(status(
            TaskState::Completed,
            Some(vec![artifact("report", "# Report")]),
        ))),
    ]));
    fake.set_task(status(
        TaskState::Completed,
        Some(vec![artifact("report", "# Report")]),
    ));
    turn_through(&rows, &desk, fake)
        .await
        .expect("the turn ends well");
    let notes = rows.outbox();
    let last = notes.last().expect("a final note");
    assert!(
        last.is_final && last.state == TaskState::Completed,
        "{last:?}"
    );
    assert!(last.artifacts.is_empty(), "{:?}", last.artifacts);
}

/// A manifest that does not read never will: the final note goes without it rather
/// than wait for ever (every stand-in ends).
#[tokio::test]
async fn a_final_note_goes_without_artifacts_a_manifest_that_does_not_read_holds() {
    let rows = remote_known().await;
    let blobs = Arc::new(MemoryBlobs::default());
    blobs
        .put(&format!("{ID}/manifest.json"), b"{not json".to_vec())
        .await
        .unwrap();
    let closed = end_cancelled(&rows, &blobs, cancelled_with_transcript())
        .await
        .unwrap();
    let note = closed.note.expect("the final note");
    assert!(note.is_final && note.artifacts.is_empty(), "{note:?}");
}

/// A hoard: six artifacts of 900 small parts each, past the manifest's bound, in the
/// task a cancel answers with. The final note's fold keeps what fits and marks the rest
/// truncated; the manifest lists parts.
#[tokio::test]
async fn a_hoard_a_cancel_answers_with_is_kept_within_the_bound() {
    let rows = remote_known().await;
    let blobs = Arc::new(MemoryBlobs::default());
    let parts: Vec<Part> = (0..900)
        .map(|_| Part {
            media_type: None,
            filename: None,
            content: Content::Text("h".repeat(100)),
        })
        .collect();
    let hoard: Vec<Artifact> = (0..6)
        .map(|n| Artifact {
            id: format!("hoard-{n}"),
            name: Some("transcript".into()),
            parts: parts.clone(),
            ..Artifact::default()
        })
        .collect();
    let fake = FakeAgent::new(false);
    fake.set_task(status(TaskState::Canceled, Some(hoard)));
    let closed = end_cancelled(&rows, &blobs, fake).await.unwrap();
    let note = closed.note.expect("the final note");
    let manifest: Manifest =
        serde_json::from_slice(&blobs.object(&format!("{ID}/manifest.json")).unwrap()).unwrap();
    let kept: usize = manifest.artifacts.iter().map(|a| a.parts.len()).sum();
    assert!(kept > 0 && kept < 5400, "{kept} parts kept");
    let saved = blobs.object(&format!("{ID}/manifest.json")).unwrap().len();
    assert!(
        saved <= standin::artifacts::manifest::MAX_MANIFEST_BYTES,
        "the manifest saved is {saved} bytes"
    );
    assert!(manifest.artifacts.iter().any(|a| a.truncated));
    assert!(
        !note.artifacts.is_empty() || note.artifacts_omitted > 0,
        "{note:?}"
    );
}
