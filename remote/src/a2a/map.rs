//! A2A 1.0's wire as the stand-in's model: one reading of a task's state for every
//! reader (a turn, a get, a follow, a push).

use serde_json::Value;

use super::types::{
    Message, SendMessageResult, StreamResponse, Task, TaskStatus, TaskStatusUpdateEvent, WireState,
};
use crate::model::{Sent, Status, Update};
use standin_wire::TaskState;

/// The sub-state with which an agent says "done; further messages start anew".
pub const AWAITING_NEXT_MESSAGE: &str = "awaiting-next-message";

pub fn state(wire: WireState) -> TaskState {
    match wire {
        WireState::Submitted => TaskState::Submitted,
        WireState::Working => TaskState::Working,
        WireState::Completed => TaskState::Completed,
        WireState::Failed => TaskState::Failed,
        WireState::Canceled => TaskState::Canceled,
        WireState::InputRequired => TaskState::InputRequired,
        WireState::Rejected => TaskState::Rejected,
        WireState::AuthRequired => TaskState::AuthRequired,
        WireState::Unspecified => TaskState::Unspecified,
    }
}

/// The state as the stand-in reads it: "input required, but awaiting the next message"
/// is a finished exchange.
fn read_state(wire: WireState, sub_state: Option<&str>) -> TaskState {
    match wire {
        WireState::InputRequired if sub_state == Some(AWAITING_NEXT_MESSAGE) => {
            TaskState::Completed
        }
        other => state(other),
    }
}

fn sub_state<'a>(metadata: &[Option<&'a Value>]) -> Option<&'a str> {
    metadata
        .iter()
        .flatten()
        .find_map(|m| m.get("sub_state").or_else(|| m.get("subState")))
        .and_then(Value::as_str)
}

/// A task's sub-state: on its status message, else on the task.
fn task_sub_state(task: &Task) -> Option<&str> {
    sub_state(&[
        task.status
            .message
            .as_ref()
            .and_then(|m| m.metadata.as_ref()),
        task.metadata.as_ref(),
    ])
}

/// A status update's sub-state: on the update, else on its status message.
fn update_sub_state(update: &TaskStatusUpdateEvent) -> Option<&str> {
    sub_state(&[
        update.metadata.as_ref(),
        update
            .status
            .message
            .as_ref()
            .and_then(|m| m.metadata.as_ref()),
    ])
}

fn status_text(status: &TaskStatus) -> Option<String> {
    status.message.as_ref().map(Message::text)
}

fn non_empty(id: &str) -> Option<String> {
    Some(id.to_owned()).filter(|id| !id.is_empty())
}

pub fn task(task: &Task) -> Status {
    Status {
        task_id: task.id.clone(),
        context_id: non_empty(&task.context_id),
        state: read_state(task.status.state, task_sub_state(task)),
        text: status_text(&task.status),
        at: task.status.timestamp.clone(),
        parts: super::artifact::message_parts(task.status.message.as_ref()),
        artifacts: None,
    }
}

fn status_update(update: &TaskStatusUpdateEvent) -> Status {
    Status {
        task_id: update.task_id.clone(),
        context_id: non_empty(&update.context_id),
        state: read_state(update.status.state, update_sub_state(update)),
        text: status_text(&update.status),
        at: update.status.timestamp.clone(),
        parts: super::artifact::message_parts(update.status.message.as_ref()),
        artifacts: None,
    }
}

/// One stream item (or push body). Artifacts and messages about a task carry no task
/// state; a message that names no task is a direct answer.
pub fn update(event: &StreamResponse) -> Update {
    if let Some(t) = &event.task {
        return Update::Status(task(t));
    }
    match (&event.status_update, &event.message) {
        (Some(u), _) => Update::Status(status_update(u)),
        (None, Some(m)) if m.task_id.as_deref().is_none_or(str::is_empty) => {
            Update::Answer(m.text())
        }
        _ => Update::Other,
    }
}

/// The state an event claims, as `update` reads it, without its text: the push receiver
/// needs only the claim, and gathering a 60 KB message to drop it was most of its work.
pub fn claimed_state(event: &StreamResponse) -> Option<TaskState> {
    match (&event.task, &event.status_update) {
        (Some(t), _) => Some(read_state(t.status.state, task_sub_state(t))),
        (None, Some(u)) => Some(read_state(u.status.state, update_sub_state(u))),
        (None, None) => None,
    }
}

