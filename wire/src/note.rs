//! The note a parent hears: one per change of the remote task, on the parent's FIFO
//! queue (grouped by `task_id`, deduplicated by `task_id:seq`) and in the note log.

use serde::{Deserialize, Serialize};

use crate::state::TaskState;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentNote {
    pub task_id: String,
    /// The agent's id for the task; null when the stand-in ended before the agent
    /// gave one (its first turn failed). Notes written before this was typed say `""`,
    /// which reads as null too.
    #[serde(deserialize_with = "empty_is_none")]
    pub remote_task_id: Option<String>,
    pub agent: String,
    pub state: TaskState,
    pub text: String,
    /// The last note of the stand-in: nothing follows it.
    #[serde(rename = "final")]
    pub is_final: bool,
    /// 1, 2, 3, … per stand-in, with no gaps: a parent that sees a gap has lost a note
    /// and can read it from the note log.
    pub seq: u64,
    /// When the stand-in told it: RFC 3339, UTC.
    pub at: String,
    /// When the agent says the change happened: its status's timestamp as it gave it
    /// (a timestamp, at most 40 characters; a zone is not promised). None when it gave
    /// none or something else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<String>,
    /// How the stand-in was watching the remote task when it told the note; none before
    /// its first wait (a turn's notes) and on notes written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<crate::state::WatchMode>,
    /// Artifacts completed since the previous note; the final note carries all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<crate::artifact::ArtifactView>,
    /// Artifacts due on this note but past its room (64 KiB of them): read them through
    /// `GET /standins/{task_id}/artifacts`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub artifacts_omitted: u32,
    /// The status message's parts other than its text: a data form an INPUT_REQUIRED
    /// question asks to fill, a link, a file described.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<crate::artifact::PartView>,
    /// The W3C trace id of the stand-in's trace (the parent's `traceparent`, or its own):
    /// the agent's spans for this task are under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn empty_is_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|id| !id.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_reads_and_writes_the_documented_fields() {
        let json = serde_json::json!({
            "task_id": "si-1", "remote_task_id": null, "agent": "writer",
            "state": "TASK_STATE_FAILED", "text": "agent unavailable", "final": true,
            "seq": 1, "at": "2026-12-01T10:00:00Z"
        });
        let note: ParentNote = serde_json::from_value(json.clone())
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (note.state, note.is_final, note.remote_task_id.as_deref()),
            (TaskState::Failed, true, None)
        );
        assert_eq!(serde_json::to_value(&note).ok(), Some(json.clone()));
        let mut older = json;
        older["remote_task_id"] = serde_json::json!("");
        let note: Result<ParentNote, _> = serde_json::from_value(older);
        assert_eq!(
            note.ok().and_then(|n| n.remote_task_id),
            None,
            "\"\" is none"
        );
    }
}
