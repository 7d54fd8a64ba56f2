//! A webhook in memory, for tests: what it was sent, and failures on demand.

use std::sync::Mutex;
use std::time::Duration;

use super::{Redelivery, WebhookPoster};
use crate::row::Webhook;
use standin_wire::ParentNote;

#[derive(Default)]
pub struct MemoryWebhook {
    /// Each POST taken: the webhook's URL and the note's `(task_id, seq)`.
    pub taken: Mutex<Vec<(String, String, u64)>>,
    /// Webhook URLs that answer with a failure.
    pub down: Mutex<Vec<String>>,
}

impl MemoryWebhook {
    pub fn taken(&self) -> Vec<(String, String, u64)> {
        self.taken.lock().map(|t| t.clone()).unwrap_or_default()
    }

    pub fn set_down(&self, url: &str, down: bool) {
        if let Ok(mut urls) = self.down.lock() {
            urls.retain(|u| u != url);
            if down {
                urls.push(url.to_owned());
            }
        }
    }
}

impl WebhookPoster for MemoryWebhook {
    async fn post(
        &self,
        hook: &Webhook,
        _context: Option<&str>,
        note: &ParentNote,
    ) -> Result<(), String> {
        if self.down.lock().is_ok_and(|d| d.contains(&hook.url)) {
            return Err("the webhook answered HTTP 503".to_owned());
        }
        if let Ok(mut taken) = self.taken.lock() {
            taken.push((hook.url.clone(), note.task_id.clone(), note.seq));
        }
        Ok(())
    }
}

/// The delays asked for, by receipt.
#[derive(Default)]
pub struct MemoryRedelivery {
    pub asked: Mutex<Vec<(String, Duration)>>,
}

impl Redelivery for MemoryRedelivery {
    async fn redeliver_in(&self, receipt: &str, delay: Duration) {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push((receipt.to_owned(), delay));
        }
    }
}

/// The deliveries queued, as `(task_id, why)`; each refused while `down`.
#[derive(Default)]
pub struct MemoryDeliveryQueue {
    pub queued: Mutex<Vec<(String, String)>>,
    pub down: std::sync::atomic::AtomicBool,
}

impl super::DeliveryQueue for MemoryDeliveryQueue {
    fn queue<'a>(
        &'a self,
        task_id: &'a str,
        why: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err("SQS unavailable".to_owned());
            }
            if let Ok(mut queued) = self.queued.lock() {
                queued.push((task_id.to_owned(), why.to_owned()));
            }
            Ok(())
        })
    }
}
