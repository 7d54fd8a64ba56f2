//! The watch, chosen once per remote task (push, follow or off, by the card, the agent's
//! `updates` and how registration goes, with every fallback).

use tracing::warn;

use super::push::{PushToken, push_url};
use super::row::{Watch, WatchMode};
use crate::a2a::{AuthenticationInfo, TaskPushNotificationConfig};
use crate::config::Updates;
use crate::ports::AgentPort;

/// The choice that needs no network call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchPlan {
    Off,
    Follow,
    /// Register a push config; on any failure, follow.
    TryPush,
}

/// `agent` is `None` when the stand-in's agent is not a remote A2A agent.
pub fn plan_watch(
    updates: Option<Updates>,
    card_push: bool,
    push_base_url: Option<&str>,
) -> WatchPlan {
    match updates {
        None | Some(Updates::Off) => WatchPlan::Off,
        Some(Updates::Follow) => WatchPlan::Follow,
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

/// Without streaming there is nothing to follow: a watch that would follow is off
/// (replies and cancels still wake the stand-in).
pub fn fit_to_streaming(watch: Watch, streaming: bool) -> Watch {
    if watch.mode == WatchMode::Follow && !streaming {
        return Watch::off();
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
pub async fn register<A: AgentPort>(
    agent: &A,
    plan: WatchPlan,
    local_task_id: &str,
    remote_task_id: &str,
    push_base_url: Option<&str>,
) -> Watch {
    match plan {
        WatchPlan::Off => return Watch::off(),
        WatchPlan::Follow => return Watch::follow(),
        WatchPlan::TryPush => {}
    }
    let Some(base) = push_base_url else {
        return Watch::follow();
    };
    let url = match push_url(base, local_task_id) {
        Ok(url) => url,
        Err(err) => {
            warn!(task_id = local_task_id, error = %err, "push registration failed; following");
            return Watch::follow();
        }
    };
    let token = PushToken::generate();
    let config = TaskPushNotificationConfig {
        id: Some(config_id(local_task_id)),
        task_id: remote_task_id.to_owned(),
        url,
        token: Some(token.expose().to_owned()),
        // The spec's own mechanism, for senders that ignore `token` (JS SDK).
        authentication: Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: Some(token.expose().to_owned()),
        }),
    };
    match agent.create_push_config(&config).await {
        Ok(created) => Watch {
            mode: WatchMode::Push,
            config_id: Some(
                created
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| config_id(local_task_id)),
            ),
            token_digest: Some(token.digest()),
        },
        Err(err) => {
            warn!(
                task_id = local_task_id,
                error_kind = error_kind(&err),
                "push registration failed; following"
            );
            Watch::follow()
        }
    }
}

fn error_kind(err: &crate::a2a::A2aError) -> &'static str {
    use crate::a2a::A2aError as E;
    match err {
        E::TaskNotFound(_) => "task_not_found",
        E::TaskNotCancelable(_) => "task_not_cancelable",
        E::PushNotSupported(_) => "push_not_supported",
        E::UnsupportedOperation(_) => "unsupported_operation",
        E::VersionNotSupported(_) => "version_not_supported",
        E::Rpc { .. } => "rpc_error",
        E::Http { .. } => "http_error",
        E::Transport(_) => "transport",
        E::Timeout { .. } => "timeout",
        E::InvalidResponse(_) => "invalid_response",
        E::Card(_) => "card",
        E::TooLarge { .. } => "too_large",
        E::Refused(_) => "refused",
    }
}
