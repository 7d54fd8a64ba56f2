//! The hearer port: what the door hands the function that hears a push, and what it
//! answers. The door waits for the answer a bounded time (`push::door`).

use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::row::Row;
use standin_wire::TaskState;

/// A hearing the door claimed: the row as its claim left it, the claim's id, and the
/// state the push's body claims (a hint, as for a ring: never applied).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HearRequest {
    pub row: Row,
    pub hearing: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed: Option<TaskState>,
}

/// What a hearing came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Heard {
    /// The change is committed with its note, the note sent, and the park rung with a
    /// report of it: the push is heard.
    Told,
    /// Nothing was told (no change, the agent away, the park over): the door rings the
    /// park as it would without a hearer.
    Passed,
    /// The agent said nothing new and what its push claims: the hearing ended, and there
    /// is nothing for the park to hear (a duplicate push costs one GetTask, no ring).
    Unchanged,
    /// The agent's answer disagrees with the push's claim, and nothing was told: the door
    /// rings the park with the push marked asked, so the rechecks start at their first
    /// wait rather than ask again at once.
    Disagreed,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the hearer could not be asked: {0}")]
pub struct HearerError(pub String);

pub trait Hearer: Send + Sync {
    /// Whether the door claims hearings for this hearer at all (`NoHearer` does not).
    fn hears(&self) -> bool {
        true
    }

    fn hear(
        &self,
        request: &HearRequest,
    ) -> impl Future<Output = Result<Heard, HearerError>> + Send;
}

/// A door with no hearer: every push rings the park.
pub struct NoHearer;

impl Hearer for NoHearer {
    fn hears(&self) -> bool {
        false
    }

    async fn hear(&self, _: &HearRequest) -> Result<Heard, HearerError> {
        Ok(Heard::Passed)
    }
}
