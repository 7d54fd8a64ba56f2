//! A push's claim of a hearing: one UpdateItem whose condition is the push's guard and
//! `Row::admits_hearing`; a refusal tells which failed by the row it returns.

use super::*;
use crate::row::HearingClaim;

impl DynamoRowStore {
    pub(super) async fn claim_hearing_once(
        &self,
        task_id: &str,
        guard: &Guard,
        id: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<HearingClaim, StoreError> {
        let mut expr = Expr::default();
        let admitted = expr.guard(guard);
        let h = expr.val("hearing_id", AttributeValue::S(id.to_owned()));
        let until = expr.val("until", AttributeValue::N(until_ms.to_string()));
        let now = expr.val("now", AttributeValue::N(now_ms.to_string()));
        let zero = expr.val("zero", AttributeValue::N("0".into()));
        let (woken, p) = (expr.name(WOKEN), expr.name(PENDING));
        // `Row::admits_hearing`: parked, nothing pending, no running lease of this park.
        let parked = format!(
            "attribute_exists({PARK_TOKEN}) AND (attribute_not_exists({woken}) OR {woken} < {EPOCH})"
        );
        let nothing_pending = format!(
            "attribute_not_exists({p}.{CANCEL}) AND (attribute_not_exists({p}.{REPLIES}) OR size({p}.{REPLIES}) = {zero}) \
             AND attribute_not_exists({p}.{PUSH}) AND attribute_not_exists({p}.{FOLLOW})"
        );
        let no_other = format!(
            "(attribute_not_exists({HEARING}) OR {HEARING_PARK} <> {EPOCH} OR {HEARING_UNTIL} < {now})"
        );
        let condition = format!("{admitted} AND {parked} AND {nothing_pending} AND {no_other}");
        let update =
            format!("SET {HEARING} = {h}, {HEARING_PARK} = {EPOCH}, {HEARING_UNTIL} = {until}");
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
        let err = match call.send().await {
            Ok(out) => {
                let row = row_of(out.attributes.unwrap_or_default())?;
                return Ok(HearingClaim::Claimed(Box::new(row)));
            }
            Err(err) => err,
        };
        use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
        match err.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(e)) => match e.item() {
                Some(item) if !item.is_empty() => {
                    let row = row_of(item.clone())?;
                    if guard.admits(&row) {
                        Ok(HearingClaim::Busy)
                    } else {
                        Err(StoreError::Refused(task_id.to_owned()))
                    }
                }
                _ => Err(StoreError::NotFound(task_id.to_owned())),
            },
            // A write meeting an apply's transaction on the row: a hearing is under way
            // or a note is being told; the door rings instead.
            Some(e) if e.is_transaction_conflict_exception() => Ok(HearingClaim::Contended),
            _ => Err(backend(&err)),
        }
    }
}
