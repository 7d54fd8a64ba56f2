//! The control API as the tools reach it: one call, its status and its JSON answer.

use std::future::Future;

use serde_json::Value;

/// A control API answer: its status and its body (`{"error"}` when refused).
#[derive(Debug, Clone, PartialEq)]
pub struct ControlAnswer {
    pub status: u16,
    pub body: Value,
}

impl ControlAnswer {
    /// The body of a 2xx answer, else the API's own message, as a tool error says it.
    pub fn accepted(self, what: &str) -> Result<Value, String> {
        if (200..300).contains(&self.status) {
            return Ok(self.body);
        }
        let said = self.body["error"]
            .as_str()
            .map_or_else(|| self.body.to_string(), str::to_owned);
        let hint = match self.status {
            404 => {
                ": check the ids (a task_id as delegate returned it, an artifact_id as artifacts lists it)"
            }
            429 => {
                ": too much at once (for a reply: 8 wait already); wait for the agent's next note, then try again"
            }
            _ => "",
        };
        Err(format!(
            "{what} was refused ({}): {said}{hint}",
            self.status
        ))
    }
}

/// One call of the control API (`api/control.openapi.json`). `Err` is a call that got
/// no answer (the stack unreachable, credentials missing), said so a person can act.
pub trait ControlApi: Send + Sync + 'static {
    fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> impl Future<Output = Result<ControlAnswer, String>> + Send;
}
