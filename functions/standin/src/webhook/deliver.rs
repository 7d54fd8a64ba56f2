//! One stand-in's webhooks, each sent the notes after its mark, in order.

use tokio::time::Instant;

use super::WebhookPoster;
use crate::row::{Notes, StandIns, StoreError, Webhooks};

/// Notes read from the log at a time.
const PAGE: u32 = 25;

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// Every webhook has every note (or the stand-in is gone).
    All,
    /// Out of time with notes left: go on at once.
    More,
    /// A webhook did not take a note: try again later.
    Failed(String),
}

/// Sends each webhook of `task_id` its notes after its mark, until `stop_at`.
pub async fn deliver<S, P>(
    store: &S,
    poster: &P,
    task_id: &str,
    stop_at: Instant,
) -> Result<Delivered, StoreError>
where
    S: StandIns + Notes + Webhooks,
    P: WebhookPoster,
{
    let Some(row) = store.get(task_id).await? else {
        return Ok(Delivered::All);
    };
    let mut outcome = Delivered::All;
    'hooks: for (id, hook) in &row.webhooks {
        let mut through = hook.through;
        loop {
            let notes = store.notes(task_id, through, PAGE).await?;
            if notes.is_empty() {
                break;
            }
            for note in &notes {
                if Instant::now() >= stop_at {
                    outcome = Delivered::More;
                    break 'hooks;
                }
                let posted = tokio::time::timeout_at(stop_at, poster.post(hook, note)).await;
                match posted {
                    Ok(Ok(())) => {}
                    Ok(Err(why)) => {
                        tracing::warn!(task_id, webhook = %id, seq = note.seq, error = %why,
                            "webhook did not take the note; tried again later");
                        outcome = Delivered::Failed(why);
                        // The other webhooks still get theirs.
                        continue 'hooks;
                    }
                    Err(_) => {
                        outcome = Delivered::More;
                        break 'hooks;
                    }
                }
                through = note.seq;
                // Unmarked, the note is sent again: at least once.
                if let Err(err) = store.mark_webhook(task_id, id, hook.version, note.seq).await {
                    tracing::warn!(task_id, webhook = %id, seq = note.seq, error = %err,
                        "webhook delivery not marked; the note may be sent again");
                }
            }
        }
    }
    Ok(outcome)
}
