//! Artifacts without AWS: parts stored as they arrive (memory blobs), the manifest's
//! rules, and the notes that carry them through the steps with a scripted agent.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use sha2::{Digest, Sha256};
use standin::agents::{AgentSpec, Updates};
use standin::artifacts::blobs::{BlobError, Upload, Versioned};
use standin::artifacts::manifest::{Seen, StoredPart};
use standin::artifacts::memory::MemoryBlobs;
use standin::artifacts::sink::{PART_BYTES, PartSink};
use standin::artifacts::{
    Blobs, Bounds, Collecting, Desk, Manifest, Ours, PartRoom, WithArtifacts,
};
use standin::push::PushToken;
use standin::row::memory::MemoryStore;
use standin::row::{Row, RowStore};
use standin::steps::next::{IDLE_RECHECK_SECS, Pacing};
use standin::steps::{self, Step};
use standin_remote::fake::FakeAgent;
use standin_remote::{
    Artifact, ArtifactUpdate, Content, ContentKind, ContentSink, Part, Spilled, Status, Update,
};
use standin_wire::{PartFlag, PartKind, PartView, TaskState};

const ID: &str = "sub-1";
const REMOTE: &str = "r-1";

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sink(blobs: &Arc<MemoryBlobs>, bounds: Bounds, ours: Ours) -> PartSink {
    PartSink::new(blobs.clone() as Arc<dyn Blobs>, ID, bounds, ours)
}

/// Hands `content` over as a call would: opened, in `chunk`-byte pieces, closed.
async fn spill(sink: &PartSink, name: &str, content: &[u8], chunk: usize) {
    sink.take(Spilled::Opened {
        spill: name.into(),
        kind: ContentKind::File,
    })
    .await;
    for piece in content.chunks(chunk) {
        sink.take(Spilled::Bytes {
            spill: name.into(),
            bytes: piece.to_vec(),
        })
        .await;
    }
    sink.take(Spilled::Closed {
        spill: name.into(),
        valid: true,
    })
    .await;
}

#[tokio::test]
async fn a_twenty_megabyte_part_goes_up_in_parts_and_reads_back_byte_for_byte() {
    let blobs = Arc::new(MemoryBlobs::default());
    let sink = sink(&blobs, Bounds::default(), Ours::default());
    let content: Vec<u8> = (0..20 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    spill(&sink, "s1", &content, 64 * 1024).await;
    let stored = sink.stored("s1").await.expect("closed");
    assert_eq!(stored.flag, None);
    assert_eq!(stored.size, content.len() as u64);
    assert_eq!(stored.sha256, sha(&content));
    let key = stored.key.expect("stored");
    assert!(key.starts_with(&format!("{ID}/parts/")), "{key}");
    assert_eq!(blobs.object(&key).expect("the object"), content);
    assert!(
        // A part, plus at most the chunk that filled it.
        blobs.largest_call() <= PART_BYTES + 128 * 1024,
        "{} bytes in one call: the part was held whole",
        blobs.largest_call()
    );
    assert_eq!(blobs.open_uploads(), 0);
}

fn opened(name: &str) -> Spilled {
    Spilled::Opened {
        spill: name.into(),
        kind: ContentKind::File,
    }
}

fn closed(name: &str) -> Spilled {
    Spilled::Closed {
        spill: name.into(),
        valid: true,
    }
}

/// A process holds at most its room of streamed parts at once: a stand-in's part past it
/// waits (its stream is not read meanwhile) until another's is stored, and a stand-in's
/// own parts share its place, so one never waits for itself.
#[tokio::test]
async fn past_the_process_s_room_a_part_waits_for_one_to_go_up_and_a_stand_in_never_waits_for_itself()
 {
    let blobs = Arc::new(MemoryBlobs::default());
    let room = PartRoom::new(1);
    let on = |id: &str| {
        Arc::new(
            PartSink::new(
                blobs.clone() as Arc<dyn Blobs>,
                id,
                Bounds::default(),
                Ours::default(),
            )
            .within(Some(room.clone())),
        )
    };
    let (a, b) = (on("a"), on("b"));
    a.take(opened("a1")).await;
    a.take(Spilled::Bytes {
        spill: "a1".into(),
        bytes: vec![b'a'; 1000],
    })
    .await;
    tokio::time::timeout(Duration::from_secs(2), a.take(opened("a2")))
        .await
        .expect("a stand-in's second part does not wait for its first");
    assert_eq!(
        a.stored("a1").await.and_then(|s| s.flag),
        Some(PartFlag::Unreadable),
        "parts come one at a time: one left open was a broken stream's, and is closed"
    );
    assert_eq!(room.free(), 0);
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { spill(&b, "b1", b"the other stand-in's part", 7).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "the other stand-in's part waits");
    a.take(closed("a1")).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "until the first's open part is done"
    );
    a.take(closed("a2")).await;
    tokio::time::timeout(Duration::from_secs(2), waiting)
        .await
        .expect("then it goes on")
        .unwrap();
    let stored = b.stored("b1").await.expect("stored");
    assert_eq!(
        blobs.object(stored.key.as_deref().unwrap()).unwrap(),
        b"the other stand-in's part"
    );
    assert_eq!(room.free(), 1, "every place given back");
}

