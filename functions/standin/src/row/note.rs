//! The note a change writes, in the same write as the row's change: what the parent is
//! told, numbered.

use super::Row;
use crate::state::RemoteOut;
use standin_wire::{ParentNote, TraceContext};

/// The note that tells the parent the row moved to `out`, under number `seq`.
pub fn note_of(row: &Row, out: &RemoteOut, seq: u64) -> ParentNote {
    ParentNote {
        task_id: row.task_id.clone(),
        remote_task_id: Some(out.remote_task_id.clone()).filter(|id| !id.is_empty()),
        agent: row.agent.clone(),
        state: out.state,
        text: out.text.clone(),
        is_final: out.is_final,
        seq,
        at: out
            .noted_at
            .clone()
            .unwrap_or_else(crate::clock::now_rfc3339),
        changed_at: out.changed_at.clone(),
        watch: row.watch.as_ref().map(|w| w.mode),
        artifacts: out.artifacts.clone(),
        artifacts_omitted: out.artifacts_omitted,
        parts: out.parts.clone(),
        // None when the `traceparent` the row keeps does not read.
        trace_id: row
            .traceparent
            .as_deref()
            .and_then(|parent| TraceContext::parse("traceparent", parent).ok())
            .map(|trace| trace.trace_id().to_owned()),
    }
}
