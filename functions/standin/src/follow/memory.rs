//! The follow queue in memory, for tests: requests in order, what was handed back kept.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use super::follower::{FollowRequests, RequestsError};

#[derive(Default)]
pub struct MemoryFollowRequests {
    waiting: Mutex<VecDeque<String>>,
    handed_back: Mutex<Vec<String>>,
    takes: Mutex<u32>,
    /// How long a take's answer is on its way after the requests left the queue.
    answer_delay: Mutex<Duration>,
}

impl MemoryFollowRequests {
    pub fn put(&self, request: impl Into<String>) {
        self.lock_waiting().push_back(request.into());
    }

    /// Answers each take this long after it took its requests (a network's time).
    pub fn delay_answers(&self, by: Duration) {
        *self
            .answer_delay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = by;
    }

    pub fn handed_back(&self) -> Vec<String> {
        self.handed_back
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn waiting(&self) -> usize {
        self.lock_waiting().len()
    }

    pub fn takes(&self) -> u32 {
        *self
            .takes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl FollowRequests for MemoryFollowRequests {
    async fn take(&self, at_most: usize, wait: Duration) -> Result<Vec<String>, RequestsError> {
        *self
            .takes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        let until = tokio::time::Instant::now() + wait;
        loop {
            let taken: Vec<String> = {
                let mut waiting = self.lock_waiting();
                let n = at_most.min(waiting.len());
                waiting.drain(..n).collect()
            };
            if !taken.is_empty() {
                let delay = *self
                    .answer_delay
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                tokio::time::sleep(delay).await;
                return Ok(taken);
            }
            if tokio::time::Instant::now() >= until {
                return Ok(Vec::new());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn hand_back(&self, requests: Vec<String>) -> usize {
        self.handed_back
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(requests);
        0
    }
}
