//! The doorbell port: what ends a park.

use std::future::Future;

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
    fn ring(&self, park_token: &str) -> impl Future<Output = Result<(), DoorbellError>> + Send;
    fn heartbeat(&self, park_token: &str)
    -> impl Future<Output = Result<(), DoorbellError>> + Send;
}
