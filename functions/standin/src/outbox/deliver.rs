//! The outbox's delivery: notes go to the parent queue in write order per stand-in. Each
//! stand-in of a stream batch is a lane, and each round sends the next note of every lane
//! at once (one queue call carries many stand-ins), so a backlog drains in as many rounds
//! as the longest lane, not as many calls as notes. A note the queue refuses stops its lane
//! only (the ones after it wait: order before speed); one refused for good (the sender's
//! fault) is passed over, counted and kept in the note log. The event source retries from
//! the earliest note not taken; the queue deduplicates by `task_id:seq`, so notes sent
//! again from other lanes are seen once.

use std::collections::{HashMap, HashSet, VecDeque};

use futures_util::future::join_all;
use tokio::time::Instant;
use tracing::warn;

use super::{CallbackError, NoteBus, ParentCallback, ParentNote, ParentQueue, QueueError};
use crate::metrics::Metric;
use standin_wire::TaskState;

/// Sends the notes in order per stand-in until `stop_at`; the index of the earliest note
/// not taken (it and all after it are retried), or None when all were. Stopping before the
/// function's deadline makes a backlog bigger than one invocation progress: the retry
/// starts where this one ended, rather than time out and start the whole batch over.
pub async fn deliver<Q: ParentQueue>(
    queue: &Q,
    notes: &[ParentNote],
    stop_at: Instant,
) -> Option<usize> {
    let mut lanes = lanes(notes);
    let mut earliest_unsent: Option<usize> = None;
    let mut stop = |index: usize| {
        earliest_unsent = Some(earliest_unsent.map_or(index, |e| e.min(index)));
    };
    loop {
        let heads: Vec<usize> = lanes
            .iter()
            .filter_map(|lane| lane.front().copied())
            .collect();
        if heads.is_empty() {
            break;
        }
        let round: Vec<&ParentNote> = heads.iter().map(|&i| &notes[i]).collect();
        let Ok(answers) = tokio::time::timeout_at(stop_at, queue.send_each(&round)).await else {
            // Out of time mid-round: whether those were taken is unknown, so they count
            // as not taken; sent twice, they are deduplicated.
            warn!(
                unsent = lanes.iter().map(VecDeque::len).sum::<usize>(),
                "out of time; the rest of the batch is retried"
            );
            heads.iter().for_each(|&i| stop(i));
            break;
        };
        for (lane, answer) in lanes.iter_mut().filter(|l| !l.is_empty()).zip(answers) {
            let Some(&head) = lane.front() else { continue };
            let note = &notes[head];
            match answer {
                Ok(()) => count(Metric::NotesSent, note),
                Err(QueueError::Refused(why)) => passed_over(note, &why),
                Err(err) => {
                    count(Metric::NotesNotDelivered, note);
                    warn!(task_id = %note.task_id, seq = note.seq, error = %err,
                        "note not delivered yet; it will be retried in order");
                    stop(head);
                    lane.clear();
                }
            }
            lane.pop_front();
        }
    }
    earliest_unsent
}

/// Counts `metric` once for the note's stand-in.
pub(crate) fn count(metric: Metric, note: &ParentNote) {
    crate::metrics::record(metric, 1.0, None, Some(&note.task_id));
}

/// A note refused for good. Sending it again gets the same answer: holding the notes behind
/// it (for a day, past the queue's deduplication) helps nobody; the note log keeps it.
pub(crate) fn passed_over(note: &ParentNote, why: &str) {
    count(Metric::NotesRefused, note);
    tracing::error!(task_id = %note.task_id, seq = note.seq, error = %why,
        "note refused for good; passed over, kept in the note log");
}

/// Where the notes go.
pub struct Outlets<'a, Q, B, C> {
    pub queue: &'a Q,
    pub bus: Option<&'a B>,
    pub callback: &'a C,
    /// The webhook queue: a note of a stand-in with webhooks is queued there too, for the
    /// webhook function to POST in order (`crate::webhook`). A queue like the parent's
    /// (grouped by stand-in, deduplicated by `task_id:seq`), so the same adapter.
    pub webhooks: Option<&'a Q>,
}

// By hand: derived, they would ask the adapters themselves to be Copy.
impl<Q, B, C> Clone for Outlets<'_, Q, B, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Q, B, C> Copy for Outlets<'_, Q, B, C> {}

/// Everywhere a note goes, as one queue: the parent's queue, the event bus (if any), the
/// webhook queue (for a stand-in with webhooks), then a Step Functions parent's task token
/// (for the final note). A note is taken only when every outlet took it, so one that failed
/// anywhere is retried in order like a refused send (the queues deduplicate the resend; the
/// bus and the callback may see it twice: at least once).
pub struct Fanout<'a, Q, B, C> {
    pub outlets: Outlets<'a, Q, B, C>,
    /// The parent's task token of each final note that has one, by `(task_id, seq)`.
    pub tokens: &'a HashMap<(String, u64), String>,
    /// The stand-ins whose notes also go to the webhook queue.
    pub webhooked: &'a HashSet<String>,
}

