//! The row store on DynamoDB: each port method is one conditional UpdateItem, or one
//! transaction of the row's update and the note it causes (apply, close). The drain marks
//! the park woken, then removes exactly what it read, conditionally, and retries on a race.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};
use serde::Serialize;

use super::{Applied, Closed, Drained, Notes, Parks, StandIns, StoreError};
use crate::row::{
    FollowReport, Guard, MAX_QUEUED_REPLIES, PendingPush, QueuedReply, REPLY_IDS_KEPT,
    REPLY_IDS_MAX, Row, Rung, Taken, WakeEvent, Watch,
};
use crate::state::RemoteOut;
use standin_wire::ParentNote;

pub mod attr;
mod hearing;
mod notes;
mod reply;
mod take;
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

#[derive(Clone)]
pub struct DynamoRowStore {
    pub(super) client: Client,
    pub(super) table: String,
    notes_table: String,
}

fn expires_in(ttl: Duration) -> AttributeValue {
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        + ttl;
    AttributeValue::N(at.as_secs().to_string())
}

impl DynamoRowStore {
    pub fn new(client: Client, table: impl Into<String>, notes_table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            notes_table: notes_table.into(),
        }
    }

    pub(super) fn key(task_id: &str) -> (String, AttributeValue) {
        (TASK_ID.to_owned(), AttributeValue::S(task_id.to_owned()))
    }
}

fn value<T: Serialize>(v: &T) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(v).map_err(|e| StoreError::Backend(format!("encode: {e}")))
}

/// The most rounds a batch read takes to get the keys DynamoDB left unprocessed.
const BATCH_ROUNDS: usize = 5;

impl DynamoRowStore {
    /// The rows of `ids` (at most 100), in that order; a row gone since is left out.
    async fn rows_in_order(&self, ids: &[String]) -> Result<Vec<Row>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<Item> = ids
            .iter()
            .map(|id| std::collections::HashMap::from([Self::key(id)]))
            .collect();
        let mut asked = aws_sdk_dynamodb::types::KeysAndAttributes::builder()
            .set_keys(Some(keys))
            .consistent_read(true)
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let mut found = std::collections::HashMap::new();
        for round in 0..BATCH_ROUNDS {
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, asked)
                .send()
                .await
                .map_err(|e| backend(&e))?;
            for item in out
                .responses
                .into_iter()
                .flatten()
                .flat_map(|(_, items)| items)
            {
                let row = row_of(item)?;
                found.insert(row.task_id.clone(), row);
            }
            match out
                .unprocessed_keys
                .and_then(|mut left| left.remove(&self.table))
            {
                Some(left) if !left.keys().is_empty() => {
                    // Throttled: back off before asking for the rest.
                    tokio::time::sleep(std::time::Duration::from_millis(50 << round)).await;
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

fn row_of(item: Item) -> Result<Row, StoreError> {
    serde_dynamo::from_item(item).map_err(|e| StoreError::Backend(format!("decode row: {e}")))
}

pub(super) fn backend<E, R>(err: &SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Backend(aws_sdk_dynamodb::error::DisplayErrorContext(err).to_string())
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

    fn guard(&mut self, guard: &Guard) -> String {
        let open = format!(
            "attribute_exists({TASK_ID}) AND {} = {}",
            self.name(CLOSED),
            self.val("false", AttributeValue::Bool(false))
        );
        match guard {
            Guard::Open => open,
            Guard::Push {
                digest,
                remote_task_id,
            } => {
                let w = self.name(WATCH);
                let m = self.name(MODE);
                format!(
                    "{open} AND {w}.{m} = {} AND {w}.{TOKEN_DIGEST} = {} AND {REMOTE_TASK_ID} = {}",
                    self.val("push", AttributeValue::S("push".into())),
                    self.val("digest", AttributeValue::S(digest.as_str().to_owned())),
                    self.val("rid", AttributeValue::S(remote_task_id.clone())),
                )
            }
            Guard::Epoch(epoch) => {
                let e = self.val("epoch", AttributeValue::N(epoch.to_string()));
                let w = self.name(WOKEN);
                format!("{open} AND {EPOCH} = {e} AND (attribute_not_exists({w}) OR {w} < {e})")
            }
            Guard::Hearing { epoch, id } => {
                let in_park = self.guard(&Guard::Epoch(*epoch));
                let e = self.val("epoch", AttributeValue::N(epoch.to_string()));
                let h = self.val("hearing", AttributeValue::S(id.clone()));
                format!("{in_park} AND {HEARING} = {h} AND {HEARING_PARK} = {e}")
            }
        }
    }
}

impl StandIns for DynamoRowStore {
    async fn create(&self, row: &Row) -> Result<Row, StoreError> {
        let item: Item = serde_dynamo::to_item(row)
            .map_err(|e| StoreError::Backend(format!("encode row: {e}")))?;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(format!("attribute_not_exists({TASK_ID})"))
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
            .and_then(|k| k.get(TASK_ID))
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
                }) if of == agent => Some(std::collections::HashMap::from([
                    Self::key(after),
                    (AGENT.to_owned(), AttributeValue::S(of)),
                    (CREATED_AT.to_owned(), AttributeValue::S(at)),
                ])),
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
            .map_err(|e| backend(&e))?;
        let ids: Vec<String> = out
            .items()
            .iter()
            .filter_map(|item| item.get(TASK_ID)?.as_s().ok().cloned())
            .collect();
        let next = out
            .last_evaluated_key()
            .and_then(|k| k.get(TASK_ID))
            .and_then(|v| v.as_s().ok())
            .cloned();
        Ok((self.rows_in_order(&ids).await?, next))
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
                    format!("SET {REMOTE_TASK_ID} = {r}, {CONTEXT_ID} = {c}")
                }
                None => format!("SET {REMOTE_TASK_ID} = {r}"),
            })
        })
        .await
    }

    async fn set_watch(&self, task_id: &str, watch: &Watch) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |e| {
            let w = e.name(WATCH);
            let v = e.val("w", value(watch)?);
            Ok(format!("SET {w} = {v}"))
        })
        .await
    }
}

