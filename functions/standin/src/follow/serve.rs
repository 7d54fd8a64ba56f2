//! The follow function's invocation, whole: the batch it was invoked with and the parks
//! it takes meanwhile (`follower`), each request read (`requests`) and its park followed
//! until the window's end (`run`), then handed back. The wiring gives it its ports once.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::follower::{self, FollowRequests};
use super::{FollowEnd, FollowTiming, Park, WindowEnd};
use crate::doorbell::Doorbell;
use crate::row::RowStore;
use crate::steps::{Invocation, ParkInput, StepError};
use standin_remote::Agent;

/// What a follower runs on.
pub trait FollowPorts: Sync + 'static {
    type Rows: RowStore + 'static;
    type Bell: Doorbell;
    type Agent: Agent + 'static;
    type Requests: FollowRequests;

    fn requests(&self) -> &Self::Requests;
    fn bell(&self) -> &Self::Bell;
    fn capacity(&self) -> usize;
    fn heartbeat(&self) -> Duration;
    /// Stand-in `task_id`'s view for one followed park (`steps::Invocation`).
    fn invocation(
        &'static self,
        task_id: &str,
        agent: &str,
    ) -> impl Future<Output = Result<Invocation<'static, Self::Rows, Self::Agent>, StepError>> + Send;
}

/// The longest one take from the follow queue waits (SQS's longest long poll).
const TAKE_WAIT: Duration = Duration::from_secs(20);
/// No new park this close to the window's end: it would be handed back at once.
const LAST_TAKE: Duration = Duration::from_secs(5);
const TAKE_RETRY: Duration = Duration::from_secs(1);
/// How long past the window a follow may take to end (a report under way) before it is
/// cut off; within the function's last minute.
const STRAGGLE: Duration = Duration::from_secs(30);

/// Follows `first` and what the follower takes meanwhile until `until`; what it did.
pub async fn follower<P: FollowPorts>(
    ports: &'static P,
    first: Vec<String>,
    until: Instant,
) -> Value {
    let plan = follower::Plan {
        capacity: ports.capacity(),
        until,
        take_wait: TAKE_WAIT,
        last_take: LAST_TAKE,
        take_retry: TAKE_RETRY,
        straggle: STRAGGLE,
    };
    let held = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let summary = follower::multiplex(ports.requests(), first, plan, |request| {
        if let Some(id) = super::requests::task_id(&request) {
            held.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(id);
        }
        async move {
            let follow = |park, hop| follow_one(ports, park, hop, until);
            super::requests::follow_request(ports.bell(), &request, follow).await
        }
    })
    .await;
    let task_ids = held
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .collect::<Vec<_>>()
        .join(",");
    if let Some(error) = &summary.last_take_error {
        tracing::warn!(
            task_ids,
            failures = summary.take_failures,
            error,
            "taking follow requests failed; the follower tried again"
        );
    }
    tracing::info!(
        task_ids,
        followed = summary.followed,
        peak = summary.peak,
        handed_back = summary.handed_back,
        hand_back_failed = summary.hand_back_failed,
        "follower done"
    );
    json!({
        "followed": summary.followed,
        "peak": summary.peak,
        "handed_back": summary.handed_back,
        "hand_back_failed": summary.hand_back_failed,
    })
}

/// One followed park: reach the agent, follow until `until`, hand the park back if it
/// heard nothing.
async fn follow_one<P: FollowPorts>(
    ports: &'static P,
    input: ParkInput,
    hop: u64,
    until: Instant,
) -> Result<FollowEnd, StepError> {
    let invocation = ports.invocation(&input.task_id, &input.agent).await?;
    let interval = invocation.spec.as_ref().map(|s| s.follow_interval);
    let timing = FollowTiming {
        window: until.saturating_duration_since(Instant::now()),
        ends_by: Some(until),
        interval: interval.unwrap_or(crate::agents::DEFAULT_FOLLOW_INTERVAL),
        heartbeat: ports.heartbeat(),
        at_window_end: WindowEnd::HandBack,
    };
    let park = Park {
        task_id: &input.task_id,
        number: input.park,
        token: &input.token,
        owner: input.owner(),
        hop,
    };
    let end = super::run(&invocation, ports.bell(), &park, timing).await?;
    invocation.finish().await;
    Ok(end)
}
