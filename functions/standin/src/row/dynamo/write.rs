//! One conditional UpdateItem, and what its refusal means: the write's guard failed, or
//! the row is not there.

use super::*;

impl DynamoRowStore {
    /// One guarded UpdateItem returning the new row; a failed guard is `Refused` (or
    /// `NotFound` when there is no row at all).
    pub(super) async fn update(
        &self,
        task_id: &str,
        guard: &Guard,
        build: impl FnOnce(&mut Expr) -> Result<String, StoreError>,
    ) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let update = build(&mut expr)?;
        let condition = expr.guard(guard);
        self.send_update(task_id, update, condition, expr).await
    }

    pub(super) async fn send_update(
        &self,
        task_id: &str,
        update: String,
        condition: String,
        expr: Expr,
    ) -> Result<Row, StoreError> {
        let (k, v) = Self::key(task_id);
        let mut call = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(k, v)
            .update_expression(update)
            .condition_expression(condition)
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (k, v) in expr.names {
            call = call.expression_attribute_names(k, v);
        }
        for (k, v) in expr.values {
            call = call.expression_attribute_values(k, v);
        }
        // An UpdateItem that meets an apply's transaction on the same row is refused with
        // TransactionConflictException; it changed nothing, so it is tried again.
        for attempt in 1..=RACE_ATTEMPTS {
            match call.clone().send().await {
                Ok(out) => return row_of(out.attributes.unwrap_or_default()),
                Err(err)
                    if attempt < RACE_ATTEMPTS
                        && err
                            .as_service_error()
                            .is_some_and(|e| e.is_transaction_conflict_exception()) =>
                {
                    tokio::time::sleep(Duration::from_millis(20 * attempt as u64)).await;
                }
                Err(err) => return Err(self.refusal(task_id, &err)),
            }
        }
        Err(StoreError::Backend(format!(
            "update of {task_id} kept conflicting"
        )))
    }

    /// An update that ends park `n` (the row's `woken` name) once: the first run of a
    /// step writes it, a retried one finds the park over and gets the row as it stands.
    pub(super) async fn once_per_park(
        &self,
        task_id: &str,
        update: String,
        woken: &str,
        n: &str,
        expr: Expr,
    ) -> Result<Row, StoreError> {
        let condition = format!(
            "attribute_exists({TASK_ID}) AND (attribute_not_exists({woken}) OR {woken} < {n})"
        );
        match self.send_update(task_id, update, condition, expr).await {
            Err(StoreError::Refused(_)) => self
                .get(task_id)
                .await?
                .ok_or_else(|| StoreError::NotFound(task_id.to_owned())),
            other => other,
        }
    }

    pub(super) fn refusal<R: std::fmt::Debug>(
        &self,
        task_id: &str,
        err: &SdkError<aws_sdk_dynamodb::operation::update_item::UpdateItemError, R>,
    ) -> StoreError {
        match err.as_service_error() {
            Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(e)) => {
                if e.item().is_some_and(|i| !i.is_empty()) {
                    StoreError::Refused(task_id.to_owned())
                } else {
                    StoreError::NotFound(task_id.to_owned())
                }
            }
            _ => backend(err),
        }
    }
}
