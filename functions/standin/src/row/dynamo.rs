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

use super::{Applied, Closed, Drained, RowStore, StoreError};
use crate::outbox::ParentNote;
use crate::row::{
    FollowReport, Guard, MAX_QUEUED_REPLIES, PushClaim, REPLY_IDS_KEPT, REPLY_IDS_MAX, Row, Rung,
    Taken, WakeEvent, Watch,
};
use crate::state::RemoteOut;

use attr::*;

type Item = HashMap<String, AttributeValue>;

/// The attribute names the expressions write, as `Row` (and the note log's items) name
/// them: a test checks each against the serialised row, and the template's keys and TTL.
pub mod attr {
    pub const TASK_ID: &str = "task_id";
    pub const AGENT: &str = "agent";
    pub const REMOTE_TASK_ID: &str = "remote_task_id";
    pub const CONTEXT_ID: &str = "context_id";
    pub const WATCH: &str = "watch";
    pub const LAST: &str = "last";
    pub const CLOSED: &str = "closed";
    pub const EPOCH: &str = "epoch";
    pub const WOKEN: &str = "woken";
    pub const TAKEN: &str = "taken";
    pub const PARK_TOKEN: &str = "park_token";
    pub const PENDING: &str = "pending";
    pub const SEQ: &str = "seq";
    pub const REPLY_IDS: &str = "reply_ids";
    /// Of `watch`.
    pub const MODE: &str = "mode";
    /// Of `watch`.
    pub const TOKEN_DIGEST: &str = "token_digest";
    /// Of `pending`.
    pub const CANCEL: &str = "cancel";
    /// Of `pending`.
    pub const REPLIES: &str = "replies";
    /// Of `pending`.
    pub const PUSH: &str = "push";
    /// Of `pending`.
    pub const PUSH_ID: &str = "push_id";
    /// Of `pending`.
    pub const FOLLOW: &str = "follow";
    /// Both tables' TTL attribute (not a field of `Row`: set at the close).
    pub const EXPIRES_AT: &str = "expires_at";
    /// A note log item's note, as JSON.
    pub const NOTE_BODY: &str = "body";
    /// The row's Step Functions parent token; copied onto its final note's item, where
    /// notify reads it from the stream.
    pub const PARENT_TASK_TOKEN: &str = "parent_task_token";
    /// The live generation's lease (`Row::lease`).
    pub const LEASE: &str = "lease";
    /// The live generation (`Row::generation`).
    pub const GENERATION: &str = "generation";
    /// The lease of the generation before it (`Row::previous_lease`).
    pub const PREVIOUS_LEASE: &str = "previous_lease";
    /// How far the notes reached the parent (`Row::sent_through`).
    pub const SENT_THROUGH: &str = "sent_through";
    /// The newest follower's claim on its park (`Row::follow_claim`).
    pub const FOLLOW_CLAIM: &str = "follow_claim";
}

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

    async fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        if let WakeEvent::Reply { text, id } = event {
            return self.record_reply(task_id, text, id.as_deref(), guard).await;
        }
        self.update(task_id, guard, |e| {
            let p = e.name(PENDING);
            Ok(match event {
                WakeEvent::Cancel { reason } => {
                    let v = e.val("reason", AttributeValue::S(reason.clone()));
                    format!("SET {p}.{CANCEL} = if_not_exists({p}.{CANCEL}, {v})")
                }
                WakeEvent::Reply { text, .. } => {
                    let one = e.val(
                        "one",
                        AttributeValue::L(vec![AttributeValue::S(text.clone())]),
                    );
                    let empty = e.val("empty", AttributeValue::L(vec![]));
                    format!(
                        "SET {p}.{REPLIES} = list_append(if_not_exists({p}.{REPLIES}, {empty}), {one})"
                    )
                }
                WakeEvent::Push { claimed } => {
                    let v = e.val("claim", value(&PushClaim { claimed: *claimed })?);
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

    async fn wake(&self, task_id: &str, park: u64) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let n = expr.val("park", AttributeValue::N(park.to_string()));
        let woken = expr.name(WOKEN);
        let update = format!("SET {woken} = {n}");
        let condition = format!(
            "attribute_exists({TASK_ID}) AND (attribute_not_exists({woken}) OR {woken} < {n})"
        );
        match self.send_update(task_id, update, condition, expr).await {
            // Already woken (a retried wake): the row as it stands.
            Err(StoreError::Refused(_)) => self
                .get(task_id)
                .await?
                .ok_or_else(|| StoreError::NotFound(task_id.to_owned())),
            other => other,
        }
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
        let condition = format!(
            "attribute_exists({TASK_ID}) AND (attribute_not_exists({woken}) OR {woken} < {n})"
        );
        match self.send_update(task_id, update, condition, expr).await {
            // Already rolled (a retried wake): the row with the first attempt's lease.
            Err(StoreError::Refused(_)) => self
                .get(task_id)
                .await?
                .ok_or_else(|| StoreError::NotFound(task_id.to_owned())),
            other => other,
        }
    }

    async fn drain(&self, task_id: &str, park: u64) -> Result<Drained, StoreError> {
        let mut row = self.wake(task_id, park).await?;
        for _ in 0..RACE_ATTEMPTS {
            if row.closed {
                return Ok(Drained {
                    event: None,
                    row,
                    as_seen: false,
                });
            }
            if let Some(taken) = row.taken.as_ref().filter(|t| t.park == park) {
                return Ok(Drained {
                    event: taken.event.clone(),
                    row,
                    as_seen: false,
                });
            }
            let mut pending = row.pending.clone();
            let Some(event) = pending.take_next() else {
                return Ok(Drained {
                    event: None,
                    row,
                    as_seen: false,
                });
            };
            let (update, condition, expr) = take_event(&row, park, &event)?;
            match self.send_update(task_id, update, condition, expr).await {
                Ok(row) => {
                    return Ok(Drained {
                        event: Some(event),
                        row,
                        as_seen: false,
                    });
                }
                Err(StoreError::Refused(_)) => {
                    row = self
                        .get(task_id)
                        .await?
                        .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
                }
                Err(err) => return Err(err),
            }
        }
        Err(StoreError::Backend(format!(
            "drain of {task_id} kept racing; try again"
        )))
    }
    async fn drain_from(&self, seen: &Row, park: u64) -> Result<Drained, StoreError> {
        let task_id = &seen.task_id;
        let mut pending = seen.pending.clone();
        let event = pending
            .take_next()
            .filter(|_| !seen.closed && seen.woken < park);
        let Some(event) = event else {
            return self.drain(task_id, park).await;
        };
        let (update, condition, mut expr) = take_event(seen, park, &event)?;
        let n = expr.val("park", AttributeValue::N(park.to_string()));
        let f = expr.val("open", AttributeValue::Bool(false));
        let (woken, closed) = (expr.name(WOKEN), expr.name(CLOSED));
        let update = update.replacen("SET ", &format!("SET {woken} = {n}, "), 1);
        let condition = format!(
            "{condition} AND {closed} = {f} AND (attribute_not_exists({woken}) OR {woken} < {n})"
        );
        match self.send_update(task_id, update, condition, expr).await {
            Ok(row) => Ok(Drained {
                event: Some(event),
                row,
                as_seen: true,
            }),
            // The row moved since the caller read it (a ring, a close, a retried wake):
            // nothing was written, and the drain goes as usual.
            Err(StoreError::Refused(_)) => self.drain(task_id, park).await,
            Err(err) => Err(err),
        }
    }

    async fn take_rung(
        &self,
        task_id: &str,
        rung: &Rung<'_>,
    ) -> Result<Option<Drained>, StoreError> {
        let event = WakeEvent::Push {
            claimed: rung.push.claimed,
        };
        let mut expr = Expr::default();
        let open = expr.guard(&Guard::Open);
        let n = expr.val("park", AttributeValue::N(rung.park.to_string()));
        let push = expr.val(
            "push",
            value(&PushClaim {
                claimed: rung.push.claimed,
            })?,
        );
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

    async fn apply(
        &self,
        task_id: &str,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        self.apply_from(task_id, None, out, guard).await
    }
    async fn apply_to(
        &self,
        row: &Row,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        self.apply_from(&row.task_id, Some(row.clone()), out, guard)
            .await
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
                    let note = crate::outbox::note_of(&row, out, seq);
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

/// How often a reply refused for a full list of reply ids is trimmed and written again
/// before it is refused: enough for a row trimmed by a concurrent reply meanwhile, and
/// for a row from before the bound that holds a few hundred ids.
const TRIM_ROUNDS: usize = 4;

impl DynamoRowStore {
    /// A reply joins the queue, unless `MAX_QUEUED_REPLIES` wait already, or unless the
    /// row has queued a reply of the same id (then it answers as if it queued it now: a
    /// retry, by the parent or by the SDK after an answer was lost, is queued once).
    async fn record_reply(
        &self,
        task_id: &str,
        text: &str,
        id: Option<&str>,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let p = expr.name(PENDING);
        let one = expr.val(
            "one",
            AttributeValue::L(vec![AttributeValue::S(text.to_owned())]),
        );
        let empty = expr.val("empty", AttributeValue::L(vec![]));
        let max = expr.val("max", AttributeValue::N(MAX_QUEUED_REPLIES.to_string()));
        let mut update = format!(
            "SET {p}.{REPLIES} = list_append(if_not_exists({p}.{REPLIES}, {empty}), {one})"
        );
        let mut condition = format!(
            "{} AND (attribute_not_exists({p}.{REPLIES}) OR size({p}.{REPLIES}) < {max})",
            expr.guard(guard)
        );
        if let Some(id) = id {
            let ids = expr.name(REPLY_IDS);
            let named = expr.val(
                "rids",
                AttributeValue::L(vec![AttributeValue::S(id.to_owned())]),
            );
            let rid = expr.val("rid", AttributeValue::S(id.to_owned()));
            let most = expr.val("most", AttributeValue::N(REPLY_IDS_MAX.to_string()));
            update.push_str(&format!(
                ", {ids} = list_append(if_not_exists({ids}, {empty}), {named})"
            ));
            condition.push_str(&format!(
                " AND NOT contains({ids}, {rid}) AND (attribute_not_exists({ids}) OR size({ids}) < {most})"
            ));
        }
        let event = WakeEvent::Reply {
            text: text.to_owned(),
            id: id.map(str::to_owned),
        };
        // A refusal is read back to say why. A row whose reply ids are full is trimmed
        // (whichever concurrent reply's trim applies) and the reply written again.
        for _ in 0..TRIM_ROUNDS {
            let outcome = self
                .send_reply(task_id, id.is_some(), &update, &condition, &expr)
                .await;
            let Err(StoreError::Refused(_)) = outcome else {
                return outcome;
            };
            let row = self.get(task_id).await?.filter(|row| guard.admits(row));
            match row {
                Some(row) if row.has_reply(&event) => return Ok(row),
                Some(row) if row.pending.replies.len() >= MAX_QUEUED_REPLIES => {
                    return Err(StoreError::RepliesFull(task_id.to_owned()));
                }
                Some(row) if id.is_some() && row.reply_ids.len() >= REPLY_IDS_MAX => {
                    self.trim_reply_ids(task_id, row.reply_ids.len()).await?;
                }
                _ => return Err(StoreError::Refused(task_id.to_owned())),
            }
        }
        // Not a refusal the parent should act on (the stand-in is alive): a passing
        // failure, so the reply is sent again.
        Err(StoreError::Backend(format!(
            "the reply ids of {task_id} could not be trimmed in {TRIM_ROUNDS} rounds"
        )))
    }

    /// The reply's write. A named reply is idempotent, so a write whose answer never came
    /// (the SDK does not retry a request that may have been carried out) is sent again.
    async fn send_reply(
        &self,
        task_id: &str,
        named: bool,
        update: &str,
        condition: &str,
        expr: &Expr,
    ) -> Result<Row, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let sent = self
                .send_update(
                    task_id,
                    update.to_owned(),
                    condition.to_owned(),
                    expr.clone(),
                )
                .await;
            match sent {
                Err(StoreError::Backend(_)) if named && attempt < 3 => {
                    tokio::time::sleep(std::time::Duration::from_millis(100 * attempt)).await;
                }
                other => return other,
            }
        }
    }

    /// Drops the oldest reply ids of a row seen holding `seen` of them (at least
    /// [`REPLY_IDS_MAX`]), down to the newest [`REPLY_IDS_KEPT`], at most
    /// `REPLY_IDS_MAX` at a time (an expression's size is bounded). The write requires
    /// the list to hold exactly `seen`, so of two trims at once only one applies; the
    /// other's reply is written again all the same.
    async fn trim_reply_ids(&self, task_id: &str, seen: usize) -> Result<(), StoreError> {
        let mut expr = Expr::default();
        let ids = expr.name(REPLY_IDS);
        let size = expr.val("seen", AttributeValue::N(seen.to_string()));
        let oldest = (0..(seen - REPLY_IDS_KEPT).min(REPLY_IDS_MAX))
            .map(|i| format!("{ids}[{i}]"))
            .collect::<Vec<_>>()
            .join(", ");
        let update = format!("REMOVE {oldest}");
        let condition = format!("size({ids}) = {size}");
        match self.send_update(task_id, update, condition, expr).await {
            Ok(_) | Err(StoreError::Refused(_)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// `apply`, first to `seen` (the row as the caller has it) when given. A write on it
    /// is conditional on its note number and guard, so a row that moved is refused and
    /// read again; a refusal or "unchanged" is only ever decided on a row read here.
    async fn apply_from(
        &self,
        task_id: &str,
        mut seen: Option<Row>,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        for _ in 0..RACE_ATTEMPTS {
            let (row, read_here) = match seen.take() {
                Some(row) => (row, false),
                None => (
                    self.get(task_id)
                        .await?
                        .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?,
                    true,
                ),
            };
            let unchanged = row
                .last
                .as_ref()
                .is_some_and(|last| !out.differs_from(last));
            if !read_here && (unchanged || !guard.admits(&row)) {
                continue;
            }
            if !guard.admits(&row) {
                return Err(StoreError::Refused(task_id.to_owned()));
            }
            if unchanged {
                return Ok(Applied::Unchanged);
            }
            let seq = row.seq + 1;
            let mut expr = Expr::default();
            let last = expr.name(LAST);
            let v_out = expr.val("out", value(out)?);
            let mut update = format!("SET {last} = {v_out}");
            if out.is_final {
                // The final state closes the row in the same write as its note; the park
                // token stays so the follow that applied it can still ring its park.
                let c = expr.name(CLOSED);
                let t = expr.val("true", AttributeValue::Bool(true));
                let ttl = expr.val("ttl", expires_in(CLOSED_ROW_TTL));
                update.push_str(&format!(", {c} = {t}, {EXPIRES_AT} = {ttl}"));
            }
            let condition = expr.guard(guard);
            let note = crate::outbox::note_of(&row, out, seq);
            match self
                .write_with_note(task_id, &row, update, condition, expr, &note)
                .await?
            {
                true => {
                    let mut moved = row;
                    moved.last = Some(out.clone());
                    moved.seq = seq;
                    moved.closed |= out.is_final;
                    return Ok(Applied::Changed {
                        note: Box::new(note),
                        row: Box::new(moved),
                    });
                }
                // Another writer moved the row between the read and the write: read again.
                false => continue,
            }
        }
        Err(StoreError::Backend(format!(
            "apply to {task_id} kept racing; try again"
        )))
    }

    /// One transaction: the row's update under its condition plus "nobody took this
    /// number" (`seq` unchanged since the read), and the note put under that number.
    /// False when the row's condition failed (a race: the caller reads again).
    async fn write_with_note(
        &self,
        task_id: &str,
        read: &Row,
        update: String,
        condition: String,
        mut expr: Expr,
        note: &ParentNote,
    ) -> Result<bool, StoreError> {
        let seen = expr.val("seen", AttributeValue::N(read.seq.to_string()));
        let next = expr.val("next", AttributeValue::N(note.seq.to_string()));
        let update = update.replacen("SET ", &format!("SET {SEQ} = {next}, "), 1);
        let condition = format!("{condition} AND {SEQ} = {seen}");
        let (k, v) = Self::key(task_id);
        let row_update = Update::builder()
            .table_name(&self.table)
            .key(k, v)
            .update_expression(update)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .build()
            .map_err(|e| StoreError::Backend(format!("build update: {e}")))?;
        let body = serde_json::to_string(note)
            .map_err(|e| StoreError::Backend(format!("encode note: {e}")))?;
        let mut item = HashMap::from([
            (TASK_ID.to_owned(), AttributeValue::S(note.task_id.clone())),
            (SEQ.to_owned(), AttributeValue::N(note.seq.to_string())),
            (NOTE_BODY.to_owned(), AttributeValue::S(body)),
            (EXPIRES_AT.to_owned(), expires_in(NOTE_TTL)),
        ]);
        if note.is_final
            && let Some(token) = &read.parent_task_token
        {
            item.insert(
                PARENT_TASK_TOKEN.to_owned(),
                AttributeValue::S(token.clone()),
            );
        }
        let note_put = Put::builder()
            .table_name(&self.notes_table)
            .set_item(Some(item))
            .condition_expression(format!("attribute_not_exists({SEQ})"))
            .build()
            .map_err(|e| StoreError::Backend(format!("build put: {e}")))?;
        let result = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().update(row_update).build())
            .transact_items(TransactWriteItem::builder().put(note_put).build())
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(err) => match err.as_service_error() {
                // A failed condition or a concurrent write to the row (a push, a ring)
                // is a race: the caller reads again and retries.
                Some(TransactWriteItemsError::TransactionCanceledException(e))
                    if e.cancellation_reasons().iter().any(|r| {
                        matches!(
                            r.code(),
                            Some("ConditionalCheckFailed" | "TransactionConflict")
                        )
                    }) =>
                {
                    Ok(false)
                }
                _ => Err(backend(&err)),
            },
        }
    }
}

/// The write that takes `event`, read from `row`'s pending events, for park `park`:
/// it removes exactly what was read (a concurrent ring may add, never lose) and keeps
/// what was taken with the park's number for a retried wake.
fn take_event(
    row: &Row,
    park: u64,
    event: &WakeEvent,
) -> Result<(String, String, Expr), StoreError> {
    let mut expr = Expr::default();
    let p = expr.name(PENDING);
    let taken_name = expr.name(TAKEN);
    let taken = expr.val(
        "taken",
        value(&Taken {
            park,
            event: Some(event.clone()),
        })?,
    );
    let (remove, condition) = match event {
        WakeEvent::Cancel { .. } => (
            format!("{p}.{CANCEL}"),
            format!("attribute_exists({p}.{CANCEL})"),
        ),
        WakeEvent::Reply { text, .. } => {
            let first = expr.val("first", AttributeValue::S(text.clone()));
            (
                format!("{p}.{REPLIES}[0]"),
                format!("{p}.{REPLIES}[0] = {first}"),
            )
        }
        WakeEvent::Push { .. } => {
            let claim = expr.val("claim", value(&row.pending.push)?);
            let numbered = match &row.pending.push_id {
                Some(id) => format!(
                    "{p}.{PUSH_ID} = {}",
                    expr.val("push_id", AttributeValue::S(id.clone()))
                ),
                None => format!("attribute_not_exists({p}.{PUSH_ID})"),
            };
            (
                format!("{p}.{PUSH}, {p}.{PUSH_ID}"),
                format!("{p}.{PUSH} = {claim} AND {numbered}"),
            )
        }
        WakeEvent::Follow { .. } => {
            let report = expr.val("report", value(&row.pending.follow)?);
            (format!("{p}.{FOLLOW}"), format!("{p}.{FOLLOW} = {report}"))
        }
    };
    // What goes before it by priority was not pending when the row was read: still not.
    let before = match event {
        WakeEvent::Cancel { .. } => vec![],
        WakeEvent::Reply { .. } => vec![format!("attribute_not_exists({p}.{CANCEL})")],
        WakeEvent::Push { .. } | WakeEvent::Follow { .. } => {
            let zero = expr.val("zero", AttributeValue::N("0".into()));
            let mut before = vec![
                format!("attribute_not_exists({p}.{CANCEL})"),
                format!("(attribute_not_exists({p}.{REPLIES}) OR size({p}.{REPLIES}) = {zero})"),
            ];
            if matches!(event, WakeEvent::Follow { .. }) {
                before.push(format!("attribute_not_exists({p}.{PUSH})"));
            }
            before
        }
    };
    let condition = std::iter::once(condition)
        .chain(before)
        .collect::<Vec<_>>()
        .join(" AND ");
    let update = format!("SET {taken_name} = {taken} REMOVE {remove}");
    Ok((update, condition, expr))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::push::PushToken;
    use crate::row::{FollowOutcome, Pending, WatchMode};
    use crate::state::remote_out;
    use standin_wire::TaskState;

    fn keys(item: &Item) -> BTreeSet<&str> {
        item.keys().map(String::as_str).collect()
    }

    fn map<'a>(item: &'a Item, name: &str) -> &'a Item {
        match item.get(name) {
            Some(AttributeValue::M(inner)) => inner,
            other => panic!("{name} is not a map: {other:?}"),
        }
    }

    /// A row with every field set, so every attribute it can have is written.
    fn full_row() -> Row {
        let mut row = Row::new("si-1", "writer");
        row.remote_task_id = Some("r".into());
        row.context_id = Some("c".into());
        row.watch = Some(Watch {
            mode: WatchMode::Push,
            config_id: Some("cfg".into()),
            token_digest: Some(PushToken::generate().digest()),
        });
        row.last = Some(remote_out("r", TaskState::Working, "t"));
        row.closed = true;
        row.epoch = 2;
        row.woken = 1;
        row.taken = Some(Taken {
            park: 1,
            event: None,
        });
        row.park_token = Some("tok".into());
        row.pending = Pending {
            cancel: Some("stop".into()),
            replies: vec!["x".into()],
            push: Some(PushClaim { claimed: None }),
            push_id: Some("0123456789abcdef".into()),
            follow: Some(FollowReport {
                epoch: 2,
                outcome: FollowOutcome::Unchanged,
            }),
        };
        row.seq = 3;
        row.reply_ids = vec!["r-1".into()];
        row.created_at = Some("2026-12-01T00:00:00Z".into());
        row.parent_task_token = Some("parent".into());
        row.lease = Some("lease-2".into());
        row.generation = 2;
        row.previous_lease = Some("lease-1".into());
        row.agent_entry = Some(r#"{"id":"writer","url":"http://h"}"#.into());
        row
    }

    #[test]
    fn every_attribute_name_the_expressions_use_is_one_the_row_serialises() {
        let item: Item = serde_dynamo::to_item(full_row()).expect("a row serialises");
        let written = keys(&item);
        for name in [
            TASK_ID,
            AGENT,
            REMOTE_TASK_ID,
            CONTEXT_ID,
            WATCH,
            LAST,
            CLOSED,
            EPOCH,
            WOKEN,
            TAKEN,
            PARK_TOKEN,
            PENDING,
            SEQ,
            REPLY_IDS,
            PARENT_TASK_TOKEN,
            LEASE,
            GENERATION,
            PREVIOUS_LEASE,
        ] {
            assert!(
                written.contains(name),
                "{name} is not a row attribute: {written:?}"
            );
        }
        let watch = keys(map(&item, WATCH));
        assert!(
            watch.contains(MODE) && watch.contains(TOKEN_DIGEST),
            "{watch:?}"
        );
        assert_eq!(
            keys(map(&item, PENDING)),
            BTreeSet::from([CANCEL, REPLIES, PUSH, PUSH_ID, FOLLOW])
        );
        assert!(
            !written.contains(EXPIRES_AT),
            "the TTL is the store's, not the row's"
        );
    }

    /// A resource of the template, from its name to the next resource.
    fn resource<'a>(template: &'a str, name: &str) -> &'a str {
        let start = template
            .find(&format!("\n  {name}:\n"))
            .unwrap_or_else(|| panic!("{name} in the template"));
        let body = &template[start + 1..];
        let end = body
            .match_indices("\n  ")
            .find(|(i, _)| body[i + 3..].starts_with(|c: char| c.is_ascii_alphabetic()))
            .map_or(body.len(), |(i, _)| i);
        &body[..end]
    }

    #[test]
    fn the_keys_and_the_ttl_attribute_are_the_templates() {
        let template = include_str!("../../../../template.yaml");
        let ttl = format!("AttributeName: {EXPIRES_AT}");
        let hash = format!("{{ AttributeName: {TASK_ID}, KeyType: HASH }}");
        let rows = resource(template, "Table");
        assert!(rows.contains(&ttl) && rows.contains(&hash), "{rows}");
        let notes = resource(template, "NotesTable");
        assert!(notes.contains(&ttl) && notes.contains(&hash), "{notes}");
        assert!(notes.contains(&format!("{{ AttributeName: {SEQ}, KeyType: RANGE }}")));
    }
}
