//! The follow step, the follow watch's park: store its token (or find a handed-back park
//! still standing), hold SubscribeToTask open for at most the window, heartbeating, and
//! report the first change (applied under the park's epoch) or why it stopped, or hand the
//! park back. `follower` holds many in one invocation, `requests` reads each it takes, and
//! `serve` is the follow function's whole invocation on the ports the wiring gives it.

pub mod follower;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
pub mod requests;
pub mod serve;
pub mod sqs;

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::doorbell::{self, Doorbell, DoorbellError, follow_should_stop};
use crate::metrics::Metric;
use crate::outbox::Teller;
use crate::row::{FollowOutcome, Row, RowStore, StoreError, Watch};
use crate::state::{RemoteOut, from_status, from_update};
use crate::steps::{Invocation, StepError};
use standin_remote::{Agent, RemoteError};

#[derive(Debug, Clone, Copy)]
pub struct FollowTiming {
    /// The longest one follow holds the agent (FOLLOW_WINDOW).
    pub window: Duration,
    /// The pause before re-subscribing (the agent's `follow_interval`).
    pub interval: Duration,
    /// How often the follow heartbeats: a park that is over refuses the beat.
    pub heartbeat: Duration,
    /// What a window that heard nothing ends in.
    pub at_window_end: WindowEnd,
    /// The window ends by then at the latest, however long the follow took to start
    /// (the follower's own end).
    pub ends_by: Option<Instant>,
}

/// What a follow window that heard nothing ends in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowEnd {
    /// Report it: the stand-in wakes (Wake, Route) and follows again.
    Report,
    /// Hand the park back: it stays parked and another follower picks it up, with no
    /// state transition (the multiplexed follower).
    HandBack,
}

/// How a follow ended, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowEnd {
    /// The park was already over, or ended while following: nothing reported.
    ParkOver,
    Reported(FollowOutcome),
    /// The report was fenced out: a newer park exists.
    Fenced,
    /// The window ended with nothing heard; the park stands, for another follower.
    HandedBack,
}

struct Following<'a, S, D, A> {
    teller: &'a Teller<'a, S>,
    bell: &'a D,
    agent: &'a A,
    token: &'a str,
    row: Row,
    timing: FollowTiming,
    next_beat: Instant,
    next_row_read: Instant,
    /// Subscriptions in a row that ended or broke before their first event.
    broken: u32,
    /// Subscriptions in a row that could not be opened or read (the agent unreachable,
    /// refusing credentials, failing).
    failed: u32,
}

/// Subscriptions in a row that end or break before their first event before the
/// stand-in polls instead.
pub const SUBSCRIBES_BROKEN_BEFORE_POLL: u32 = 3;

/// Subscriptions in a row that fail before the follow reports it: the stand-in then
/// counts its agent unreachable (and ends at its `max_unreachable`) instead of a follower
/// retrying unseen until the deadline.
pub const SUBSCRIBES_FAILED_BEFORE_REPORT: u32 = 3;

/// How often a follow's beat also reads its row. A park that is over (rung, re-parked,
/// closed: each ends its task) refuses the beat; only an event whose ring failed needs
/// the row, and waits this long at most. Read every beat, it was a follow's largest share
/// of AWS calls.
pub const ROW_READ_EVERY: Duration = Duration::from_secs(60);

/// Heartbeats the park every `every` while `work` runs (a card read, before there is a
/// follower): a slow agent must not look like a crashed follow.
pub async fn with_heartbeats<D: Doorbell, T>(
    bell: &D,
    token: &str,
    every: Duration,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => return out,
            () = tokio::time::sleep(every) => {
                if let Err(err) = bell.heartbeat(token).await {
                    info!(error = %err, "heartbeat while waiting for the agent failed");
                }
            }
        }
    }
}

