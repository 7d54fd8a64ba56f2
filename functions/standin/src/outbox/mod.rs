//! The outbox: every note is written with the change it tells, in the row's transaction;
//! the notes table's stream (`stream`) hands them to `deliver`, which sends them to the
//! parent queue (`sqs`), the note bus (`events`) and a Step Functions parent
//! (`callback`) in the order written.

pub mod callback;
pub mod deliver;
pub mod events;
pub mod memory;
mod ports;
pub mod sqs;
pub mod stream;

pub use ports::{
    CallbackError, NoteBus, ParentCallback, ParentNote, ParentQueue, QueueError, note_of,
};