/// A part that finds no place for `PLACE_WAIT` (slow agents hold every one) is not
/// stored, so the events behind it on its stream are not held back for longer.
#[tokio::test(start_paused = true)]
async fn a_part_that_finds_no_place_in_time_goes_unstored() {
    let blobs = Arc::new(MemoryBlobs::default());
    let room = PartRoom::new(1);
    let on = |id: &str| {
        PartSink::new(
            blobs.clone() as Arc<dyn Blobs>,
            id,
            Bounds::default(),
            Ours::default(),
        )
        .within(Some(room.clone()))
    };
    let (slow, other) = (on("slow"), on("other"));
    slow.take(opened("trickle")).await;
    let started = tokio::time::Instant::now();
    spill(&other, "waited", b"content that found no room", 8).await;
    assert!(started.elapsed() >= standin::artifacts::sink::PLACE_WAIT);
    let stored = other.stored("waited").await.expect("closed");
    assert_eq!((stored.key, stored.flag), (None, Some(PartFlag::NotStored)));
    assert_eq!(room.free(), 0, "the slow stand-in keeps its place");
}

/// Blobs whose first multipart part fails (S3 down for a moment).
struct FirstPartFails {
    blobs: Arc<MemoryBlobs>,
    failed: std::sync::atomic::AtomicBool,
}

impl Blobs for FirstPartFails {
    fn put(&self, key: &str, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), BlobError>> {
        self.blobs.put(key, bytes)
    }
    fn put_if(
        &self,
        key: &str,
        bytes: Vec<u8>,
        etag: Option<&str>,
    ) -> BoxFuture<'_, Result<(), BlobError>> {
        self.blobs.put_if(key, bytes, etag)
    }
    fn get(&self, key: &str) -> BoxFuture<'_, Result<Option<Versioned>, BlobError>> {
        self.blobs.get(key)
    }
    fn delete(&self, key: &str) -> BoxFuture<'_, Result<(), BlobError>> {
        self.blobs.delete(key)
    }
    fn start(&self, key: &str) -> BoxFuture<'_, Result<Upload, BlobError>> {
        self.blobs.start(key)
    }
    fn part<'a>(
        &'a self,
        upload: &'a mut Upload,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), BlobError>> {
        if !self.failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(async { Err(BlobError::Unavailable("down".into())) });
        }
        self.blobs.part(upload, bytes)
    }
    fn complete(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>> {
        self.blobs.complete(upload)
    }
    fn abort(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>> {
        self.blobs.abort(upload)
    }
    fn link(&self, key: &str, seconds: u64) -> BoxFuture<'_, Result<String, BlobError>> {
        self.blobs.link(key, seconds)
    }
}

