//! The parents besides the queue: every note also on the event bus, and a Step
//! Functions parent answered on its task token when its stand-in ends. A note counts as
//! delivered only when every outlet took it, so an outage of any one holds the note (and
//! the stand-in's notes after it) for the retry, in order.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::collections::HashMap;
use std::time::Duration;

use standin::outbox::CallbackError;
use standin::outbox::ParentNote;
use standin::outbox::Teller;
use standin::outbox::deliver::{self as notify, Fanout, Outlets};
use standin::outbox::memory::MemoryBus;
use standin::outbox::memory::MemoryCallback;
use standin::outbox::memory::MemoryQueue;
use standin::outbox::note_of;
use standin::row::Row;
use standin::row::StandIns;
use standin::row::memory::MemoryStore;
use standin::state::remote_out;
use standin::steps::Invocation;
use standin::steps::{Step, adopt};
use standin_wire::TaskState;

fn note(task_id: &str, seq: u64, state: TaskState, text: &str) -> ParentNote {
    let row = Row::new(task_id, "agent-a");
    let mut out = remote_out("r-1", state, text);
    out.is_final = state.is_terminal();
    note_of(&row, &out, seq)
}

fn later() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(3600)
}

fn tokens(pairs: &[(&str, u64, &str)]) -> HashMap<(String, u64), String> {
    pairs
        .iter()
        .map(|(task, seq, token)| (((*task).to_owned(), *seq), (*token).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_final_note_answers_the_step_functions_parent_with_the_note() {
    let (queue, bus, callback) = (
        MemoryQueue::new(),
        MemoryBus::default(),
        MemoryCallback::default(),
    );
    let notes = vec![
        note("a", 1, TaskState::InputRequired, "Which colour?"),
        note("a", 2, TaskState::Completed, "Done: blue"),
        note("b", 1, TaskState::Failed, "agent unavailable"),
        note("c", 1, TaskState::Completed, "no parent waits"),
    ];
    let tokens = tokens(&[("a", 2, "tok-a"), ("b", 1, "tok-b")]);
    let fanout = Fanout {
        outlets: Outlets {
            queue: &queue,
            bus: Some(&bus),
            callback: &callback,
            webhooks: None,
        },
        tokens: &tokens,
        webhooked: &Default::default(),
    };
    assert_eq!(notify::deliver(&fanout, &notes, later()).await, None);
    assert_eq!(
        queue.notes(),
        bus.events(),
        "every note on the bus as on the queue"
    );
    assert_eq!(queue.notes().len(), 4);
    // Stand-ins are delivered side by side: b's end is answered in the first round.
    let mut answers = callback.answers();
    answers.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(answers.len(), 2, "{answers:?}");
    let (token, answer) = &answers[0];
    let output: ParentNote = serde_json::from_str(answer.as_ref().expect("a success")).unwrap();
    assert_eq!((token.as_str(), output), ("tok-a", notes[1].clone()));
    assert_eq!(
        answers[1],
        (
            "tok-b".into(),
            Err(("StandIn.Failed".into(), "agent unavailable".into()))
        )
    );
}

#[tokio::test]
async fn a_rejected_task_fails_the_parent_and_a_cancel_completes_it() {
    let (queue, callback) = (MemoryQueue::new(), MemoryCallback::default());
    let notes = vec![
        note("a", 1, TaskState::Rejected, "not my job"),
        note("b", 1, TaskState::Canceled, "cancelled by the parent"),
    ];
    let tokens = tokens(&[("a", 1, "tok-a"), ("b", 1, "tok-b")]);
    let fanout = Fanout {
        outlets: Outlets {
            queue: &queue,
            bus: None::<&MemoryBus>,
            callback: &callback,
            webhooks: None,
        },
        tokens: &tokens,
        webhooked: &Default::default(),
    };
    assert_eq!(notify::deliver(&fanout, &notes, later()).await, None);
    let answers = callback.answers();
    assert_eq!(
        answers[0].1,
        Err(("StandIn.Rejected".into(), "not my job".into()))
    );
    assert!(answers[1].1.is_ok(), "{answers:?}");
}

#[tokio::test]
async fn a_bus_outage_holds_the_note_and_the_retry_delivers_each_once_in_order() {
    let (queue, bus, callback) = (
        MemoryQueue::new(),
        MemoryBus::default(),
        MemoryCallback::default(),
    );
    let notes: Vec<ParentNote> = (1..=3)
        .map(|seq| note("a", seq, TaskState::Working, &format!("step {seq}")))
        .collect();
    let tokens = HashMap::new();
    let fanout = Fanout {
        outlets: Outlets {
            queue: &queue,
            bus: Some(&bus),
            callback: &callback,
            webhooks: None,
        },
        tokens: &tokens,
        webhooked: &Default::default(),
    };
    bus.refuse(1);
    assert_eq!(
        notify::deliver(&fanout, &notes, later()).await,
        Some(0),
        "held at the first"
    );
    assert!(bus.events().is_empty());
    assert_eq!(notify::deliver(&fanout, &notes, later()).await, None);
    let seqs = |notes: Vec<ParentNote>| notes.iter().map(|n| n.seq).collect::<Vec<_>>();
    assert_eq!(seqs(bus.events()), [1, 2, 3]);
    assert_eq!(
        seqs(queue.notes()),
        [1, 2, 3],
        "the queue's resend is deduplicated"
    );
}

#[tokio::test]
async fn step_functions_unavailable_holds_the_final_note_and_a_gone_parent_does_not() {
    let (queue, callback) = (MemoryQueue::new(), MemoryCallback::default());
    let notes = vec![note("a", 1, TaskState::Completed, "done")];
    let first = tokens(&[("a", 1, "tok-a")]);
    let fanout = Fanout {
        outlets: Outlets {
            queue: &queue,
            bus: None::<&MemoryBus>,
            callback: &callback,
            webhooks: None,
        },
        tokens: &first,
        webhooked: &Default::default(),
    };
    callback.fail_with(vec![CallbackError::Unavailable("throttled".into())]);
    assert_eq!(notify::deliver(&fanout, &notes, later()).await, Some(0));
    assert_eq!(notify::deliver(&fanout, &notes, later()).await, None);
    assert_eq!(callback.answers().len(), 1, "answered once the retry came");
    // A parent whose task timed out, and a token Step Functions refuses for good (which
    // is counted): nothing to retry for either.
    for (refusal, id) in [
        (CallbackError::Gone("TaskTimedOut".into()), "b"),
        (CallbackError::Refused("InvalidToken".into()), "c"),
    ] {
        callback.fail_with(vec![refusal]);
        let later_note = vec![note(id, 1, TaskState::Completed, "done")];
        let held = tokens(&[(id, 1, "tok")]);
        let fanout = Fanout {
            outlets: Outlets {
                queue: &queue,
                bus: None::<&MemoryBus>,
                callback: &callback,
                webhooks: None,
            },
            tokens: &held,
            webhooked: &Default::default(),
        };
        assert_eq!(notify::deliver(&fanout, &later_note, later()).await, None);
        assert_eq!(callback.answers().len(), 1);
    }
}

#[tokio::test]
async fn a_stand_in_a_parent_started_itself_gets_its_row_at_the_first_turn() {
    let store = MemoryStore::new();
    let mut step = Step::start("si-sfn", "agent-a", "hello");
    step.parent_task_token = Some("tok".into());
    let spec =
        standin::agents::AgentSpec::parse_entry(r#"{"id":"agent-a","url":"http://h"}"#).unwrap();
    adopt(&store, &mut step, Some(&spec), None).await.unwrap();
    let row = store.get("si-sfn").await.unwrap().expect("a row");
    assert_eq!(
        (row.agent.as_str(), row.parent_task_token.as_deref()),
        ("agent-a", Some("tok"))
    );
    assert!(row.created_at.is_some());
    let kept = row
        .agent_entry
        .as_deref()
        .expect("the agent's entry is kept");
    assert_eq!(
        standin::agents::AgentSpec::parse_entry(kept).unwrap(),
        spec,
        "the row keeps the entry the stand-in started with"
    );
    assert_eq!(
        step.parent_task_token, None,
        "the token leaves the execution's state"
    );
    // A retried first turn, or a start through the control API: the row stays as it is.
    let mut again = Step::start("si-sfn", "other-agent", "hello");
    again.parent_task_token = Some("another".into());
    adopt(&store, &mut again, None, None).await.unwrap();
    let row = store.get("si-sfn").await.unwrap().expect("a row");
    assert_eq!(
        (row.agent.as_str(), row.parent_task_token.as_deref()),
        ("agent-a", Some("tok"))
    );
}

#[test]
fn a_note_of_a_stand_in_without_a_remote_task_says_null() {
    let row = Row::new("si-1", "agent-a");
    let out = remote_out("", TaskState::Failed, "agent unavailable");
    let note = note_of(&row, &out, 1);
    assert_eq!(note.remote_task_id, None);
    assert_eq!(
        serde_json::to_value(&note).unwrap()["remote_task_id"],
        serde_json::Value::Null
    );
}

#[tokio::test]
async fn a_first_step_without_a_message_still_gets_its_row_so_it_can_be_ended() {
    let store = MemoryStore::new();
    let mut step = Step::start("si-bare", "agent-a", "");
    step.message = None;
    step.parent_task_token = Some("tok".into());
    adopt(&store, &mut step, None, None).await.unwrap();
    let row = store.get("si-bare").await.unwrap().expect("a row to end");
    assert_eq!(row.parent_task_token.as_deref(), Some("tok"));
    // A later step of a stand-in without a row (not a first one) makes none.
    let mut later = Step::start("si-none", "agent-a", "");
    later.message = None;
    adopt(&store, &mut later, None, None).await.unwrap();
    assert_eq!(store.get("si-none").await.unwrap(), None);
}

/// Issue 24, 3: a note SQS refuses for good (a sender fault) is passed over: the notes
/// behind it, of its stand-in and of every other, go on at once instead of waiting a day
/// behind it, and a Step Functions parent waiting on it is still answered.
#[tokio::test]
async fn a_note_refused_for_good_is_passed_over_and_its_parent_still_answered() {
    let queue = MemoryQueue::new();
    let bus = MemoryBus::default();
    let callback = MemoryCallback::default();
    let notes = vec![
        note("poisoned", 1, TaskState::Working, "one"),
        note("other", 1, TaskState::Working, "a"),
        note("poisoned", 2, TaskState::Failed, "gave up"),
        note("other", 2, TaskState::Completed, "b"),
    ];
    queue.refuse_for_good("poisoned", 1);
    queue.refuse_for_good("poisoned", 2);
    let tokens = tokens(&[("poisoned", 2, "parent-token")]);
    let fanout = Fanout {
        outlets: Outlets {
            queue: &queue,
            bus: Some(&bus),
            callback: &callback,
            webhooks: None,
        },
        tokens: &tokens,
        webhooked: &Default::default(),
    };
    assert_eq!(
        notify::deliver(&fanout, &notes, later()).await,
        None,
        "nothing is left to retry"
    );
    let delivered: Vec<(String, u64)> = queue
        .notes()
        .iter()
        .map(|n| (n.task_id.clone(), n.seq))
        .collect();
    assert_eq!(delivered, [("other".into(), 1), ("other".into(), 2)]);
    assert_eq!(bus.events().len(), 4, "the bus still gets every note");
    let answers = callback.answers();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].0, "parent-token");
    assert!(
        matches!(&answers[0].1, Err((error, _)) if error == "StandIn.Failed"),
        "{answers:?}"
    );
}

/// Issue 24, 3: a parent-started stand-in whose id breaks the rules gets no row (rows and
/// notes are keyed by the id); its first turn ends it, and the end hands the parent's
/// token, still in the step, to the state machine to answer with the reason.
#[tokio::test]
async fn a_parent_started_id_that_breaks_the_rules_gets_no_row_and_its_parent_is_answered() {
    use standin::steps::StepError;
    let store = MemoryStore::new();
    let agent = standin_remote::fake::FakeAgent::new(false);
    let mut step = Step::start("not a valid id!", "agent-a", "hello");
    step.parent_task_token = Some("tok".into());
    let ended = standin::steps::turn(
        &Invocation::reaching(Teller::new(&store), &agent),
        step,
        Duration::from_secs(1),
        standin::steps::next::Pacing::default(),
    )
    .await
    .unwrap();
    assert_eq!(store.get("not a valid id!").await.unwrap(), None, "no row");
    assert_eq!(
        ended.parent_task_token.as_deref(),
        Some("tok"),
        "the token stays"
    );
    assert!(agent.calls().is_empty(), "the agent heard nothing");
    let answer =
        standin::steps::end(&Invocation::reaching(Teller::new(&store), &agent), &ended).await;
    match answer {
        Err(StepError::Unrecorded(reason)) => {
            assert!(reason.contains("task_id"), "the parent hears why: {reason}")
        }
        other => panic!("the end must hand the token on: {other:?}"),
    }
}

/// Step Functions answering each callback after a second, as it did with the soak's
/// load on it.
#[derive(Default)]
struct SlowCallback(MemoryCallback);

impl standin::outbox::ParentCallback for SlowCallback {
    async fn succeed(&self, token: &str, output: &str) -> Result<(), CallbackError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.0.succeed(token, output).await
    }

    async fn fail(&self, token: &str, error: &str, cause: &str) -> Result<(), CallbackError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.0.fail(token, error, cause).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_round_s_parents_are_answered_together_within_the_invocation() {
    let (queue, callback) = (MemoryQueue::new(), SlowCallback::default());
    let ids: Vec<String> = (0..10).map(|i| format!("t-{i}")).collect();
    let notes: Vec<ParentNote> = ids
        .iter()
        .map(|id| note(id, 1, TaskState::Completed, "done"))
        .collect();
    let named: Vec<String> = ids.iter().map(|id| format!("tok-{id}")).collect();
    let pairs: Vec<(&str, u64, &str)> = ids
        .iter()
        .zip(&named)
        .map(|(id, token)| (id.as_str(), 1, token.as_str()))
        .collect();
    let tokens = tokens(&pairs);
    let fanout = Fanout {
        outlets: Outlets {
            queue: &queue,
            bus: None::<&MemoryBus>,
            callback: &callback,
            webhooks: None,
        },
        tokens: &tokens,
        webhooked: &Default::default(),
    };
    // Ten seconds of callbacks one after another; three left before notify's deadline.
    let stop_at = tokio::time::Instant::now() + Duration::from_secs(3);
    assert_eq!(
        notify::deliver(&fanout, &notes, stop_at).await,
        None,
        "every parent answered in time"
    );
    let mut answered: Vec<String> = callback.0.answers().into_iter().map(|(t, _)| t).collect();
    answered.sort();
    let mut expected = named.clone();
    expected.sort();
    assert_eq!(answered, expected, "each parent answered once");
}
