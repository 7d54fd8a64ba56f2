//! The parent's turns: what it said to the agent through a stand-in (its start's message,
//! each reply), as `GET /standins/{task_id}/turns` gives them, in the order they were
//! said beside the notes. The A2A front shows them in a task's history beside the agent's
//! messages.

use serde::{Deserialize, Serialize};

use crate::parts::InputPart;

/// Which of the parent's turns: a stand-in has one start and any number of replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnKind {
    Start,
    Reply,
}

/// One turn of the parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnView {
    pub kind: TurnKind,
    /// A reply's id; `start` for the start.
    pub turn_id: String,
    /// The newest note when the turn was said: it sits after that note and before the
    /// next (0: before any note).
    pub after_seq: u64,
    /// When the control API took it.
    pub at: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<InputPart>,
}

impl TurnView {
    /// The turn's own key among its stand-in's: a reply named `start` is not the start.
    pub fn key(&self) -> String {
        match self.kind {
            TurnKind::Start => "start".to_owned(),
            TurnKind::Reply => format!("reply:{}", self.turn_id),
        }
    }

    /// Where the turn sits among its stand-in's, as text that sorts so: the note it came
    /// after, then when it was taken, the start before a reply taken the same
    /// millisecond, then its key.
    pub fn order(&self) -> String {
        let rank = match self.kind {
            TurnKind::Start => 0,
            TurnKind::Reply => 1,
        };
        format!("{:020}|{}|{rank}|{}", self.after_seq, self.at, self.key())
    }
}

/// `GET /standins/{task_id}/turns`: the newest turns, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnsPage {
    pub turns: Vec<TurnView>,
}
