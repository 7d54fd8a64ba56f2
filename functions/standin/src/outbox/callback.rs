//! A Step Functions parent's answer: SendTaskSuccess / SendTaskFailure on its task token.

use aws_sdk_sfn::Client;
use aws_sdk_sfn::error::{DisplayErrorContext, ProvideErrorMetadata};

use super::ports::{CallbackError, ParentCallback};

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

fn answered<T, E: ProvideErrorMetadata + std::error::Error>(
    result: Result<T, E>,
) -> Result<(), CallbackError> {
    result.map(|_| ()).map_err(|err| {
        let text = DisplayErrorContext(&err).to_string();
        match err.code() {
            // Nobody waits any more (timed out, stopped, or answered already: the outbox
            // delivers at least once): holding the notes behind it helps nobody.
            Some("TaskTimedOut" | "TaskDoesNotExist") => CallbackError::Gone(text),
            // The answer will be refused however often it is sent (not a token, a bad
            // output, a parent's key or a permission we lack): the parent never hears.
            Some(
                "InvalidToken"
                | "InvalidOutput"
                | "ValidationException"
                | "AccessDeniedException"
                | "KmsAccessDeniedException"
                | "KmsInvalidStateException",
            ) => CallbackError::Refused(text),
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
