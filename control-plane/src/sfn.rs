//! The stand-ins' executions on Step Functions: StartExecution / DescribeExecution.

use aws_sdk_sfn::Client;
use aws_sdk_sfn::error::DisplayErrorContext;

use standin_wire::TraceContext;

use super::executions::{ExecutionError, Executions};

/// The executions of one state machine.
#[derive(Clone)]
pub struct SfnExecutions {
    client: Client,
    state_machine_arn: String,
}

impl SfnExecutions {
    pub fn new(client: Client, state_machine_arn: String) -> Self {
        Self {
            client,
            state_machine_arn,
        }
    }
}

impl Executions for SfnExecutions {
    fn arn(&self, name: &str) -> String {
        format!(
            "{}:{name}",
            self.state_machine_arn
                .replace(":stateMachine:", ":execution:")
        )
    }

    async fn start(
        &self,
        name: &str,
        input: &str,
        trace: &TraceContext,
    ) -> Result<String, ExecutionError> {
        let started = self
            .client
            .start_execution()
            .state_machine_arn(&self.state_machine_arn)
            .name(name)
            .input(input)
            .trace_header(trace.xray_header())
            .send()
            .await;
        match started {
            Ok(out) => Ok(out.execution_arn().to_owned()),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_execution_already_exists()) =>
            {
                Err(ExecutionError::AlreadyExists(name.to_owned()))
            }
            Err(err) => Err(ExecutionError::Backend(
                DisplayErrorContext(&err).to_string(),
            )),
        }
    }

    async fn status(&self, arn: &str) -> Result<String, ExecutionError> {
        match self
            .client
            .describe_execution()
            .execution_arn(arn)
            .send()
            .await
        {
            Ok(out) => Ok(out.status().as_str().to_owned()),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_execution_does_not_exist()) =>
            {
                Err(ExecutionError::DoesNotExist(arn.to_owned()))
            }
            Err(err) => Err(ExecutionError::Backend(
                DisplayErrorContext(&err).to_string(),
            )),
        }
    }
}
