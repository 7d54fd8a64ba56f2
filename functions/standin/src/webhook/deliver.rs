//! One stand-in's webhooks, each sent the notes after its mark, in order, side by side.

use futures_util::future::join_all;
use tokio::time::Instant;

use super::WebhookPoster;
use crate::row::{Notes, StandIns, StoreError, Webhook, Webhooks};

/// Notes read from the log at a time.
const PAGE: u32 = 25;

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// Every webhook has every note (or the stand-in is gone).
    All,
    /// Out of time with notes left: go on at once.
    More,
    /// A webhook did not take a note: try again later. `since`: when (epoch ms) the
    /// longest failing of them last took a note, as far as the row knows.
    Failed { why: String, since: u64 },
}

/// Sends each webhook of `task_id` its notes after its mark, until `stop_at`. The
/// webhooks go side by side, so a slow one holds back no other.
pub async fn deliver<S: StandIns + Notes + Webhooks, P: WebhookPoster>(
    store: &S,
    poster: &P,
    task_id: &str,
    stop_at: Instant,
) -> Result<Delivered, StoreError> {
    let Some(row) = store.get(task_id).await? else {
        return Ok(Delivered::All);
    };
    let context = row.parent_context_id.as_deref();
    let each = row
        .webhooks
        .iter()
        .map(|(id, hook)| one(store, poster, (task_id, context), id, hook, stop_at));
    // A webhook with notes still to send goes on at once, whatever another's failure:
    // the failing one is tried again then too.
    let mut outcome = Delivered::All;
    for delivered in join_all(each).await {
        outcome = match (outcome, delivered?) {
            (Delivered::More, _) | (_, Delivered::More) => Delivered::More,
            (Delivered::Failed { why, since: a }, Delivered::Failed { since: b, .. }) => {
                Delivered::Failed {
                    why,
                    since: a.min(b),
                }
            }
            (failed @ Delivered::Failed { .. }, _) | (_, failed @ Delivered::Failed { .. }) => {
                failed
            }
            _ => Delivered::All,
        };
    }
    Ok(outcome)
}

/// One webhook's notes after its mark, in order, the mark moved after each.
async fn one<S: StandIns + Notes + Webhooks, P: WebhookPoster>(
    store: &S,
    poster: &P,
    (task_id, context): (&str, Option<&str>),
    id: &str,
    hook: &Webhook,
    stop_at: Instant,
) -> Result<Delivered, StoreError> {
    let mut through = hook.through;
    loop {
        let notes = store.notes(task_id, through, PAGE).await?;
        if notes.is_empty() {
            return Ok(Delivered::All);
        }
        for note in &notes {
            if Instant::now() >= stop_at {
                return Ok(Delivered::More);
            }
            match tokio::time::timeout_at(stop_at, poster.post(hook, context, note)).await {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    tracing::warn!(task_id, webhook = %id, seq = note.seq, error = %why,
                        "webhook did not take the note; tried again later");
                    let now = crate::clock::now_ms();
                    let failing_since = store.fail_webhook(task_id, id, hook.version, now).await?;
                    return Ok(match failing_since {
                        Some(since) => Delivered::Failed { why, since },
                        // Deleted or replaced meanwhile: nothing of it to retry.
                        None => Delivered::All,
                    });
                }
                Err(_) => return Ok(Delivered::More),
            }
            through = note.seq;
            let marked = store.mark_webhook(task_id, id, hook.version, note.seq);
            match marked.await {
                Ok(true) => {}
                // Deleted or replaced meanwhile: not this delivery's to go on with (the
                // new one starts from its own mark).
                Ok(false) => return Ok(Delivered::All),
                // Unmarked, the note is sent again: at least once.
                Err(err) => {
                    tracing::warn!(task_id, webhook = %id, seq = note.seq, error = %err,
                        "webhook delivery not marked; the note may be sent again");
                }
            }
        }
    }
}
