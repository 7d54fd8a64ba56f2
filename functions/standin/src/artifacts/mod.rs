//! What the sub-task produced: the agent's artifacts, collected as its answers arrive,
//! their bytes stored, and told to the parent in the notes.
//!
//! - `manifest`: the stand-in's record of its artifacts (pure: merges, bounds, what a
//!   note carries).
//! - `blobs`: where bytes and manifests are kept (a port), `s3` and `memory` adapters;
//!   `kept`: under which keys, and the manifest as read.
//! - `sink`: content stored as it arrives, checked by `guard` for echoes of our secrets,
//!   held within the process's `room` for parts.
//! - `desk`: one invocation's artifacts, folded into the manifest.
//! - `collect`: an agent whose answers' artifacts reach the desk.
//! - `notes`: what a note carries of them (the outbox's `tell` asks the desk).

pub mod blobs;
pub mod collect;
pub mod desk;
pub mod guard;
pub mod kept;
pub mod manifest;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
mod notes;
pub mod room;
pub mod s3;
pub mod sink;

pub use blobs::{BlobError, Blobs};
pub use collect::Collecting;
pub use desk::Desk;
pub use manifest::{Bounds, Manifest};
pub use room::PartRoom;
pub use sink::{HeldSecrets, Ours};
