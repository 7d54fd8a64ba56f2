//! A note leaves with the step that writes it, and the outbox is the safety net: a step
//! sends its note itself when every note before it reached the parent, and marks it; the
//! stream's delivery passes over marked notes and marks what it sends; a note behind an
//! unsent one, or one an outlet did not take, waits for the outbox, which keeps the
//! order. Each note reaches every outlet once (the bus does not deduplicate, so it
//! counts).

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use standin::outbox::Teller;
use standin::outbox::at_once::AtOnce;
use standin::outbox::deliver::Outlets;
use standin::outbox::memory::{MemoryBus, MemoryCallback, MemoryQueue};
use standin::outbox::stream;
use standin::outbox::{NoteBus, ParentNote, SentMarks};
use standin::row::memory::MemoryStore;
use standin::row::{Applied, Guard, Row, StandIns, StoreError, Webhook, Webhooks};
use standin::state::{RemoteOut, remote_out};
use standin_wire::TaskState;

const ID: &str = "t-1";

#[derive(Default)]
struct Parent {
    queue: MemoryQueue,
    bus: MemoryBus,
    callback: MemoryCallback,
    webhooks: MemoryQueue,
}

impl Parent {
    fn outlets(&self) -> Outlets<'_, MemoryQueue, MemoryBus, MemoryCallback> {
        Outlets {
            queue: &self.queue,
            bus: Some(&self.bus),
            callback: &self.callback,
            webhooks: Some(&self.webhooks),
        }
    }

    fn queued(&self) -> Vec<u64> {
        self.queue.notes().iter().map(|n| n.seq).collect()
    }

    fn for_webhooks(&self) -> Vec<u64> {
        self.webhooks.notes().iter().map(|n| n.seq).collect()
    }

    fn on_the_bus(&self) -> Vec<u64> {
        self.bus.events().iter().map(|n| n.seq).collect()
    }

    /// The outbox's delivery of `notes`, as the notes table's stream hands them over.
    async fn stream(&self, store: &MemoryStore, notes: &[ParentNote]) -> Vec<String> {
        self.stream_marked_by(store, store, notes).await
    }

    /// The same, with the sent marks read and written through `marks`.
    async fn stream_marked_by(
        &self,
        store: &MemoryStore,
        marks: &impl SentMarks,
        notes: &[ParentNote],
    ) -> Vec<String> {
        // As the row store writes it: a note of a stand-in with webhooks says so.
        let webhooked = match store.get(ID).await.unwrap() {
            Some(row) => !row.webhooks.is_empty(),
            None => false,
        };
        let records: Vec<_> = notes
            .iter()
            .map(|note| {
                json!({
                    "eventID": format!("e{}", note.seq),
                    "eventName": "INSERT",
                    "eventVersion": "1.1",
                    "eventSource": "aws:dynamodb",
                    "awsRegion": "us-east-1",
                    "eventSourceARN": "arn:aws:dynamodb:us-east-1:000000000000:table/notes/stream/x",
                    "dynamodb": {
                        "Keys": {"task_id": {"S": note.task_id}, "seq": {"N": note.seq.to_string()}},
                        "NewImage": {
                            "task_id": {"S": note.task_id},
                            "seq": {"N": note.seq.to_string()},
                            "body": {"S": serde_json::to_string(note).unwrap()},
                            "webhooked": {"BOOL": webhooked}
                        },
                        "SequenceNumber": format!("{:08}", note.seq),
                        "SizeBytes": 100,
                        "StreamViewType": "NEW_IMAGE"
                    }
                })
            })
            .collect();
        let event: stream::Event =
            serde_json::from_value(json!({ "Records": records })).expect("a stream event");
        let stop_at = tokio::time::Instant::now() + Duration::from_secs(60);
        stream::notify(self.outlets(), marks, &event, stop_at)
            .await
            .batch_item_failures
            .into_iter()
            .map(|f| f.item_identifier.unwrap_or_default())
            .collect()
    }
}

/// The notes as the stream hands them over once their steps are long done (a step may
/// still be sending a note written moments ago; the outbox waits for that).
fn aged(mut notes: Vec<ParentNote>) -> Vec<ParentNote> {
    for note in &mut notes {
        note.at = "2026-01-01T00:00:00.000Z".into();
    }
    notes
}

fn out(state: TaskState, text: &str) -> RemoteOut {
    let mut out = remote_out("r-1", state, text);
    out.is_final = state.is_terminal();
    out
}

async fn store_with_row() -> MemoryStore {
    let store = MemoryStore::new();
    let mut row = Row::new(ID, "agent-a");
    row.parent_task_token = Some("parent-token".into());
    store.create(&row).await.unwrap();
    store
}

