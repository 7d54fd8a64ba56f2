//! The doorbell protocol (docs/architecture.md), one test (or more) per rule, with the
//! races run step by step
//! against the in-memory store (each store call is atomic, like one UpdateItem or one
//! transaction with the note it records).
//! The row store's own rules, which both stores keep, are checked in `row_store.rs`
//! (`standin::row::contract`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use standin::doorbell::DoorbellError;
use standin::doorbell::memory::MemoryDoorbell;
use standin::doorbell::{self, EndCause, follow_should_stop};
use standin::outbox::ParentNote;
use standin::outbox::ParentQueue;
use standin::outbox::QueueError;
use standin::outbox::Teller;
use standin::outbox::deliver as notify;
use standin::outbox::memory::MemoryQueue;
use standin::push::receiver;
use standin::push::token::PushToken;
use standin::row::Applied;
use standin::row::Closed;
use standin::row::StoreError;
use standin::row::memory::MemoryStore;
use standin::row::{FollowOutcome, FollowReport, Guard, Row, Taken, WakeEvent, Watch, WatchMode};
use standin::row::{Notes, Parks, StandIns};
use standin::state::{RemoteOut, remote_out};
use standin_remote::Agent;
use standin_remote::PushRequest;
use standin_remote::RemoteError;
use standin_remote::Sent;
use standin_remote::Status;
use standin_remote::Turn;
use standin_remote::UpdateStream;
use standin_remote::fake::FakeAgent;
use standin_wire::TaskState;

use std::sync::Arc;
use std::time::Duration;

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
    row.last = Some(remote_out(REMOTE, TaskState::InputRequired, "What colour?"));
    store.create(&row).await.expect("row created");
    token
}

fn reply(text: &str) -> WakeEvent {
    WakeEvent::reply(text)
}

/// Parks park number `park`, which must be the newest.
async fn park(store: &MemoryStore, bell: &MemoryDoorbell, park: u64, token: &str) -> Row {
    doorbell::store_park(store, bell, ID, park, token)
        .await
        .expect("parked")
        .expect("the newest park stores its token")
}

/// (seq, state, is_final) of every note in the outbox.
fn outbox(store: &MemoryStore) -> Vec<(u64, String, bool)> {
    store
        .outbox()
        .into_iter()
        .map(|n| (n.seq, n.state.as_str().to_owned(), n.is_final))
        .collect()
}

fn working(text: &str) -> RemoteOut {
    remote_out(REMOTE, TaskState::Working, text)
}

mod apply_and_end;
mod delivery;
mod drain;
mod fence;
mod races_and_bounds;
mod ring_and_park;
