//! The push watch with a hearer: the door claims a hearing in its one write, the hearer
//! asks the agent and tells the change before the park is rung, and every push the
//! hearing does not tell rings the park as before.

use super::*;
use standin::push::{HearRequest, Heard, Hearer, HearerError};
use standin::row::Parks;

/// The hearer in this process, on the world's ports (the hear function's work, with no
/// Lambda between).
struct InProcess<'a>(&'a World);

impl Hearer for InProcess<'_> {
    async fn hear(&self, request: &HearRequest) -> Result<Heard, HearerError> {
        let w = self.0;
        standin::steps::hear(&w.invocation(), &w.bell, request)
            .await
            .map_err(|e| HearerError(e.to_string()))
    }
}

/// A hearer that cannot be reached.
struct Broken;

impl Hearer for Broken {
    async fn hear(&self, _: &HearRequest) -> Result<Heard, HearerError> {
        Err(HearerError("gone".into()))
    }
}

/// A stand-in on the push watch, parked at park 1 after its first turn.
async fn parked(w: &World) -> Step {
    let spec = spec(Updates::Auto);
    let step = first_turn(w, &spec).await;
    assert!(w.park(&step, "park-1").await);
    step
}

async fn push<H: Hearer>(w: &World, hearer: &H, state: TaskState) -> u16 {
    let body = push_body(state, "forged text is never used");
    receiver::receive_heard(&w.store, &w.bell, hearer, ID, &push_headers(w), &body)
        .await
        .status
}

/// A push with a token that is not the stand-in's.
async fn stranger_push<H: Hearer>(w: &World, hearer: &H) -> u16 {
    let mut headers = HeaderMap::new();
    headers.insert("x-a2a-notification-token", "not-the-token".parse().unwrap());
    let body = push_body(TaskState::Completed, "x");
    receiver::receive_heard(&w.store, &w.bell, hearer, ID, &headers, &body)
        .await
        .status
}

#[tokio::test]
async fn a_push_heard_is_told_before_the_park_is_rung_and_the_wake_asks_nothing() {
    let w = World::new(true).await;
    let step = parked(&w).await;
    let told_before = w.notes().len();
    let asked = w.agent.count("GetTask");
    w.agent.set_task(task(TaskState::Working, "Building it"));
    assert_eq!(push(&w, &InProcess(&w), TaskState::Working).await, 204);
    let notes = w.notes();
    assert_eq!(notes.len(), told_before + 1, "the hearer told the change");
    assert_eq!(notes.last().unwrap().1, TaskState::Working.as_str());
    assert_eq!(w.agent.count("GetTask"), asked + 1, "the hearer asked once");
    assert_eq!(
        w.bell.rings(),
        ["park-1"],
        "the park is rung after the note"
    );
    assert_eq!(
        w.bell.rung_pushes(),
        [None],
        "the ring carries the report, not a push to check"
    );
    let row = w.store.snapshot(ID).unwrap();
    assert!(row.pending.push.is_none(), "no push left for the wake");
    assert!(matches!(
        row.pending.follow.map(|r| r.outcome),
        Some(FollowOutcome::Changed { is_final: false })
    ));
    let step = w.wake(step, Woke::Rung, &spec(Updates::Auto)).await;
    assert_eq!(park_shape(&step), PLAIN, "parked again, its backstop reset");
    assert_eq!(park_no(&step), 2);
    assert_eq!(
        w.agent.count("GetTask"),
        asked + 1,
        "the wake does not ask the agent again"
    );
    assert_eq!(w.notes().len(), told_before + 1, "told once");
}

#[tokio::test]
async fn a_final_state_heard_closes_the_row_and_the_wake_ends_the_stand_in() {
    let w = World::new(true).await;
    let step = parked(&w).await;
    w.agent.set_task(task(TaskState::Completed, "Done"));
    assert_eq!(push(&w, &InProcess(&w), TaskState::Completed).await, 204);
    let row = w.store.snapshot(ID).unwrap();
    assert!(row.closed, "the final state closed the row with its note");
    assert_eq!(w.bell.rings(), ["park-1"]);
    let last = w.notes().last().cloned().unwrap();
    assert_eq!(
        (last.1.as_str(), last.2),
        (TaskState::Completed.as_str(), true)
    );
    let step = w.wake(step, Woke::Rung, &spec(Updates::Auto)).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
}

