//! A follow request as a follower takes it from the follow queue: read it, beat a
//! handed-on park before anything slow, follow it, and hand it on to the next follower
//! (`hop` + 1) while its park still stands. A request that does not read is dropped:
//! its park's heartbeat timeout wakes the stand-in, which follows again.

use std::fmt::Display;
use std::future::Future;

use serde::Deserialize;
use serde_json::{Value, json};
use tracing::Instrument;

use super::FollowEnd;
use crate::doorbell::{Doorbell, DoorbellError};
use crate::steps::ParkInput;

/// One follow request: the park, and how many followers handed it on.
#[derive(Deserialize)]
struct FollowRequest {
    #[serde(flatten)]
    park: ParkInput,
    #[serde(default)]
    hop: u64,
}

/// Follows one request with `follow`, in a span naming its stand-in; the request to hand
/// back if its park still stands.
pub async fn follow_request<D, F, Fut, E>(bell: &D, request: &str, follow: F) -> Option<String>
where
    D: Doorbell,
    F: FnOnce(ParkInput, u64) -> Fut,
    Fut: Future<Output = Result<FollowEnd, E>>,
    E: Display,
{
    let value: Value = match serde_json::from_str(request) {
        Ok(value) => value,
        Err(err) => {
            tracing::error!(error = %err, "a follow request that is not JSON is dropped");
            return None;
        }
    };
    let span = tracing::info_span!("invocation", task_id = value["task_id"].as_str());
    async move {
        let FollowRequest { park, hop } = match serde_json::from_value(value.clone()) {
            Ok(parsed) => parsed,
            Err(err) => {
                tracing::error!(error = %err, "a follow request that does not read is dropped");
                return None;
            }
        };
        if hop > 0 {
            // Its last beat was in the follower before, which ended up to a heartbeat
            // ago: beat before anything else (the row, the agent's card) takes time.
            if let Err(DoorbellError::ParkOver) = bell.heartbeat(&park.token).await {
                tracing::info!("a handed-on park was over before it was taken");
                return None;
            }
        }
        match follow(park, hop).await {
            Ok(FollowEnd::HandedBack) => {
                let mut back = value;
                back["hop"] = json!(hop + 1);
                Some(back.to_string())
            }
            Ok(end) => {
                tracing::info!(end = ?end, "follow ended");
                None
            }
            Err(failure) => {
                // The park's heartbeat timeout wakes the stand-in, which follows again.
                tracing::warn!(error = %failure, "follow failed");
                None
            }
        }
    }
    .instrument(span)
    .await
}

/// The stand-ins follow requests name, for the follower's span.
pub fn task_ids(requests: &[String]) -> Vec<String> {
    requests.iter().filter_map(|r| task_id(r)).collect()
}

/// The stand-in a follow request names, read without reading the rest.
pub fn task_id(request: &str) -> Option<String> {
    serde_json::from_str::<Value>(request)
        .ok()
        .and_then(|v| v["task_id"].as_str().map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doorbell::memory::MemoryDoorbell;

    const REQUEST: &str = r#"{"task_id":"s-1","agent":"a","park":3,"token":"tok","hop":2}"#;

    async fn run(
        bell: &MemoryDoorbell,
        request: &str,
        end: Result<FollowEnd, &str>,
    ) -> (Option<String>, Vec<(String, u64)>) {
        let followed = std::sync::Mutex::new(Vec::new());
        let back = follow_request(bell, request, |park, hop| {
            followed.lock().unwrap().push((park.task_id.clone(), hop));
            async move { end }
        })
        .await;
        (back, followed.into_inner().unwrap())
    }

    #[tokio::test]
    async fn a_park_handed_on_is_beaten_first_and_handed_on_again_one_hop_further() {
        let bell = MemoryDoorbell::new();
        let (back, followed) = run(&bell, REQUEST, Ok(FollowEnd::HandedBack)).await;
        assert_eq!(bell.heartbeats(), ["tok"]);
        assert_eq!(followed, [("s-1".to_owned(), 2)]);
        let back: Value = serde_json::from_str(&back.expect("handed back")).unwrap();
        assert_eq!(back["hop"], 3);
        assert_eq!(
            back["token"], "tok",
            "the rest of the request goes on as it came"
        );
    }

    #[tokio::test]
    async fn a_first_request_is_not_beaten_and_a_follow_that_ended_or_failed_is_not_handed_on() {
        let bell = MemoryDoorbell::new();
        let first = r#"{"task_id":"s-1","park":3,"token":"tok"}"#;
        let (back, followed) = run(&bell, first, Ok(FollowEnd::Fenced)).await;
        assert_eq!((back, followed.len()), (None, 1));
        assert!(
            bell.heartbeats().is_empty(),
            "its park's own follow beats it"
        );
        let (back, _) = run(&bell, first, Err("the row store is down")).await;
        assert_eq!(back, None);
    }

    #[tokio::test]
    async fn a_handed_on_park_that_is_over_and_a_request_that_does_not_read_are_dropped() {
        let bell = MemoryDoorbell::new();
        bell.fail_with(Some(DoorbellError::ParkOver));
        let (back, followed) = run(&bell, REQUEST, Ok(FollowEnd::HandedBack)).await;
        assert_eq!((back, followed.len()), (None, 0));
        bell.fail_with(None);
        for unreadable in ["not json", r#"{"task_id":"s-1"}"#] {
            let (back, followed) = run(&bell, unreadable, Ok(FollowEnd::HandedBack)).await;
            assert_eq!((back, followed.len()), (None, 0), "{unreadable}");
        }
        assert_eq!(task_ids(&[REQUEST.to_owned(), "nope".to_owned()]), ["s-1"]);
    }
}