/// A part whose upload failed stores nothing, so it spends nothing of the stand-in's
/// bound: the next part has all of it.
#[tokio::test]
async fn a_part_that_failed_to_store_gives_back_all_it_took_of_the_bound() {
    let blobs = Arc::new(MemoryBlobs::default());
    let failing = Arc::new(FirstPartFails {
        blobs: blobs.clone(),
        failed: std::sync::atomic::AtomicBool::new(false),
    });
    let bounds = Bounds {
        max_bytes: 24 * 1024 * 1024,
        ..Bounds::default()
    };
    let sink = PartSink::new(failing as Arc<dyn Blobs>, ID, bounds, Ours::default());
    // Three parts' worth: the first's upload fails, so none of it is stored.
    spill(&sink, "lost", &vec![b'l'; 16 * 1024 * 1024], 64 * 1024).await;
    let lost = sink.stored("lost").await.expect("closed");
    assert_eq!((lost.key, lost.flag), (None, Some(PartFlag::NotStored)));
    let content = vec![b'n'; 20 * 1024 * 1024];
    spill(&sink, "next", &content, 64 * 1024).await;
    let next = sink.stored("next").await.expect("closed");
    assert_eq!(next.flag, None, "not truncated: the lost part took nothing");
    assert_eq!(next.size, content.len() as u64);
    assert_eq!(blobs.object(next.key.as_deref().unwrap()).unwrap(), content);
}

#[tokio::test]
async fn past_the_bound_a_part_is_truncated_and_leaves_room_for_the_small_parts_of_its_answer() {
    let blobs = Arc::new(MemoryBlobs::default());
    let bounds = Bounds {
        max_bytes: 1024 * 1024,
        max_count: 10,
    };
    let sink = sink(&blobs, bounds, Ours::default());
    spill(&sink, "big", &vec![1u8; 3 * 1024 * 1024], 100_000).await;
    let big = sink.stored("big").await.unwrap();
    // Large content leaves 256 KiB for the small parts stored after the answer is read.
    let kept = 1024 * 1024 - 256 * 1024;
    assert_eq!(big.flag, Some(PartFlag::Truncated));
    assert_eq!(big.size, kept);
    assert_eq!(blobs.object(&big.key.unwrap()).unwrap().len() as u64, kept);
    spill(&sink, "next", b"more", 4).await;
    let next = sink.stored("next").await.unwrap();
    assert_eq!((next.flag, next.size), (Some(PartFlag::Truncated), 0));
    // A draft listed before the file in the same answer, stored after it.
    let draft = sink.store_whole(b"second draft".to_vec()).await;
    assert_eq!((draft.flag, draft.size), (None, 12));
}

#[tokio::test]
async fn an_echo_of_the_push_token_or_a_credential_is_blanked_even_across_chunks() {
    struct Held;
    impl standin::artifacts::HeldSecrets for Held {
        fn held(&self) -> futures_util::future::BoxFuture<'_, Vec<String>> {
            Box::pin(async { vec!["api-key-0123456789".to_owned()] })
        }
    }
    let token = PushToken::generate();
    let blobs = Arc::new(MemoryBlobs::default());
    let ours = Ours {
        token: Some(token.digest()),
        held: Some(Arc::new(Held)),
    };
    let sink = sink(&blobs, Bounds::default(), ours);
    let text = format!(
        "{}echo {} and api-key-0123456789 end",
        "x ".repeat(PART_BYTES / 2 - 10),
        token.expose()
    );
    // Chunks of 7 bytes: the token straddles a chunk, and a part boundary.
    spill(&sink, "echo", text.as_bytes(), 7).await;
    let stored = sink.stored("echo").await.unwrap();
    assert_eq!(stored.flag, Some(PartFlag::Redacted));
    let object = String::from_utf8(blobs.object(&stored.key.unwrap()).unwrap()).unwrap();
    assert!(!object.contains(token.expose()));
    assert!(!object.contains("api-key-0123456789"));
    assert_eq!(object.len(), text.len());
}

#[tokio::test]
async fn content_read_again_is_stored_once() {
    let blobs = Arc::new(MemoryBlobs::default());
    let sink = sink(&blobs, Bounds::default(), Ours::default());
    let content = vec![9u8; PART_BYTES + 100];
    spill(&sink, "a", &content, 1 << 16).await;
    spill(&sink, "b", &content, 1 << 16).await;
    let (a, b) = (
        sink.stored("a").await.unwrap(),
        sink.stored("b").await.unwrap(),
    );
    assert_eq!(a.key, b.key);
    assert_eq!(blobs.keys().len(), 1);
    assert_eq!(blobs.open_uploads(), 0, "the second upload was aborted");
}

