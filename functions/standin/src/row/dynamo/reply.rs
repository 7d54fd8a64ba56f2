//! A reply joins the row's queue once, however often the parent or its SDK retries it,
//! within the queue's bound and the kept reply ids'.

use super::*;

/// How often a reply refused for a full list of reply ids is trimmed and written again
/// before it is refused: enough for a row trimmed by a concurrent reply meanwhile, and
/// for a row from before the bound that holds a few hundred ids.
const TRIM_ROUNDS: usize = 4;

impl DynamoRowStore {
    /// A reply joins the queue, unless `MAX_QUEUED_REPLIES` wait already, or unless the
    /// row has queued a reply of the same id (then it answers as if it queued it now: a
    /// retry, by the parent or by the SDK after an answer was lost, is queued once).
    pub(super) async fn record_reply(
        &self,
        task_id: &str,
        event: &WakeEvent,
        queued: &QueuedReply,
        id: Option<&str>,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let p = expr.name(PENDING);
        let one = expr.val("one", AttributeValue::L(vec![value(queued)?]));
        let empty = expr.val("empty", AttributeValue::L(vec![]));
        let max = expr.num("max", MAX_QUEUED_REPLIES);
        let mut update = format!(
            "SET {p}.{REPLIES} = list_append(if_not_exists({p}.{REPLIES}, {empty}), {one})"
        );
        let mut condition = format!(
            "{} AND (attribute_not_exists({p}.{REPLIES}) OR size({p}.{REPLIES}) < {max})",
            expr.guard(guard)
        );
        if let Some(id) = id {
            let ids = expr.name(REPLY_IDS);
            let named = AttributeValue::L(vec![AttributeValue::S(id.to_owned())]);
            let named = expr.val("rids", named);
            let rid = expr.text("rid", id);
            let most = expr.num("most", REPLY_IDS_MAX);
            update.push_str(&format!(
                ", {ids} = list_append(if_not_exists({ids}, {empty}), {named})"
            ));
            condition.push_str(&format!(
                " AND NOT contains({ids}, {rid}) AND (attribute_not_exists({ids}) OR size({ids}) < {most})"
            ));
        }
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
                Some(row) if row.has_reply(event) => return Ok(row),
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
    pub(super) async fn send_reply(
        &self,
        task_id: &str,
        named: bool,
        update: &str,
        condition: &str,
        expr: &Expr,
    ) -> Result<Row, StoreError> {
        let send = || self.send_update(task_id, update.into(), condition.into(), expr.clone());
        for attempt in 1..3 {
            match send().await {
                Err(StoreError::Backend(_)) if named => {
                    tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
                }
                other => return other,
            }
        }
        send().await
    }

    /// Drops the oldest reply ids of a row seen holding `seen` of them (at least
    /// [`REPLY_IDS_MAX`]), down to the newest [`REPLY_IDS_KEPT`], at most
    /// `REPLY_IDS_MAX` at a time (an expression's size is bounded). The write requires
    /// the list to hold exactly `seen`, so of two trims at once only one applies; the
    /// other's reply is written again all the same.
    pub(super) async fn trim_reply_ids(
        &self,
        task_id: &str,
        seen: usize,
    ) -> Result<(), StoreError> {
        let mut expr = Expr::default();
        let ids = expr.name(REPLY_IDS);
        let size = expr.num("seen", seen);
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
}
