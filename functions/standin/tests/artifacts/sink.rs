//! The sink: content stored in parts as it arrives, within the process's room and the bound, echoes blanked.

use super::*;

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
    ) -> BoxFuture<'_, Result<Option<String>, BlobError>> {
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
    fn put_link<'a>(
        &'a self,
        key: &'a str,
        seconds: u64,
        size: u64,
        media_type: Option<&'a str>,
    ) -> BoxFuture<'a, Result<standin::artifacts::blobs::PutLink, BlobError>> {
        self.blobs.put_link(key, seconds, size, media_type)
    }
    fn size(&self, key: &str) -> BoxFuture<'_, Result<Option<u64>, BlobError>> {
        self.blobs.size(key)
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
