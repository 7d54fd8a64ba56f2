//! Executions in memory, for unit tests of the control API.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use standin_wire::TraceContext;

use super::executions::{ExecutionError, Executions};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Executions in memory: the ones started through the port and the ones a test adds;
/// status calls can be made to fail.
#[derive(Default)]
pub struct MemoryExecutions {
    /// name → (input, status)
    executions: Mutex<BTreeMap<String, (String, String)>>,
    started: Mutex<usize>,
    start_failure: Mutex<Option<ExecutionError>>,
    status_failure: Mutex<Option<ExecutionError>>,
    /// Executions whose status calls fail, by name.
    unreadable: Mutex<Vec<String>>,
    /// The trace each start named, by execution.
    traces: Mutex<BTreeMap<String, String>>,
}

impl MemoryExecutions {
    pub fn new() -> Self {
        Self::default()
    }

    /// An execution that exists already, as an earlier stand-in left it.
    pub fn add(&self, name: &str, status: &str) {
        lock(&self.executions).insert(name.to_owned(), (String::new(), status.to_owned()));
    }

    /// Every start fails with `error` (None: they start again).
    pub fn fail_start(&self, error: Option<ExecutionError>) {
        *lock(&self.start_failure) = error;
    }

    /// Every status call fails with `error` (None: they answer again).
    pub fn fail_status(&self, error: Option<ExecutionError>) {
        *lock(&self.status_failure) = error;
    }

    /// Status calls about execution `name` fail (Step Functions throttles that one call).
    pub fn fail_status_of(&self, name: &str) {
        lock(&self.unreadable).push(name.to_owned());
    }

    /// How many executions the port started.
    pub fn started(&self) -> usize {
        *lock(&self.started)
    }

    pub fn arn_of(&self, name: &str) -> String {
        self.arn(name)
    }

    /// The trace (its `traceparent`) execution `name` was started in.
    pub fn trace_of(&self, name: &str) -> Option<String> {
        lock(&self.traces).get(name).cloned()
    }

    pub fn input_of(&self, name: &str) -> Option<String> {
        lock(&self.executions)
            .get(name)
            .map(|(input, _)| input.clone())
    }
}

impl Executions for MemoryExecutions {
    fn arn(&self, name: &str) -> String {
        format!("arn:aws:states:us-east-1:000000000000:execution:memory:{name}")
    }

    async fn start(
        &self,
        name: &str,
        input: &str,
        trace: &TraceContext,
    ) -> Result<String, ExecutionError> {
        if let Some(error) = lock(&self.start_failure).clone() {
            return Err(error);
        }
        let mut executions = lock(&self.executions);
        match executions.get(name) {
            Some((given, status)) if given == input && status == "RUNNING" => Ok(self.arn(name)),
            Some(_) => Err(ExecutionError::AlreadyExists(name.to_owned())),
            None => {
                executions.insert(name.to_owned(), (input.to_owned(), "RUNNING".to_owned()));
                lock(&self.traces).insert(name.to_owned(), trace.header());
                *lock(&self.started) += 1;
                Ok(self.arn(name))
            }
        }
    }

    async fn status(&self, arn: &str) -> Result<String, ExecutionError> {
        if let Some(error) = lock(&self.status_failure).clone() {
            return Err(error);
        }
        let name = arn.rsplit(':').next().unwrap_or_default();
        if lock(&self.unreadable).iter().any(|n| n == name) {
            return Err(ExecutionError::Backend(format!(
                "throttled describing {name}"
            )));
        }
        lock(&self.executions)
            .get(name)
            .map(|(_, status)| status.clone())
            .ok_or_else(|| ExecutionError::DoesNotExist(arn.to_owned()))
    }
}
