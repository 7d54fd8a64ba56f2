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
use standin::artifacts::{Blobs, Bounds, Collecting, Desk, Manifest, Ours, PartRoom};
use standin::outbox::{NoteArtifacts, Teller};
use standin::push::PushToken;
use standin::row::memory::MemoryStore;
use standin::row::{Row, StandIns};
use standin::steps::Invocation;
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

fn desk_on(blobs: &Arc<MemoryBlobs>) -> Desk {
    Desk::new(
        blobs.clone() as Arc<dyn Blobs>,
        ID,
        Bounds::default(),
        Ours::default(),
        None,
    )
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

mod bounds;
mod desk;
mod manifest;
mod sink;