#[tokio::test]
async fn a_push_the_hearing_does_not_tell_rings_the_park_as_before() {
    // The agent does not show the claimed state yet: the stand-in's rechecks decide.
    let w = World::new(true).await;
    let step = parked(&w).await;
    let told_before = w.notes().len();
    w.agent.set_task(task(TaskState::Working, "Still on it"));
    assert_eq!(push(&w, &InProcess(&w), TaskState::Completed).await, 204);
    assert_eq!(w.notes().len(), told_before, "nothing told by the hearing");
    assert_eq!(w.bell.rings(), ["park-1"]);
    let carried = w.bell.rung_pushes()[0]
        .clone()
        .expect("the ring carries the push");
    assert_eq!(
        (carried.claimed, carried.asked),
        (Some(TaskState::Completed), true),
        "marked asked"
    );
    let asked = w.agent.count("GetTask");
    let step = w.wake(step, Woke::Rung, &spec(Updates::Auto)).await;
    assert_eq!(
        park_shape(&step),
        (false, 1),
        "the rechecks start at their first wait"
    );
    assert_eq!(
        w.agent.count("GetTask"),
        asked,
        "the wake does not ask again at once: a push costs one GetTask and the rechecks"
    );
    // The first recheck asks, tells what the agent says, and rechecks the claim on.
    assert!(w.park(&step, "park-2").await);
    let step = w.wake(step, Woke::TimedOut, &spec(Updates::Auto)).await;
    assert_eq!(w.agent.count("GetTask"), asked + 1);
    assert_eq!(
        w.notes().len(),
        told_before + 1,
        "the recheck told the change"
    );
    assert_eq!(park_shape(&step), (false, 2), "the second recheck's wait");

    // A hearer that cannot be reached: the push rings.
    let w = World::new(true).await;
    parked(&w).await;
    w.agent.set_task(task(TaskState::Working, "Building"));
    assert_eq!(push(&w, &Broken, TaskState::Working).await, 204);
    assert_eq!(w.bell.rings(), ["park-1"]);
    assert!(
        w.bell.rung_pushes()[0].is_some(),
        "a push for the wake to check"
    );
}

#[tokio::test]
async fn a_push_during_a_hearing_rings_and_a_stranger_claims_nothing() {
    let w = World::new(true).await;
    parked(&w).await;
    let token = w.agent.configs()[0].token.clone();
    let guard = Guard::Push {
        digest: standin::digest::TokenDigest::of(&token),
        remote_task_id: REMOTE.into(),
    };
    let now = standin::clock::now_ms();
    let held = w
        .store
        .claim_hearing(ID, &guard, "in-flight", now, now + 60_000)
        .await
        .unwrap();
    assert!(matches!(held, standin::row::HearingClaim::Claimed(_)));
    w.agent.set_task(task(TaskState::Working, "Building"));
    let asked = w.agent.count("GetTask");
    assert_eq!(push(&w, &InProcess(&w), TaskState::Working).await, 204);
    assert_eq!(w.agent.count("GetTask"), asked, "no second hearing");
    assert!(w.bell.rung_pushes()[0].is_some(), "rung with the push");
    assert_eq!(
        w.store.snapshot(ID).unwrap().hearing.as_deref(),
        Some("in-flight")
    );

    let w = World::new(true).await;
    parked(&w).await;
    let writes = w.store.writes();
    assert_eq!(stranger_push(&w, &InProcess(&w)).await, 401);
    assert_eq!(w.store.writes(), writes, "nothing written");
    assert!(w.bell.rings().is_empty());
    assert!(w.store.snapshot(ID).unwrap().hearing.is_none());
}

/// The same hearing run twice (an invoke delivered twice): it commits once, since its
/// commit ends it.
#[tokio::test]
async fn a_hearing_commits_once_however_often_it_runs() {
    let w = World::new(true).await;
    parked(&w).await;
    let recorder = Recording::default();
    w.agent.set_task(task(TaskState::Working, "Building"));
    assert_eq!(push(&w, &recorder, TaskState::Working).await, 204);
    let request = recorder.taken();
    let told_before = w.notes().len();
    let first = standin::steps::hear(&w.invocation(), &w.bell, &request).await;
    assert_eq!(first.unwrap(), Heard::Told);
    w.agent
        .set_task(task(TaskState::Working, "Building, later"));
    let again = standin::steps::hear(&w.invocation(), &w.bell, &request).await;
    assert_eq!(again.unwrap(), Heard::Passed, "the hearing is over");
    assert_eq!(w.notes().len(), told_before + 1);
    assert!(w.store.snapshot(ID).unwrap().hearing.is_none());
}

