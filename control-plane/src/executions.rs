//! The executions port: the stand-ins' executions, as the control API starts and reads them.

use std::future::Future;

use standin_wire::TraceContext;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionError {
    #[error("execution {0} already exists")]
    AlreadyExists(String),
    #[error("execution {0} does not exist")]
    DoesNotExist(String),
    #[error("Step Functions unavailable: {0}")]
    Backend(String),
}

/// The stand-ins' executions (Step Functions StartExecution and DescribeExecution), as
/// the control API starts and reads them.
pub trait Executions: Send + Sync {
    /// The ARN an execution of this name has, whether or not it exists.
    fn arn(&self, name: &str) -> String;
    /// Starts execution `name` with `input`, in `trace` (its segments join the trace);
    /// its ARN. Starting a running execution again with the same input answers it
    /// again; any other reuse of a name is `AlreadyExists`.
    fn start(
        &self,
        name: &str,
        input: &str,
        trace: &TraceContext,
    ) -> impl Future<Output = Result<String, ExecutionError>> + Send;
    /// The execution's status: `RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT`, `ABORTED`.
    fn status(&self, arn: &str) -> impl Future<Output = Result<String, ExecutionError>> + Send;
}