impl Parks for DynamoRowStore {
    async fn end_hearing(&self, task_id: &str, epoch: u64, id: &str) -> Result<(), StoreError> {
        let guard = Guard::Hearing {
            epoch,
            id: id.to_owned(),
        };
        self.update(task_id, &guard, |_| {
            Ok(format!("REMOVE {HEARING}, {HEARING_PARK}, {HEARING_UNTIL}"))
        })
        .await
        .map(|_| ())
    }

    async fn claim_hearing(
        &self,
        task_id: &str,
        guard: &Guard,
        id: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<super::HearingClaim, StoreError> {
        self.claim_hearing_once(task_id, guard, id, now_ms, until_ms)
            .await
    }

    async fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        if let WakeEvent::Reply { text, parts, id } = event {
            let queued = QueuedReply::new(text, parts);
            return self
                .record_reply(task_id, &queued, id.as_deref(), guard)
                .await;
        }
        self.update(task_id, guard, |e| {
            let p = e.name(PENDING);
            Ok(match event {
                WakeEvent::Cancel { reason } => {
                    let v = e.val("reason", AttributeValue::S(reason.clone()));
                    format!("SET {p}.{CANCEL} = if_not_exists({p}.{CANCEL}, {v})")
                }
                WakeEvent::Reply { text, parts, .. } => {
                    let one = e.val(
                        "one",
                        AttributeValue::L(vec![value(&QueuedReply::new(text, parts))?]),
                    );
                    let empty = e.val("empty", AttributeValue::L(vec![]));
                    format!(
                        "SET {p}.{REPLIES} = list_append(if_not_exists({p}.{REPLIES}, {empty}), {one})"
                    )
                }
                WakeEvent::Push { .. } | WakeEvent::Asked { .. } => {
                    let v = e.val("claim", value(&PendingPush::of(event))?);
                    let id = e.val("push_id", AttributeValue::S(super::new_push_id()));
                    format!("SET {p}.{PUSH} = {v}, {p}.{PUSH_ID} = {id}")
                }
                WakeEvent::Follow { epoch, outcome } => {
                    let v = e.val(
                        "report",
                        value(&FollowReport {
                            epoch: *epoch,
                            outcome: *outcome,
                        })?,
                    );
                    format!("SET {p}.{FOLLOW} = {v}")
                }
            })
        })
        .await
    }

