//! The parent queue, the note bus and Step Functions parents in memory, for unit tests.

use std::sync::{Mutex, MutexGuard};

use super::ports::{CallbackError, NoteBus, ParentCallback, ParentNote, ParentQueue, QueueError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(Default)]
pub struct MemoryQueue {
    notes: Mutex<Vec<ParentNote>>,
    refusals: Mutex<u32>,
    /// Notes refused for good, as SQS refuses what the sender got wrong: by (task, seq).
    poisoned: Mutex<Vec<(String, u64)>>,
}

impl MemoryQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next `times` sends fail, as an unavailable queue's would.
    pub fn refuse(&self, times: u32) {
        *lock(&self.refusals) = times;
    }

    /// Note `seq` of `task_id` is refused for good however often it is sent.
    pub fn refuse_for_good(&self, task_id: &str, seq: u64) {
        lock(&self.poisoned).push((task_id.to_owned(), seq));
    }

    pub fn notes(&self) -> Vec<ParentNote> {
        lock(&self.notes).clone()
    }
}

impl ParentQueue for MemoryQueue {
    async fn send(&self, note: &ParentNote) -> Result<(), QueueError> {
        if lock(&self.poisoned)
            .iter()
            .any(|(t, s)| *t == note.task_id && *s == note.seq)
        {
            return Err(QueueError::Refused("the sender's fault, on purpose".into()));
        }
        {
            let mut refusals = lock(&self.refusals);
            if *refusals > 0 {
                *refusals -= 1;
                return Err(QueueError::Unavailable("refused on purpose".into()));
            }
        }
        let mut notes = lock(&self.notes);
        // FIFO deduplication: the same (task, seq) is delivered once.
        if !notes
            .iter()
            .any(|n| n.task_id == note.task_id && n.seq == note.seq)
        {
            notes.push(note.clone());
        }
        Ok(())
    }
}

/// An event bus that keeps what it was given, and refuses on request.
#[derive(Default)]
pub struct MemoryBus {
    events: Mutex<Vec<ParentNote>>,
    refusals: Mutex<u32>,
}

impl MemoryBus {
    /// The next `times` puts fail, as an unavailable bus's would.
    pub fn refuse(&self, times: u32) {
        *lock(&self.refusals) = times;
    }

    /// Every note put, repeats included (a bus does not deduplicate).
    pub fn events(&self) -> Vec<ParentNote> {
        lock(&self.events).clone()
    }
}

impl NoteBus for MemoryBus {
    async fn put_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        notes
            .iter()
            .map(|note| {
                let mut refusals = lock(&self.refusals);
                if *refusals > 0 {
                    *refusals -= 1;
                    return Err(QueueError::Unavailable("bus refused on purpose".into()));
                }
                lock(&self.events).push((*note).clone());
                Ok(())
            })
            .collect()
    }
}

/// What a Step Functions parent was told: `Ok(output)` or `Err((error, cause))`.
pub type ParentAnswer = Result<String, (String, String)>;

/// Step Functions' task-token callbacks, kept by token, with scripted failures.
#[derive(Default)]
pub struct MemoryCallback {
    answers: Mutex<Vec<(String, ParentAnswer)>>,
    failures: Mutex<Vec<CallbackError>>,
}

impl MemoryCallback {
    /// The next calls fail with these errors, in order.
    pub fn fail_with(&self, errors: Vec<CallbackError>) {
        *lock(&self.failures) = errors;
    }

    /// Every answer given, by token, in order.
    pub fn answers(&self) -> Vec<(String, ParentAnswer)> {
        lock(&self.answers).clone()
    }

    fn answer(&self, token: &str, answer: ParentAnswer) -> Result<(), CallbackError> {
        let mut failures = lock(&self.failures);
        if !failures.is_empty() {
            return Err(failures.remove(0));
        }
        lock(&self.answers).push((token.to_owned(), answer));
        Ok(())
    }
}

impl ParentCallback for MemoryCallback {
    async fn succeed(&self, token: &str, output: &str) -> Result<(), CallbackError> {
        self.answer(token, Ok(output.to_owned()))
    }

    async fn fail(&self, token: &str, error: &str, cause: &str) -> Result<(), CallbackError> {
        self.answer(token, Err((error.to_owned(), cause.to_owned())))
    }
}
