//! The row's webhooks on DynamoDB: each write one conditional UpdateItem on the map
//! `webhooks`, keyed by the webhook's id.

use super::*;
use crate::row::{MAX_WEBHOOKS, Webhook, Webhooks};

const WEBHOOKS: &str = "webhooks";

/// The expression's names for the map and for webhook `id` in it (an id may hold
/// characters a placeholder's own name may not).
fn names(expr: &mut Expr, id: &str) -> (String, String) {
    let map = expr.name(WEBHOOKS);
    expr.names.insert("#hook".to_owned(), id.to_owned());
    (map, "#hook".to_owned())
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
            let (map, hook) = names(&mut expr, id);
            let one = expr.val("hook", value(webhook)?);
            let most = expr.val("most", AttributeValue::N(MAX_WEBHOOKS.to_string()));
            let into_map = self
                .send_update(
                    task_id,
                    format!("SET {map}.{hook} = {one}"),
                    format!(
                        "attribute_exists({TASK_ID}) AND attribute_exists({map}) AND (attribute_exists({map}.{hook}) OR size({map}) < {most})"
                    ),
                    expr,
                )
                .await;
            let Err(StoreError::Refused(_)) = into_map else {
                return into_map;
            };
            // Refused: the row has no map yet, or it is full.
            let row = self
                .get(task_id)
                .await?
                .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
            if !row.webhooks.is_empty() {
                return Err(StoreError::Refused(task_id.to_owned()));
            }
            let mut expr = Expr::default();
            let (map, _) = names(&mut expr, id);
            expr.names.remove("#hook");
            let first = expr.val(
                "first",
                AttributeValue::M(HashMap::from([(id.to_owned(), value(webhook)?)])),
            );
            let made = self
                .send_update(
                    task_id,
                    format!("SET {map} = {first}"),
                    format!("attribute_exists({TASK_ID}) AND attribute_not_exists({map})"),
                    expr,
                )
                .await;
            match made {
                // Another webhook made the map meanwhile: into the map, again.
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
        let (map, hook) = names(&mut expr, id);
        let (k, v) = Self::key(task_id);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(k, v)
            .update_expression(format!("REMOVE {map}.{hook}"))
            .condition_expression(format!(
                "attribute_exists({TASK_ID}) AND attribute_exists({map}.{hook})"
            ))
            .set_expression_attribute_names(Some(expr.names))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(err) => match self.refusal(task_id, &err) {
                StoreError::Refused(_) => Ok(false),
                other => Err(other),
            },
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
        let (map, hook) = names(&mut expr, id);
        let through = expr.val("through", AttributeValue::N(seq.to_string()));
        let version = expr.val("version", AttributeValue::N(version.to_string()));
        let marked = self
            .send_update(
                task_id,
                format!("SET {map}.{hook}.through = {through}"),
                format!("{map}.{hook}.version = {version} AND {map}.{hook}.through < {through}"),
                expr,
            )
            .await;
        match marked {
            Ok(_) => Ok(true),
            Err(StoreError::Refused(_) | StoreError::NotFound(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }
}