    async fn park(&self, task_id: &str, park: u64, token: &str) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let t = expr.val("token", AttributeValue::S(token.to_owned()));
        let n = expr.val("park", AttributeValue::N(park.to_string()));
        let woken = expr.name(WOKEN);
        let update = format!("SET {PARK_TOKEN} = {t}, {EPOCH} = {n}");
        let newest = format!("{EPOCH} < {n} AND (attribute_not_exists({woken}) OR {woken} < {n})");
        let condition = format!("{} AND {newest}", expr.guard(&Guard::Open));
        self.send_update(task_id, update, condition, expr).await
    }

    async fn claim_follow(
        &self,
        task_id: &str,
        park: u64,
        token: &str,
        hop: u64,
    ) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let t = expr.val("token", AttributeValue::S(token.to_owned()));
        let n = expr.val("park", AttributeValue::N(park.to_string()));
        let c = expr.val(
            "claim",
            AttributeValue::N(super::follow_claim(park, hop).to_string()),
        );
        let woken = expr.name(WOKEN);
        let claim = expr.name(FOLLOW_CLAIM);
        let update = format!("SET {claim} = {c}");
        let stands = format!(
            "{EPOCH} = {n} AND {PARK_TOKEN} = {t} AND (attribute_not_exists({woken}) OR {woken} < {n}) AND (attribute_not_exists({claim}) OR {claim} < {c})"
        );
        let condition = format!("{} AND {stands}", expr.guard(&Guard::Open));
        self.send_update(task_id, update, condition, expr).await
    }

    async fn end_park(&self, task_id: &str, park: u64) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let n = expr.val("park", AttributeValue::N(park.to_string()));
        let woken = expr.name(WOKEN);
        let update = format!("SET {woken} = {n}");
        // Already woken (a retried wake): the row as it stands.
        self.once_per_park(task_id, update, &woken, &n, expr).await
    }

    async fn roll(
        &self,
        task_id: &str,
        park: u64,
        to: u32,
        lease: &str,
        previous: Option<&str>,
    ) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let n = expr.val("park", AttributeValue::N(park.to_string()));
        let l = expr.val("lease", AttributeValue::S(lease.to_owned()));
        let g = expr.val("generation", AttributeValue::N(to.to_string()));
        let woken = expr.name(WOKEN);
        let lease_name = expr.name(LEASE);
        let generation = expr.name(GENERATION);
        let previous_name = expr.name(PREVIOUS_LEASE);
        let mut update = format!("SET {woken} = {n}, {lease_name} = {l}, {generation} = {g}");
        match previous {
            Some(previous) => {
                let p = expr.val("previous", AttributeValue::S(previous.to_owned()));
                update.push_str(&format!(", {previous_name} = {p}"));
            }
            None => update.push_str(&format!(" REMOVE {previous_name}")),
        }
        // Already rolled (a retried wake): the row with the first attempt's lease.
        self.once_per_park(task_id, update, &woken, &n, expr).await
    }

    async fn drain(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        park: u64,
    ) -> Result<Drained, StoreError> {
        match seen {
            Some(seen) => self.drain_seen(seen, park).await,
            None => self.drain_read(task_id, park).await,
        }
    }

    async fn take_rung(
        &self,
        task_id: &str,
        rung: &Rung<'_>,
    ) -> Result<Option<Drained>, StoreError> {
        let pending = rung.push.pending();
        let event = pending.event();
        let mut expr = Expr::default();
        let open = expr.guard(&Guard::Open);
        let n = expr.val("park", AttributeValue::N(rung.park.to_string()));
        let push = expr.val("push", value(&pending)?);
        let id = expr.val("push_id", AttributeValue::S(rung.push.id.clone()));
        let taken = expr.val(
            "taken",
            value(&Taken {
                park: rung.park,
                event: Some(event.clone()),
            })?,
        );
        let agent = expr.val("agent", AttributeValue::S(rung.agent.to_owned()));
        let (woken, p, taken_name) = (expr.name(WOKEN), expr.name(PENDING), expr.name(TAKEN));
        let (agent_name, generation, lease) =
            (expr.name(AGENT), expr.name(GENERATION), expr.name(LEASE));
        let generation_is = match rung.generation {
            // A first generation's row has no number (`Row::generation` skips a zero).
            0 => format!("attribute_not_exists({generation})"),
            g => format!(
                "{generation} = {}",
                expr.val("generation", AttributeValue::N(g.to_string()))
            ),
        };
        let lease_is = match rung.lease {
            None => format!("attribute_not_exists({lease})"),
            Some(l) => format!(
                "{lease} = {}",
                expr.val("lease", AttributeValue::S(l.to_owned()))
            ),
        };
        let update =
            format!("SET {woken} = {n}, {taken_name} = {taken} REMOVE {p}.{PUSH}, {p}.{PUSH_ID}");
        let condition = format!(
            "{open} AND (attribute_not_exists({woken}) OR {woken} < {n}) AND {p}.{PUSH} = {push} AND {p}.{PUSH_ID} = {id} \
             AND attribute_not_exists({p}.{CANCEL}) AND (attribute_not_exists({p}.{REPLIES}) OR size({p}.{REPLIES}) = {zero}) \
             AND {agent_name} = {agent} AND {generation_is} AND {lease_is}",
            zero = expr.val("zero", AttributeValue::N("0".into())),
        );
        match self.send_update(task_id, update, condition, expr).await {
            Ok(row) => Ok(Some(Drained {
                event: Some(event),
                row,
                as_seen: true,
            })),
            Err(StoreError::Refused(_) | StoreError::NotFound(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

impl Notes for DynamoRowStore {
    async fn apply(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        self.apply_from(task_id, seen.cloned(), out, guard).await
    }
    async fn close(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> Result<Closed, StoreError> {
        for _ in 0..RACE_ATTEMPTS {
            let row = self
                .get(task_id)
                .await?
                .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
            let told = row.last.as_ref().is_some_and(|l| l.is_final);
            if told || (row.closed && final_note.is_none()) {
                return Ok(Closed { row, note: None });
            }
            let mut expr = Expr::default();
            let c = expr.name(CLOSED);
            let p = expr.name(PENDING);
            let t = expr.val("true", AttributeValue::Bool(true));
            let empty = expr.val("empty", AttributeValue::M(HashMap::new()));
            let ttl = expr.val("ttl", expires_in(CLOSED_ROW_TTL));
            let mut set = format!("{c} = {t}, {p} = {empty}, {EXPIRES_AT} = {ttl}");
            // Closing needs an open row; the final note may follow a close without one
            // (a cancel waits for the remote's answer), guarded by `seq` as every note is.
            let condition = match final_note {
                None => expr.guard(&Guard::Open),
                Some(_) => format!("attribute_exists({TASK_ID})"),
            };
            let mut closed = row.clone();
            closed.closed = true;
            closed.park_token = None;
            closed.pending = Default::default();
            match final_note {
                None => {
                    let update = format!("SET {set} REMOVE {PARK_TOKEN}");
                    match self.send_update(task_id, update, condition, expr).await {
                        Ok(row) => return Ok(Closed { row, note: None }),
                        Err(StoreError::Refused(_)) => {}
                        Err(err) => return Err(err),
                    }
                }
                Some(out) => {
                    let seq = row.seq + 1;
                    let last = expr.name(LAST);
                    let v_out = expr.val("out", value(out)?);
                    set.push_str(&format!(", {last} = {v_out}"));
                    let update = format!("SET {set} REMOVE {PARK_TOKEN}");
                    let note = crate::row::note_of(&row, out, seq);
                    closed.last = Some(out.clone());
                    closed.seq = seq;
                    if self
                        .write_with_note(task_id, &row, update, condition, expr, &note)
                        .await?
                    {
                        return Ok(Closed {
                            row: closed,
                            note: Some(Box::new(note)),
                        });
                    }
                }
            }
        }
        Err(StoreError::Backend(format!(
            "close of {task_id} kept racing; try again"
        )))
    }

    async fn notes(
        &self,
        task_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<ParentNote>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.notes_table)
            .key_condition_expression(format!("{TASK_ID} = :id AND {SEQ} > :after"))
            .expression_attribute_values(":id", AttributeValue::S(task_id.to_owned()))
            .expression_attribute_values(":after", AttributeValue::N(after.to_string()))
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| backend(&e))?;
        out.items()
            .iter()
            .map(|item| {
                let body = item
                    .get(NOTE_BODY)
                    .and_then(|v| v.as_s().ok())
                    .ok_or_else(|| StoreError::Backend("a note without a body".into()))?;
                serde_json::from_str(body)
                    .map_err(|e| StoreError::Backend(format!("decode note: {e}")))
            })
            .collect()
    }
}
