//! The control API as the front calls it: the port, and what it answers.

use std::future::Future;

use serde_json::Value;

/// A control API answer: its status and JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub status: u16,
    pub body: Value,
}

/// The control API, as the front calls it.
pub trait ControlCalls: Send + Sync {
    fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> impl Future<Output = Result<Answered, String>> + Send;
}
