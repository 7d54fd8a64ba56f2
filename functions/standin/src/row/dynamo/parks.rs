//! The doorbell's writes (`Parks`), each one conditional UpdateItem. The drain: on a row
//! read here, or from the row as the caller read it; its second write takes exactly the
//! event it read, for its park.

use super::*;

impl Parks for DynamoRowStore {
    async fn end_hearing(&self, task_id: &str, epoch: u64, id: &str) -> Result<(), StoreError> {
        let (mut expr, id) = (Expr::default(), id.to_owned());
        let condition = expr.guard(&Guard::Hearing { epoch, id });
        let ended = format!("REMOVE {HEARING}, {HEARING_PARK}, {HEARING_UNTIL}");
        self.send_update(task_id, ended, condition, expr).await?;
        Ok(())
    }

    /// One UpdateItem whose condition is the push's guard and `Row::admits_hearing`; a
    /// refusal tells which failed by the row it returns.
    async fn claim_hearing(
        &self,
        task_id: &str,
        guard: &Guard,
        id: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<HearingClaim, StoreError> {
        let mut expr = Expr::default();
        let admitted = expr.guard(guard);
        let h = expr.text("hearing_id", id);
        let until = expr.num("until", until_ms);
        let now = expr.num("now", now_ms);
        let p = expr.name(PENDING);
        // `Row::admits_hearing`: parked, nothing pending, no running lease of this park.
        let (not_woken, before) = (expr.not_woken(EPOCH), expr.no_cancel_or_reply());
        let condition = format!(
            "{admitted} AND attribute_exists({PARK_TOKEN}) AND {not_woken} AND {before} \
             AND attribute_not_exists({p}.{PUSH}) AND attribute_not_exists({p}.{FOLLOW}) \
             AND (attribute_not_exists({HEARING}) OR {HEARING_PARK} <> {EPOCH} \
             OR {HEARING_UNTIL} < {now})"
        );
        let update =
            format!("SET {HEARING} = {h}, {HEARING_PARK} = {EPOCH}, {HEARING_UNTIL} = {until}");
        let call = self.update_item(task_id, update, condition, expr);
        let err = match call.send().await {
            Ok(out) => {
                let row = row_of(out.attributes.unwrap_or_default())?;
                return Ok(HearingClaim::Claimed(Box::new(row)));
            }
            Err(err) => err,
        };
        match err.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(e)) => match e.item() {
                Some(item) if !item.is_empty() => match guard.admits(&row_of(item.clone())?) {
                    true => Ok(HearingClaim::Busy),
                    false => Err(StoreError::Refused(task_id.to_owned())),
                },
                _ => Err(StoreError::NotFound(task_id.to_owned())),
            },
            // A write meeting an apply's transaction on the row: a hearing is under way
            // or a note is being told; the door rings instead.
            Some(e) if e.is_transaction_conflict_exception() => Ok(HearingClaim::Contended),
            _ => Err(backend(err)),
        }
    }

    async fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let p = expr.name(PENDING);
        let update = match event {
            WakeEvent::Reply { text, parts, id } => {
                let queued = QueuedReply::new(text, parts);
                let id = id.as_deref();
                return self.record_reply(task_id, event, &queued, id, guard).await;
            }
            WakeEvent::Cancel { reason } => {
                let v = expr.text("reason", reason);
                format!("SET {p}.{CANCEL} = if_not_exists({p}.{CANCEL}, {v})")
            }
            WakeEvent::Push { .. } | WakeEvent::Asked { .. } => {
                let v = expr.val("claim", value(&PendingPush::of(event))?);
                let id = expr.text("push_id", crate::row::new_push_id());
                format!("SET {p}.{PUSH} = {v}, {p}.{PUSH_ID} = {id}")
            }
            &WakeEvent::Follow { epoch, outcome } => {
                let v = expr.val("report", value(&FollowReport { epoch, outcome })?);
                format!("SET {p}.{FOLLOW} = {v}")
            }
        };
        let condition = expr.guard(guard);
        self.send_update(task_id, update, condition, expr).await
    }

    async fn park(&self, task_id: &str, park: u64, token: &str) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let t = expr.text("token", token);
        let n = expr.num("park", park);
        let update = format!("SET {PARK_TOKEN} = {t}, {EPOCH} = {n}");
        let (open, not_woken) = (expr.guard(&Guard::Open), expr.not_woken(&n));
        let condition = format!("{open} AND {EPOCH} < {n} AND {not_woken}");
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
        let t = expr.text("token", token);
        let n = expr.num("park", park);
        let c = expr.num("claim", crate::row::follow_claim(park, hop));
        let claim = expr.name(FOLLOW_CLAIM);
        let update = format!("SET {claim} = {c}");
        let (open, not_woken) = (expr.guard(&Guard::Open), expr.not_woken(&n));
        let condition = format!(
            "{open} AND {EPOCH} = {n} AND {PARK_TOKEN} = {t} AND {not_woken} \
             AND (attribute_not_exists({claim}) OR {claim} < {c})"
        );
        self.send_update(task_id, update, condition, expr).await
    }

    async fn end_park(&self, task_id: &str, park: u64) -> Result<Row, StoreError> {
        let mut expr = Expr::default();
        let n = expr.num("park", park);
        let update = format!("SET {} = {n}", expr.name(WOKEN));
        // Already woken (a retried wake): the row as it stands.
        self.once_per_park(task_id, update, &n, expr).await
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
        let (n, l) = (expr.num("park", park), expr.text("lease", lease));
        let g = expr.num("generation", to);
        let (woken, lease_name) = (expr.name(WOKEN), expr.name(LEASE));
        let (generation, previous_name) = (expr.name(GENERATION), expr.name(PREVIOUS_LEASE));
        let previous = match previous {
            Some(previous) => format!(", {previous_name} = {}", expr.text("previous", previous)),
            None => format!(" REMOVE {previous_name}"),
        };
        let update = format!("SET {woken} = {n}, {lease_name} = {l}, {generation} = {g}{previous}");
        // Already rolled (a retried wake): the row with the first attempt's lease.
        self.once_per_park(task_id, update, &n, expr).await
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
        let push = rung.push.pending();
        let event = push.event();
        let seen = Pending {
            push: Some(push),
            push_id: Some(rung.push.id.clone()),
            ..Pending::default()
        };
        let (update, condition, mut expr) =
            ending_park(take_event(&seen, rung.park, &event)?, rung.park);
        let (agent, generation, lease) =
            (expr.name(AGENT), expr.name(GENERATION), expr.name(LEASE));
        // A first generation's row has no number (`Row::generation` skips a zero).
        let g = (rung.generation > 0).then(|| AttributeValue::N(rung.generation.to_string()));
        let generation_is = expr.holds(&generation, "generation", g);
        let l = rung.lease.map(|l| AttributeValue::S(l.to_owned()));
        let lease_is = expr.holds(&lease, "lease", l);
        let condition = format!(
            "{condition} AND {agent} = {} AND {generation_is} AND {lease_is}",
            expr.text("agent", rung.agent)
        );
        match self.send_update(task_id, update, condition, expr).await {
            Ok(row) => Ok(Some(drained(Some(event), row, true))),
            Err(StoreError::Refused(_) | StoreError::NotFound(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// The write that takes `event`, read from the `pending` events, for park `park`: it
/// removes exactly what was read (a concurrent ring may add, never lose) and keeps what
/// was taken with the park's number for a retried wake.
pub(super) fn take_event(
    pending: &Pending,
    park: u64,
    event: &WakeEvent,
) -> Result<(String, String, Expr), StoreError> {
    let mut expr = Expr::default();
    let p = expr.name(PENDING);
    // What goes before it by priority was not pending when the row was read: still not.
    let (remove, condition) = match event {
        WakeEvent::Cancel { .. } => (
            format!("{p}.{CANCEL}"),
            format!("attribute_exists({p}.{CANCEL})"),
        ),
        WakeEvent::Reply { text, .. } => {
            // The first reply, still the one read, whole: a string, or a map with its parts.
            let read = match pending.replies.first() {
                Some(first) => value(first)?,
                None => AttributeValue::S(text.clone()),
            };
            let first = expr.val("first", read);
            (
                format!("{p}.{REPLIES}[0]"),
                format!("{p}.{REPLIES}[0] = {first} AND attribute_not_exists({p}.{CANCEL})"),
            )
        }
        WakeEvent::Push { .. } | WakeEvent::Asked { .. } => {
            let claim = expr.val("claim", value(&pending.push)?);
            let id = pending.push_id.clone().map(AttributeValue::S);
            let numbered = expr.holds(&format!("{p}.{PUSH_ID}"), "push_id", id);
            let before = expr.no_cancel_or_reply();
            (
                format!("{p}.{PUSH}, {p}.{PUSH_ID}"),
                format!("{p}.{PUSH} = {claim} AND {numbered} AND {before}"),
            )
        }
        WakeEvent::Follow { .. } => {
            let report = expr.val("report", value(&pending.follow)?);
            let before = expr.no_cancel_or_reply();
            (
                format!("{p}.{FOLLOW}"),
                format!(
                    "{p}.{FOLLOW} = {report} AND {before} AND attribute_not_exists({p}.{PUSH})"
                ),
            )
        }
    };
    let (taken_name, event) = (expr.name(TAKEN), Some(event.clone()));
    let taken = expr.val("taken", value(&Taken { park, event })?);
    let update = format!("SET {taken_name} = {taken} REMOVE {remove}");
    Ok((update, condition, expr))
}

/// A take that also ends park `park`, in the same write, while the row is open and the
/// park not woken.
pub(super) fn ending_park(take: (String, String, Expr), park: u64) -> (String, String, Expr) {
    let (update, condition, mut expr) = take;
    let n = expr.num("park", park);
    let update = update.replacen("SET ", &format!("SET {} = {n}, ", expr.name(WOKEN)), 1);
    let open = expr.guard(&Guard::Open);
    let condition = format!("{condition} AND {open} AND {}", expr.not_woken(&n));
    (update, condition, expr)
}

impl DynamoRowStore {
    /// The drain on a row read here.
    pub(super) async fn drain_read(&self, task_id: &str, park: u64) -> Result<Drained, StoreError> {
        let mut row = self.end_park(task_id, park).await?;
        for _ in 0..RACE_ATTEMPTS {
            if row.closed {
                return Ok(drained(None, row, false));
            }
            if let Some(taken) = row.taken.as_ref().filter(|t| t.park == park) {
                return Ok(drained(taken.event.clone(), row, false));
            }
            let Some(event) = row.pending.clone().take_next() else {
                return Ok(drained(None, row, false));
            };
            let (update, condition, expr) = take_event(&row.pending, park, &event)?;
            match self.send_update(task_id, update, condition, expr).await {
                Ok(row) => return Ok(drained(Some(event), row, false)),
                Err(StoreError::Refused(_)) => row = self.read_row(task_id).await?,
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
        let event = seen
            .pending
            .clone()
            .take_next()
            .filter(|_| !seen.closed && seen.woken < park);
        let Some(event) = event else {
            return self.drain_read(task_id, park).await;
        };
        let (update, condition, expr) = ending_park(take_event(&seen.pending, park, &event)?, park);
        match self.send_update(task_id, update, condition, expr).await {
            Ok(row) => Ok(drained(Some(event), row, true)),
            // The row moved since the caller read it (a ring, a close, a retried wake):
            // nothing was written, and the drain goes as usual.
            Err(StoreError::Refused(_)) => self.drain_read(task_id, park).await,
            Err(err) => Err(err),
        }
    }
}