async fn sent_through(store: &MemoryStore) -> u64 {
    store
        .sent_through(&[ID])
        .await
        .unwrap()
        .get(ID)
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn a_note_with_nothing_ahead_leaves_with_its_step_and_the_outbox_passes_it_over() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending = Teller::new(&store).sending_at_once(AtOnce::new(&store, Some(parent.outlets())));
    sending
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!(parent.queued(), [1], "sent by the step, before any stream");
    assert_eq!(sent_through(&store).await, 1, "and marked");
    sending
        .tell(
            ID,
            None,
            &out(TaskState::InputRequired, "colour?"),
            &Guard::Open,
        )
        .await
        .unwrap();
    assert_eq!(parent.queued(), [1, 2]);
    // The stream hands the same notes to the outbox later: nothing goes twice.
    let failures = parent.stream(&store, &store.outbox()).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.on_the_bus(), [1, 2], "each note on the bus once");
    assert_eq!(parent.queued(), [1, 2]);
}

/// A step that tells change after change on the row its last write left (a turn's
/// progress) sends each at once: the row it gets back counts the last note's mark.
#[tokio::test]
async fn notes_told_one_after_another_on_the_row_seen_each_leave_with_their_step() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending = Teller::new(&store).sending_at_once(AtOnce::new(&store, Some(parent.outlets())));
    let mut seen = store.get(ID).await.unwrap();
    for (k, text) in ["drafting", "checking", "polishing"]
        .into_iter()
        .enumerate()
    {
        let applied = sending
            .tell(
                ID,
                seen.as_ref(),
                &out(TaskState::Working, text),
                &Guard::Open,
            )
            .await
            .unwrap();
        let Applied::Changed { row, .. } = applied else {
            panic!("{text}: a change")
        };
        assert_eq!(row.sent_through, k as u64 + 1, "{text}: its mark counted");
        seen = Some(*row);
    }
    assert_eq!(parent.queued(), [1, 2, 3], "each sent by its step");
    assert_eq!(sent_through(&store).await, 3);
}

#[tokio::test]
async fn a_note_behind_one_not_sent_waits_for_the_outbox_which_keeps_the_order() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending = Teller::new(&store).sending_at_once(AtOnce::new(&store, Some(parent.outlets())));
    parent.queue.refuse(1);
    sending
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!((parent.queued(), sent_through(&store).await), (vec![], 0));
    // The queue is back, but note 1 has not reached the parent: 2 must not pass it.
    sending
        .tell(
            ID,
            None,
            &out(TaskState::InputRequired, "colour?"),
            &Guard::Open,
        )
        .await
        .unwrap();
    assert_eq!(parent.queued(), Vec::<u64>::new(), "2 waits behind 1");
    let failures = parent.stream(&store, &aged(store.outbox())).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.queued(), [1, 2], "the outbox sends both, in order");
    assert_eq!(sent_through(&store).await, 2, "and marks them");
    // With everything before it sent, the next note leaves with its step again.
    sending
        .tell(ID, None, &out(TaskState::Working, "painting"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!(parent.queued(), [1, 2, 3]);
    assert_eq!(parent.on_the_bus(), [1, 2, 3]);
}

#[tokio::test]
async fn a_note_an_outlet_did_not_take_is_the_outboxs_and_reaches_every_outlet() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending = Teller::new(&store).sending_at_once(AtOnce::new(&store, Some(parent.outlets())));
    // The queue took it but the bus did not: the note is not sent until both have it.
    parent.bus.refuse(1);
    sending
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!(sent_through(&store).await, 0, "not marked");
    let failures = parent.stream(&store, &aged(store.outbox())).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.queued(), [1], "deduplicated by the queue");
    assert_eq!(parent.on_the_bus(), [1]);
    assert_eq!(sent_through(&store).await, 1);
}

#[tokio::test]
async fn the_final_note_answers_a_step_functions_parent_at_once_and_once() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending = Teller::new(&store).sending_at_once(AtOnce::new(&store, Some(parent.outlets())));
    sending
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    let closed = sending
        .tell_end(ID, Some(&out(TaskState::Completed, "done")))
        .await
        .unwrap();
    assert_eq!(closed.seq(), Some(2));
    let answers = parent.callback.answers();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].0, "parent-token");
    let told: ParentNote = serde_json::from_str(answers[0].1.as_ref().unwrap()).unwrap();
    assert_eq!((told.seq, told.is_final), (2, true));
    // The stream's copy of the final note (with its token) is passed over.
    let failures = parent.stream(&store, &store.outbox()).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.callback.answers().len(), 1, "answered once");
}