/// A hearer slower than the door's wait: the door rings the park with the push, and the
/// hearing, when it comes before the wake, tells the change; the wake's check then finds
/// it told, and the report it leaves changes nothing in the next park. Told once.
#[tokio::test(start_paused = true)]
async fn a_hearer_slower_than_the_door_leaves_the_push_to_the_ring_and_tells_once() {
    let w = World::new(true).await;
    let step = parked(&w).await;
    let stalled = Recording::stalled();
    w.agent.set_task(task(TaskState::Working, "Building"));
    let told_before = w.notes().len();
    assert_eq!(push(&w, &stalled, TaskState::Working).await, 204);
    assert!(
        w.bell.rung_pushes()[0].is_some(),
        "past its wait, the door rang with the push"
    );
    let late = standin::steps::hear(&w.invocation(), &w.bell, &stalled.taken()).await;
    assert_eq!(late.unwrap(), Heard::Told, "the park was not woken yet");
    let step = w.wake(step, Woke::Rung, &spec(Updates::Auto)).await;
    assert_eq!(park_shape(&step), PLAIN, "the check found nothing new");
    assert_eq!(w.notes().len(), told_before + 1, "told once");
    // The report waits on the row: the next park rings itself, and its wake parks again.
    assert!(w.park(&step, "park-2").await);
    let step = w.wake(step, Woke::Rung, &spec(Updates::Auto)).await;
    assert_eq!(park_no(&step), 3);
    assert_eq!(w.notes().len(), told_before + 1, "still told once");
}

/// A hearer that tells the change, then outlasts the door's wait (a cold hear function).
struct ToldLate<'a>(&'a World);

impl Hearer for ToldLate<'_> {
    async fn hear(&self, request: &HearRequest) -> Result<Heard, HearerError> {
        let heard = InProcess(self.0).hear(request).await;
        std::future::pending::<()>().await;
        heard
    }
}

/// The hearing closes the row with the final state while the door, past its wait, rings:
/// the ring meets a closed row, and the push that closed it is still accepted (not a 401,
/// as if forged), told once.
#[tokio::test(start_paused = true)]
async fn a_final_state_told_after_the_door_s_wait_still_accepts_its_push() {
    let w = World::new(true).await;
    let step = parked(&w).await;
    w.agent.set_task(task(TaskState::Completed, "Done"));
    let told_before = w.notes().len();
    assert_eq!(push(&w, &ToldLate(&w), TaskState::Completed).await, 204);
    assert!(
        w.store.snapshot(ID).unwrap().closed,
        "the hearing closed it"
    );
    assert_eq!(w.notes().len(), told_before + 1, "told once");
    let step = w.wake(step, Woke::Rung, &spec(Updates::Auto)).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert_eq!(w.notes().len(), told_before + 1, "still told once");
    // Only the push its claim admitted: the same push again, and a stranger's, meet the
    // closed row at the claim and are refused.
    assert_eq!(push(&w, &ToldLate(&w), TaskState::Completed).await, 401);
    assert_eq!(stranger_push(&w, &ToldLate(&w)).await, 401);
}

/// A hearer that keeps what it was handed, and either answers "passed" at once or never
/// answers (the door's wait runs out).
#[derive(Default)]
struct Recording {
    request: std::sync::Mutex<Option<HearRequest>>,
    stall: bool,
}

impl Recording {
    fn stalled() -> Self {
        Self {
            stall: true,
            ..Self::default()
        }
    }

    fn taken(&self) -> HearRequest {
        self.request
            .lock()
            .unwrap()
            .clone()
            .expect("a hearing was handed over")
    }
}

impl Hearer for Recording {
    async fn hear(&self, request: &HearRequest) -> Result<Heard, HearerError> {
        *self.request.lock().unwrap() = Some(request.clone());
        if self.stall {
            std::future::pending::<()>().await;
        }
        Ok(Heard::Passed)
    }
}

/// A duplicate push (the agent says what it said, and what the push claims): one GetTask,
/// no note, no ring, and the hearing ends so the next push is heard.
#[tokio::test]
async fn a_push_with_nothing_new_costs_one_get_task_and_no_ring() {
    let w = World::new(true).await;
    parked(&w).await;
    let told_before = w.notes().len();
    let asked = w.agent.count("GetTask");
    assert_eq!(
        push(&w, &InProcess(&w), TaskState::InputRequired).await,
        204
    );
    assert_eq!(w.agent.count("GetTask"), asked + 1);
    assert!(w.bell.rings().is_empty(), "nothing for the park to hear");
    assert_eq!(w.notes().len(), told_before);
    assert!(w.store.snapshot(ID).unwrap().hearing.is_none());
    w.agent.set_task(task(TaskState::Working, "Now building"));
    assert_eq!(push(&w, &InProcess(&w), TaskState::Working).await, 204);
    assert_eq!(w.notes().len(), told_before + 1, "the next push is heard");
    assert_eq!(w.bell.rings(), ["park-1"]);
}

