//! The parent's turns: what it said to the agent through a stand-in (its start's message,
//! each reply), as `GET /standins/{task_id}/turns` gives them, in the order the agent had
//! them. The A2A front shows them in a task's history beside the agent's messages.

use serde::{Deserialize, Serialize};

use crate::InputPart;

/// The id of a start's turn; a reply's turn has the reply's id.
pub const START_TURN_ID: &str = "start";

/// One turn of the parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnView {
    /// `start`, or the reply's id.
    pub turn_id: String,
    /// The note the turn came after: it reached the agent after that note and before
    /// the next (0: before any note).
    pub after_seq: u64,
    /// When the control API took it.
    pub at: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<InputPart>,
}

/// `GET /standins/{task_id}/turns`: the newest turns, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnsPage {
    pub turns: Vec<TurnView>,
}
