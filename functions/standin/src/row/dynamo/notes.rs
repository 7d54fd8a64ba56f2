//! A change and the note it causes, written in one transaction: to the row as the
//! caller saw it first, read again only when it moved.

use super::*;

impl Notes for DynamoRowStore {
    /// A refusal or "unchanged" is only ever decided on a row read here. A hearing's
    /// commit reads nothing: its row is the one its claim just wrote, and a write refused
    /// on it is the hearing's refusal (the push then rings the park).
    async fn apply(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        let mut seen = seen.cloned();
        let hearing = matches!(guard, Guard::Hearing { .. });
        for _ in 0..RACE_ATTEMPTS {
            let (row, read_here) = match seen.take() {
                Some(row) => (row, false),
                None => (self.read_row(task_id).await?, true),
            };
            let unchanged = !out.is_news_after(row.last.as_ref());
            if !read_here && !hearing && (unchanged || !guard.admits(&row)) {
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
            let report = guard.hearing_report(out);
            if let Some(report) = &report {
                let p = expr.name(PENDING);
                let r = expr.val("report", value(report)?);
                update.push_str(&format!(", {p}.{FOLLOW} = {r}"));
            }
            if hearing {
                update.push_str(&format!(
                    " REMOVE {HEARING}, {HEARING_PARK}, {HEARING_UNTIL}"
                ));
            }
            let condition = expr.guard(guard);
            let note = crate::row::note_of(&row, out, seq);
            let written = self.write_with_note(task_id, &row, update, condition, expr, &note);
            match written.await? {
                true => {
                    let mut moved = row;
                    moved.last = Some(out.clone());
                    moved.seq = seq;
                    moved.closed |= out.is_final;
                    moved.pending.follow = report.or(moved.pending.follow);
                    if hearing {
                        moved.end_hearing();
                    }
                    return Ok(Applied::Changed {
                        note: Box::new(note),
                        row: Box::new(moved),
                    });
                }
                false if hearing => return Err(StoreError::Refused(task_id.to_owned())),
                // Another writer moved the row between the read and the write: read again.
                false => continue,
            }
        }
        Err(StoreError::Backend(format!(
            "apply to {task_id} kept racing; try again"
        )))
    }

    async fn close(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> Result<Closed, StoreError> {
        for _ in 0..RACE_ATTEMPTS {
            let row = self.read_row(task_id).await?;
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
            let set = format!("SET {c} = {t}, {p} = {empty}, {EXPIRES_AT} = {ttl}");
            let Some(out) = final_note else {
                let update = format!("{set} REMOVE {PARK_TOKEN}");
                let condition = expr.guard(&Guard::Open);
                match self.send_update(task_id, update, condition, expr).await {
                    Ok(row) => return Ok(Closed { row, note: None }),
                    Err(StoreError::Refused(_)) => continue,
                    Err(err) => return Err(err),
                }
            };
            // The final note may follow a close without one (a cancel waits for the
            // remote's answer), guarded by `seq` as every note is.
            let condition = format!("attribute_exists({TASK_ID})");
            let (last, v) = (expr.name(LAST), expr.val("out", value(out)?));
            let update = format!("{set}, {last} = {v} REMOVE {PARK_TOKEN}");
            let note = crate::row::note_of(&row, out, row.seq + 1);
            let written = self.write_with_note(task_id, &row, update, condition, expr, &note);
            if written.await? {
                let mut closed = row;
                closed.closed = true;
                closed.park_token = None;
                closed.pending = Default::default();
                closed.last = Some(out.clone());
                closed.seq = note.seq;
                return Ok(Closed {
                    row: closed,
                    note: Some(Box::new(note)),
                });
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
            .map_err(backend)?;
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

impl DynamoRowStore {
    /// One transaction: the row's update under its condition plus "nobody took this
    /// number" (`seq` unchanged since the read), and the note put under that number.
    /// False when the row's condition failed (a race: the caller reads again).
    pub(super) async fn write_with_note(
        &self,
        task_id: &str,
        read: &Row,
        update: String,
        condition: String,
        mut expr: Expr,
        note: &ParentNote,
    ) -> Result<bool, StoreError> {
        let seen = expr.num("seen", read.seq);
        let next = expr.num("next", note.seq);
        let update = update.replacen("SET ", &format!("SET {SEQ} = {next}, "), 1);
        // Written on the webhooks as read: the note says whether they are there.
        let rev = expr.name(WEBHOOKS_REV);
        let seen_rev =
            (read.webhooks_rev > 0).then(|| AttributeValue::N(read.webhooks_rev.to_string()));
        let webhooks_as_read = expr.holds(&rev, "seen_rev", seen_rev);
        let condition = format!("{condition} AND {SEQ} = {seen} AND {webhooks_as_read}");
        let row_update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(Self::key(task_id)))
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
            let token = AttributeValue::S(token.clone());
            item.insert(PARENT_TASK_TOKEN.to_owned(), token);
        }
        if !read.webhooks.is_empty() {
            item.insert(WEBHOOKED.to_owned(), AttributeValue::Bool(true));
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
                _ => Err(backend(err)),
            },
        }
    }
}