#[tokio::test]
async fn a_note_refused_for_good_is_passed_over_by_both_paths() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending = Teller::new(&store).sending_at_once(AtOnce::new(&store, Some(parent.outlets())));
    parent.queue.refuse_for_good(ID, 1);
    sending
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!(
        sent_through(&store).await,
        1,
        "passed over, as the outbox would"
    );
    sending
        .tell(
            ID,
            None,
            &out(TaskState::InputRequired, "colour?"),
            &Guard::Open,
        )
        .await
        .unwrap();
    assert_eq!(parent.queued(), [2], "the note behind it goes on");
}

#[tokio::test]
async fn without_outlets_every_note_goes_by_the_outbox() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending =
        Teller::new(&store).sending_at_once(
            AtOnce::<_, MemoryQueue, MemoryBus, MemoryCallback>::new(&store, None),
        );
    sending
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!(parent.queued(), Vec::<u64>::new());
    let failures = parent.stream(&store, &aged(store.outbox())).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!((parent.queued(), sent_through(&store).await), (vec![1], 1));
}

#[tokio::test]
async fn the_outbox_retries_from_the_first_note_not_taken_and_marks_only_what_was() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending =
        Teller::new(&store).sending_at_once(
            AtOnce::<_, MemoryQueue, MemoryBus, MemoryCallback>::new(&store, None),
        );
    for text in ["a", "b", "c"] {
        sending
            .tell(ID, None, &out(TaskState::Working, text), &Guard::Open)
            .await
            .unwrap();
    }
    // The queue takes 1, then is down for 2.
    let notes = aged(store.outbox());
    let first = parent.stream(&store, &notes[..1]).await;
    assert!(first.is_empty());
    parent.queue.refuse(1);
    let failures = parent.stream(&store, &notes[1..]).await;
    assert_eq!(failures, ["00000002"], "retried from note 2");
    assert_eq!(
        sent_through(&store).await,
        1,
        "3 was not sent either: 1 is the mark"
    );
    let failures = parent.stream(&store, &notes).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.queued(), [1, 2, 3]);
    assert_eq!(
        parent.on_the_bus(),
        [1, 2, 3],
        "note 1 passed over on the retry"
    );
}

/// The stream can hand a note to the outbox while its step is still sending it: the
/// outbox waits for the step's mark instead of sending it a second time (a bus and a
/// parent's token would see it twice).
#[tokio::test]
async fn the_outbox_waits_for_a_step_still_sending_and_the_note_goes_once() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let silent =
        Teller::new(&store).sending_at_once(
            AtOnce::<_, MemoryQueue, MemoryBus, MemoryCallback>::new(&store, None),
        );
    silent
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    let notes = store.outbox();
    let step_sending = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let note = &notes[0];
        parent.bus.put_each(&[note]).await;
        store.mark_sent(ID, note.seq).await.unwrap();
    };
    let (failures, ()) = tokio::join!(parent.stream(&store, &notes), step_sending);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.on_the_bus(), [1], "on the bus once, by the step");
    assert_eq!(
        parent.queued(),
        Vec::<u64>::new(),
        "the outbox passed it over"
    );
}

/// A step that died after writing its note leaves it to the outbox, which sends it once
/// the step's time is up.
#[tokio::test]
async fn a_note_whose_step_died_is_sent_by_the_outbox_after_the_grace() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let silent =
        Teller::new(&store).sending_at_once(
            AtOnce::<_, MemoryQueue, MemoryBus, MemoryCallback>::new(&store, None),
        );
    silent
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    let began = std::time::Instant::now();
    let failures = parent.stream(&store, &store.outbox()).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.queued(), [1]);
    assert!(
        began.elapsed() >= stream::AT_ONCE_GRACE.saturating_sub(Duration::from_millis(500)),
        "sent only once the step could no longer be sending it"
    );
}

