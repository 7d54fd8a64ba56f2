//! The push receiver (docs/architecture.md): a doorbell check in a fixed order (413 → 401
//! → 400 → 401 / 204). Nothing from the body is applied; a refusal writes nothing and rings
//! nothing, and every 401 looks the same. A body over 64 KiB is refused (413) first, unless
//! it comes with the stand-in's own token: a 0.3 agent pushes the whole task, history and
//! artifacts included, and a genuine push must not be lost to its size. Such a body is not
//! read at all; the ring claims no state and the wake asks GetTask, as after any push.

use crate::metrics::Metric;
use http::HeaderMap;
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use tracing::info;

use super::door::Door;
use super::hearer::{Hearer, NoHearer};
use super::token::truncate_for_log;
use crate::digest::TokenDigest;
use crate::doorbell::{Doorbell, ring};
use crate::row::{Guard, Row, RowStore, StoreError, WakeEvent, WatchMode};
use standin_wire::TaskState;

pub const MAX_PUSH_BYTES: usize = 64 * 1024;
pub const TOKEN_HEADER: &str = "x-a2a-notification-token";
/// The Rust SDK's spelling of the token header.
pub const RUST_SDK_TOKEN_HEADER: &str = "a2a-notification-token";

/// Why a push was refused; the category is logged, never the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    TooLarge,
    NoToken,
    BadBody(&'static str),
    /// Row missing, closed, not push, digest or remote id differs: one answer for all.
    NotAccepted(&'static str),
}

impl Refusal {
    pub fn status(self) -> u16 {
        match self {
            Self::TooLarge => 413,
            Self::NoToken | Self::NotAccepted(_) => 401,
            Self::BadBody(_) => 400,
        }
    }

    pub fn category(self) -> &'static str {
        match self {
            Self::TooLarge => "too_large",
            Self::NoToken => "no_token",
            Self::BadBody(c) | Self::NotAccepted(c) => c,
        }
    }

    /// The body sent back. Every 401 carries the same one.
    pub fn body(self) -> &'static str {
        match self {
            Self::TooLarge => r#"{"error":"push body too large"}"#,
            Self::NoToken | Self::NotAccepted(_) => r#"{"error":"push not accepted"}"#,
            Self::BadBody(_) => r#"{"error":"push body is not an A2A StreamResponse"}"#,
        }
    }
}

/// A push that passed the checks that need no row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedPush {
    pub digest: TokenDigest,
    pub remote_task_id: String,
    /// The state the body claims, read like a check: a hint for rechecks only.
    pub claimed: Option<TaskState>,
}

/// The HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushResponse {
    pub status: u16,
    pub body: &'static str,
}

impl PushResponse {
    const ACCEPTED: Self = Self {
        status: 204,
        body: "",
    };

    fn refused(task_id: &str, refusal: Refusal) -> Self {
        count_refused(refusal.category(), task_id);
        info!(
            task_id = %truncate_for_log(task_id),
            category = refusal.category(),
            status = refusal.status(),
            "push refused"
        );
        Self {
            status: refusal.status(),
            body: refusal.body(),
        }
    }
}

/// Steps 1–3: size, token, body. Content-Length is checked before the body is read.
pub fn declared_too_large(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > MAX_PUSH_BYTES as u64)
}

/// The token from each header real senders use: `X-A2A-Notification-Token` (the Python
/// and JS SDKs), `A2A-Notification-Token` (the Rust SDK), `Authorization: Bearer`.
pub fn presented_token(headers: &HeaderMap) -> Option<&str> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|t| !t.is_empty())
    };
    let from_header = header(TOKEN_HEADER).or_else(|| header(RUST_SDK_TOKEN_HEADER));
    from_header.or_else(|| {
        let auth = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
        let (scheme, value) = auth.split_once(' ')?;
        let value = value.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !value.is_empty()).then_some(value)
    })
}

fn json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        // Some senders leave it out; the body still has to parse.
        return true;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let media = value.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/json")
        || media.eq_ignore_ascii_case("application/a2a+json")
}

pub fn precheck(headers: &HeaderMap, body: &[u8]) -> Result<CheckedPush, Refusal> {
    if declared_too_large(headers) || body.len() > MAX_PUSH_BYTES {
        return Err(Refusal::TooLarge);
    }
    let token = presented_token(headers).ok_or(Refusal::NoToken)?;
    if !json_content_type(headers) {
        return Err(Refusal::BadBody("content_type"));
    }
    let standin_remote::PushClaim {
        remote_task_id,
        claimed,
    } = standin_remote::read_push(body).map_err(|e| Refusal::BadBody(e.reason()))?;
    Ok(CheckedPush {
        digest: TokenDigest::of(token),
        remote_task_id,
        claimed,
    })
}

/// Step 4, on the row as read: every check, one refusal.
pub fn authorize(row: Option<&Row>, push: &CheckedPush) -> Result<(), Refusal> {
    let row = row.ok_or(Refusal::NotAccepted("unknown_task"))?;
    if row.closed {
        return Err(Refusal::NotAccepted("closed"));
    }
    let watch = row
        .watch
        .as_ref()
        .filter(|w| w.mode == WatchMode::Push)
        .ok_or(Refusal::NotAccepted("not_push"))?;
    let digest_ok = watch
        .token_digest
        .as_ref()
        .is_some_and(|stored| stored.matches(&push.digest));
    if !digest_ok {
        return Err(Refusal::NotAccepted("bad_token"));
    }
    if row.remote_task_id.as_deref() != Some(push.remote_task_id.as_str()) {
        return Err(Refusal::NotAccepted("other_task"));
    }
    Ok(())
}

