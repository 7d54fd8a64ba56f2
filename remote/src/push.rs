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

pub fn read_push(body: &[u8]) -> Result<PushClaim, PushBodyError> {
    let event: StreamResponse =
        serde_json::from_slice(body).map_err(|_| PushBodyError::NotStreamResponse)?;
    let remote_task_id = event
        .remote_task_id()
        .ok_or(PushBodyError::NoTaskId)?
        .to_owned();
    Ok(PushClaim {
        remote_task_id,
        claimed: map::claimed_state(&event),
    })
}
