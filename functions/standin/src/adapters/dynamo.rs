//! The row store on DynamoDB: every port method is one conditional UpdateItem (the drain
//! reads first, then removes exactly what it read, conditionally, and retries on a race).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use serde::Serialize;

use crate::domain::remote::RemoteOut;
use crate::domain::row::{FollowReport, Guard, PushClaim, Row, WakeEvent, Watch};
use crate::ports::{Applied, Drained, RowStore, StoreError};

type Item = HashMap<String, AttributeValue>;

/// Closed rows expire this long after the close (the table's TTL attribute `expires_at`).
pub const CLOSED_ROW_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
const DRAIN_ATTEMPTS: usize = 5;

#[derive(Clone)]
pub struct DynamoRowStore {
    client: Client,
    table: String,
}

impl DynamoRowStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    fn key(task_id: &str) -> (String, AttributeValue) {
        ("task_id".to_owned(), AttributeValue::S(task_id.to_owned()))
    }
}

fn value<T: Serialize>(v: &T) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(v).map_err(|e| StoreError::Backend(format!("encode: {e}")))
}

fn row_of(item: Item) -> Result<Row, StoreError> {
    serde_dynamo::from_item(item).map_err(|e| StoreError::Backend(format!("decode row: {e}")))
}

fn backend<E, R>(err: &SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Backend(aws_sdk_dynamodb::error::DisplayErrorContext(err).to_string())
}

/// A condition expression with its names and values, built from a guard.
#[derive(Default)]
struct Expr {
    names: HashMap<String, String>,
    values: Item,
}

impl Expr {
    fn name(&mut self, n: &str) -> String {
        let key = format!("#{n}");
        self.names.insert(key.clone(), n.to_owned());
        key
    }

    fn val(&mut self, k: &str, v: AttributeValue) -> String {
        let key = format!(":{k}");
        self.values.insert(key.clone(), v);
        key
    }

    fn guard(&mut self, guard: &Guard) -> String {
        let open = format!(
            "attribute_exists(task_id) AND {} = {}",
            self.name("closed"),
            self.val("false", AttributeValue::Bool(false))
        );
        match guard {
            Guard::Open => open,
            Guard::Push {
                digest,
                remote_task_id,
            } => {
                let w = self.name("watch");
                let m = self.name("mode");
                format!(
                    "{open} AND {w}.{m} = {} AND {w}.token_digest = {} AND remote_task_id = {}",
                    self.val("push", AttributeValue::S("push".into())),
                    self.val("digest", AttributeValue::S(digest.as_str().to_owned())),
                    self.val("rid", AttributeValue::S(remote_task_id.clone())),
                )
            }
            Guard::Epoch(epoch) => format!(
                "{open} AND epoch = {}",
                self.val("epoch", AttributeValue::N(epoch.to_string()))
            ),
        }
    }
}

impl DynamoRowStore {
    /// One guarded UpdateItem returning the new row; a failed guard is `Refused` (or
    /// `NotFound` when there is no row at all).
    async fn update(
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

    async fn send_update(
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
        match call.send().await {
            Ok(out) => row_of(out.attributes.unwrap_or_default()),
            Err(err) => Err(self.refusal(task_id, &err)),
        }
    }

    fn refusal<R: std::fmt::Debug>(
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

impl RowStore for DynamoRowStore {
    async fn create(&self, row: &Row) -> Result<Row, StoreError> {
        let item: Item = serde_dynamo::to_item(row)
            .map_err(|e| StoreError::Backend(format!("encode row: {e}")))?;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(task_id)")
            .send()
            .await;
        match result {
            Ok(_) => Ok(row.clone()),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Err(StoreError::AlreadyExists(row.task_id.clone()))
            }
            Err(err) => Err(backend(&err)),
        }
    }

    async fn get(&self, task_id: &str) -> Result<Option<Row>, StoreError> {
        let (k, v) = Self::key(task_id);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(k, v)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| backend(&e))?;
        out.item.map(row_of).transpose()
    }

    async fn list(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Row>, Option<String>), StoreError> {
        let start = after.map(|id| std::collections::HashMap::from([Self::key(id)]));
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .set_exclusive_start_key(start)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(|e| backend(&e))?;
        let next = out
            .last_evaluated_key()
            .and_then(|k| k.get("task_id"))
            .and_then(|v| v.as_s().ok())
            .cloned();
        let rows = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(row_of)
            .collect::<Result<_, _>>()?;
        Ok((rows, next))
    }

    async fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        self.update(task_id, guard, |e| {
            let p = e.name("pending");
            Ok(match event {
                WakeEvent::Cancel { reason } => {
                    let v = e.val("reason", AttributeValue::S(reason.clone()));
                    format!("SET {p}.cancel = if_not_exists({p}.cancel, {v})")
                }
                WakeEvent::Reply { text } => {
                    let one = e.val(
                        "one",
                        AttributeValue::L(vec![AttributeValue::S(text.clone())]),
                    );
                    let empty = e.val("empty", AttributeValue::L(vec![]));
                    format!(
                        "SET {p}.replies = list_append(if_not_exists({p}.replies, {empty}), {one})"
                    )
                }
                WakeEvent::Push { claimed } => {
                    let v = e.val("claim", value(&PushClaim { claimed: *claimed })?);
                    format!("SET {p}.push = {v}")
                }
                WakeEvent::Follow { epoch, outcome } => {
                    let v = e.val(
                        "report",
                        value(&FollowReport {
                            epoch: *epoch,
                            outcome: *outcome,
                        })?,
                    );
                    format!("SET {p}.follow = {v}")
                }
            })
        })
        .await
    }