/// The error a Step Functions parent sees when the stand-in did not complete.
pub fn parent_failure(state: TaskState) -> Option<&'static str> {
    match state {
        TaskState::Failed => Some("StandIn.Failed"),
        TaskState::Rejected => Some("StandIn.Rejected"),
        _ => None,
    }
}

impl<Q: ParentQueue, B: NoteBus, C: ParentCallback> Fanout<'_, Q, B, C> {
    async fn answer_parent(&self, note: &ParentNote) -> Result<(), QueueError> {
        let Some(token) = self.tokens.get(&(note.task_id.clone(), note.seq)) else {
            return Ok(());
        };
        let answered = match parent_failure(note.state) {
            Some(error) => self.outlets.callback.fail(token, error, &note.text).await,
            None => {
                let output = serde_json::to_string(note)
                    .map_err(|e| QueueError::Unavailable(format!("encode the note: {e}")))?;
                self.outlets.callback.succeed(token, &output).await
            }
        };
        match answered {
            Ok(()) => Ok(()),
            Err(CallbackError::Gone(why)) => {
                warn!(task_id = %note.task_id, reason = %why, "the Step Functions parent no longer waits");
                Ok(())
            }
            Err(CallbackError::Refused(why)) => {
                count(Metric::ParentCallbacksRefused, note);
                tracing::error!(task_id = %note.task_id, reason = %why,
                    "Step Functions refused the answer to the parent for good; the end stays in the note log");
                Ok(())
            }
            Err(CallbackError::Unavailable(why)) => Err(QueueError::Unavailable(why)),
        }
    }
}

impl<Q: ParentQueue, B: NoteBus, C: ParentCallback> ParentQueue for Fanout<'_, Q, B, C> {
    async fn send(&self, note: &ParentNote) -> Result<(), QueueError> {
        let mut answers = self.send_each(&[note]).await;
        answers.pop().unwrap_or(Ok(()))
    }

    /// A note the queue refused for good still goes to the bus and to its parent's
    /// token (a Step Functions parent must not wait for ever); it answers `Refused` only
    /// when nothing else is left to retry.
    async fn send_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        let mut answers = self.outlets.queue.send_each(notes).await;
        if let Some(bus) = self.outlets.bus {
            let (taken, these) = pick(notes, &answers, |_| true);
            merge_at(&mut answers, &taken, bus.put_each(&these).await);
        }
        if let Some(webhooks) = self.outlets.webhooks {
            let (taken, these) = pick(notes, &answers, |note| {
                self.webhooked.contains(&note.task_id)
            });
            merge_at(&mut answers, &taken, webhooks.send_each(&these).await);
        }
        // A round holds one note per stand-in, so their parents are answered together.
        debug_assert!(
            notes
                .iter()
                .map(|n| n.task_id.as_str())
                .collect::<HashSet<_>>()
                .len()
                == notes.len(),
            "a round holds one note per stand-in"
        );
        let (finals, these) = pick(notes, &answers, |note| note.is_final);
        let answered = join_all(these.into_iter().map(|note| self.answer_parent(note))).await;
        merge_at(&mut answers, &finals, answered);
        answers
    }
}

/// The notes no outlet so far left to retry that `to` holds for, with their indexes.
fn pick<'n>(
    notes: &[&'n ParentNote],
    answers: &[Result<(), QueueError>],
    to: impl Fn(&ParentNote) -> bool,
) -> (Vec<usize>, Vec<&'n ParentNote>) {
    (0..notes.len())
        .filter(|&i| !matches!(answers[i], Err(QueueError::Unavailable(_))) && to(notes[i]))
        .map(|i| (i, notes[i]))
        .unzip()
}

/// Merges an outlet's answers for the notes at `taken` into theirs.
fn merge_at(
    answers: &mut [Result<(), QueueError>],
    taken: &[usize],
    got: Vec<Result<(), QueueError>>,
) {
    for (&i, answer) in taken.iter().zip(got) {
        answers[i] = merge(answers[i].clone(), answer);
    }
}

/// Two outlets' answers for one note: one that must be retried wins, then one refused.
fn merge(first: Result<(), QueueError>, then: Result<(), QueueError>) -> Result<(), QueueError> {
    match (first, then) {
        (_, Err(QueueError::Unavailable(why))) | (Err(QueueError::Unavailable(why)), _) => {
            Err(QueueError::Unavailable(why))
        }
        (Err(refused), _) | (_, Err(refused)) => Err(refused),
        (Ok(()), Ok(())) => Ok(()),
    }
}

/// The notes' indexes per stand-in, each lane in write order.
fn lanes(notes: &[ParentNote]) -> Vec<VecDeque<usize>> {
    let mut by_task: HashMap<&str, usize> = HashMap::new();
    let mut lanes: Vec<VecDeque<usize>> = Vec::new();
    for (i, note) in notes.iter().enumerate() {
        let lane = *by_task.entry(&note.task_id).or_insert_with(|| {
            lanes.push(VecDeque::new());
            lanes.len() - 1
        });
        lanes[lane].push_back(i);
    }
    lanes
}