/// The follow park as the follow function runs it: reach the agent (`with_heartbeats`),
/// then follow, or, when it cannot be reached, report a failed follow to retry later.
pub async fn run<S: RowStore, D: Doorbell, A: Agent>(
    invocation: &Invocation<'_, S, A>,
    bell: &D,
    park: &Park<'_>,
    timing: FollowTiming,
) -> Result<FollowEnd, StepError> {
    let teller = &invocation.teller;
    let store = teller.rows();
    // The row as the invocation read it on its way in (for the agent's entry) judges
    // whether the park is the stand-in's: a read less.
    let known = invocation.row.as_ref();
    if let Some(reason) = park.owner.refused(store, park.task_id, known).await? {
        warn!(task_id = %park.task_id, %reason, "follow refused");
        return Ok(FollowEnd::Fenced);
    }
    let reached = with_heartbeats(bell, park.token, timing.heartbeat, invocation.agent()).await;
    match reached {
        Ok(agent) if park.hop > 0 => resume(teller, bell, agent, park, timing).await,
        Ok(agent) => {
            let (task_id, number, token) = (park.task_id, park.number, park.token);
            follow(teller, bell, agent, task_id, number, token, timing).await
        }
        Err(_) if park.hop > 0 => {
            // The park stands; the agent is away. Report it as a first follow would.
            match claim(store, park).await? {
                Some(row) => report_now(teller, bell, &row, FollowOutcome::Failed).await,
                None => Ok(FollowEnd::ParkOver),
            }
        }
        Err(err) => {
            warn!(task_id = %park.task_id, error = %err, "agent unavailable to follow; retrying later");
            follow_unavailable(teller, bell, park.task_id, park.number, park.token).await
        }
    }
}

/// One park to follow, as its request names it.
#[derive(Debug, Clone)]
pub struct Park<'a> {
    pub task_id: &'a str,
    pub number: u64,
    pub token: &'a str,
    pub owner: crate::steps::Owner,
    /// How many followers handed it on before this one (0: it is new, not stored yet).
    pub hop: u64,
}

/// The follow park when the agent cannot be reached to follow it: store the token (if
/// this park is the newest) and report a failed follow, so the stand-in retries after
/// FOLLOW_RETRY instead of waiting for a heartbeat timeout.
pub async fn follow_unavailable<S: RowStore, D: Doorbell>(
    teller: &Teller<'_, S>,
    bell: &D,
    task_id: &str,
    park: u64,
    token: &str,
) -> Result<FollowEnd, StepError> {
    let Some(row) = doorbell::store_park(teller.rows(), bell, task_id, park, token).await? else {
        return Ok(FollowEnd::Fenced);
    };
    if !row.pending.is_empty() {
        // The park rang itself for a waiting event; a failure report would outlive it.
        return Ok(FollowEnd::ParkOver);
    }
    report_now(teller, bell, &row, FollowOutcome::Failed).await
}

/// Reports `outcome` for the park `row` stands in, with no change heard.
async fn report_now<S: RowStore, D: Doorbell>(
    teller: &Teller<'_, S>,
    bell: &D,
    row: &Row,
    outcome: FollowOutcome,
) -> Result<FollowEnd, StepError> {
    reported(doorbell::follow_report(teller, bell, row, row.epoch, None, outcome).await)
}

/// A report's end: fenced out when the row refused it.
fn reported(result: Result<FollowOutcome, StoreError>) -> Result<FollowEnd, StepError> {
    match result {
        Ok(outcome) => Ok(FollowEnd::Reported(outcome)),
        Err(StoreError::Refused(_)) => Ok(FollowEnd::Fenced),
        Err(err) => Err(err.into()),
    }
}

pub async fn follow<S: RowStore, D: Doorbell, A: Agent>(
    teller: &Teller<'_, S>,
    bell: &D,
    agent: &A,
    task_id: &str,
    park: u64,
    token: &str,
    timing: FollowTiming,
) -> Result<FollowEnd, StepError> {
    let Some(row) = doorbell::store_park(teller.rows(), bell, task_id, park, token).await? else {
        // A late or repeated invoke of an older park: a newer one is in charge.
        return Ok(FollowEnd::Fenced);
    };
    follow_parked(teller, bell, agent, row, token, timing, false).await
}

/// A park another follower handed on: stored already, so it is followed on only while
/// it still stands (the same park and token, not woken, nothing pending) and only by
/// the first follower to claim this hand-on (SQS may deliver a request twice).
pub async fn resume<S: RowStore, D: Doorbell, A: Agent>(
    teller: &Teller<'_, S>,
    bell: &D,
    agent: &A,
    park: &Park<'_>,
    timing: FollowTiming,
) -> Result<FollowEnd, StepError> {
    match claim(teller.rows(), park).await? {
        Some(row) => follow_parked(teller, bell, agent, row, park.token, timing, true).await,
        None => {
            info!(
                task_id = park.task_id,
                park = park.number,
                hop = park.hop,
                "a handed-on park is over (rung, re-parked or closed meanwhile) or another follower has it"
            );
            Ok(FollowEnd::ParkOver)
        }
    }
}

