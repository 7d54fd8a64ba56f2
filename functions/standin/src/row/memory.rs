//! The row store in memory, for unit tests of the rules. Each method takes the lock once,
//! so each is atomic like the DynamoDB UpdateItem it stands for.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::store::{Applied, Closed, Drained, HearingClaim, Notes, Parks, StandIns, StoreError};
use super::{Guard, MAX_QUEUED_REPLIES, Row, Rung, Taken, WakeEvent, Watch};
use crate::state::RemoteOut;
use standin_wire::ParentNote;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock has already failed; go on with the data.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Default)]
pub struct MemoryStore {
    rows: Mutex<HashMap<String, Row>>,
    /// The outbox: every note written with the row change that caused it.
    notes: Mutex<Vec<ParentNote>>,
    /// Every successful write, for "nothing written" assertions.
    writes: Mutex<usize>,
    /// Every read of a row, as the table's store would make them (each `get`, and each
    /// apply given no row seen), for "no read ahead of the write" assertions.
    reads: Mutex<usize>,
}

impl MemoryStore {
    /// The drain, in one step under the lock; `as_seen` when the row before it passes
    /// `unmoved` (what the drain from a copy checks on DynamoDB).
    fn drain_if(
        &self,
        task_id: &str,
        park: u64,
        unmoved: impl FnOnce(&Row) -> bool,
    ) -> Result<Drained, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        let as_seen = unmoved(row);
        row.woken = row.woken.max(park);
        *lock(&self.writes) += 1;
        if let Some(taken) = row.taken.as_ref().filter(|t| t.park == park) {
            return Ok(Drained {
                event: taken.event.clone(),
                row: row.clone(),
                as_seen: false,
            });
        }
        let event = row.pending.take_next();
        if event.is_some() {
            row.taken = Some(Taken {
                park,
                event: event.clone(),
            });
        }
        Ok(Drained {
            event,
            row: row.clone(),
            as_seen,
        })
    }
    pub fn new() -> Self {
        Self::default()
    }

    pub fn writes(&self) -> usize {
        *lock(&self.writes)
    }

    pub fn reads(&self) -> usize {
        *lock(&self.reads)
    }

    pub fn snapshot(&self, task_id: &str) -> Option<Row> {
        lock(&self.rows).get(task_id).cloned()
    }

    /// Every note in the outbox, in the order written.
    pub fn outbox(&self) -> Vec<ParentNote> {
        lock(&self.notes).clone()
    }

    /// The note for `out` under the row's next number, written with the row change.
    fn write_note(&self, row: &mut Row, out: &RemoteOut) -> Box<ParentNote> {
        row.seq += 1;
        row.last = Some(out.clone());
        let note = super::note_of(row, out, row.seq);
        lock(&self.notes).push(note.clone());
        Box::new(note)
    }

    fn update<T>(
        &self,
        task_id: &str,
        guard: &Guard,
        change: impl FnOnce(&mut Row) -> T,
    ) -> Result<T, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !guard.admits(row) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        let out = change(row);
        *lock(&self.writes) += 1;
        Ok(out)
    }
}

impl super::SentMarks for MemoryStore {
    async fn sent_through(&self, task_ids: &[&str]) -> Result<HashMap<String, u64>, StoreError> {
        let rows = lock(&self.rows);
        Ok(task_ids
            .iter()
            .filter_map(|id| rows.get(*id))
            .filter(|row| row.sent_through > 0)
            .map(|row| (row.task_id.clone(), row.sent_through))
            .collect())
    }

    async fn mark_sent(&self, task_id: &str, seq: u64) -> Result<(), StoreError> {
        if let Some(row) = lock(&self.rows).get_mut(task_id) {
            row.sent_through = row.sent_through.max(seq);
        }
        Ok(())
    }
}

impl StandIns for MemoryStore {
    async fn create(&self, row: &Row) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        if rows.contains_key(&row.task_id) {
            return Err(StoreError::AlreadyExists(row.task_id.clone()));
        }
        rows.insert(row.task_id.clone(), row.clone());
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn get(&self, task_id: &str) -> Result<Option<Row>, StoreError> {
        *lock(&self.reads) += 1;
        Ok(self.snapshot(task_id))
    }

    async fn list(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Row>, Option<String>), StoreError> {
        let rows = lock(&self.rows);
        let mut ids: Vec<&String> = rows
            .keys()
            .filter(|id| after.is_none_or(|a| id.as_str() > a))
            .collect();
        ids.sort();
        let page: Vec<Row> = ids
            .iter()
            .take(limit as usize)
            .filter_map(|id| rows.get(*id).cloned())
            .collect();
        let next = (ids.len() > page.len())
            .then(|| page.last().map(|r| r.task_id.clone()))
            .flatten();
        Ok((page, next))
    }

