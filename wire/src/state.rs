//! The two enums a parent reads: the remote task's state and the watch.

use serde::{Deserialize, Serialize};

/// The remote task's state as the stand-in reports it to the parent. Its names on the wire
/// are the note's format (they follow A2A 1.0's, whatever the agent's protocol version:
/// the remote crate maps each version's onto these). Unknown names read as `Unspecified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED", other)]
    Unspecified,
}

impl TaskState {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// The wire name, which is also what the row and the parent's notes store.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "TASK_STATE_SUBMITTED",
            Self::Working => "TASK_STATE_WORKING",
            Self::Completed => "TASK_STATE_COMPLETED",
            Self::Failed => "TASK_STATE_FAILED",
            Self::Canceled => "TASK_STATE_CANCELED",
            Self::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            Self::Rejected => "TASK_STATE_REJECTED",
            Self::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
            Self::Unspecified => "TASK_STATE_UNSPECIFIED",
        }
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the stand-in hears the remote task, chosen once per remote task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WatchMode {
    Push,
    Follow,
    /// GetTask at growing intervals (an agent with neither push nor streaming, or one
    /// whose subscribe refuses a task GetTask still knows).
    Poll,
    Off,
}

impl WatchMode {
    /// The wire name, also the `Watch` dimension of the heard-latency metric.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Push => "push",
            Self::Follow => "follow",
            Self::Poll => "poll",
            Self::Off => "off",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_serialises_as_its_wire_name() {
        use TaskState::*;
        for state in [
            Submitted,
            Working,
            Completed,
            Failed,
            Canceled,
            InputRequired,
            Rejected,
            AuthRequired,
            Unspecified,
        ] {
            let json = serde_json::to_value(state).map_err(|e| e.to_string());
            assert_eq!(json, Ok(serde_json::json!(state.as_str())));
            let back: Result<TaskState, _> =
                serde_json::from_value(serde_json::json!(state.as_str()));
            assert_eq!(back.ok(), Some(state));
        }
        for mode in [
            WatchMode::Push,
            WatchMode::Follow,
            WatchMode::Poll,
            WatchMode::Off,
        ] {
            let json = serde_json::to_value(mode).map_err(|e| e.to_string());
            assert_eq!(json, Ok(serde_json::json!(mode.as_str())));
        }
        let unknown: Result<TaskState, _> = serde_json::from_str(r#""TASK_STATE_NEW_IN_2027""#);
        assert_eq!(unknown.ok(), Some(Unspecified));
    }
}