/// Claims a handed-on park for this follower: the row, if the park stands and no other
/// follower claimed this hand-on.
async fn claim<S: RowStore>(store: &S, park: &Park<'_>) -> Result<Option<Row>, StepError> {
    let claimed = store.claim_follow(park.task_id, park.number, park.token, park.hop);
    match claimed.await {
        Ok(row) => Ok(Some(row)),
        Err(StoreError::Refused(_) | StoreError::NotFound(_)) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

async fn follow_parked<S: RowStore, D: Doorbell, A: Agent>(
    teller: &Teller<'_, S>,
    bell: &D,
    agent: &A,
    row: Row,
    token: &str,
    timing: FollowTiming,
    resumed: bool,
) -> Result<FollowEnd, StepError> {
    if !row.pending.is_empty() {
        return Ok(FollowEnd::ParkOver);
    }
    if !agent.can_stream() {
        // Its card says it cannot stream (the watch was chosen without the card): there
        // is nothing to follow, so the stand-in polls rather than loop on refusals.
        info!(
            task_id = row.task_id.as_str(),
            "the agent cannot stream; the watch polls"
        );
        teller.set_watch(&row.task_id, &Watch::poll()).await?;
        return report_now(teller, bell, &row, FollowOutcome::Gone).await;
    }
    let remote = row
        .remote_task_id
        .clone()
        .ok_or(StepError::Input("a remote task id"))?;
    let mut f = Following {
        teller,
        bell,
        agent,
        token,
        next_beat: Instant::now() + timing.heartbeat,
        next_row_read: Instant::now() + ROW_READ_EVERY,
        row,
        timing,
        broken: 0,
        failed: 0,
    };
    // A handed-back park beats at once: its last beat was in another follower, which
    // may have ended most of a heartbeat timeout ago.
    if resumed && !f.beat().await? {
        return Ok(FollowEnd::ParkOver);
    }
    let window_end = Instant::now() + timing.window;
    let deadline = timing.ends_by.map_or(window_end, |end| end.min(window_end));
    while Instant::now() < deadline {
        match f.subscribe_once(&remote, deadline).await? {
            Step::Continue => {
                let pause = timing
                    .interval
                    .min(deadline.saturating_duration_since(Instant::now()));
                if !f.pause(pause).await? {
                    return Ok(FollowEnd::ParkOver);
                }
            }
            Step::Stop(end) => return Ok(end),
        }
    }
    match timing.at_window_end {
        WindowEnd::Report => f.report(None, FollowOutcome::WindowOver).await,
        WindowEnd::HandBack => {
            count_window("handed_back", &f.row.task_id);
            Ok(FollowEnd::HandedBack)
        }
    }
}

enum Step {
    Continue,
    Stop(FollowEnd),
}

impl<S: RowStore, D: Doorbell, A: Agent> Following<'_, S, D, A> {
    fn known_text(&self) -> &str {
        let known = self.row.last.as_ref();
        known.map_or("", |known| known.text.as_str())
    }

    fn changed(&self, out: &RemoteOut) -> bool {
        let known = self.row.last.as_ref();
        known.is_none_or(|known| out.differs_from(known))
    }

    /// One subscription: the first change ends the follow; an end or error of the stream
    /// means pause and subscribe again.
    async fn subscribe_once(&mut self, remote: &str, deadline: Instant) -> Result<Step, StepError> {
        let agent = self.agent;
        let Some(opened) = self.beating(agent.subscribe(remote)).await? else {
            return Ok(Step::Stop(FollowEnd::ParkOver));
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(err) => return self.on_error(remote, err).await,
        };
        let mut seen = false;
        loop {
            let wait = self.next_beat.min(deadline);
            match tokio::time::timeout_at(wait, stream.next()).await {
                Err(_) => {
                    if Instant::now() >= deadline {
                        return Ok(Step::Continue);
                    }
                    if !self.beat().await? {
                        return Ok(Step::Stop(FollowEnd::ParkOver));
                    }
                }
                Ok(None) if !seen => return self.broke(remote, "ended").await,
                Ok(None) => return Ok(Step::Continue),
                Ok(Some(Err(err)))
                    if !seen
                        && !err.refuses_subscribe()
                        && !err.is_terminal_task()
                        && !matches!(err, RemoteError::TooLarge { .. }) =>
                {
                    warn!(task_id = %self.row.task_id, error = %err, "subscription broke before its first event");
                    return self.broke(remote, "broke").await;
                }
                Ok(Some(Err(err))) => return self.on_error(remote, err).await,
                Ok(Some(Ok(event))) => {
                    seen = true;
                    self.broken = 0;
                    self.failed = 0;
                    if let Some(out) = from_update(&event, self.known_text())
                        .map(|o| o.about(remote))
                        .filter(|o| self.changed(o))
                    {
                        return self.report_heard(&out, changed_at(&event)).await;
                    }
                }
            }
        }
    }

    async fn on_error(&mut self, remote: &str, err: RemoteError) -> Result<Step, StepError> {
        if err.is_terminal_task() {
            // The task is finished; GetTask says how.
            let agent = self.agent;
            let Some(fetched) = self.beating(agent.get(remote)).await? else {
                return Ok(Step::Stop(FollowEnd::ParkOver));
            };
            return match fetched {
                Ok(task) => {
                    let out = from_status(&task, self.known_text()).about(remote);
                    if self.changed(&out) {
                        self.report_heard(&out, task.at.as_deref()).await
                    } else {
                        self.stop(FollowOutcome::Unchanged).await
                    }
                }
                Err(e) => {
                    warn!(task_id = %self.row.task_id, error = %e, "GetTask after a terminal subscribe failed");
                    self.stop(FollowOutcome::Failed).await
                }
            };
        }
        // Refused, or an event past the bound (each subscription replays the task, so it
        // would be read, refused and subscribed to for ever): GetTask reads the task its
        // own way (history skimmed, artifacts stored as they come).
        if err.refuses_subscribe() || matches!(err, RemoteError::TooLarge { .. }) {
            return self.poll_instead(remote, &err.to_string()).await;
        }
        self.failed += 1;
        if self.failed >= SUBSCRIBES_FAILED_BEFORE_REPORT {
            warn!(task_id = %self.row.task_id, error = %err, failed = self.failed, "follow stream failed; reported");
            return self.stop(FollowOutcome::Failed).await;
        }
        warn!(task_id = %self.row.task_id, error = %err, "follow stream failed; subscribing again");
        Ok(Step::Continue)
    }

    /// A subscription that ended or broke before its first event. Some servers do that
    /// to every subscribe of a task they will not stream (a2a-sdk 0.3's HTTP+JSON cuts
    /// the connection for an input-required task): after a few in a row, poll.
    async fn broke(&mut self, remote: &str, how: &str) -> Result<Step, StepError> {
        self.broken += 1;
        if self.broken < SUBSCRIBES_BROKEN_BEFORE_POLL {
            return Ok(Step::Continue);
        }
        let why = format!(
            "{} subscriptions in a row {how} before their first event",
            self.broken
        );
        self.poll_instead(remote, &why).await
    }

    /// The subscribe is refused (a2a-sdk 0.3 and a2a-go answer "not found" for an
    /// input-required task; others lack the method): if GetTask still knows the task the
    /// stand-in polls it, else nothing more can be heard.
    async fn poll_instead(&mut self, remote: &str, why: &str) -> Result<Step, StepError> {
        let agent = self.agent;
        let Some(fetched) = self.beating(agent.get(remote)).await? else {
            return Ok(Step::Stop(FollowEnd::ParkOver));
        };
        let watch = match fetched {
            Ok(_) => {
                info!(task_id = %self.row.task_id, why, "subscribe refused, the task is known; the watch polls");
                Watch::poll()
            }
            // An agent that answers, but past a bound: polled, so that an answer it
            // keeps too large ends the stand-in at its `max_unreachable`.
            Err(e) if matches!(e, RemoteError::TooLarge { .. }) => {
                warn!(task_id = %self.row.task_id, error = %e, "GetTask after a refused subscribe is past a bound; the watch polls");
                Watch::poll()
            }
            Err(e) if e.is_retryable() => {
                warn!(task_id = %self.row.task_id, error = %e, "GetTask after a refused subscribe failed");
                return self.stop(FollowOutcome::Failed).await;
            }
            Err(_) => {
                info!(task_id = %self.row.task_id, "remote task gone; the watch turns off");
                Watch::off()
            }
        };
        self.teller.set_watch(&self.row.task_id, &watch).await?;
        self.stop(FollowOutcome::Gone).await
    }

    /// Runs `work` (opening a stream, GetTask), heartbeating while it takes long; None
    /// when the park ended meanwhile.
    async fn beating<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<Option<T>, StepError> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return Ok(Some(out)),
                () = tokio::time::sleep_until(self.next_beat) => {
                    if !self.beat().await? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Sleeps `for_how_long`, heartbeating; false when the park is over.
    async fn pause(&mut self, for_how_long: Duration) -> Result<bool, StepError> {
        let until = Instant::now() + for_how_long;
        while Instant::now() < until {
            tokio::time::sleep_until(self.next_beat.min(until)).await;
            if Instant::now() >= self.next_beat && !self.beat().await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Heartbeat; false once the park is over (rung, re-parked or closed). The row is
    /// read when the heartbeat failed, and every `ROW_READ_EVERY`.
    async fn beat(&mut self) -> Result<bool, StepError> {
        self.next_beat = Instant::now() + self.timing.heartbeat;
        match self.bell.heartbeat(self.token).await {
            Err(DoorbellError::ParkOver) => return Ok(false),
            Err(err) => warn!(task_id = %self.row.task_id, error = %err, "heartbeat failed"),
            Ok(()) if Instant::now() < self.next_row_read => return Ok(true),
            Ok(()) => {}
        }
        self.next_row_read = Instant::now() + ROW_READ_EVERY;
        let Some(row) = self.teller.rows().get(&self.row.task_id).await? else {
            return Ok(false);
        };
        if !follow_should_stop(&row, self.row.epoch) {
            return Ok(true);
        }
        // An event waits while the park's task still takes beats: its ring failed. Rung
        // again, the wake comes now rather than at the park's heartbeat timeout.
        doorbell::ring_waiting(self.bell, &row).await;
        Ok(false)
    }

    /// Reports a change the stream told, and how long after the agent's change it came.
    async fn report_heard(
        &self,
        out: &RemoteOut,
        changed_at: Option<&str>,
    ) -> Result<Step, StepError> {
        let reported = self.report(Some(out), FollowOutcome::WindowOver).await;
        if let Ok(FollowEnd::Reported(FollowOutcome::Changed { .. })) = &reported {
            crate::metrics::heard(changed_at, "follow", &self.row.task_id);
        }
        reported.map(Step::Stop)
    }

    /// Reports `outcome` with no change heard, and stops.
    async fn stop(&self, outcome: FollowOutcome) -> Result<Step, StepError> {
        self.report(None, outcome).await.map(Step::Stop)
    }

    async fn report(
        &self,
        change: Option<&RemoteOut>,
        otherwise: FollowOutcome,
    ) -> Result<FollowEnd, StepError> {
        let (teller, bell, row) = (self.teller, self.bell, &self.row);
        let result = doorbell::follow_report(teller, bell, row, row.epoch, change, otherwise).await;
        let ending = match &result {
            Ok(FollowOutcome::Changed { .. }) => "changed",
            Ok(FollowOutcome::Unchanged) => "unchanged",
            Ok(FollowOutcome::WindowOver) => "window_over",
            Ok(FollowOutcome::Failed) => "failed",
            Ok(FollowOutcome::Gone) => "gone",
            Err(StoreError::Refused(_)) => "fenced",
            Err(_) => "store_failed",
        };
        count_window(ending, &self.row.task_id);
        reported(result)
    }
}

fn count_window(ending: &str, task_id: &str) {
    crate::metrics::record(Metric::FollowWindows, 1.0, Some(ending), Some(task_id));
}

/// When the agent says the change happened: the status timestamp of a streamed task or
/// status update.
fn changed_at(update: &standin_remote::Update) -> Option<&str> {
    match update {
        standin_remote::Update::Status(status) => status.at.as_deref(),
        _ => None,
    }
}
