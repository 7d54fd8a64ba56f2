//! Turns on DynamoDB: one item per turn, keyed by the stand-in and the turn's key, with a
//! local index (`in_order`) by where it sits, so the newest are one query; kept as long
//! as the notes are (the table's TTL, `expires_at`).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::AttributeValue;

use super::{TURNS_SHOWN, Turn, TurnKind, TurnLog, TurnLogError};
use standin::registry::BoxFuture;

/// The table's keys, its index and its TTL attribute (the template names them too).
pub const TASK_ID: &str = "task_id";
pub const TURN_KEY: &str = "turn_key";
pub const TURN_ORDER: &str = "turn_order";
pub const IN_ORDER: &str = "in_order";
pub const EXPIRES_AT: &str = "expires_at";
const KIND: &str = "kind";
const TURN_ID: &str = "turn_id";
const AFTER_SEQ: &str = "after_seq";
const AT: &str = "at";
const TEXT: &str = "text";
const PARTS: &str = "parts";

/// How long a turn is kept: as long as the notes it sits between.
const TURN_TTL: Duration = standin::row::dynamo::NOTE_TTL;

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
        kind: match text(KIND)?.as_str() {
            "start" => TurnKind::Start,
            _ => TurnKind::Reply,
        },
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
            let kind = match turn.kind {
                TurnKind::Start => "start",
                TurnKind::Reply => "reply",
            };
            let mut put = self
                .client
                .put_item()
                .table_name(&self.table)
                .item(TASK_ID, AttributeValue::S(task_id.to_owned()))
                .item(TURN_KEY, AttributeValue::S(turn.key()))
                .item(TURN_ORDER, AttributeValue::S(turn.order()))
                .item(KIND, AttributeValue::S(kind.to_owned()))
                .item(TURN_ID, AttributeValue::S(turn.turn_id.clone()))
                .item(AFTER_SEQ, AttributeValue::N(turn.after_seq.to_string()))
                .item(AT, AttributeValue::S(turn.at.clone()))
                .item(TEXT, AttributeValue::S(turn.text.clone()))
                .item(EXPIRES_AT, AttributeValue::N(expires.as_secs().to_string()))
                // A call sent again keeps the first record: where the turn first came.
                .condition_expression("attribute_not_exists(#key)")
                .expression_attribute_names("#key", TURN_KEY);
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

    /// The newest first from the index, strongly consistent (a reply just taken is in
    /// it), until [`TURNS_SHOWN`]; given back oldest first.
    fn turns<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<Vec<Turn>, TurnLogError>> {
        Box::pin(async move {
            let mut turns = Vec::new();
            let mut start = None;
            loop {
                let left = TURNS_SHOWN.saturating_sub(turns.len());
                let out = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .index_name(IN_ORDER)
                    .key_condition_expression("#id = :id")
                    .expression_attribute_names("#id", TASK_ID)
                    .expression_attribute_values(":id", AttributeValue::S(task_id.to_owned()))
                    .scan_index_forward(false)
                    .consistent_read(true)
                    .limit(i32::try_from(left).unwrap_or(i32::MAX))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(|e| unavailable(DisplayErrorContext(e)))?;
                turns.extend(out.items().iter().filter_map(turn_of));
                start = out.last_evaluated_key().cloned();
                if start.is_none() || turns.len() >= TURNS_SHOWN {
                    break;
                }
            }
            turns.reverse();
            Ok(turns)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys and the index the template gives the turns table are the ones read here.
    #[test]
    fn the_tables_keys_and_index_are_the_templates() {
        let template = include_str!("../../../template.yaml");
        let start = template.find("  TurnsTable:").expect("a turns table");
        let table: String = template[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with("   "))
            .collect::<Vec<_>>()
            .join("\n");
        for needed in [
            format!("{{ AttributeName: {TASK_ID}, KeyType: HASH }}"),
            format!("{{ AttributeName: {TURN_KEY}, KeyType: RANGE }}"),
            format!("IndexName: {IN_ORDER}"),
            format!("{{ AttributeName: {TURN_ORDER}, KeyType: RANGE }}"),
            "ProjectionType: ALL".to_owned(),
            format!("AttributeName: {EXPIRES_AT}"),
        ] {
            assert!(table.contains(&needed), "{needed}: {table}");
        }
    }
}
