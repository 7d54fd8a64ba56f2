//! The watch, chosen once per remote task (push, follow, poll or off, by the card, the
//! agent's `updates` and how registration goes, with every fallback).

use tracing::warn;

use crate::agents::Updates;
use crate::push::{PushToken, push_url};
use crate::row::{Watch, WatchMode};
use standin_remote::{Agent, PushRequest};

/// The choice that needs no network call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchPlan {
    Off,
    Follow,
    Poll,
    /// Register a push config; on any failure, follow.
    TryPush,
}

/// `updates` is `None` when the stand-in's agent is not a remote A2A agent; push is tried
/// only when the card offers it and the stack has a push URL.
pub fn plan_watch(
    updates: Option<Updates>,
    card_push: bool,
    push_base_url: Option<&str>,
) -> WatchPlan {
    match updates {
        None | Some(Updates::Off) => WatchPlan::Off,
        Some(Updates::Follow) => WatchPlan::Follow,
        Some(Updates::Poll) => WatchPlan::Poll,
        Some(Updates::Auto) if card_push && push_base_url.is_some() => WatchPlan::TryPush,
        Some(Updates::Auto) => WatchPlan::Follow,
    }
}

/// An agent that cannot stream cannot be followed: `updates = "follow"` on it is a
/// configuration error, said before the first turn rather than found as a loop later.
pub fn misconfigured(agent_id: &str, updates: Updates, streaming: bool) -> Option<String> {
    (updates == Updates::Follow && !streaming).then(|| {
        format!(
            "configuration: agent {agent_id:?} has updates = \"follow\", but its card says it cannot stream (capabilities.streaming is false); set updates to \"auto\" or \"off\""
        )
    })
}

/// Without streaming there is nothing to follow: a watch that would follow polls
/// instead (GetTask at growing intervals).
pub fn fit_to_streaming(watch: Watch, streaming: bool) -> Watch {
    if watch.mode == WatchMode::Follow && !streaming {
        return Watch::poll();
    }
    watch
}

/// Our own config id: one per stand-in, so a re-registration replaces, never adds.
pub fn config_id(local_task_id: &str) -> String {
    format!("standin-{local_task_id}")
}

/// Registers push when the plan says so. The token lives only in this function: the agent
/// gets it, the caller gets its digest. Any failure falls back to follow, logged with the
/// error's kind only (its text could echo the request).
pub async fn register<A: Agent>(
    agent: &A,
    plan: WatchPlan,
    local_task_id: &str,
    remote_task_id: &str,
    push_base_url: Option<&str>,
) -> Watch {
    let base = match (plan, push_base_url) {
        (WatchPlan::Off, _) => return Watch::off(),
        (WatchPlan::Poll, _) => return Watch::poll(),
        (WatchPlan::TryPush, Some(base)) => base,
        (WatchPlan::Follow | WatchPlan::TryPush, _) => return Watch::follow(),
    };
    let url = match push_url(base, local_task_id) {
        Ok(url) => url,
        Err(err) => {
            warn!(task_id = local_task_id, error = %err, "push registration failed; following");
            return Watch::follow();
        }
    };
    let token = PushToken::generate();
    let request = PushRequest {
        remote_task_id: remote_task_id.to_owned(),
        config_id: config_id(local_task_id),
        url,
        token: token.expose().to_owned(),
    };
    match agent.register_push(&request).await {
        Ok(kept_as) => Watch {
            mode: WatchMode::Push,
            config_id: Some(kept_as.unwrap_or(request.config_id)),
            token_digest: Some(token.digest()),
        },
        Err(err) => {
            warn!(
                task_id = local_task_id,
                error_kind = err.kind(),
                "push registration failed; following"
            );
            Watch::follow()
        }
    }
}
