//! Echoes and bounds: no secret in a note or the row, every field and the whole manifest bounded.

use super::*;
use standin_remote::{RemoteError, Turn};

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
    let store = Teller::new(&rows).with_artifacts(Some(desk.clone() as Arc<dyn NoteArtifacts>));
    steps::turn(
        &Invocation::reaching(store, &agent).with_spec(Some(&spec()).cloned()),
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

/// The push token a registration gives the agent is blanked from what the agent says
/// from then on: the teller hands the new watch's digest to the artifacts' desk.
#[tokio::test]
async fn a_push_token_given_at_registration_is_blanked_from_then_on() {
    let token = PushToken::generate();
    let rows = MemoryStore::new();
    rows.create(&Row::new(ID, "widgets")).await.unwrap();
    let blobs = Arc::new(MemoryBlobs::default());
    // The invocation began before the agent had a token.
    let desk = Arc::new(desk_on(&blobs));
    let teller = Teller::new(&rows).with_artifacts(Some(desk.clone() as Arc<dyn NoteArtifacts>));
    let watch = standin::row::Watch {
        mode: standin::row::WatchMode::Push,
        config_id: Some("cfg".into()),
        token_digest: Some(token.digest()),
    };
    teller.set_watch(ID, &watch).await.unwrap();
    let question = Status {
        context_id: Some("ctx".into()),
        parts: vec![Part {
            media_type: Some("application/pdf".into()),
            filename: Some(format!("contract-{}.pdf", token.expose())),
            content: Content::Data("{}".into()),
        }],
        ..Status::new(REMOTE, TaskState::InputRequired, Some("Sign it?"))
    };
    let fake = FakeAgent::new(false);
    fake.script_stream(Ok(vec![Ok(Update::Status(question.clone()))]));
    fake.set_task(question);
    let agent = Collecting::new(fake, Some(desk.clone()));
    steps::turn(
        &Invocation::reaching(teller, &agent).with_spec(Some(&spec()).cloned()),
        Step::start(ID, "widgets", "review the contract"),
        Duration::from_secs(5),
        PACING,
    )
    .await
    .unwrap();
    let told = serde_json::to_string(&rows.outbox()).unwrap();
    assert!(told.contains("contract-"), "{told}");
    assert!(!told.contains(token.expose()), "{told}");
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

/// Whatever words an agent puts in an error are blanked of an echo before the stand-in
/// logs or tells them: each error that carries the agent's text, a gRPC status's included,
/// from a read, a turn's stream or a follow's as each opens, or from reaching the agent.
#[tokio::test]
async fn an_echo_in_any_error_the_agent_words_is_blanked() {
    const API_KEY: &str = "0123456789abcdef0123456789abcdef01234567";
    struct Held;
    impl standin::artifacts::HeldSecrets for Held {
        fn held(&self) -> BoxFuture<'_, Vec<String>> {
            Box::pin(async { vec![API_KEY.to_owned()] })
        }
    }
    let echo = || format!("bad key {API_KEY}");
    let worded = [
        RemoteError::TaskNotFound(echo()),
        RemoteError::Rpc {
            code: -32603,
            message: echo(),
        },
        RemoteError::Grpc {
            code: 13,
            message: echo(),
        },
        RemoteError::Transport(echo()),
        RemoteError::InvalidResponse(echo()),
    ];
    for error in worded {
        let fake = FakeAgent::new(false);
        fake.fail_gets(vec![error.clone()]);
        fake.script_stream(Err(error.clone()));
        fake.script_stream(Err(error.clone()));
        let desk = Some(Arc::new(Desk::new(
            Arc::new(MemoryBlobs::default()) as Arc<dyn Blobs>,
            ID,
            Bounds::default(),
            Ours {
                token: None,
                held: Some(Arc::new(Held)),
            },
            None,
        )));
        let agent = Collecting::new(fake, desk.clone());
        let read = standin_remote::Agent::get(&agent, REMOTE).await.err();
        let sent = standin_remote::Agent::send_streaming(&agent, &Turn::new("hi", None))
            .await
            .err();
        let followed = standin_remote::Agent::subscribe(&agent, REMOTE).await.err();
        let unreached = Collecting::<FakeAgent>::reached(Err(error.clone()), desk.clone())
            .await
            .err();
        assert!(error.to_string().contains(API_KEY), "{error}");
        for said in [read, sent, followed, unreached] {
            let said = said.expect("the agent fails the call").to_string();
            assert!(!said.contains(API_KEY), "{error:?} came out as {said}");
            assert!(said.contains("bad key ***"), "{said}");
        }
    }
}
