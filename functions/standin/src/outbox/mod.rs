//! The outbox: every note is written with the change it tells, in the row's transaction
//! (`tell`); the step that wrote it sends it at once when nothing is ahead of it
//! (`at_once`), else the notes table's stream (`stream`) hands it to `deliver`, which sends
//! notes in write order, passing over those already sent, to the parent queue (`sqs`), the
//! note bus (`events`) and a Step Functions parent (`callback`).

pub mod at_once;
pub mod callback;
pub mod deliver;
pub mod events;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
mod ports;
pub mod sqs;
pub mod stream;
pub mod tell;

pub use crate::row::{SentMarks, note_of};
pub use ports::{CallbackError, NoteBus, ParentCallback, ParentNote, ParentQueue, QueueError};
pub use tell::{ArtifactsUnrecorded, Due, NoteArtifacts, SendsAtOnce, Teller};
