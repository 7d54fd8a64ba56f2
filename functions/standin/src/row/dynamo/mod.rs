//! The row store on DynamoDB: each port method is one conditional UpdateItem, or one
//! transaction of the row's update and the note it causes (apply, close). The drain marks
//! the park woken, then removes exactly what it read, conditionally, and retries on a race.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, Put, ReturnValue, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};
use serde::Serialize;

use super::{Applied, Closed, Drained, HearingClaim, Notes, Parks, StandIns, StoreError};
use crate::row::{
    FollowReport, Guard, MAX_QUEUED_REPLIES, Pending, PendingPush, QueuedReply, REPLY_IDS_KEPT,
    REPLY_IDS_MAX, Row, Rung, Taken, WakeEvent, Watch,
};
use crate::state::RemoteOut;
use standin_wire::ParentNote;

pub mod attr;
mod notes;
mod parks;
mod reply;
#[cfg(test)]
mod tests;
mod webhooks;
mod write;

use attr::*;

type Item = HashMap<String, AttributeValue>;

/// Closed rows expire this long after the close (the table's TTL attribute `expires_at`).
pub const CLOSED_ROW_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Notes stay readable (the note log) this long after they were written.
pub const NOTE_TTL: Duration = Duration::from_secs(14 * 24 * 3600);
/// Attempts of a read-then-write that races other writers (a drain, an apply, a close).
const RACE_ATTEMPTS: usize = 5;
/// The most rounds a batch read takes to get the keys DynamoDB left unprocessed.
const BATCH_ROUNDS: usize = 5;

#[derive(Clone)]
pub struct DynamoRowStore {
    pub(super) client: Client,
    pub(super) table: String,
    notes_table: String,
}

fn expires_in(ttl: Duration) -> AttributeValue {
    AttributeValue::N((crate::clock::now_ms() / 1000 + ttl.as_secs()).to_string())
}

impl DynamoRowStore {
    pub fn new(client: Client, table: impl Into<String>, notes_table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            notes_table: notes_table.into(),
        }
    }

    pub(super) fn key(task_id: &str) -> Item {
        HashMap::from([(TASK_ID.to_owned(), AttributeValue::S(task_id.to_owned()))])
    }

    /// The row, or `NotFound`.
    async fn read_row(&self, task_id: &str) -> Result<Row, StoreError> {
        self.get(task_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))
    }

    /// The rows of `ids` (at most 100), in that order; a row gone since is left out.
    async fn rows_in_order(&self, ids: &[String]) -> Result<Vec<Row>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut asked = KeysAndAttributes::builder()
            .set_keys(Some(ids.iter().map(|id| Self::key(id)).collect()))
            .consistent_read(true)
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let mut found = HashMap::new();
        for round in 0..BATCH_ROUNDS {
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, asked)
                .send()
                .await
                .map_err(backend)?;
            let items = out.responses.and_then(|mut r| r.remove(&self.table));
            for item in items.into_iter().flatten() {
                let row = row_of(item)?;
                found.insert(row.task_id.clone(), row);
            }
            match out.unprocessed_keys.and_then(|mut r| r.remove(&self.table)) {
                Some(left) if !left.keys().is_empty() => {
                    // Throttled: back off before asking for the rest.
                    tokio::time::sleep(Duration::from_millis(50 << round)).await;
                    asked = left;
                }
                _ => return Ok(ids.iter().filter_map(|id| found.remove(id)).collect()),
            }
        }
        Err(StoreError::Backend(
            "DynamoDB left keys of the batch read unprocessed, round after round".into(),
        ))
    }
}

fn value<T: Serialize>(v: &T) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(v).map_err(|e| StoreError::Backend(format!("encode: {e}")))
}

fn row_of(item: Item) -> Result<Row, StoreError> {
    serde_dynamo::from_item(item).map_err(|e| StoreError::Backend(format!("decode row: {e}")))
}

fn task_id_of(item: &Item) -> Option<String> {
    item.get(TASK_ID)?.as_s().ok().cloned()
}

pub(super) fn backend(err: impl std::error::Error) -> StoreError {
    StoreError::Backend(aws_sdk_dynamodb::error::DisplayErrorContext(err).to_string())
}

/// Whether a conditional write was made: false when its condition failed.
pub(super) fn written<T, E, R>(result: Result<T, SdkError<E, R>>) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(true),
        Err(err) if err.code() == Some("ConditionalCheckFailedException") => Ok(false),
        Err(err) => Err(backend(err)),
    }
}

fn drained(event: Option<WakeEvent>, row: Row, as_seen: bool) -> Drained {
    Drained {
        event,
        row,
        as_seen,
    }
}

