//! The doorbell on Step Functions: SendTaskSuccess / SendTaskHeartbeat on the park token.

use aws_sdk_sfn::Client;

use super::port::{Doorbell, DoorbellError};
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