fn text_part(text: &str) -> StoredPart {
    StoredPart {
        view: PartView {
            kind: PartKind::Text,
            media_type: None,
            filename: None,
            size: Some(text.len() as u64),
            sha256: Some(sha(text.as_bytes())),
            text: Some(text.into()),
            data: None,
            url: None,
            stored: true,
            flag: None,
        },
        key: Some(format!("k-{}", sha(text.as_bytes()))),
        whole: None,
    }
}

fn seen(id: &str, parts: &[&str]) -> Seen {
    Seen {
        id: id.into(),
        name: Some(format!("{id}.md")),
        description: None,
        metadata: None,
        parts: parts.iter().map(|p| text_part(p)).collect(),
    }
}

fn texts(manifest: &Manifest, id: &str) -> Vec<String> {
    manifest
        .get(id)
        .map(|e| e.parts.iter().filter_map(|p| p.view.text.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn chunks_are_joined_in_order_and_an_update_without_append_replaces() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    m.update(seen("a", &["one"]), false, false, b);
    m.update(seen("a", &["two"]), true, false, b);
    assert_eq!(m.for_note(false).views, vec![], "not whole yet: not noted");
    m.update(seen("a", &["three"]), true, true, b);
    assert_eq!(texts(&m, "a"), ["one", "two", "three"]);
    let gone = m.update(seen("a", &["new"]), false, true, b);
    assert_eq!(texts(&m, "a"), ["new"]);
    assert_eq!(gone.len(), 3, "the replaced parts' objects go");
}

#[test]
fn a_note_carries_what_completed_since_the_last_and_the_final_note_all() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    m.update(seen("a", &["A"]), false, true, b);
    let note = m.for_note(false);
    let (views, told) = (note.views, note.told);
    assert_eq!(
        views
            .iter()
            .map(|v| v.artifact_id.as_str())
            .collect::<Vec<_>>(),
        ["a"]
    );
    m.noted(&told);
    m.update(seen("b", &["B"]), false, true, b);
    let views = m.for_note(false).views;
    assert_eq!(
        views
            .iter()
            .map(|v| v.artifact_id.as_str())
            .collect::<Vec<_>>(),
        ["b"]
    );
    assert_eq!(m.for_note(true).views.len(), 2);
}

#[test]
fn the_task_s_own_list_is_the_truth_and_inline_content_stays_within_a_note_s_budget() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    m.update(seen("a", &["streamed"]), false, false, b);
    // Still working: its account replaces what streamed, but is not whole yet.
    m.reconcile(vec![seen("a", &["half"])], false, b);
    assert_eq!(texts(&m, "a"), ["half"]);
    assert!(!m.get("a").unwrap().complete);
    let big = "t".repeat(5000);
    m.reconcile(
        vec![
            seen("a", &["final"]),
            seen("b", &[&big]),
            seen("c", &[&big]),
        ],
        true,
        b,
    );
    assert_eq!(texts(&m, "a"), ["final"]);
    assert!(m.get("a").unwrap().complete);
    let views = m.for_note(true).views;
    let inline: usize = views
        .iter()
        .flat_map(|v| v.parts.iter())
        .filter_map(|p| p.text.as_ref())
        .map(String::len)
        .sum();
    assert!(inline <= standin_wire::NOTE_INLINE_BYTES, "{inline}");
    assert!(views[2].parts[0].text.is_none() && views[2].parts[0].stored);
    let before = m.clone();
    let gone = m.reconcile(vec![seen("a", &["final"])], true, b);
    assert_eq!(m, before, "the same account again changes nothing");
    assert!(
        gone.iter().all(|k| m.references(k)),
        "nothing listed is let go"
    );
}

