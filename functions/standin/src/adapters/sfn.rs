//! The doorbell on Step Functions (SendTaskSuccess / SendTaskHeartbeat on the park
//! token), the stand-ins' executions (StartExecution / DescribeExecution), and a Step
//! Functions parent's answer (SendTaskSuccess / SendTaskFailure on its task token).

use aws_sdk_sfn::Client;
use aws_sdk_sfn::error::DisplayErrorContext;

use crate::ports::{
    CallbackError, Doorbell, DoorbellError, ExecutionError, Executions, ParentCallback,
};

/// What a ring hands the park as its result.
pub const RUNG_OUTPUT: &str = r#"{"woke":"rung"}"#;

#[derive(Clone)]
pub struct SfnDoorbell {
    client: Client,
}

impl SfnDoorbell {
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

/// One mapping for every task-token call's failure.
fn outcome<T, E>(result: Result<T, E>) -> Result<(), DoorbellError>
where
    E: aws_sdk_sfn::error::ProvideErrorMetadata + std::error::Error,
{
    result.map(|_| ()).map_err(|err| {
        classify(
            err.code(),
            aws_sdk_sfn::error::DisplayErrorContext(&err).to_string(),
        )
    })
}

fn classify(code: Option<&str>, text: String) -> DoorbellError {
    match code {
        // The park is over: it was rung already, timed out, or the execution ended.
        Some("TaskTimedOut" | "InvalidToken" | "TaskDoesNotExist") => DoorbellError::ParkOver,
        _ => DoorbellError::Backend(text),
    }
}

impl Doorbell for SfnDoorbell {
    async fn ring(&self, park_token: &str) -> Result<(), DoorbellError> {
        let sent = self
            .client
            .send_task_success()
            .task_token(park_token)
            .output(RUNG_OUTPUT)
            .send()
            .await;
        outcome(sent)
    }

    async fn heartbeat(&self, park_token: &str) -> Result<(), DoorbellError> {
        outcome(
            self.client
                .send_task_heartbeat()
                .task_token(park_token)
                .send()
                .await,
        )
    }
}

/// Step Functions parents, answered on the task token they gave.
#[derive(Clone)]
pub struct SfnCallback {
    client: Client,
}

impl SfnCallback {
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

fn answered<T, E>(result: Result<T, E>) -> Result<(), CallbackError>
where
    E: aws_sdk_sfn::error::ProvideErrorMetadata + std::error::Error,
{
    result.map(|_| ()).map_err(|err| {
        let text = DisplayErrorContext(&err).to_string();
        match err.code() {
            // Nobody waits any more (timed out, stopped, answered), or the answer will be
            // refused however often it is sent (a bad output, a parent's key or a
            // permission we lack): holding the notes behind it for a day helps nobody.
            Some(
                "TaskTimedOut"
                | "InvalidToken"
                | "TaskDoesNotExist"
                | "InvalidOutput"
                | "ValidationException"
                | "AccessDeniedException"
                | "KmsAccessDeniedException"
                | "KmsInvalidStateException",
            ) => CallbackError::Gone(text),
            _ => CallbackError::Unavailable(text),
        }
    })
}

impl ParentCallback for SfnCallback {
    async fn succeed(&self, token: &str, output: &str) -> Result<(), CallbackError> {
        answered(
            self.client
                .send_task_success()
                .task_token(token)
                .output(output)
                .send()
                .await,
        )
    }

    async fn fail(&self, token: &str, error: &str, cause: &str) -> Result<(), CallbackError> {
        answered(
            self.client
                .send_task_failure()
                .task_token(token)
                .error(error)
                .cause(cause)
                .send()
                .await,
        )
    }
}

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

    async fn start(&self, name: &str, input: &str) -> Result<String, ExecutionError> {
        let started = self
            .client
            .start_execution()
            .state_machine_arn(&self.state_machine_arn)
            .name(name)
            .input(input)
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
