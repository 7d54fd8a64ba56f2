//! Turns on DynamoDB: one item per turn, keyed by the stand-in and the turn's id, kept as
//! long as the notes are (the table's TTL, `expires_at`).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::AttributeValue;

use super::{Turn, TurnLog, TurnLogError, newest_in_order};
use crate::registry::BoxFuture;

/// The table's keys and its TTL attribute (the template names them too).
pub const TASK_ID: &str = "task_id";
pub const TURN_ID: &str = "turn_id";
pub const EXPIRES_AT: &str = "expires_at";
const AFTER_SEQ: &str = "after_seq";
const AT: &str = "at";
const TEXT: &str = "text";
const PARTS: &str = "parts";

/// How long a turn is kept: as long as the notes it sits between.
const TURN_TTL: Duration = crate::row::dynamo::NOTE_TTL;
/// The most pages of a stand-in's turns one read takes (up to 1 MB each): a turn holds at
/// most 64 KiB, so at least 48 turns, and a conversation's few in a page.
const MAX_PAGES: usize = 3;

pub struct DynamoTurns {
    client: Client,
    table: String,
}

impl DynamoTurns {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn unavailable(err: impl std::fmt::Display) -> TurnLogError {
    TurnLogError::Unavailable(err.to_string())
}

fn turn_of(item: &HashMap<String, AttributeValue>) -> Option<Turn> {
    let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    Some(Turn {
        turn_id: text(TURN_ID)?,
        after_seq: item.get(AFTER_SEQ)?.as_n().ok()?.parse().ok()?,
        at: text(AT).unwrap_or_default(),
        text: text(TEXT).unwrap_or_default(),
        parts: text(PARTS)
            .and_then(|parts| serde_json::from_str(&parts).ok())
            .unwrap_or_default(),
    })
}

impl TurnLog for DynamoTurns {
    fn record<'a>(
        &'a self,
        task_id: &'a str,
        turn: &'a Turn,
    ) -> BoxFuture<'a, Result<(), TurnLogError>> {
        Box::pin(async move {
            let expires = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                + TURN_TTL;
            let mut put = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(TASK_ID, AttributeValue::S(task_id.to_owned()))
                .item(TURN_ID, AttributeValue::S(turn.turn_id.clone()))
                .item(AFTER_SEQ, AttributeValue::N(turn.after_seq.to_string()))
                .item(AT, AttributeValue::S(turn.at.clone()))
                .item(TEXT, AttributeValue::S(turn.text.clone()))
                .item(EXPIRES_AT, AttributeValue::N(expires.as_secs().to_string()))
                // A call sent again keeps the first record: where the turn first came.
                .condition_expression("attribute_not_exists(#turn)")
                .expression_attribute_names("#turn", TURN_ID);
            if !turn.parts.is_empty() {
                let parts = serde_json::to_string(&turn.parts).map_err(unavailable)?;
                put = put.item(PARTS, AttributeValue::S(parts));
            }
            match put.send().await {
                Ok(_) => Ok(()),
                Err(err)
                    if err
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                {
                    Ok(())
                }
                Err(err) => Err(unavailable(DisplayErrorContext(err))),
            }
        })
    }

    fn turns<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<Turn>, TurnLogError>> {
        Box::pin(async move {
            let mut turns = Vec::new();
            let mut start = None;
            for _ in 0..MAX_PAGES {
                let out = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("#id = :id")
                    .expression_attribute_names("#id", TASK_ID)
                    .expression_attribute_values(":id", AttributeValue::S(task_id.to_owned()))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(|e| unavailable(DisplayErrorContext(e)))?;
                turns.extend(out.items().iter().filter_map(turn_of));
                start = out.last_evaluated_key().cloned();
                if start.is_none() {
                    break;
                }
            }
            Ok(newest_in_order(turns))
        })
    }
}
