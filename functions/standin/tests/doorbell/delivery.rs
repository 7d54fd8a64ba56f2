//! The outbox's delivery: in order, stopping at the first refusal.

use super::*;

// The outbox's delivery: in order, stopping at the first refusal.

fn note(seq: u64) -> ParentNote {
    note_of(ID, seq)
}

fn note_of(task_id: &str, seq: u64) -> ParentNote {
    let row = Row::new(task_id, "agent-a");
    standin::outbox::note_of(&row, &working(&format!("step {seq}")), seq)
}

/// A deadline no test reaches.
fn later() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(3600)
}

/// A queue that refuses its `nth` send (counting from 1) and passes the others on.
struct RefuseNth<'a> {
    queue: &'a MemoryQueue,
    nth: u32,
    sends: std::sync::Mutex<u32>,
}

impl ParentQueue for RefuseNth<'_> {
    async fn send(&self, n: &ParentNote) -> Result<(), QueueError> {
        let sent = {
            let mut sends = self.sends.lock().expect("lock");
            *sends += 1;
            *sends
        };
        if sent == self.nth {
            self.queue.refuse(1);
        }
        self.queue.send(n).await
    }
}

fn seqs(queue: &MemoryQueue) -> Vec<u64> {
    queue.notes().iter().map(|n| n.seq).collect()
}

#[tokio::test]
async fn deliver_stops_at_the_first_refusal_and_returns_its_index() {
    let notes: Vec<ParentNote> = (1..=4).map(note).collect();
    let queue = MemoryQueue::new();
    let third = RefuseNth {
        queue: &queue,
        nth: 3,
        sends: Default::default(),
    };
    assert_eq!(notify::deliver(&third, &notes, later()).await, Some(2));
    assert_eq!(
        *third.sends.lock().expect("lock"),
        3,
        "nothing tried after it"
    );
    assert_eq!(
        seqs(&queue),
        [1, 2],
        "nothing after the refused note overtook it"
    );
    // Refused at once: nothing delivered, index 0.
    let queue = MemoryQueue::new();
    queue.refuse(1);
    assert_eq!(notify::deliver(&queue, &notes, later()).await, Some(0));
    assert!(queue.notes().is_empty());
    // Nothing refused: None.
    assert_eq!(notify::deliver(&queue, &notes, later()).await, None);
    assert_eq!(seqs(&queue), [1, 2, 3, 4]);
}

#[tokio::test]
async fn delivering_again_after_a_refusal_delivers_each_note_once_in_order() {
    let notes: Vec<ParentNote> = (1..=4).map(note).collect();
    let queue = MemoryQueue::new();
    let third = RefuseNth {
        queue: &queue,
        nth: 3,
        sends: Default::default(),
    };
    assert_eq!(notify::deliver(&third, &notes, later()).await, Some(2));
    // The event source retries the batch (from its start, or from the refused note):
    // the queue deduplicates by task_id and seq, so each reaches the parent once.
    assert_eq!(notify::deliver(&queue, &notes, later()).await, None);
    assert_eq!(notify::deliver(&queue, &notes[2..], later()).await, None);
    assert_eq!(seqs(&queue), [1, 2, 3, 4]);
    // Another stand-in's note under the same number is not a duplicate.
    let mut other = note(1);
    other.task_id = "other".into();
    assert_eq!(notify::deliver(&queue, &[other], later()).await, None);
    assert_eq!(queue.notes().len(), 5);
}

/// Records each call's notes; refuses the notes named, hangs from the call numbered.
#[derive(Default)]
struct Rounds {
    queue: MemoryQueue,
    calls: std::sync::Mutex<Vec<Vec<(String, u64)>>>,
    refuse: Vec<(&'static str, u64)>,
    hang_from_call: Option<usize>,
}

impl ParentQueue for Rounds {
    async fn send(&self, _: &ParentNote) -> Result<(), QueueError> {
        unreachable!("deliver sends rounds")
    }

    async fn send_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        let call = {
            let mut calls = self.calls.lock().expect("lock");
            calls.push(notes.iter().map(|n| (n.task_id.clone(), n.seq)).collect());
            calls.len()
        };
        if self.hang_from_call.is_some_and(|from| call >= from) {
            std::future::pending::<()>().await;
        }
        let mut answers = vec![];
        for note in notes {
            if self.refuse.contains(&(note.task_id.as_str(), note.seq)) {
                answers.push(Err(QueueError::Unavailable("refused on purpose".into())));
            } else {
                answers.push(self.queue.send(note).await);
            }
        }
        answers
    }
}

fn delivered(queue: &MemoryQueue, task_id: &str) -> Vec<u64> {
    let notes = queue.notes();
    notes
        .iter()
        .filter(|n| n.task_id == task_id)
        .map(|n| n.seq)
        .collect()
}

#[tokio::test]
async fn deliver_sends_one_note_per_stand_in_per_round_and_a_refusal_stops_only_its_own() {
    // Written interleaved, as the stream hands them over: a1 b1 a2 c1 b2 a3 b3.
    let notes = vec![
        note_of("a", 1),
        note_of("b", 1),
        note_of("a", 2),
        note_of("c", 1),
        note_of("b", 2),
        note_of("a", 3),
        note_of("b", 3),
    ];
    let queue = Rounds {
        refuse: vec![("b", 2)],
        ..Default::default()
    };
    assert_eq!(
        notify::deliver(&queue, &notes, later()).await,
        Some(4),
        "b2 is the earliest note not taken: the retry starts there"
    );
    let calls = queue.calls.lock().expect("lock").clone();
    assert_eq!(
        calls,
        [
            vec![("a".into(), 1), ("b".into(), 1), ("c".into(), 1)],
            vec![("a".into(), 2), ("b".into(), 2)],
            vec![("a".into(), 3)],
        ],
        "each round carries the next note of every lane still open, and no lane twice"
    );
    assert_eq!(
        delivered(&queue.queue, "a"),
        [1, 2, 3],
        "a is not held up by b"
    );
    assert_eq!(
        delivered(&queue.queue, "b"),
        [1],
        "nothing of b overtook b2"
    );
    assert_eq!(delivered(&queue.queue, "c"), [1]);

    // The event source retries from b2: a3 again is deduplicated, b2 and b3 follow b1.
    let retry = Rounds::default();
    assert_eq!(notify::deliver(&retry, &notes[4..], later()).await, None);
    assert_eq!(delivered(&retry.queue, "b"), [2, 3]);
}

#[tokio::test]
async fn deliver_stops_before_its_deadline_and_names_the_earliest_note_not_taken() {
    // One stand-in's backlog and another's: the queue answers the first round, then
    // never answers again (a call that outlives the invocation).
    let notes = vec![
        note_of("a", 1),
        note_of("b", 1),
        note_of("a", 2),
        note_of("a", 3),
    ];
    let queue = Rounds {
        hang_from_call: Some(2),
        ..Default::default()
    };
    let stop_at = tokio::time::Instant::now() + Duration::from_millis(200);
    assert_eq!(
        notify::deliver(&queue, &notes, stop_at).await,
        Some(2),
        "a2 was in the round that did not answer: the retry starts there"
    );
    assert_eq!(delivered(&queue.queue, "a"), [1]);
    assert_eq!(delivered(&queue.queue, "b"), [1]);

    // Out of time before the first round: nothing is taken, the retry starts at 0.
    let queue = Rounds {
        hang_from_call: Some(1),
        ..Default::default()
    };
    assert_eq!(
        notify::deliver(&queue, &notes, tokio::time::Instant::now()).await,
        Some(0)
    );
}