    async fn list_of_agent(
        &self,
        agent: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Row>, Option<String>), StoreError> {
        let rows = lock(&self.rows);
        // Newest first, as the index orders them: by when each started, then by id.
        let order = |row: &Row| (row.created_at.clone(), row.task_id.clone());
        let mut mine: Vec<&Row> = rows
            .values()
            .filter(|row| row.agent == agent && row.created_at.is_some())
            .collect();
        mine.sort_by_key(|row| std::cmp::Reverse(order(row)));
        let start = match after {
            None => 0,
            Some(after) => match mine.iter().position(|row| row.task_id == after) {
                Some(at) => at + 1,
                None => mine.len(),
            },
        };
        let page: Vec<Row> = mine[start..]
            .iter()
            .take(limit as usize)
            .map(|row| (*row).clone())
            .collect();
        let next = (mine.len() > start + page.len())
            .then(|| page.last().map(|r| r.task_id.clone()))
            .flatten();
        Ok((page, next))
    }

    async fn set_remote(
        &self,
        task_id: &str,
        remote_task_id: &str,
        context_id: Option<&str>,
    ) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |row| {
            row.remote_task_id = Some(remote_task_id.to_owned());
            if let Some(ctx) = context_id {
                row.context_id = Some(ctx.to_owned());
            }
            row.clone()
        })
    }

    async fn set_watch(&self, task_id: &str, watch: &Watch) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |row| {
            row.watch = Some(watch.clone());
            row.clone()
        })
    }
}

impl Parks for MemoryStore {
    async fn end_hearing(&self, task_id: &str, epoch: u64, id: &str) -> Result<(), StoreError> {
        let guard = Guard::Hearing {
            epoch,
            id: id.to_owned(),
        };
        self.update(task_id, &guard, Row::end_hearing)
    }

    async fn claim_hearing(
        &self,
        task_id: &str,
        guard: &Guard,
        id: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<HearingClaim, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !guard.admits(row) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        if !row.admits_hearing(now_ms) {
            return Ok(HearingClaim::Busy);
        }
        row.hearing = Some(id.to_owned());
        row.hearing_park = row.epoch;
        row.hearing_until = until_ms;
        *lock(&self.writes) += 1;
        Ok(HearingClaim::Claimed(Box::new(row.clone())))
    }

    async fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        // Only a reply needs the row before the write (already taken? queue full?).
        if matches!(event, WakeEvent::Reply { .. })
            && let Some(row) = self.snapshot(task_id)
            && guard.admits(&row)
        {
            if row.has_reply(event) {
                return Ok(row);
            }
            if row.pending.replies.len() >= MAX_QUEUED_REPLIES {
                return Err(StoreError::RepliesFull(task_id.to_owned()));
            }
        }
        self.update(task_id, guard, |row| {
            row.pending.record(event);
            if let WakeEvent::Reply { id: Some(id), .. } = event {
                if row.reply_ids.len() >= super::REPLY_IDS_MAX {
                    let dropped = row.reply_ids.len() - super::REPLY_IDS_KEPT;
                    row.reply_ids.drain(..dropped);
                }
                row.reply_ids.push(id.clone());
            }
            row.clone()
        })
    }

    async fn park(&self, task_id: &str, park: u64, token: &str) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !row.admits_park(park) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        row.park_token = Some(token.to_owned());
        row.epoch = park;
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn claim_follow(
        &self,
        task_id: &str,
        park: u64,
        token: &str,
        hop: u64,
    ) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !row.admits_follow_claim(park, token, hop) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        row.follow_claim = super::follow_claim(park, hop);
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn end_park(&self, task_id: &str, park: u64) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        row.woken = row.woken.max(park);
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn roll(
        &self,
        task_id: &str,
        park: u64,
        to: u32,
        lease: &str,
        previous: Option<&str>,
    ) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if row.woken < park {
            row.woken = park;
            row.lease = Some(lease.to_owned());
            row.generation = to;
            row.previous_lease = previous.map(str::to_owned);
            *lock(&self.writes) += 1;
        }
        Ok(row.clone())
    }

    async fn drain(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        park: u64,
    ) -> Result<Drained, StoreError> {
        self.drain_if(task_id, park, |row| {
            seen.is_some_and(|seen| !row.closed && row.woken < park && row.pending == seen.pending)
        })
    }

    async fn take_rung(
        &self,
        task_id: &str,
        rung: &Rung<'_>,
    ) -> Result<Option<Drained>, StoreError> {
        let mut rows = lock(&self.rows);
        let Some(row) = rows.get_mut(task_id).filter(|row| rung.admits(row)) else {
            return Ok(None);
        };
        *lock(&self.writes) += 1;
        let event = rung.push.pending().event();
        row.woken = rung.park;
        row.pending.push = None;
        row.pending.push_id = None;
        row.taken = Some(Taken {
            park: rung.park,
            event: Some(event.clone()),
        });
        Ok(Some(Drained {
            event: Some(event),
            row: row.clone(),
            as_seen: true,
        }))
    }
}

