//! The doorbell on Step Functions: SendTaskSuccess / SendTaskHeartbeat on the park token.

use aws_sdk_sfn::Client;

use super::port::{Doorbell, DoorbellError};
use crate::row::RungPush;

/// What a ring hands the park as its result (`steps::ParkOutcome`).
pub fn rung_output(push: Option<&RungPush>) -> String {
    match push {
        Some(push) => serde_json::json!({"woke": "rung", "push": push}).to_string(),
        None => r#"{"woke":"rung"}"#.to_owned(),
    }
}

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
    result.map(|_| ()).map_err(|err| match err.code() {
        // The park is over: it was rung already, timed out, or the execution ended.
        Some("TaskTimedOut" | "InvalidToken" | "TaskDoesNotExist") => DoorbellError::ParkOver,
        _ => DoorbellError::Backend(aws_sdk_sfn::error::DisplayErrorContext(&err).to_string()),
    })
}

impl Doorbell for SfnDoorbell {
    async fn ring(&self, park_token: &str, push: Option<&RungPush>) -> Result<(), DoorbellError> {
        let sent = self
            .client
            .send_task_success()
            .task_token(park_token)
            .output(rung_output(push))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::ParkOutcome;
    use crate::steps::next::Woke;
    use standin_wire::TaskState;

    #[test]
    fn the_rung_output_is_the_park_outcome_the_wake_reads() {
        let push = RungPush {
            claimed: Some(TaskState::Working),
            id: crate::row::new_push_id(),
            asked: true,
        };
        let output = rung_output(Some(&push));
        let parsed: ParkOutcome = serde_json::from_str(&output).expect("a park outcome");
        assert_eq!(
            parsed,
            ParkOutcome {
                woke: Woke::Rung,
                push: Some(push.clone())
            }
        );
        // The number is a string: no JSON reader can turn it into a double.
        assert!(
            output.contains(&format!(r#""id":"{}""#, push.id)),
            "{output}"
        );
        let plain: ParkOutcome = serde_json::from_str(&rung_output(None)).expect("plain");
        assert_eq!(plain, ParkOutcome::woke(Woke::Rung));
    }
}