/// The hear function holds no agent's credentials: an agent whose entry names some is
/// asked by the wake, as before, and the hearing asks nothing.
#[tokio::test]
async fn an_agent_that_needs_credentials_is_left_to_the_wake() {
    let w = World::new(true).await;
    parked(&w).await;
    w.agent.set_task(task(TaskState::Working, "Building"));
    let asked = w.agent.count("GetTask");
    let mut with_credentials = spec(Updates::Auto);
    with_credentials.auth = Some(standin::auth::AuthSpec::Bearer {
        secret: "standin/s/token".into(),
    });
    let request = HearRequest {
        row: w.store.snapshot(ID).unwrap(),
        hearing: "h".into(),
        claimed: Some(TaskState::Working),
    };
    let invocation = w.invocation().with_spec(Some(with_credentials));
    let heard = standin::steps::hear(&invocation, &w.bell, &request).await;
    assert_eq!(heard.unwrap(), Heard::Passed);
    assert_eq!(w.agent.count("GetTask"), asked, "the hearing asked nothing");
}

thread_local! {
    static LOGGED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Writes to the emitting thread's `LOGGED`: a `#[tokio::test]` runs on its one thread, so
/// each test reads its own lines.
struct ThisThread;

impl std::io::Write for ThisThread {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGGED.with(|logged| logged.borrow_mut().extend_from_slice(buf));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What this thread logs from now on. One global subscriber for the whole binary: a
/// thread's own (`set_default`) missed lines whose callsite another test's thread had
/// first reached with no subscriber, which tracing then cached as of no interest.
struct Captured;

impl Captured {
    fn logging() -> Self {
        static GLOBAL: std::sync::Once = std::sync::Once::new();
        GLOBAL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_ansi(false)
                .without_time()
                .with_writer(|| ThisThread)
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other test of this binary sets a subscriber");
        });
        // A callsite first reached on another thread while the subscriber was being set
        // may still hold the interest it had before.
        tracing::callsite::rebuild_interest_cache();
        LOGGED.with(|logged| logged.borrow_mut().clear());
        Self
    }

    fn rings(&self) -> Vec<String> {
        LOGGED.with(|logged| {
            String::from_utf8_lossy(&logged.borrow())
                .lines()
                .filter(|line| line.contains("the park is rung"))
                .map(str::to_owned)
                .collect()
        })
    }
}

/// Every ring the door makes instead of a hearing is logged with its reason, in a line
/// ending "the park is rung" (how often the hearer does not keep up is read there, and
/// the benchmark counts them); a push heard logs none.
#[tokio::test]
async fn each_ring_of_the_door_is_logged_with_its_reason() {
    let out = Captured::logging();
    let w = World::new(true).await;
    parked(&w).await;
    w.agent.set_task(task(TaskState::Working, "Building it"));
    assert_eq!(push(&w, &InProcess(&w), TaskState::Working).await, 204);
    assert_eq!(
        w.bell.rings(),
        ["park-1"],
        "the hearing's own ring, after its note"
    );
    assert!(out.rings().is_empty(), "a push heard: {:?}", out.rings());

    // The hearing's ring waits on the row: no hearing can be claimed until a wake takes it.
    assert_eq!(
        push(&w, &Recording::default(), TaskState::Working).await,
        204
    );
    let rings = out.rings();
    assert_eq!(rings.len(), 1, "{rings:?}");
    assert!(
        rings[0].contains("no hearing could be claimed"),
        "{rings:?}"
    );
    assert_eq!(w.bell.rings(), ["park-1", "park-1"]);

    // A push refused rings nothing, and logs no ring.
    assert_eq!(stranger_push(&w, &Recording::default()).await, 401);
    assert_eq!(out.rings().len(), 1, "{:?}", out.rings());
}

/// A fresh parked stand-in pushed through `hearer`: the door answers 204 and logs its
/// `nth` ring of the test (from 1), naming `why`.
async fn logs_its_ring<H: Hearer>(out: &Captured, hearer: &H, nth: usize, why: &str) {
    let w = World::new(true).await;
    parked(&w).await;
    assert_eq!(push(&w, hearer, TaskState::Working).await, 204);
    let rings = out.rings();
    assert_eq!(rings.len(), nth, "{rings:?}");
    assert!(rings[nth - 1].contains(why), "{rings:?}");
}

/// A hearing that told nothing, one that outlasted the door's wait, and a hearer that
/// failed each log their ring.
#[tokio::test(start_paused = true)]
async fn a_hearing_that_told_nothing_or_outlasted_the_wait_logs_its_ring() {
    let out = Captured::logging();
    logs_its_ring(&out, &Recording::default(), 1, "the hearing told nothing").await;
    logs_its_ring(&out, &Recording::stalled(), 2, "outlasted the door's wait").await;
    logs_its_ring(&out, &Broken, 3, "the hearer failed").await;
}
