//! How a remote task's state becomes the stand-in's: one mapping (`remote_out`) used by
//! all three readers, so a turn, a fetch and a follow report a change the same way.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::scrub::scrub;
use crate::a2a::{StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent};

/// The sub-state with which an agent says "done; further messages start anew".
pub const AWAITING_NEXT_MESSAGE: &str = "awaiting-next-message";

/// The remote task as the stand-in reports it: mapped state, scrubbed text, finality.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteOut {
    pub remote_task_id: String,
    pub state: TaskState,
    pub text: String,
    #[serde(rename = "final")]
    pub is_final: bool,
}

impl RemoteOut {
    /// A change is a different (state, scrubbed text) pair; ids and finality follow.
    pub fn differs_from(&self, known: &Self) -> bool {
        self.state != known.state || self.text != known.text
    }

    /// WORKING moves the parent's row without waking its model; the rest are notes.
    pub fn is_note(&self) -> bool {
        self.state.is_terminal() || self.state.is_interrupted()
    }
}

/// Longest task or context id the stand-in keeps (the SDKs use UUIDs): a longer one is an
/// agent error, never stored.
pub const MAX_ID_BYTES: usize = 256;

impl RemoteOut {
    /// The state as an answer about `remote`, the task the stand-in asked about: an agent
    /// cannot rename the task (or grow its id into the row) by answering with another id.
    pub fn about(mut self, remote: &str) -> Self {
        remote.clone_into(&mut self.remote_task_id);
        self
    }
}

pub fn remote_out(
    remote_task_id: &str,
    state: TaskState,
    sub_state: Option<&str>,
    text: &str,
) -> RemoteOut {
    let (state, is_final) = match state {
        TaskState::InputRequired if sub_state == Some(AWAITING_NEXT_MESSAGE) => {
            (TaskState::Completed, true)
        }
        s => (s, s.is_terminal()),
    };
    RemoteOut {
        remote_task_id: remote_task_id.to_owned(),
        state,
        text: scrub(text),
        is_final,
    }
}

fn sub_state<'a>(metadata: &[Option<&'a Value>]) -> Option<&'a str> {
    metadata
        .iter()
        .flatten()
        .find_map(|m| m.get("sub_state").or_else(|| m.get("subState")))
        .and_then(Value::as_str)
}

