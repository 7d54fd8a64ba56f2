//! What a push body claims: the remote task it is about and its state (a hint for
//! rechecks only: nothing in a push is applied). Its text is never kept.

use crate::a2a::{map, types::StreamResponse};

use standin_wire::TaskState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushClaim {
    pub remote_task_id: String,
    pub claimed: Option<TaskState>,
}

/// Why a push body is refused, as the receiver's refusal reason names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushBodyError {
    #[error("the body is not a stream response")]
    NotStreamResponse,
    #[error("the body names no task")]
    NoTaskId,
}

impl PushBodyError {
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotStreamResponse => "not_stream_response",
            Self::NoTaskId => "no_task_id",
        }
    }
}

/// Reads a push body of either version: 1.0's stream response, or 0.3's whole task
/// (or other `kind`-tagged object), which is read as 1.0's.
pub fn read_push(body: &[u8]) -> Result<PushClaim, PushBodyError> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| PushBodyError::NotStreamResponse)?;
    let value = if value.get("kind").is_some() {
        crate::a2a::v03::kinded_v1(&value)
    } else {
        value
    };
    let event: StreamResponse =
        serde_json::from_value(value).map_err(|_| PushBodyError::NotStreamResponse)?;
    let remote_task_id = event
        .remote_task_id()
        .ok_or(PushBodyError::NoTaskId)?
        .to_owned();
    Ok(PushClaim {
        remote_task_id,
        claimed: map::claimed_state(&event),
    })
}
