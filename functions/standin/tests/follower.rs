//! The multiplexed follower: it holds many follows at once, fills up from the follow
//! queue while it has room and time, never loses a request it took, and hands back
//! what still stands at its window's end.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use standin::follow::follower::{self, FollowRequests, Plan, RequestsError};
use standin::follow::memory::MemoryFollowRequests;
use tokio::time::Instant;

fn plan(capacity: usize, window: Duration) -> Plan {
    Plan {
        capacity,
        until: Instant::now() + window,
        take_wait: Duration::from_secs(20),
        last_take: Duration::from_secs(5),
        take_retry: Duration::from_secs(1),
        straggle: Duration::from_secs(30),
    }
}

fn requests(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A follow that holds its request until the window's end and hands it back.
async fn held_until(request: String, until: Instant) -> Option<String> {
    tokio::time::sleep_until(until).await;
    Some(request)
}

#[tokio::test(start_paused = true)]
async fn one_follower_fills_up_to_its_capacity_from_the_queue_and_hands_all_back() {
    let queue = MemoryFollowRequests::default();
    for r in requests("q", 130) {
        queue.put(r);
    }
    let plan = plan(100, Duration::from_secs(600));
    let summary = follower::multiplex(&queue, requests("first", 10), plan, |r| {
        held_until(r, plan.until)
    })
    .await;
    assert_eq!(summary.followed, 100);
    assert_eq!(summary.peak, 100, "one invocation held a hundred follows");
    assert_eq!(summary.handed_back, 100);
    assert_eq!(queue.handed_back().len(), 100);
    assert_eq!(
        queue.waiting(),
        40,
        "past its capacity a follower takes nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn a_follow_that_ends_makes_room_for_the_next_request() {
    let queue = MemoryFollowRequests::default();
    for r in requests("q", 6) {
        queue.put(r);
    }
    let plan = plan(2, Duration::from_secs(600));
    let ran = AtomicUsize::new(0);
    let summary = follower::multiplex(&queue, Vec::new(), plan, |_r| {
        ran.fetch_add(1, Ordering::SeqCst);
        async {
            // A change heard: the follow reports and ends; nothing to hand back.
            tokio::time::sleep(Duration::from_secs(3)).await;
            None
        }
    })
    .await;
    assert_eq!(ran.load(Ordering::SeqCst), 6);
    assert_eq!(summary.followed, 6);
    assert_eq!(summary.peak, 2, "never more than its capacity");
    assert_eq!(summary.handed_back, 0);
    assert_eq!(queue.waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_take_under_way_when_a_follow_ends_is_not_dropped() {
    // The take has the request off the queue and its answer is on its way when the
    // first follow ends: dropping the take then would lose the request for good.
    let queue = MemoryFollowRequests::default();
    queue.delay_answers(Duration::from_secs(2));
    queue.put("in flight");
    let plan = plan(10, Duration::from_secs(120));
    let summary = follower::multiplex(&queue, vec!["early".into()], plan, |r| async move {
        if r == "early" {
            tokio::time::sleep(Duration::from_secs(1)).await;
            None
        } else {
            tokio::time::sleep_until(plan.until).await;
            Some(r)
        }
    })
    .await;
    assert_eq!(summary.followed, 2);
    assert_eq!(queue.handed_back(), vec!["in flight".to_owned()]);
}

#[tokio::test(start_paused = true)]
async fn parks_go_back_without_waiting_for_a_straggler_and_a_stuck_follow_is_cut_off() {
    let queue = MemoryFollowRequests::default();
    let plan = plan(10, Duration::from_secs(60));
    let first = requests("p", 3)
        .into_iter()
        .chain(["stuck".to_owned()])
        .collect();
    let summary = follower::multiplex(&queue, first, plan, |r| async move {
        if r == "stuck" {
            // A report that never returns.
            std::future::pending::<()>().await;
        }
        tokio::time::sleep_until(plan.until).await;
        Some(r)
    })
    .await;
    assert_eq!(
        summary.cut_off, 1,
        "the stuck follow is cut off at its straggle"
    );
    assert_eq!(summary.handed_back, 3);
    assert_eq!(queue.handed_back().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_follower_with_nothing_to_follow_ends() {
    let queue = MemoryFollowRequests::default();
    let plan = plan(10, Duration::from_secs(600));
    let started = Instant::now();
    let summary =
        follower::multiplex(&queue, Vec::new(), plan, |r| held_until(r, plan.until)).await;
    assert_eq!(summary.followed, 0);
    assert_eq!(queue.takes(), 1, "one empty take, then it ends");
    assert!(
        started.elapsed() <= Duration::from_secs(21),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn nothing_is_taken_near_the_window_end() {
    let queue = MemoryFollowRequests::default();
    let plan = plan(10, Duration::from_secs(4));
    queue.put("would be handed back at once");
    let summary = follower::multiplex(&queue, vec!["held".into()], plan, |r| {
        held_until(r, plan.until)
    })
    .await;
    assert_eq!(summary.followed, 1);
    assert_eq!(queue.waiting(), 1, "left for a follower with time for it");
    assert_eq!(queue.takes(), 0);
}

/// A follow queue that does not answer its first takes.
struct Flaky {
    failures_left: AtomicUsize,
    inner: MemoryFollowRequests,
}

impl FollowRequests for Flaky {
    async fn take(&self, at_most: usize, wait: Duration) -> Result<Vec<String>, RequestsError> {
        if self
            .failures_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(RequestsError("throttled".into()));
        }
        self.inner.take(at_most, wait).await
    }

    async fn hand_back(&self, requests: Vec<String>) -> usize {
        self.inner.hand_back(requests).await
    }
}

#[tokio::test(start_paused = true)]
async fn takes_the_queue_refuses_are_tried_again_and_counted() {
    let queue = Flaky {
        failures_left: AtomicUsize::new(3),
        inner: MemoryFollowRequests::default(),
    };
    queue.inner.put("after the throttle");
    let plan = plan(10, Duration::from_secs(60));
    let summary =
        follower::multiplex(&queue, Vec::new(), plan, |r| held_until(r, plan.until)).await;
    assert_eq!(summary.take_failures, 3);
    assert_eq!(
        summary.last_take_error.as_deref(),
        Some("follow queue unavailable: throttled")
    );
    assert_eq!(summary.followed, 1);
    assert_eq!(
        queue.inner.handed_back(),
        vec!["after the throttle".to_owned()]
    );
}