    async fn park(&self, task_id: &str, token: &str) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |e| {
            let t = e.val("token", AttributeValue::S(token.to_owned()));
            let one = e.val("one", AttributeValue::N("1".into()));
            Ok(format!("SET park_token = {t}, epoch = epoch + {one}"))
        })
        .await
    }

    async fn drain(&self, task_id: &str) -> Result<Drained, StoreError> {
        for _ in 0..DRAIN_ATTEMPTS {
            let row = self
                .get(task_id)
                .await?
                .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
            let mut pending = row.pending.clone();
            let Some(event) = pending.take_next() else {
                return Ok(Drained { event: None, row });
            };
            // Remove exactly what was read: a concurrent ring may add, never lose.
            let mut expr = Expr::default();
            let p = expr.name("pending");
            let (update, condition) = match &event {
                WakeEvent::Cancel { .. } => (
                    format!("REMOVE {p}.cancel"),
                    format!("attribute_exists({p}.cancel)"),
                ),
                WakeEvent::Reply { text } => {
                    let first = expr.val("first", AttributeValue::S(text.clone()));
                    (
                        format!("REMOVE {p}.replies[0]"),
                        format!("{p}.replies[0] = {first}"),
                    )
                }
                WakeEvent::Push { .. } => {
                    let claim = expr.val("claim", value(&row.pending.push)?);
                    (format!("REMOVE {p}.push"), format!("{p}.push = {claim}"))
                }
                WakeEvent::Follow { .. } => {
                    let report = expr.val("report", value(&row.pending.follow)?);
                    (
                        format!("REMOVE {p}.follow"),
                        format!("{p}.follow = {report}"),
                    )
                }
            };
            match self.send_update(task_id, update, condition, expr).await {
                Ok(row) => {
                    return Ok(Drained {
                        event: Some(event),
                        row,
                    });
                }
                Err(StoreError::Refused(_)) => continue,
                Err(err) => return Err(err),
            }
        }
        Err(StoreError::Backend(format!(
            "drain of {task_id} kept racing; try again"
        )))
    }

    async fn apply(
        &self,
        task_id: &str,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        let mut expr = Expr::default();
        let last = expr.name("last");
        let state = expr.name("state");
        let text = expr.name("text");
        let v_out = expr.val("out", value(out)?);
        let v_state = expr.val("state", AttributeValue::S(out.state.as_str().to_owned()));
        let v_text = expr.val("text", AttributeValue::S(out.text.clone()));
        let one = expr.val("one", AttributeValue::N("1".into()));
        let update = format!("SET {last} = {v_out}, seq = seq + {one}");
        let differs = format!(
            "(attribute_not_exists({last}) OR {last}.{state} <> {v_state} OR {last}.{text} <> {v_text})"
        );
        let condition = format!("{} AND {differs}", expr.guard(guard));
        match self.send_update(task_id, update, condition, expr).await {
            Ok(row) => Ok(Applied::Changed { seq: row.seq }),
            Err(StoreError::Refused(_)) => {
                // Tell "same state" from "guard failed" on the row as it stands.
                let row = self
                    .get(task_id)
                    .await?
                    .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
                if guard.admits(&row) {
                    Ok(Applied::Unchanged)
                } else {
                    Err(StoreError::Refused(task_id.to_owned()))
                }
            }
            Err(err) => Err(err),
        }
    }

    async fn set_remote(
        &self,
        task_id: &str,
        remote_task_id: &str,
        context_id: Option<&str>,
    ) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |e| {
            let r = e.val("rid", AttributeValue::S(remote_task_id.to_owned()));
            Ok(match context_id {
                Some(ctx) => {
                    let c = e.val("ctx", AttributeValue::S(ctx.to_owned()));
                    format!("SET remote_task_id = {r}, context_id = {c}")
                }
                None => format!("SET remote_task_id = {r}"),
            })
        })
        .await
    }

    async fn set_watch(&self, task_id: &str, watch: &Watch) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |e| {
            let w = e.name("watch");
            let v = e.val("w", value(watch)?);
            Ok(format!("SET {w} = {v}"))
        })
        .await
    }

    async fn close(&self, task_id: &str, new_note: bool) -> Result<(Row, u64), StoreError> {
        let expires = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            + CLOSED_ROW_TTL;
        let result = self
            .update(task_id, &Guard::Open, |e| {
                let c = e.name("closed");
                let p = e.name("pending");
                let t = e.val("true", AttributeValue::Bool(true));
                let one = e.val("one", AttributeValue::N(u64::from(new_note).to_string()));
                let empty = e.val("empty", AttributeValue::M(HashMap::new()));
                let ttl = e.val("ttl", AttributeValue::N(expires.as_secs().to_string()));
                Ok(format!("SET {c} = {t}, seq = seq + {one}, {p} = {empty}, expires_at = {ttl} REMOVE park_token"))
            })
            .await;
        match result {
            Ok(row) => {
                let seq = row.seq;
                Ok((row, seq))
            }
            // Already closed: the end is idempotent and reuses the sequence number it took.
            Err(StoreError::Refused(_)) => {
                let row = self
                    .get(task_id)
                    .await?
                    .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
                let seq = row.seq;
                Ok((row, seq))
            }
            Err(err) => Err(err),
        }
    }
}
