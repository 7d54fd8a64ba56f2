//! One conditional UpdateItem, and what its refusal means: the write's guard failed, or
//! the row is not there.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;

use super::*;

impl DynamoRowStore {
    /// The UpdateItem, answering the row after it or, refused, the row before it.
    pub(super) fn update_item(
        &self,
        task_id: &str,
        update: String,
        condition: String,
        expr: Expr,
    ) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(task_id)))
            .update_expression(update)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// The UpdateItem, returning the new row; a failed condition is `Refused` (or
    /// `NotFound` when there is no row at all).
    pub(super) async fn send_update(
        &self,
        task_id: &str,
        update: String,
        condition: String,
        expr: Expr,
    ) -> Result<Row, StoreError> {
        let call = self.update_item(task_id, update, condition, expr);
        // An UpdateItem that meets an apply's transaction on the same row is refused with
        // TransactionConflictException; it changed nothing, so it is tried again.
        for attempt in 1..=RACE_ATTEMPTS {
            let err = match call.clone().send().await {
                Ok(out) => return row_of(out.attributes.unwrap_or_default()),
                Err(err) => err,
            };
            match err.as_service_error() {
                Some(e) if attempt < RACE_ATTEMPTS && e.is_transaction_conflict_exception() => {
                    tokio::time::sleep(Duration::from_millis(20 * attempt as u64)).await;
                }
                Some(UpdateItemError::ConditionalCheckFailedException(e)) => {
                    return Err(match e.item().is_some_and(|i| !i.is_empty()) {
                        true => StoreError::Refused(task_id.to_owned()),
                        false => StoreError::NotFound(task_id.to_owned()),
                    });
                }
                _ => return Err(backend(err)),
            }
        }
        Err(StoreError::Backend(format!(
            "update of {task_id} kept conflicting"
        )))
    }

    /// An update that ends park `n` (a value) once: the first run of a step writes it, a
    /// retried one finds the park over and gets the row as it stands.
    pub(super) async fn once_per_park(
        &self,
        task_id: &str,
        update: String,
        n: &str,
        mut expr: Expr,
    ) -> Result<Row, StoreError> {
        let condition = format!("attribute_exists({TASK_ID}) AND {}", expr.not_woken(n));
        match self.send_update(task_id, update, condition, expr).await {
            Err(StoreError::Refused(_)) => self.read_row(task_id).await,
            other => other,
        }
    }
}
