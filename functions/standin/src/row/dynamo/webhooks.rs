//! The row's webhooks on DynamoDB: each write one conditional UpdateItem on the map
//! `webhooks`, keyed by the webhook's id, and each change counted in `webhooks_rev` (a
//! note's write is conditional on it: `notes.rs`).

use super::*;
use crate::row::{MAX_WEBHOOKS, Webhook, Webhooks};

/// The expression's names for the map, its revision and webhook `id` in it (an id may
/// hold characters a placeholder's own name may not).
fn names(expr: &mut Expr, id: &str) -> (String, String, String) {
    let map = expr.name(WEBHOOKS);
    let rev = expr.name(WEBHOOKS_REV);
    expr.names.insert("#hook".to_owned(), id.to_owned());
    (map, rev, "#hook".to_owned())
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
            let (map, rev, hook) = names(&mut expr, id);
            let one = expr.val("hook", value(webhook)?);
            let most = expr.val("most", AttributeValue::N(MAX_WEBHOOKS.to_string()));
            let plus = expr.val("plus", AttributeValue::N("1".into()));
            let into_map = self
                .send_update(
                    task_id,
                    format!("SET {map}.{hook} = {one} ADD {rev} {plus}"),
                    format!(
                        "attribute_exists({TASK_ID}) AND attribute_exists({map}) AND (attribute_exists({map}.{hook}) OR size({map}) < {most})"
                    ),
                    expr,
                )
                .await;
            let Err(StoreError::Refused(_)) = into_map else {
                return into_map;
            };
            // Refused: the row has no map yet, or it is full (or was, as it was read).
            let row = self
                .get(task_id)
                .await?
                .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
            if row.webhooks.len() >= MAX_WEBHOOKS && !row.webhooks.contains_key(id) {
                return Err(StoreError::Refused(task_id.to_owned()));
            }
            if !row.webhooks.is_empty() {
                continue; // another webhook made the map meanwhile
            }
            let mut expr = Expr::default();
            let map = expr.name(WEBHOOKS);
            let rev = expr.name(WEBHOOKS_REV);
            let plus = expr.val("plus", AttributeValue::N("1".into()));
            let first = expr.val(
                "first",
                AttributeValue::M(HashMap::from([(id.to_owned(), value(webhook)?)])),
            );
            let made = self
                .send_update(
                    task_id,
                    format!("SET {map} = {first} ADD {rev} {plus}"),
                    format!("attribute_exists({TASK_ID}) AND attribute_not_exists({map})"),
                    expr,
                )
                .await;
            match made {
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
        let (map, rev, hook) = names(&mut expr, id);
        let plus = expr.val("plus", AttributeValue::N("1".into()));
        let deleted = self
            .send_update(
                task_id,
                format!("REMOVE {map}.{hook} ADD {rev} {plus}"),
                format!("attribute_exists({TASK_ID}) AND attribute_exists({map}.{hook})"),
                expr,
            )
            .await;
        match deleted {
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
        let map = expr.name(WEBHOOKS);
        expr.names.insert("#hook".to_owned(), id.to_owned());
        let now = expr.val("now", AttributeValue::N(now_ms.to_string()));
        let version = expr.val("version", AttributeValue::N(version.to_string()));
        let since = format!("{map}.#hook.failing_since");
        // Not a change of the webhooks either: no revision, and only its own field.
        let failed = self
            .send_update(
                task_id,
                format!("SET {since} = if_not_exists({since}, {now})"),
                format!("{map}.#hook.version = {version}"),
                expr,
            )
            .await;
        match failed {
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
        let map = expr.name(WEBHOOKS);
        expr.names.insert("#hook".to_owned(), id.to_owned());
        let through = expr.val("through", AttributeValue::N(seq.to_string()));
        let version = expr.val("version", AttributeValue::N(version.to_string()));
        let (k, v) = Self::key(task_id);
        // The mark changes no note's condition (it is not a change of the webhooks), and
        // answers nothing: the row is not read back.
        let marked = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(k, v)
            .update_expression(format!(
                "SET {map}.#hook.through = {through} REMOVE {map}.#hook.failing_since"
            ))
            .condition_expression(format!(
                "{map}.#hook.version = {version} AND {map}.#hook.through < {through}"
            ))
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .send()
            .await;
        match marked {
            Ok(_) => Ok(true),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(err) => Err(backend(&err)),
        }
    }
}
