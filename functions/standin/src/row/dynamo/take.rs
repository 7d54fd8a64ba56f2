//! The drain: on a row read here, or from the row as the caller read it; its second
//! write takes exactly the event it read, for its park.

use super::*;

/// The write that takes `event`, read from `row`'s pending events, for park `park`:
/// it removes exactly what was read (a concurrent ring may add, never lose) and keeps
/// what was taken with the park's number for a retried wake.
pub(super) fn take_event(
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
            // The first reply, still the one read, whole: a string, or a map with its parts.
            let read = match row.pending.replies.first() {
                Some(first) => value(first)?,
                None => AttributeValue::S(text.clone()),
            };
            let first = expr.val("first", read);
            (
                format!("{p}.{REPLIES}[0]"),
                format!("{p}.{REPLIES}[0] = {first}"),
            )
        }
        WakeEvent::Push { .. } | WakeEvent::Asked { .. } => {
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
        WakeEvent::Push { .. } | WakeEvent::Asked { .. } | WakeEvent::Follow { .. } => {
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

impl DynamoRowStore {
    /// The drain on a row read here.
    pub(super) async fn drain_read(&self, task_id: &str, park: u64) -> Result<Drained, StoreError> {
        let mut row = self.end_park(task_id, park).await?;
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

    /// The drain from the row as the caller read it: one write while it still is.
    pub(super) async fn drain_seen(&self, seen: &Row, park: u64) -> Result<Drained, StoreError> {
        let task_id = &seen.task_id;
        let mut pending = seen.pending.clone();
        let event = pending
            .take_next()
            .filter(|_| !seen.closed && seen.woken < park);
        let Some(event) = event else {
            return self.drain_read(task_id, park).await;
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
            Err(StoreError::Refused(_)) => self.drain_read(task_id, park).await,
            Err(err) => Err(err),
        }
    }
}