#[test]
fn past_the_count_an_artifact_is_listed_truncated_without_its_parts() {
    let mut m = Manifest::default();
    let b = Bounds {
        max_bytes: u64::MAX,
        max_count: 2,
    };
    for id in ["a", "b", "c"] {
        m.update(seen(id, &[id]), false, true, b);
    }
    let c = m.get("c").unwrap();
    assert!(c.truncated && c.parts.is_empty());
    for n in 0..20 {
        m.update(seen(&format!("x{n}"), &["x"]), false, true, b);
    }
    assert_eq!(
        m.artifacts.len(),
        8,
        "listed up to 4 times the bound, then not at all"
    );
}

fn spec() -> AgentSpec {
    AgentSpec {
        id: "widgets".into(),
        url: "http://127.0.0.1:1".into(),
        version: None,
        updates: Updates::Off,
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

fn artifact(id: &str, text: &str) -> Artifact {
    Artifact {
        id: id.into(),
        name: Some(format!("{id}.md")),
        parts: vec![Part {
            media_type: Some("text/markdown".into()),
            filename: None,
            content: Content::Text(text.into()),
        }],
        ..Artifact::default()
    }
}

fn status(state: TaskState, artifacts: Option<Vec<Artifact>>) -> Status {
    Status {
        context_id: Some("ctx".into()),
        artifacts,
        ..Status::new(REMOTE, state, Some("done"))
    }
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
    let agent = Collecting::new(fake, Some(desk.clone()));
    let store = WithArtifacts::new(&rows, Some(desk.clone()));
    steps::turn(
        &store,
        steps::ready(&agent),
        Some(&spec()),
        Step::start(ID, "widgets", "write the report"),
        Duration::from_secs(5),
        PACING,
    )
    .await
    .unwrap();
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

fn desk_on(blobs: &Arc<MemoryBlobs>) -> Desk {
    Desk::new(
        blobs.clone() as Arc<dyn Blobs>,
        ID,
        Bounds::default(),
        Ours::default(),
        None,
    )
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

/// The exact-match echo guard covers notes and the row's `last`, not artifacts only: an
/// agent echoes its 40-character lowercase hex API key in its status text (which the
/// heuristic scrub lets through) and the push token in a question part's filename.
/// Neither reaches the note, nor the row.
#[tokio::test]
async fn an_echoed_credential_or_push_token_never_reaches_a_note_or_the_row() {
    const API_KEY: &str = "0123456789abcdef0123456789abcdef01234567";
    struct Held;
    impl standin::artifacts::HeldSecrets for Held {
        fn held(&self) -> futures_util::future::BoxFuture<'_, Vec<String>> {
            Box::pin(async { vec![API_KEY.to_owned()] })
        }
    }
    assert_eq!(
        standin_wire::scrub::scrub(&format!("key {API_KEY}")),
        format!("key {API_KEY}"),
        "the heuristic scrub alone lets this key through"
    );
    let token = PushToken::generate();
    let rows = MemoryStore::new();
    rows.create(&Row::new(ID, "widgets")).await.unwrap();
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = Arc::new(Desk::new(
        blobs.clone() as Arc<dyn Blobs>,
        ID,
        Bounds::default(),
        Ours {
            token: Some(token.digest()),
            held: Some(Arc::new(Held)),
        },
        None,
    ));
    let question = Status {
        context_id: Some("ctx".into()),
        parts: vec![Part {
            media_type: Some("application/pdf".into()),
            filename: Some(format!("contract-{}.pdf", token.expose())),
            content: Content::Data(format!("{{\"key\": \"{API_KEY}\"}}")),
        }],
        ..Status::new(
            REMOTE,
            TaskState::InputRequired,
            Some(&format!("I used the key {API_KEY}. Sign it?")),
        )
    };
    let fake = FakeAgent::new(false);
    fake.script_stream(Ok(vec![Ok(Update::Status(question.clone()))]));
    fake.set_task(question);
    let agent = Collecting::new(fake, Some(desk.clone()));
    let store = WithArtifacts::new(&rows, Some(desk.clone()));
    steps::turn(
        &store,
        steps::ready(&agent),
        Some(&spec()),
        Step::start(ID, "widgets", "review the contract"),
        Duration::from_secs(5),
        PACING,
    )
    .await
    .unwrap();
    let notes = rows.outbox();
    let asked = notes.last().expect("the question was noted");
    assert_eq!(asked.state, TaskState::InputRequired);
    let told = serde_json::to_string(&notes).unwrap();
    assert!(!told.contains(API_KEY), "{told}");
    assert!(!told.contains(token.expose()), "{told}");
    assert!(
        asked.text.starts_with("I used the key ***"),
        "{}",
        asked.text
    );
    assert_eq!(
        asked.parts[0].data.as_ref().and_then(|d| d["key"].as_str()),
        Some("*".repeat(API_KEY.len()).as_str()),
        "the form's value blanked in place"
    );
    let row = rows.get(ID).await.unwrap().unwrap();
    let kept = serde_json::to_string(&row).unwrap();
    assert!(!kept.contains(API_KEY), "{kept}");
    assert!(!kept.contains(token.expose()), "{kept}");
    // Blanked where it arrives, so the same status read again is no change: the row's
    // `last` and a fresh read compare alike (a follow would otherwise end its window at
    // every event).
    let again = standin_remote::Agent::get(&agent, REMOTE).await.unwrap();
    let read = standin::state::from_status(&again, "");
    assert!(!read.differs_from(row.last.as_ref().unwrap()), "{read:?}");
}

/// A hostile agent's artifacts with 1 MiB of metadata and 100 KB names each made a
/// manifest of tens of MB that every reader loads whole: each field is bounded, and
/// metadata past its bound is marked, not kept.
#[tokio::test]
async fn an_artifacts_fields_are_bounded_in_the_manifest() {
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = desk_on(&blobs);
    let huge = serde_json::json!({"padding": "m".repeat(1024 * 1024)}).to_string();
    for n in 0..5 {
        desk.observe_update(&ArtifactUpdate {
            artifact: Artifact {
                id: format!("a{n}"),
                name: Some("n".repeat(100_000)),
                description: Some("d".repeat(100_000)),
                metadata: Some(huge.clone()),
                parts: vec![Part {
                    media_type: Some("t".repeat(100_000)),
                    filename: Some("f".repeat(100_000)),
                    content: Content::Url(format!("https://x.example/{}", "u".repeat(100_000))),
                }],
            },
            append: false,
            last_chunk: true,
        });
    }
    desk.save().await.unwrap();
    let manifest = blobs.object(&format!("{ID}/manifest.json")).unwrap();
    assert!(manifest.len() < 64 * 1024, "{} bytes", manifest.len());
    let manifest: Manifest = serde_json::from_slice(&manifest).unwrap();
    let first = &manifest.artifacts[0];
    assert_eq!(
        first.metadata,
        Some(serde_json::json!({"truncated": true, "bytes": huge.len()}))
    );
    assert!(first.name.as_deref().unwrap().ends_with("[truncated]"));
}

/// The parts cap held on appends only: a replacing update or a task's own list of
/// 1,500 parts was kept whole. Every path keeps at most `MAX_PARTS`, marks the artifact
/// truncated, and gives back the keys past it.
#[test]
fn the_parts_cap_holds_on_replace_and_on_a_tasks_own_list() {
    use standin::artifacts::manifest::MAX_PARTS;
    let many: Vec<String> = (0..MAX_PARTS + 500).map(|n| format!("chunk {n}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let b = Bounds::default();
    let mut replaced = Manifest::default();
    let gone = replaced.update(seen("r", &refs), false, true, b);
    assert_eq!(texts(&replaced, "r").len(), MAX_PARTS);
    assert_eq!(gone.len(), 500, "the keys past the cap are deleted");
    assert!(replaced.get("r").unwrap().truncated);
    let mut listed = Manifest::default();
    let gone = listed.reconcile(vec![seen("t", &refs)], true, b);
    assert_eq!(texts(&listed, "t").len(), MAX_PARTS);
    assert_eq!(gone.len(), 500);
    assert!(listed.get("t").unwrap().truncated);
}

/// Every field and every artifact's parts were bounded, but not the manifest in all:
/// 400 listed artifacts of 1,000 parts each is hundreds of MB that End (128 MB) loads
/// whole. Appends, replaces and a task's own list all stop at `MAX_MANIFEST_BYTES` as
/// saved: what is past it is not kept (its keys given back to delete), its artifact is
/// marked truncated, and a new artifact past it is not listed.
#[test]
fn the_manifest_in_all_stays_within_its_byte_bound_on_every_path() {
    use standin::artifacts::manifest::MAX_MANIFEST_BYTES;
    let chunk = "c".repeat(7000);
    let parts: Vec<StoredPart> = (0..400)
        .map(|n| text_part(&format!("{n} {chunk}")))
        .collect();
    let seen = |id: &str, parts: &[StoredPart]| Seen {
        parts: parts.to_vec(),
        ..seen(id, &[])
    };
    let b = Bounds {
        max_bytes: u64::MAX,
        max_count: 100,
    };
    let saved = |m: &Manifest| serde_json::to_vec(m).unwrap().len();
    for path in ["append", "replace", "reconcile"] {
        let mut m = Manifest::default();
        let mut gone = 0;
        for a in 0..2 {
            let id = format!("{path}-{a}");
            gone += match path {
                "append" => parts
                    .chunks(1)
                    .enumerate()
                    .map(|(n, p)| m.update(seen(&id, p), n > 0, n == 399, b).len())
                    .sum(),
                "replace" => m.update(seen(&id, &parts), false, true, b).len(),
                _ => m.reconcile(vec![seen(&id, &parts)], true, b).len(),
            };
            assert!(
                saved(&m) <= MAX_MANIFEST_BYTES,
                "{path}: {} bytes",
                saved(&m)
            );
        }
        assert!(
            saved(&m) > MAX_MANIFEST_BYTES / 2,
            "{path}: filled to near the bound"
        );
        assert!(
            gone > 0,
            "{path}: the parts past it are given back to delete"
        );
        let last = m.get(&format!("{path}-1")).expect("listed");
        assert!(
            last.truncated,
            "{path}: the artifact that met the bound says so"
        );
        m.update(seen(&format!("{path}-new"), &parts[..1]), false, true, b);
        assert!(
            saved(&m) <= MAX_MANIFEST_BYTES,
            "{path}: {} bytes",
            saved(&m)
        );
    }
}

/// Once the parts filled the manifest's bound, an agent could still grow it through its
/// artifacts' names, descriptions and metadata (4 KiB each, on hundreds of artifacts):
/// they do not grow past the bound; they stay as they were.
#[test]
fn names_and_metadata_do_not_grow_the_manifest_past_its_bound() {
    use standin::artifacts::manifest::MAX_MANIFEST_BYTES;
    let b = Bounds {
        max_bytes: u64::MAX,
        max_count: 400,
    };
    let mut m = Manifest::default();
    let ids: Vec<String> = (0..300).map(|n| format!("a{n}")).collect();
    for id in &ids {
        m.update(seen(id, &[]), false, true, b);
    }
    let chunk = text_part(&"c".repeat(7000));
    for n in 0..250 {
        let parts = Seen {
            parts: vec![chunk.clone()],
            ..seen("a0", &[])
        };
        m.update(parts, n > 0, false, b);
    }
    let saved = |m: &Manifest| serde_json::to_vec(m).unwrap().len();
    assert!(saved(&m) <= MAX_MANIFEST_BYTES);
    let padding = "m".repeat(3000);
    for id in &ids {
        let mut grown = seen(id, &[]);
        grown.description = Some("d".repeat(3000));
        grown.metadata = Some(serde_json::json!({"padding": padding}));
        m.update(grown, true, true, b);
    }
    assert!(saved(&m) <= MAX_MANIFEST_BYTES, "{} bytes", saved(&m));
    let grown = m.artifacts.iter().filter(|a| a.metadata.is_some()).count();
    assert!(
        grown > 0 && grown < ids.len(),
        "{grown}: some grew, until the bound ({} bytes, a0 has {} parts)",
        saved(&m),
        m.get("a0").unwrap().parts.len()
    );
}

/// A benign agent that appends 2×1,000 text chunks made the artifacts API's answer
/// larger than Lambda's 6 MB (a 502 for ever): text inline is bounded in all, the rest
/// described, read through the links.
#[test]
fn the_artifacts_answer_stays_under_lambdas_6_mb() {
    let chunk = "c".repeat(4000);
    let b = Bounds::default();
    let mut m = Manifest::default();
    for id in ["a", "b"] {
        for n in 0..1000 {
            let text = format!("{n} {chunk}");
            m.update(seen(id, &[text.as_str()]), n > 0, n == 999, b);
        }
    }
    let answer = serde_json::to_vec(&m.views()).unwrap();
    assert!(answer.len() < 4 * 1024 * 1024, "{} bytes", answer.len());
    let inline: usize = m
        .views()
        .iter()
        .flat_map(|a| a.parts.iter())
        .filter(|p| p.text.is_some())
        .count();
    assert!(inline > 0 && inline < 2000, "{inline} parts inline");
}

/// What a follower holds of what its streams showed before a fold is bounded in bytes,
/// not only in count: a hundred updates of 100 KB each are not all held.
#[tokio::test]
async fn observed_updates_are_bounded_in_bytes() {
    use standin::artifacts::desk::MAX_OBSERVED_BYTES;
    let blobs = Arc::new(MemoryBlobs::default());
    let desk = desk_on(&blobs);
    let text = "x".repeat(100 * 1024);
    for n in 0..100 {
        desk.observe_update(&ArtifactUpdate {
            artifact: Artifact {
                id: format!("a{n}"),
                parts: vec![Part {
                    media_type: None,
                    filename: None,
                    content: Content::Text(text.clone()),
                }],
                ..Artifact::default()
            },
            append: false,
            last_chunk: true,
        });
    }
    let manifest = desk.save().await.unwrap();
    let kept = manifest.artifacts.len();
    assert!(
        kept > 0 && kept <= MAX_OBSERVED_BYTES / (100 * 1024),
        "{kept} of 100 updates held"
    );
}

/// A task listed again (a follow's subscription replays it) stores each content anew and
/// leaves the copies behind: 900 parts of one content are one key, deleted once. (The
/// desk asked 900 deletes of that one key before, one by one: with a few such artifacts
/// a follow spent its window deleting and was fenced, and the stand-in heard nothing.)
#[tokio::test]
async fn a_task_listed_again_deletes_each_key_it_leaves_behind_once() {
    let blobs = Arc::new(MemoryBlobs::default());
    let hoard = || Artifact {
        id: "hoard".into(),
        parts: (0..900)
            .map(|_| Part {
                media_type: None,
                filename: None,
                content: Content::Text("h".repeat(100)),
            })
            .collect(),
        ..Artifact::default()
    };
    let first = desk_on(&blobs);
    first.observe_task(&[hoard()], false);
    first.save().await.unwrap();
    let again = desk_on(&blobs);
    again.observe_task(&[hoard()], false);
    let saved = again.save().await.unwrap();
    assert_eq!(saved.get("hoard").unwrap().parts.len(), 900);
    assert_eq!(blobs.deletes(), 1, "the copy read again, once");
    assert_eq!(
        blobs.keys().len(),
        2,
        "the manifest and the one content listed"
    );
}

/// A task listed again keeps the manifest's copy of a content and deletes its own; a part
/// of that content read later in the same invocation is stored anew, not linked to the
/// copy just deleted (the sink remembered it, and the new artifact linked to nothing).
#[tokio::test]
async fn content_read_after_its_copy_was_deleted_is_stored_again() {
    let blobs = Arc::new(MemoryBlobs::default());
    let first = desk_on(&blobs);
    first.observe_task(&[artifact("a", "the same words")], false);
    first.save().await.unwrap();
    let again = desk_on(&blobs);
    again.observe_task(&[artifact("a", "the same words")], false);
    again.save().await.unwrap();
    again.observe_update(&ArtifactUpdate {
        artifact: artifact("b", "the same words"),
        append: false,
        last_chunk: true,
    });
    let saved = again.save().await.unwrap();
    for id in ["a", "b"] {
        let key = saved.get(id).unwrap().parts[0].key.clone().unwrap();
        assert!(
            blobs.object(&key).is_some(),
            "{id} links to content that exists"
        );
    }
}
