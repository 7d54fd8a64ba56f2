//! The row's webhooks on DynamoDB: each write one conditional UpdateItem on the map
//! `webhooks`, keyed by the webhook's id, and each change counted in `webhooks_rev` (a
//! note's write is conditional on it: `notes.rs`).

use super::*;
use crate::row::{MAX_WEBHOOKS, Webhook, Webhooks};

/// The expression's names for the map and for webhook `id` in it (an id may hold
/// characters a placeholder's own name may not).
fn hook(expr: &mut Expr, id: &str) -> (String, &'static str) {
    expr.names.insert("#hook".to_owned(), id.to_owned());
    (expr.name(WEBHOOKS), "#hook")
}

/// What a change of the webhooks adds: one more revision.
fn next_rev(expr: &mut Expr) -> String {
    format!("ADD {} {}", expr.name(WEBHOOKS_REV), expr.num("plus", 1))
}

impl Webhooks for DynamoRowStore {
    async fn set_webhook(
        &self,
        task_id: &str,
        id: &str,
        webhook: &Webhook,
    ) -> Result<Row, StoreError> {
        for _ in 0..RACE_ATTEMPTS {
            let mut expr = Expr::default();
            let (map, hook) = hook(&mut expr, id);
            let one = expr.val("hook", value(webhook)?);
            let most = expr.num("most", MAX_WEBHOOKS);
            let update = format!("SET {map}.{hook} = {one} {}", next_rev(&mut expr));
            let condition = format!(
                "attribute_exists({TASK_ID}) AND attribute_exists({map}) AND (attribute_exists({map}.{hook}) OR size({map}) < {most})"
            );
            let into_map = self.send_update(task_id, update, condition, expr).await;
            let Err(StoreError::Refused(_)) = into_map else {
                return into_map;
            };
            // Refused: the row has no map yet, or it is full (or was, as it was read).
            let row = self.read_row(task_id).await?;
            if row.webhooks.len() >= MAX_WEBHOOKS && !row.webhooks.contains_key(id) {
                return Err(StoreError::Refused(task_id.to_owned()));
            }
            if !row.webhooks.is_empty() {
                continue; // another webhook made the map meanwhile
            }
            let mut expr = Expr::default();
            let map = expr.name(WEBHOOKS);
            let first = expr.val(
                "first",
                AttributeValue::M(HashMap::from([(id.to_owned(), value(webhook)?)])),
            );
            let update = format!("SET {map} = {first} {}", next_rev(&mut expr));
            let condition = format!("attribute_exists({TASK_ID}) AND attribute_not_exists({map})");
            match self.send_update(task_id, update, condition, expr).await {
                // The map is there (empty, or made meanwhile): into the map, again.
                Err(StoreError::Refused(_)) => continue,
                other => return other,
            }
        }
        Err(StoreError::Backend(format!(
            "the webhooks of {task_id} kept changing; try again"
        )))
    }

    async fn delete_webhook(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut expr = Expr::default();
        let (map, hook) = hook(&mut expr, id);
        let update = format!("REMOVE {map}.{hook} {}", next_rev(&mut expr));
        let condition = format!("attribute_exists({TASK_ID}) AND attribute_exists({map}.{hook})");
        match self.send_update(task_id, update, condition, expr).await {
            Ok(_) => Ok(true),
            Err(StoreError::Refused(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    async fn fail_webhook(
        &self,
        task_id: &str,
        id: &str,
        version: u64,
        now_ms: u64,
    ) -> Result<Option<u64>, StoreError> {
        let mut expr = Expr::default();
        let (map, hook) = hook(&mut expr, id);
        let now = expr.num("now", now_ms);
        let version = expr.num("version", version);
        let since = format!("{map}.{hook}.failing_since");
        // Not a change of the webhooks either: no revision, and only its own field.
        let update = format!("SET {since} = if_not_exists({since}, {now})");
        let condition = format!("{map}.{hook}.version = {version}");
        match self.send_update(task_id, update, condition, expr).await {
            Ok(row) => Ok(row.webhooks.get(id).and_then(|hook| hook.failing_since)),
            Err(StoreError::Refused(_) | StoreError::NotFound(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }

    async fn mark_webhook(
        &self,
        task_id: &str,
        id: &str,
        version: u64,
        seq: u64,
    ) -> Result<bool, StoreError> {
        let mut expr = Expr::default();
        let (map, hook) = hook(&mut expr, id);
        let through = expr.num("through", seq);
        let version = expr.num("version", version);
        // The mark changes no note's condition (it is not a change of the webhooks), and
        // answers nothing: the row is not read back.
        let marked = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(task_id)))
            .update_expression(format!(
                "SET {map}.{hook}.through = {through} REMOVE {map}.{hook}.failing_since"
            ))
            .condition_expression(format!(
                "{map}.{hook}.version = {version} AND {map}.{hook}.through < {through}"
            ))
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .send()
            .await;
        written(marked)
    }
}
