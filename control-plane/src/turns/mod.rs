//! The parent's turns, kept so a parent that reads a task back sees both sides of the
//! conversation (the A2A front's `history`): the start's message and each reply, with
//! the note it came after. The control API records a turn once it has taken it; a turn
//! recorded again (a retried call) keeps its first record.

mod calls;
pub mod dynamo;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;

pub use standin_wire::{TurnKind, TurnView as Turn};

use standin::registry::BoxFuture;

/// The most turns one read gives: the newest, oldest first. A task's history shows at
/// most 100 messages, so no answer needs more.
pub const TURNS_SHOWN: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnLogError {
    #[error("the turns table did not answer: {0}")]
    Unavailable(String),
}

/// Where the turns live.
pub trait TurnLog: Send + Sync {
    /// Keeps `turn` of stand-in `task_id`, unless a turn of its key is kept already.
    fn record<'a>(
        &'a self,
        task_id: &'a str,
        turn: &'a Turn,
    ) -> BoxFuture<'a, Result<(), TurnLogError>>;
    /// The stand-in's newest [`TURNS_SHOWN`] turns, in the order they were said.
    fn turns<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<Turn>, TurnLogError>>;
}

/// `turns` in the order they were said (by the note each came after, then when it was
/// taken), the newest [`TURNS_SHOWN`].
pub fn newest_in_order(mut turns: Vec<Turn>) -> Vec<Turn> {
    turns.sort_by_key(Turn::order);
    let extra = turns.len().saturating_sub(TURNS_SHOWN);
    turns.drain(..extra);
    turns
}
