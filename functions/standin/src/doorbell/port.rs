//! The doorbell port: what ends a park.

use std::future::Future;

use crate::row::RungPush;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DoorbellError {
    /// The park is over (AWS: TaskTimedOut / InvalidToken). Harmless by design.
    #[error("the park is already over")]
    ParkOver,
    #[error("doorbell unavailable: {0}")]
    Backend(String),
}

/// Ends a park (Step Functions SendTaskSuccess / SendTaskHeartbeat on the park token).
pub trait Doorbell: Send + Sync {
    /// `push`: the push pending on the row as it rings, which the park's result carries
    /// to the wake (`steps::ParkOutcome::push`), so the wake can take it unread.
    fn ring(
        &self,
        park_token: &str,
        push: Option<&RungPush>,
    ) -> impl Future<Output = Result<(), DoorbellError>> + Send;
    fn heartbeat(&self, park_token: &str)
    -> impl Future<Output = Result<(), DoorbellError>> + Send;
}