#[tokio::test]
async fn the_notes_of_a_stand_in_with_a_webhook_are_queued_for_it_at_once_or_by_the_outbox() {
    let (store, parent) = (store_with_row().await, Parent::default());
    let sending = Teller::new(&store).sending_at_once(AtOnce::new(&store, Some(parent.outlets())));
    sending
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!(parent.for_webhooks(), Vec::<u64>::new(), "no webhook yet");
    store
        .set_webhook(ID, "w", &Webhook::new("https://parent.example/hook", 1))
        .await
        .unwrap();
    sending
        .tell(ID, None, &out(TaskState::Working, "painting"), &Guard::Open)
        .await
        .unwrap();
    assert_eq!(parent.for_webhooks(), [2], "queued with its step");
    // An outlet down: the outbox queues it, once the queue takes notes again.
    parent.queue.refuse(1);
    sending
        .tell(
            ID,
            None,
            &out(TaskState::InputRequired, "colour?"),
            &Guard::Open,
        )
        .await
        .unwrap();
    assert_eq!(
        parent.for_webhooks(),
        [2],
        "not sent while the queue refuses it"
    );
    let failures = parent.stream(&store, &aged(store.outbox())).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.for_webhooks(), [2, 3]);
    assert_eq!(parent.queued(), [1, 2, 3]);
}

/// Sent marks whose writes do not answer, as a throttled table's may not within the
/// invocation.
struct MarksNotWritten<'a>(&'a MemoryStore);

impl SentMarks for MarksNotWritten<'_> {
    async fn sent_through(&self, task_ids: &[&str]) -> Result<HashMap<String, u64>, StoreError> {
        self.0.sent_through(task_ids).await
    }

    async fn mark_sent(&self, _: &str, _: u64) -> Result<(), StoreError> {
        std::future::pending().await
    }
}

/// Two notes told with no outlet to send them at once: both are the outbox's.
async fn two_notes_for_the_outbox() -> (MemoryStore, Parent) {
    let store = store_with_row().await;
    {
        let sending =
            Teller::new(&store).sending_at_once(
                AtOnce::<_, MemoryQueue, MemoryBus, MemoryCallback>::new(&store, None),
            );
        for text in ["a", "b"] {
            sending
                .tell(ID, None, &out(TaskState::Working, text), &Guard::Open)
                .await
                .unwrap();
        }
    }
    (store, Parent::default())
}

/// An invocation past its deadline answers nothing, and the whole batch comes again: the
/// marks wait no longer than the invocation has.
#[tokio::test(start_paused = true)]
async fn notes_sent_but_not_marked_in_time_are_still_answered_taken() {
    let (store, parent) = two_notes_for_the_outbox().await;
    let notes = aged(store.outbox());
    let began = tokio::time::Instant::now();
    let answered = tokio::time::timeout(
        Duration::from_secs(120),
        parent.stream_marked_by(&store, &MarksNotWritten(&store), &notes),
    )
    .await;
    let Ok(failures) = answered else {
        panic!("notify did not answer: its invocation would have timed out");
    };
    // The stream's stop is 60 s away; the marks may take two seconds past it.
    assert!(
        began.elapsed() <= Duration::from_secs(62),
        "{:?}",
        began.elapsed()
    );
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(parent.queued(), [1, 2]);
}

/// Sent marks that are never read, as a table that does not answer within the
/// invocation.
struct MarksNotRead;

impl SentMarks for MarksNotRead {
    async fn sent_through(&self, _: &[&str]) -> Result<HashMap<String, u64>, StoreError> {
        std::future::pending().await
    }

    async fn mark_sent(&self, _: &str, _: u64) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Without the marks there is no knowing which notes their steps sent (the bus and a
/// parent's token would take a second copy): at the stop, the batch is handed back.
#[tokio::test(start_paused = true)]
async fn a_batch_whose_marks_are_not_read_by_the_stop_is_handed_back_whole() {
    let (store, parent) = two_notes_for_the_outbox().await;
    let failures = parent
        .stream_marked_by(&store, &MarksNotRead, &aged(store.outbox()))
        .await;
    assert_eq!(failures, ["00000001"], "retried from its first note");
    assert_eq!(parent.queued(), Vec::<u64>::new());
    assert_eq!(parent.on_the_bus(), Vec::<u64>::new());
}

/// The row keeps when its last note was told, so a list of stand-ins shows how long each
/// has been quiet without reading a note (the control plane's summary shows it:
/// `control-plane/tests/control/summary.rs`).
#[tokio::test]
async fn the_row_keeps_when_its_last_note_was_told() {
    let store = store_with_row().await;
    let teller = Teller::new(&store);
    let applied = teller
        .tell(ID, None, &out(TaskState::Working, "building"), &Guard::Open)
        .await
        .unwrap();
    let Applied::Changed { note, row } = applied else {
        panic!("a change: {applied:?}");
    };
    let kept = store.get(ID).await.unwrap().expect("the row");
    assert_eq!(
        kept.last.as_ref().and_then(|l| l.noted_at.as_deref()),
        Some(note.at.as_str())
    );
    assert_eq!(
        row.last.as_ref().and_then(|l| l.noted_at.as_deref()),
        Some(note.at.as_str())
    );
}