/// The receiver with no hearer: every push that passes rings the park.
pub async fn receive<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> PushResponse {
    receive_heard(store, bell, &NoHearer, task_id, headers, body).await
}

/// The whole receiver: the body's checks, then the conditional write whose condition is
/// every check `authorize` makes (so a concurrent close wins). With a hearer, that write
/// claims a hearing and the push is heard before it is answered (`door`); else, or when the
/// hearing does not tell it, the push is recorded and the park rung. A push that passes
/// costs that one write first; the row is read only to say why one was refused (unwritten).
pub async fn receive_heard<S: RowStore, D: Doorbell, H: Hearer>(
    store: &S,
    bell: &D,
    hearer: &H,
    task_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> PushResponse {
    let push = match precheck(headers, body) {
        Ok(push) => push,
        Err(Refusal::TooLarge) => match presented_token(headers) {
            Some(token) if super::token::looks_like_ours(token) => {
                return receive_oversized(store, bell, task_id, TokenDigest::of(token)).await;
            }
            _ => return PushResponse::refused(task_id, Refusal::TooLarge),
        },
        Err(refusal) => return PushResponse::refused(task_id, refusal),
    };
    let guard = Guard::Push {
        digest: push.digest.clone(),
        remote_task_id: push.remote_task_id.clone(),
    };
    let (event, admitted, rung_by_the_door) = if hearer.hears() {
        match super::door::hear_first(store, hearer, task_id, &guard, push.claimed).await {
            Ok(Door::Told) => return accepted(task_id),
            Ok(Door::Ring {
                event,
                admitted,
                why,
            }) => (event, admitted, Some(why)),
            Err(StoreError::Refused(_) | StoreError::NotFound(_)) => {
                return why_refused(store, task_id, &push).await;
            }
            Err(err) => return store_failure(task_id, &err),
        }
    } else {
        let claimed = push.claimed;
        (WakeEvent::Push { claimed }, false, None)
    };
    match ring(store, bell, task_id, &event, &guard).await {
        Ok(_) => {
            if let Some(why) = rung_by_the_door {
                info!(task_id = %truncate_for_log(task_id), "{why}; the park is rung");
            }
            accepted(task_id)
        }
        Err(StoreError::Refused(_) | StoreError::NotFound(_)) if admitted => {
            // The claim found the push the stand-in's, and the row moved on since (its
            // hearing closed it, a cancel ended it): a 401 would call a true push forged.
            info!(task_id, "the row moved on after the push was admitted");
            accepted(task_id)
        }
        Err(StoreError::Refused(_) | StoreError::NotFound(_)) => {
            why_refused(store, task_id, &push).await
        }
        Err(err) => store_failure(task_id, &err),
    }
}

fn count_refused(category: &str, task_id: &str) {
    let task_id = Some(truncate_for_log(task_id));
    crate::metrics::record(Metric::PushesRefused, 1.0, Some(category), task_id);
}

fn accepted(task_id: &str) -> PushResponse {
    crate::metrics::record(Metric::PushesAccepted, 1.0, None, Some(task_id));
    PushResponse::ACCEPTED
}

/// A push the write's condition refused: the row as it is now says why (a row that now
/// admits it moved between the write and this read).
async fn why_refused<S: RowStore>(store: &S, task_id: &str, push: &CheckedPush) -> PushResponse {
    match store.get(task_id).await {
        Ok(row) => match authorize(row.as_ref(), push) {
            Err(refusal) => PushResponse::refused(task_id, refusal),
            Ok(()) => PushResponse::refused(task_id, Refusal::NotAccepted("lost_race")),
        },
        Err(err) => store_failure(task_id, &err),
    }
}

/// A body too large to read, with a token shaped like ours: it rings only if the token is
/// this stand-in's, for the remote task the row watches; anyone else still gets the 413.
async fn receive_oversized<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    digest: TokenDigest,
) -> PushResponse {
    let row = match store.get(task_id).await {
        Ok(row) => row,
        Err(err) => return store_failure(task_id, &err),
    };
    let remote_task_id = row
        .as_ref()
        .and_then(|r| r.remote_task_id.clone())
        .unwrap_or_default();
    let push = CheckedPush {
        digest,
        remote_task_id,
        claimed: None,
    };
    if authorize(row.as_ref(), &push).is_err() {
        return PushResponse::refused(task_id, Refusal::TooLarge);
    }
    let guard = Guard::Push {
        digest: push.digest,
        remote_task_id: push.remote_task_id,
    };
    let unclaimed = WakeEvent::Push { claimed: None };
    match ring(store, bell, task_id, &unclaimed, &guard).await {
        Ok(_) => accepted(task_id),
        Err(StoreError::Refused(_) | StoreError::NotFound(_)) => {
            PushResponse::refused(task_id, Refusal::TooLarge)
        }
        Err(err) => store_failure(task_id, &err),
    }
}

/// The store is down: 503 so a sender that retries may try again; nothing was written.
fn store_failure(task_id: &str, err: &StoreError) -> PushResponse {
    count_refused("store_failed", task_id);
    tracing::error!(task_id = %truncate_for_log(task_id), error = %err, "push not recorded");
    PushResponse {
        status: 503,
        body: r#"{"error":"try again later"}"#,
    }
}