/// A condition expression with its names and values, built from a guard.
#[derive(Default, Clone)]
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

    fn num(&mut self, k: &str, n: impl ToString) -> String {
        self.val(k, AttributeValue::N(n.to_string()))
    }

    fn text(&mut self, k: &str, s: impl Into<String>) -> String {
        self.val(k, AttributeValue::S(s.into()))
    }

    /// Attribute `name` holds `v`, or is absent without one.
    fn holds(&mut self, name: &str, k: &str, v: Option<AttributeValue>) -> String {
        match v {
            Some(v) => format!("{name} = {}", self.val(k, v)),
            None => format!("attribute_not_exists({name})"),
        }
    }

    /// Park `n` (a value or an attribute) not yet woken.
    fn not_woken(&mut self, n: &str) -> String {
        let w = self.name(WOKEN);
        format!("(attribute_not_exists({w}) OR {w} < {n})")
    }

    /// No cancel and no reply pending: nothing that goes before a push or a report.
    fn no_cancel_or_reply(&mut self) -> String {
        let p = self.name(PENDING);
        let zero = self.num("zero", 0);
        format!(
            "attribute_not_exists({p}.{CANCEL}) \
             AND (attribute_not_exists({p}.{REPLIES}) OR size({p}.{REPLIES}) = {zero})"
        )
    }

    fn guard(&mut self, guard: &Guard) -> String {
        let closed = self.name(CLOSED);
        let no = self.val("false", AttributeValue::Bool(false));
        let open = format!("attribute_exists({TASK_ID}) AND {closed} = {no}");
        match guard {
            Guard::Open => open,
            Guard::Push {
                digest,
                remote_task_id,
            } => {
                let (w, m) = (self.name(WATCH), self.name(MODE));
                format!(
                    "{open} AND {w}.{m} = {} AND {w}.{TOKEN_DIGEST} = {} AND {REMOTE_TASK_ID} = {}",
                    self.text("push", "push"),
                    self.text("digest", digest.as_str()),
                    self.text("rid", remote_task_id),
                )
            }
            Guard::Epoch(epoch) => {
                let e = self.num("epoch", epoch);
                format!("{open} AND {EPOCH} = {e} AND {}", self.not_woken(&e))
            }
            Guard::Hearing { epoch, id } => {
                let in_park = self.guard(&Guard::Epoch(*epoch));
                let e = self.num("epoch", epoch);
                let h = self.text("hearing", id);
                format!("{in_park} AND {HEARING} = {h} AND {HEARING_PARK} = {e}")
            }
        }
    }
}

impl StandIns for DynamoRowStore {
    async fn create(&self, row: &Row) -> Result<Row, StoreError> {
        let item: Item = serde_dynamo::to_item(row)
            .map_err(|e| StoreError::Backend(format!("encode row: {e}")))?;
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(format!("attribute_not_exists({TASK_ID})"))
            .send()
            .await;
        match written(put)? {
            true => Ok(row.clone()),
            false => Err(StoreError::AlreadyExists(row.task_id.clone())),
        }
    }

    async fn get(&self, task_id: &str) -> Result<Option<Row>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(task_id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        out.item.map(row_of).transpose()
    }

    async fn list(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Row>, Option<String>), StoreError> {
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .set_exclusive_start_key(after.map(Self::key))
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(backend)?;
        let next = out.last_evaluated_key().and_then(task_id_of);
        let rows = out.items.into_iter().flatten().map(row_of);
        Ok((rows.collect::<Result<_, _>>()?, next))
    }

    async fn list_of_agent(
        &self,
        agent: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Row>, Option<String>), StoreError> {
        // The index's key of the stand-in the page starts after: its agent and start.
        let start = match after {
            None => None,
            Some(after) => match self.get(after).await? {
                Some(Row {
                    agent: of,
                    created_at: Some(at),
                    ..
                }) if of == agent => {
                    let mut start = Self::key(after);
                    start.insert(AGENT.to_owned(), AttributeValue::S(of));
                    start.insert(CREATED_AT.to_owned(), AttributeValue::S(at));
                    Some(start)
                }
                _ => return Ok((Vec::new(), None)),
            },
        };
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(BY_AGENT)
            .key_condition_expression("#agent = :agent")
            .expression_attribute_names("#agent", AGENT)
            .expression_attribute_values(":agent", AttributeValue::S(agent.to_owned()))
            .scan_index_forward(false)
            .set_exclusive_start_key(start)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(backend)?;
        let ids: Vec<String> = out.items().iter().filter_map(task_id_of).collect();
        let next = out.last_evaluated_key().and_then(task_id_of);
        Ok((self.rows_in_order(&ids).await?, next))
    }

    async fn set_remote(
        &self,
        task_id: &str,
        remote_task_id: &str,
        context_id: Option<&str>,
    ) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let r = expr.text("rid", remote_task_id);
        let mut update = format!("SET {REMOTE_TASK_ID} = {r}");
        if let Some(ctx) = context_id {
            update.push_str(&format!(", {CONTEXT_ID} = {}", expr.text("ctx", ctx)));
        }
        let condition = expr.guard(&Guard::Open);
        self.send_update(task_id, update, condition, expr).await
    }

    async fn set_watch(&self, task_id: &str, watch: &Watch) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let (w, v) = (expr.name(WATCH), expr.val("w", value(watch)?));
        let update = format!("SET {w} = {v}");
        let condition = expr.guard(&Guard::Open);
        self.send_update(task_id, update, condition, expr).await
    }
}