impl Notes for MemoryStore {
    /// Decided on the row as it is, and counted and answered as the table's store would:
    /// it reads the row when given none, or when the row seen cannot decide (it has the
    /// change already, its guard refuses, or the row moved since, which fails the
    /// write's condition), and answers a write with the row seen, moved by that write.
    async fn apply(
        &self,
        task_id: &str,
        seen: Option<&Row>,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        let seen = seen.filter(|seen| {
            out.is_news_after(seen.last.as_ref())
                && guard.admits(seen)
                && guard.admits(row)
                && (seen.seq, seen.webhooks_rev) == (row.seq, row.webhooks_rev)
        });
        if seen.is_none() {
            *lock(&self.reads) += 1;
        }
        if !guard.admits(row) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        if !out.is_news_after(row.last.as_ref()) {
            return Ok(Applied::Unchanged);
        }
        let note = self.write_note(row, out);
        if out.is_final {
            row.closed = true;
        }
        if let Some(report) = guard.hearing_report(out) {
            row.pending.follow = Some(report);
        }
        if matches!(guard, Guard::Hearing { .. }) {
            row.end_hearing();
        }
        *lock(&self.writes) += 1;
        // What else changed on the row since it was seen (a sent mark) is not in it.
        let moved = match seen {
            Some(seen) => Row {
                last: row.last.clone(),
                seq: row.seq,
                closed: row.closed,
                pending: row.pending.clone(),
                hearing: row.hearing.clone(),
                hearing_park: row.hearing_park,
                hearing_until: row.hearing_until,
                ..seen.clone()
            },
            None => row.clone(),
        };
        Ok(Applied::Changed {
            note,
            row: Box::new(moved),
        })
    }

    async fn close(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> Result<Closed, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        let told = row.last.as_ref().is_some_and(|l| l.is_final);
        if told || (row.closed && final_note.is_none()) {
            return Ok(Closed {
                row: row.clone(),
                note: None,
            });
        }
        row.closed = true;
        row.park_token = None;
        row.pending = Default::default();
        let note = final_note.map(|out| self.write_note(row, out));
        *lock(&self.writes) += 1;
        Ok(Closed {
            row: row.clone(),
            note,
        })
    }

    async fn notes(
        &self,
        task_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<ParentNote>, StoreError> {
        Ok(lock(&self.notes)
            .iter()
            .filter(|n| n.task_id == task_id && n.seq > after)
            .take(limit as usize)
            .cloned()
            .collect())
    }
}

impl super::Webhooks for MemoryStore {
    async fn set_webhook(
        &self,
        task_id: &str,
        id: &str,
        webhook: &super::Webhook,
    ) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !row.webhooks.contains_key(id) && row.webhooks.len() >= super::MAX_WEBHOOKS {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        row.webhooks.insert(id.to_owned(), webhook.clone());
        row.webhooks_rev += 1;
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn delete_webhook(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        let removed = row.webhooks.remove(id).is_some();
        row.webhooks_rev += u64::from(removed);
        Ok(removed)
    }

    async fn mark_webhook(
        &self,
        task_id: &str,
        id: &str,
        version: u64,
        seq: u64,
    ) -> Result<bool, StoreError> {
        let mut rows = lock(&self.rows);
        let hook = rows
            .get_mut(task_id)
            .and_then(|row| row.webhooks.get_mut(id))
            .filter(|hook| hook.version == version && hook.through < seq);
        Ok(hook
            .map(|hook| {
                hook.through = seq;
                hook.failing_since = None;
            })
            .is_some())
    }

    async fn fail_webhook(
        &self,
        task_id: &str,
        id: &str,
        version: u64,
        now_ms: u64,
    ) -> Result<Option<u64>, StoreError> {
        let mut rows = lock(&self.rows);
        let hook = rows
            .get_mut(task_id)
            .and_then(|row| row.webhooks.get_mut(id))
            .filter(|hook| hook.version == version);
        Ok(hook.map(|hook| *hook.failing_since.get_or_insert(now_ms)))
    }
}
