//! The parent queue, followed: each note as it arrives, then deleted (the parent has it).

use std::collections::VecDeque;

use aws_config::SdkConfig;
use standin_wire::ParentNote;

use crate::error::CliError;
use crate::stack::unreachable_or;
use crate::target::Target;

pub struct NoteStream {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    target: Target,
    config: SdkConfig,
    ready: VecDeque<Heard>,
}

/// A message from the parent's queue: a note, or anything else, kept as it came.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    Note(Box<ParentNote>),
    Other(String),
}

impl NoteStream {
    pub fn new(target: &Target, config: &SdkConfig, queue_url: &str) -> Self {
        Self {
            sqs: aws_sdk_sqs::Client::new(config),
            queue_url: queue_url.to_owned(),
            target: target.clone(),
            config: config.clone(),
            ready: VecDeque::new(),
        }
    }

    /// The next note, waiting up to `wait_secs` (at most 20, SQS's long-poll limit).
    pub async fn next(&mut self, wait_secs: i32) -> Result<Option<Heard>, CliError> {
        if let Some(note) = self.ready.pop_front() {
            return Ok(Some(note));
        }
        let got = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait_secs.clamp(0, 20))
            .send()
            .await
            .map_err(|e| unreachable_or(&self.target, &self.config, "SQS", &e))?;
        for message in got.messages() {
            // A body that isn't a note is still shown, not dropped: the parent should see it.
            let body = message.body().unwrap_or_default();
            self.ready.push_back(serde_json::from_str(body).map_or_else(
                |_| Heard::Other(body.to_owned()),
                |note| Heard::Note(Box::new(note)),
            ));
            if let Some(handle) = message.receipt_handle() {
                self.sqs
                    .delete_message()
                    .queue_url(&self.queue_url)
                    .receipt_handle(handle)
                    .send()
                    .await
                    .map_err(|e| unreachable_or(&self.target, &self.config, "SQS", &e))?;
            }
        }
        Ok(self.ready.pop_front())
    }
}

/// `TASK_STATE_INPUT_REQUIRED` as people read it: `INPUT_REQUIRED`.
pub fn short_state(state: &str) -> &str {
    state.strip_prefix("TASK_STATE_").unwrap_or(state)
}

/// A note as one readable line: `seq 3  si-…  INPUT_REQUIRED  "Which format…?"`.
pub fn human_line(note: &ParentNote) -> String {
    let final_mark = if note.is_final { " (final)" } else { "" };
    format!(
        "{}  seq {:<3} {:<14} {:<15} {}{final_mark}",
        note.at,
        note.seq,
        note.task_id,
        short_state(note.state.as_str()),
        serde_json::to_string(&note.text).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(json: serde_json::Value) -> ParentNote {
        serde_json::from_value(json).unwrap_or_else(|e| panic!("a note: {e}"))
    }

    #[test]
    fn a_note_reads_as_one_line() {
        let asked = note(
            json!({"task_id": "si-1", "remote_task_id": "r", "agent": "a", "state": "TASK_STATE_INPUT_REQUIRED", "text": "Which?\nNow", "seq": 2, "final": false, "at": "2026-11-30T10:00:00Z"}),
        );
        let line = human_line(&asked);
        assert!(
            line.contains("INPUT_REQUIRED")
                && line.contains("\"Which?\\nNow\"")
                && line.contains("seq 2"),
            "{line}"
        );
        assert!(!line.contains('\n'));
        let done = note(
            json!({"task_id": "si-1", "remote_task_id": "r", "agent": "a", "state": "TASK_STATE_COMPLETED", "text": "", "seq": 5, "final": true, "at": "2026-11-30T10:01:00Z"}),
        );
        assert!(human_line(&done).ends_with("(final)"));
    }
}