fn status_text(status: &TaskStatus) -> Option<String> {
    status.message.as_ref().map(|m| m.text())
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

/// Reader 2: a Task from GetTask. A task with no status message keeps the known text.
pub fn from_task(task: &Task, known_text: &str) -> RemoteOut {
    let text = status_text(&task.status).unwrap_or_else(|| known_text.to_owned());
    remote_out(&task.id, task.status.state, task_sub_state(task), &text)
}

/// Reader 3: one streamed event. Artifacts and messages carry no task state.
pub fn from_event(event: &StreamResponse, known_text: &str) -> Option<RemoteOut> {
    if let Some(task) = &event.task {
        return Some(from_task(task, known_text));
    }
    let update = event.status_update.as_ref()?;
    let text = status_text(&update.status).unwrap_or_else(|| known_text.to_owned());
    Some(remote_out(
        &update.task_id,
        update.status.state,
        update_sub_state(update),
        &text,
    ))
}

/// The state an event claims, as `from_event` reads it, without its text: the push
/// receiver needs only the claim, and gathering and scrubbing a 60 KB message to drop it
/// was most of the receiver's work.
pub fn claimed_state(event: &StreamResponse) -> Option<TaskState> {
    let (state, sub) = match (&event.task, &event.status_update) {
        (Some(task), _) => (task.status.state, task_sub_state(task)),
        (None, Some(update)) => (update.status.state, update_sub_state(update)),
        (None, None) => return None,
    };
    Some(remote_out("", state, sub, "").state)
}

/// Reader 1: a turn's stream, folded to where it stopped. Returns `None` when the stream
/// named no task state at all (an agent that answered with a bare message).
#[derive(Debug, Default)]
pub struct TurnReader {
    last: Option<RemoteOut>,
    context_id: Option<String>,
}

impl TurnReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event; returns true when the turn is over (interrupted or final).
    pub fn read(&mut self, event: &StreamResponse) -> bool {
        if let Some(ctx) = event
            .task
            .as_ref()
            .map(|t| &t.context_id)
            .or(event.status_update.as_ref().map(|u| &u.context_id))
            .filter(|c| !c.is_empty())
        {
            self.context_id = Some(ctx.clone());
        }
        let known = self.last.as_ref().map_or("", |l| l.text.as_str());
        if let Some(out) = from_event(event, known) {
            self.last = Some(out);
        }
        self.last
            .as_ref()
            .is_some_and(|l| l.is_final || l.state.is_interrupted())
    }

    /// The state the turn has reached so far.
    pub fn last(&self) -> Option<&RemoteOut> {
        self.last.as_ref()
    }

    pub fn context_id(&self) -> Option<&str> {
        self.context_id.as_deref()
    }

    pub fn finish(self) -> Option<RemoteOut> {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{Message, Part};
    use serde_json::json;

    fn status(state: TaskState, text: Option<&str>) -> TaskStatus {
        TaskStatus {
            state,
            message: text.map(|t| Message {
                parts: vec![Part::text(t)],
                ..Message::default()
            }),
            timestamp: None,
        }
    }

    fn task(state: TaskState, text: Option<&str>) -> Task {
        Task {
            id: "r1".into(),
            context_id: "c1".into(),
            status: status(state, text),
            ..Task::default()
        }
    }

    #[test]
    fn awaiting_next_message_is_completed_and_final() {
        let out = remote_out(
            "r",
            TaskState::InputRequired,
            Some(AWAITING_NEXT_MESSAGE),
            "x",
        );
        assert_eq!(out.state, TaskState::Completed);
        assert!(out.is_final);
        let plain = remote_out("r", TaskState::InputRequired, None, "x");
        assert_eq!(plain.state, TaskState::InputRequired);
        assert!(!plain.is_final);
    }

    #[test]
    fn finality_follows_terminal_states_only() {
        for s in [
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::Rejected,
        ] {
            assert!(remote_out("r", s, None, "").is_final, "{s:?}");
        }
        for s in [
            TaskState::Working,
            TaskState::InputRequired,
            TaskState::AuthRequired,
            TaskState::Submitted,
        ] {
            assert!(!remote_out("r", s, None, "").is_final, "{s:?}");
        }
    }

    #[test]
    fn get_task_without_status_message_keeps_known_text() {
        let out = from_task(&task(TaskState::Working, None), "known");
        assert_eq!(out.text, "known");
        let out = from_task(&task(TaskState::Working, Some("new")), "known");
        assert_eq!(out.text, "new");
    }

    #[test]
    fn sub_state_is_read_from_task_metadata_and_update_metadata() {
        let mut t = task(TaskState::InputRequired, Some("bye"));
        t.metadata = Some(json!({"sub_state": AWAITING_NEXT_MESSAGE}));
        assert!(from_task(&t, "").is_final);
        let event = StreamResponse {
            status_update: Some(TaskStatusUpdateEvent {
                task_id: "r1".into(),
                context_id: "c1".into(),
                status: status(TaskState::InputRequired, Some("bye")),
                metadata: Some(json!({"sub_state": AWAITING_NEXT_MESSAGE})),
            }),
            ..StreamResponse::default()
        };
        let out = from_event(&event, "").expect("status update maps");
        assert_eq!((out.state, out.is_final), (TaskState::Completed, true));
        assert_eq!(
            claimed_state(&event),
            Some(TaskState::Completed),
            "the claim reads the same"
        );
    }

    #[test]
    fn the_claim_is_the_state_the_full_reader_gives() {
        let mut with_task = StreamResponse::default();
        let mut t = task(TaskState::InputRequired, Some("bye"));
        with_task.task = Some(t.clone());
        assert_eq!(
            claimed_state(&with_task),
            from_event(&with_task, "").map(|o| o.state)
        );
        t.metadata = Some(json!({"subState": AWAITING_NEXT_MESSAGE}));
        with_task.task = Some(t);
        assert_eq!(claimed_state(&with_task), Some(TaskState::Completed));
        let update = StreamResponse {
            status_update: Some(TaskStatusUpdateEvent {
                task_id: "r1".into(),
                context_id: "c1".into(),
                status: status(TaskState::Working, Some(&"x".repeat(60_000))),
                metadata: None,
            }),
            ..StreamResponse::default()
        };
        assert_eq!(claimed_state(&update), Some(TaskState::Working));
        assert_eq!(
            claimed_state(&StreamResponse::default()),
            None,
            "no task state, no claim"
        );
    }

    #[test]
    fn three_readers_agree_on_the_same_state() {
        let t = task(TaskState::InputRequired, Some("What colour?"));
        let from_get = from_task(&t, "");
        let as_event = StreamResponse {
            task: Some(t.clone()),
            ..StreamResponse::default()
        };
        let from_stream = from_event(&as_event, "").expect("task event maps");
        let mut turn = TurnReader::new();
        assert!(turn.read(&as_event), "INPUT_REQUIRED ends a turn");
        assert_eq!(from_get, from_stream);
        assert_eq!(turn.finish(), Some(from_get));
    }

    #[test]
    fn artifact_updates_carry_no_state() {
        let event: StreamResponse = serde_json::from_value(json!({
            "artifactUpdate": {"taskId": "r1", "contextId": "c1", "artifact": {"artifactId": "a", "parts": [{"text": "w"}]}}
        })).expect("fixture parses");
        assert_eq!(from_event(&event, "k"), None);
    }

    #[test]
    fn text_is_scrubbed_before_it_is_compared() {
        let a = remote_out(
            "r",
            TaskState::Working,
            None,
            "key Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL",
        );
        let b = remote_out(
            "r",
            TaskState::Working,
            None,
            "key QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVoxMjM0NTY3",
        );
        assert!(
            !a.differs_from(&b),
            "two redacted secrets are the same text"
        );
    }
}