pub fn sent(result: &SendMessageResult) -> Sent {
    match result {
        SendMessageResult::Task(t) => Sent::Task(task(t)),
        SendMessageResult::Message(m) => Sent::Answer(m.text()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{Message, WirePart};
    use serde_json::json;

    fn wire_status(state: WireState, text: Option<&str>) -> TaskStatus {
        TaskStatus {
            state,
            message: text.map(|t| Message {
                parts: vec![WirePart::text(t)],
                ..Message::default()
            }),
            timestamp: None,
        }
    }

    fn wire_task(state: WireState, text: Option<&str>) -> Task {
        Task {
            id: "r1".into(),
            context_id: "c1".into(),
            status: wire_status(state, text),
            ..Task::default()
        }
    }

    #[test]
    fn awaiting_next_message_is_completed() {
        let mut t = wire_task(WireState::InputRequired, Some("bye"));
        assert_eq!(task(&t).state, TaskState::InputRequired);
        t.metadata = Some(json!({"sub_state": AWAITING_NEXT_MESSAGE}));
        assert_eq!(task(&t).state, TaskState::Completed);
        t.metadata = Some(json!({"subState": AWAITING_NEXT_MESSAGE}));
        assert_eq!(task(&t).state, TaskState::Completed);
    }

    #[test]
    fn sub_state_is_read_from_update_metadata_and_the_claim_agrees() {
        let event = StreamResponse {
            status_update: Some(TaskStatusUpdateEvent {
                task_id: "r1".into(),
                context_id: "c1".into(),
                status: wire_status(WireState::InputRequired, Some("bye")),
                metadata: Some(json!({"sub_state": AWAITING_NEXT_MESSAGE})),
            }),
            ..StreamResponse::default()
        };
        let Update::Status(status) = update(&event) else {
            panic!("a status update carries a state");
        };
        assert_eq!(status.state, TaskState::Completed);
        assert_eq!(claimed_state(&event), Some(TaskState::Completed));
    }

    #[test]
    fn the_claim_is_the_state_the_full_reader_gives() {
        let with_task = StreamResponse {
            task: Some(wire_task(WireState::InputRequired, Some("bye"))),
            ..StreamResponse::default()
        };
        let Update::Status(full) = update(&with_task) else {
            panic!("a task carries a state");
        };
        assert_eq!(claimed_state(&with_task), Some(full.state));
        let mut awaiting = wire_task(WireState::InputRequired, Some("bye"));
        awaiting.metadata = Some(json!({"subState": AWAITING_NEXT_MESSAGE}));
        let awaiting = StreamResponse {
            task: Some(awaiting),
            ..StreamResponse::default()
        };
        assert_eq!(claimed_state(&awaiting), Some(TaskState::Completed));
        let big = StreamResponse {
            status_update: Some(TaskStatusUpdateEvent {
                task_id: "r1".into(),
                context_id: "c1".into(),
                status: wire_status(WireState::Working, Some(&"x".repeat(60_000))),
                metadata: None,
            }),
            ..StreamResponse::default()
        };
        assert_eq!(claimed_state(&big), Some(TaskState::Working));
        assert_eq!(claimed_state(&StreamResponse::default()), None);
    }

    #[test]
    fn a_task_without_a_status_message_has_no_text() {
        assert_eq!(task(&wire_task(WireState::Working, None)).text, None);
        assert_eq!(
            task(&wire_task(WireState::Working, Some("new")))
                .text
                .as_deref(),
            Some("new")
        );
    }

    #[test]
    fn artifact_updates_carry_no_state() {
        let event: StreamResponse = serde_json::from_value(json!({
            "artifactUpdate": {"taskId": "r1", "contextId": "c1", "artifact": {"artifactId": "a", "parts": [{"text": "w"}]}}
        })).expect("fixture parses");
        assert_eq!(update(&event), Update::Other);
    }

    #[test]
    fn every_wire_state_maps_to_the_state_of_the_same_name() {
        for wire in [
            WireState::Submitted,
            WireState::Working,
            WireState::Completed,
            WireState::Failed,
            WireState::Canceled,
            WireState::InputRequired,
            WireState::Rejected,
            WireState::AuthRequired,
            WireState::Unspecified,
        ] {
            let name = serde_json::to_value(wire).expect("serialises");
            assert_eq!(name, json!(state(wire).as_str()), "{wire:?}");
        }
    }

    #[test]
    fn a_question_s_form_reaches_the_model_beside_its_text() {
        let event: StreamResponse = serde_json::from_value(json!({"statusUpdate": {
            "taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"role": "ROLE_AGENT",
                "parts": [{"text": "Which size?"},
                          {"data": {"size": ["S", "M"]}, "mediaType": "application/json"},
                          {"url": "https://f/form.html"}]}}}}))
        .unwrap_or_default();
        let Update::Status(status) = update(&event) else {
            panic!("a status");
        };
        assert_eq!(status.text.as_deref(), Some("Which size?"));
        let contents: Vec<_> = status.parts.iter().map(|p| p.content.clone()).collect();
        assert_eq!(
            contents,
            [
                crate::model::Content::Data(r#"{"size":["S","M"]}"#.into()),
                crate::model::Content::Url("https://f/form.html".into()),
            ]
        );
        assert_eq!(
            status.parts[0].media_type.as_deref(),
            Some("application/json")
        );
    }
}
