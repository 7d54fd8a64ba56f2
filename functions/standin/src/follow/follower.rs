//! The multiplexed follower: one invocation holds many stand-ins' follows. It starts with
//! the requests it was invoked with, takes more from the follow queue while it has room
//! and time (so followers fill up rather than multiply), and at its window's end hands each
//! park still standing back to the queue for the next follower, with no state transition.
//! A dead follower hands nothing back: heartbeat timeouts wake its stand-ins to follow.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;

/// Why the follow queue did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("follow queue unavailable: {0}")]
pub struct RequestsError(pub String);

/// Where follow requests wait: the state machine puts one per followed park, a follower
/// hands back the parks still standing when its window ends.
pub trait FollowRequests: Send + Sync {
    /// Up to `at_most` requests, waiting up to `wait` for the first; each taken is gone
    /// from the queue (a follower that dies with it leaves it to the heartbeat timeout).
    fn take(
        &self,
        at_most: usize,
        wait: Duration,
    ) -> impl Future<Output = Result<Vec<String>, RequestsError>> + Send;

    /// Puts requests back for the next follower; the number it could not.
    fn hand_back(&self, requests: Vec<String>) -> impl Future<Output = usize> + Send;
}

/// The shortest wait a take is started with (SQS counts its long poll in seconds).
const SHORTEST_TAKE: Duration = Duration::from_secs(1);

/// The most requests one take asks for (SQS's ReceiveMessage limit).
pub const TAKE_AT_MOST: usize = 10;

/// How one follower runs.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub capacity: usize,
    /// When its follows hand back what they hold.
    pub until: Instant,
    pub take_wait: Duration,
    /// It takes no new request this close to `until`: one would be handed back at once.
    pub last_take: Duration,
    /// The pause after the queue did not answer.
    pub take_retry: Duration,
    /// How long past `until` a follow may take to end before it is cut off (its park is
    /// left to its heartbeat timeout).
    pub straggle: Duration,
}

/// What one follower did, for its log line and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowerSummary {
    pub followed: usize,
    pub peak: usize,
    pub handed_back: usize,
    pub hand_back_failed: usize,
    /// Takes the queue did not answer, and the last one's error (logged once, with the
    /// summary: a follower's own lines name the stand-ins it held).
    pub take_failures: usize,
    pub last_take_error: Option<String>,
    /// Follows cut off past `until` and the straggling time.
    pub cut_off: usize,
}

/// Follows `first` and what it takes meanwhile, each by `follow_one` (which answers the
/// request to hand back if its park stands at its window's end), then hands those back.
pub async fn multiplex<Q: FollowRequests, Fut: Future<Output = Option<String>>>(
    queue: &Q,
    first: Vec<String>,
    plan: Plan,
    follow_one: impl Fn(String) -> Fut,
) -> FollowerSummary {
    let cut_at = plan.until + plan.straggle;
    let bounded = |request| bounded(follow_one(request), cut_at);
    let mut held: FuturesUnordered<_> = first.into_iter().map(bounded).collect();
    let mut summary = FollowerSummary {
        followed: held.len(),
        peak: held.len(),
        ..FollowerSummary::default()
    };
    let mut back = Vec::new();
    // A take in flight is never dropped: its requests would be gone from the queue and
    // followed by no one.
    let mut taking = None;
    let mut pause = Duration::ZERO;
    let mut idle = false;
    loop {
        let now = Instant::now();
        // A take needs a second of long poll at least, or it would spin on an empty queue.
        let may_take = !idle && now + plan.last_take + SHORTEST_TAKE <= plan.until;
        if taking.is_none() && may_take && held.len() < plan.capacity {
            let room = (plan.capacity - held.len()).min(TAKE_AT_MOST);
            let wait = plan
                .take_wait
                .min(plan.until.saturating_duration_since(now + plan.last_take));
            taking = Some(Box::pin(async move {
                tokio::time::sleep(pause).await;
                queue.take(room, wait).await
            }));
        }
        if held.is_empty() && taking.is_none() {
            break;
        }
        tokio::select! {
            Some(end) = held.next(), if !held.is_empty() => match end {
                Ended::HandBack(request) => back.push(request),
                Ended::Done => {}
                Ended::CutOff => summary.cut_off += 1,
            },
            taken = in_flight(&mut taking) => {
                taking = None;
                match taken {
                    // Nothing held and nothing waiting: a follower with nothing to do
                    // ends; the queue starts another when a request comes.
                    Ok(requests) if requests.is_empty() && held.is_empty() => idle = true,
                    Ok(requests) => {
                        pause = Duration::ZERO;
                        summary.followed += requests.len();
                        held.extend(requests.into_iter().map(bounded));
                        summary.peak = summary.peak.max(held.len());
                    }
                    Err(err) => {
                        summary.take_failures += 1;
                        summary.last_take_error = Some(err.to_string());
                        pause = plan.take_retry;
                    }
                }
            }
            () = tokio::time::sleep_until(plan.until + HAND_BACK_WAIT), if !back.is_empty() => {}
        }
        // Parks go back as soon as a batch is full, or their windows are all over: one
        // slow follow must not hold the others' heartbeats back.
        let overdue = Instant::now() >= plan.until + HAND_BACK_WAIT;
        if back.len() >= TAKE_AT_MOST || (!back.is_empty() && (held.is_empty() || overdue)) {
            summary.handed_back += back.len();
            summary.hand_back_failed += queue.hand_back(std::mem::take(&mut back)).await;
        }
    }
    summary
}

/// How a follow ended, to the follower.
enum Ended {
    HandBack(String),
    Done,
    CutOff,
}

/// A follow cut off at `cut_at` if it has not ended by then.
async fn bounded(follow: impl Future<Output = Option<String>>, cut_at: Instant) -> Ended {
    match tokio::time::timeout_at(cut_at, follow).await {
        Ok(Some(request)) => Ended::HandBack(request),
        Ok(None) => Ended::Done,
        Err(_) => Ended::CutOff,
    }
}

/// How long after the window parks handed back wait for the rest before they go.
const HAND_BACK_WAIT: Duration = Duration::from_secs(1);

/// The take in flight, or never.
async fn in_flight<F: Future + Unpin>(taking: &mut Option<F>) -> F::Output {
    match taking {
        Some(take) => take.await,
        None => std::future::pending().await,
    }
}
