//! Turns in memory, for tests.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{Turn, TurnLog, TurnLogError, newest_in_order};
use standin::registry::BoxFuture;

#[derive(Default)]
pub struct MemoryTurns {
    turns: Mutex<HashMap<String, Vec<Turn>>>,
}

impl TurnLog for MemoryTurns {
    fn record<'a>(
        &'a self,
        task_id: &'a str,
        turn: &'a Turn,
    ) -> BoxFuture<'a, Result<(), TurnLogError>> {
        Box::pin(async move {
            let mut all = self.turns.lock().unwrap_or_else(|e| e.into_inner());
            let kept = all.entry(task_id.to_owned()).or_default();
            if !kept.iter().any(|t| t.key() == turn.key()) {
                kept.push(turn.clone());
            }
            Ok(())
        })
    }

    fn turns<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<Turn>, TurnLogError>> {
        Box::pin(async move {
            let all = self.turns.lock().unwrap_or_else(|e| e.into_inner());
            Ok(newest_in_order(
                all.get(task_id).cloned().unwrap_or_default(),
            ))
        })
    }
}
