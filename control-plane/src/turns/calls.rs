//! The parent's turns as the control API keeps them: each start's message and reply, once
//! taken, with the note it came after; `GET /standins/{task_id}/turns` gives them back
//! (the A2A front's history shows them beside the agent's messages).

use standin_wire::{InputPart, TurnsPage};
use tracing::warn;

use super::{Turn, TurnKind};
use crate::{ApiAnswer, Control, ControlError, Executions};
use standin::doorbell::Doorbell;
use standin::row::{RowStore, Webhooks};

/// How long the control function waits for a turn to be kept before it answers anyway.
const KEEP_BOUND: std::time::Duration = std::time::Duration::from_secs(1);

impl<S: RowStore + Webhooks, D: Doorbell, E: Executions> Control<'_, S, D, E> {
    /// Keeps a turn the stand-in took. The turn reaches the agent whether or not it is
    /// kept, so a turns table that does not answer (within [`KEEP_BOUND`]) costs the
    /// history a line, not the parent its call (a retry of an unnamed reply would be a
    /// second reply).
    pub(crate) async fn keep_turn(
        &self,
        task_id: &str,
        kind: TurnKind,
        turn_id: &str,
        after_seq: u64,
        text: &str,
        parts: &[InputPart],
    ) {
        let Some(log) = self.turns else {
            return;
        };
        let turn = Turn {
            kind,
            turn_id: turn_id.to_owned(),
            after_seq,
            at: standin::clock::now_rfc3339(),
            text: text.to_owned(),
            parts: parts.to_vec(),
        };
        let why = match tokio::time::timeout(KEEP_BOUND, log.record(task_id, &turn)).await {
            Ok(Ok(())) => return,
            Ok(Err(err)) => err.to_string(),
            Err(_) => format!("the turns table did not answer within {KEEP_BOUND:?}"),
        };
        warn!(task_id, turn_id, error = %why, "the parent's turn was not kept: the task's history will lack it");
    }

    pub(crate) async fn turns(&self, task_id: &str) -> Result<ApiAnswer, ControlError> {
        if self.store.get(task_id).await?.is_none() {
            return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
        }
        let turns = match self.turns {
            Some(log) => log.turns(task_id).await?,
            None => Vec::new(),
        };
        Ok(ApiAnswer::of(200, TurnsPage { turns }))
    }
}
