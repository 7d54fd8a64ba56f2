//! The doorbell in memory, for unit tests.

use std::sync::{Mutex, MutexGuard};

use super::port::{Doorbell, DoorbellError};
use crate::row::RungPush;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Records every ring and heartbeat; can be told the park is over or the service is down.
/// A park that was rung refuses its heartbeats, as Step Functions refuses a closed task's.
#[derive(Default)]
pub struct MemoryDoorbell {
    rings: Mutex<Vec<String>>,
    pushes: Mutex<Vec<Option<RungPush>>>,
    heartbeats: Mutex<Vec<String>>,
    /// Parks a ring ended: their tasks are closed.
    closed: Mutex<Vec<String>>,
    failure: Mutex<Option<DoorbellError>>,
    /// A failure of rings only: heartbeats still go through.
    ring_failure: Mutex<Option<DoorbellError>>,
}

impl MemoryDoorbell {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn rings(&self) -> Vec<String> {
        lock(&self.rings).clone()
    }

    /// The push each ring carried, in the order of `rings`.
    pub fn rung_pushes(&self) -> Vec<Option<RungPush>> {
        lock(&self.pushes).clone()
    }

    pub fn heartbeats(&self) -> Vec<String> {
        lock(&self.heartbeats).clone()
    }

    pub fn fail_with(&self, error: Option<DoorbellError>) {
        *lock(&self.failure) = error;
    }

    /// Rings fail with `error` (None: they work again); heartbeats are unaffected.
    pub fn fail_rings_with(&self, error: Option<DoorbellError>) {
        *lock(&self.ring_failure) = error;
    }
}

impl Doorbell for MemoryDoorbell {
    async fn ring(&self, park_token: &str, push: Option<&RungPush>) -> Result<(), DoorbellError> {
        lock(&self.rings).push(park_token.to_owned());
        lock(&self.pushes).push(push.cloned());
        let failure = lock(&self.failure).clone();
        if let Some(failure) = failure.or_else(|| lock(&self.ring_failure).clone()) {
            return Err(failure);
        }
        lock(&self.closed).push(park_token.to_owned());
        Ok(())
    }

    async fn heartbeat(&self, park_token: &str) -> Result<(), DoorbellError> {
        lock(&self.heartbeats).push(park_token.to_owned());
        if let Some(failure) = lock(&self.failure).clone() {
            return Err(failure);
        }
        let closed = lock(&self.closed).iter().any(|token| token == park_token);
        if closed {
            Err(DoorbellError::ParkOver)
        } else {
            Ok(())
        }
    }
}
