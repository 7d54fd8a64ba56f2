//! Credentials through the connector and the client: on the card and every call, read
//! afresh once on a refusal, the card's requirements, the extended card.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::replay::*;
use crate::a2a::client::{AgentClient, http_client};
use crate::auth::{Credentials, Scheme};
use crate::connector::{Connector, Reach};
use crate::error::RemoteError;

const TASK: &str = "3f36680c-e0a2-4b2e-9d5e-2f1a7b6b3c10";

/// A bearer token that changes each time it is renewed: `v0`, then `v1`...
pub(super) struct Rotating {
    version: AtomicUsize,
    renewals_left: AtomicUsize,
}

impl Rotating {
    pub(super) fn new(renewals: usize) -> Arc<Self> {
        Arc::new(Self {
            version: AtomicUsize::new(0),
            renewals_left: AtomicUsize::new(renewals),
        })
    }
}

impl Credentials for Rotating {
    fn scheme(&self) -> Scheme {
        Scheme::Bearer
    }
    fn authorize<'a>(
        &'a self,
        request: &'a mut reqwest::Request,
    ) -> BoxFuture<'a, Result<(), RemoteError>> {
        Box::pin(async move {
            let value = format!("Bearer v{}", self.version.load(Ordering::SeqCst));
            request
                .headers_mut()
                .insert("authorization", value.parse().unwrap());
            Ok(())
        })
    }
    fn renew(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let left = self.renewals_left.load(Ordering::SeqCst);
            if left == 0 {
                return false;
            }
            self.renewals_left.store(left - 1, Ordering::SeqCst);
            self.version.fetch_add(1, Ordering::SeqCst);
            true
        })
    }
}

fn card(edit: impl FnOnce(&mut Value)) -> Reply {
    let mut card = fixture("a_jsonrpc_main/01_get_agent_card.json")["response"]["body"].clone();
    edit(&mut card);
    json_reply(200, card)
}

fn unauthorized() -> Reply {
    json_reply(401, json!({"error": "unauthorized"}))
}

async fn connect(
    server: &ReplayServer,
    credentials: Option<Arc<dyn Credentials>>,
) -> Result<AgentClient, RemoteError> {
    let reach = Reach {
        credentials,
        ..crate::connector::tests::reach(&server.base, true)
    };
    Connector::new(crate::tls::Roots::built_in(), http_client().unwrap())
        .connect("billing", reach)
        .await
}

#[tokio::test]
async fn the_card_and_every_call_carry_the_credentials_and_a_refusal_reads_them_afresh_once() {
    let server = ReplayServer::start(vec![
        unauthorized(),
        card(|_| {}),
        unauthorized(),
        captured("a_jsonrpc_main/03_get_task_input_required.json"),
    ])
    .await;
    let client = connect(&server, Some(Rotating::new(5)))
        .await
        .expect("card");
    client.get_task(TASK).await.expect("task");
    let sent: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        sent,
        ["Bearer v0", "Bearer v1", "Bearer v1", "Bearer v2"].map(|v| Some(v.to_owned())),
        "each refusal renews once and the call is sent again"
    );
}

#[tokio::test]
async fn a_refusal_that_fresh_credentials_do_not_cure_names_the_scheme() {
    let server = ReplayServer::start(vec![
        card(|_| {}),
        unauthorized(),
        json_reply(403, json!({})),
    ])
    .await;
    let client = connect(&server, Some(Rotating::new(5)))
        .await
        .expect("card");
    let err = client.get_task(TASK).await.expect_err("refused");
    assert_eq!(
        err,
        RemoteError::Unauthorized {
            status: 403,
            scheme: Some(Scheme::Bearer)
        }
    );
    assert!(
        err.to_string().contains("(auth.type bearer, HTTP 403)"),
        "{err}"
    );
    assert_eq!(
        standin_wire::scrub::scrub(&err.to_string()),
        err.to_string()
    );
    assert_eq!(server.requests().len(), 3, "renewed once, not again");
}

#[tokio::test]
async fn an_agent_that_asks_for_credentials_where_none_are_configured_says_to_configure_auth() {
    let server = ReplayServer::start(vec![unauthorized()]).await;
    let err = connect(&server, None).await.err().expect("refused");
    assert_eq!(
        err,
        RemoteError::Unauthorized {
            status: 401,
            scheme: None
        }
    );
    assert!(err.to_string().contains("configure its auth"), "{err}");
}

#[tokio::test]
async fn a_card_requiring_a_scheme_that_is_not_configured_is_refused_before_any_call() {
    let requires_key = |c: &mut Value| {
        c["securitySchemes"] =
            json!({"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}});
        c["securityRequirements"] = json!([{"schemes": {"key": {"list": []}}}]);
    };
    let server = ReplayServer::start(vec![card(requires_key)]).await;
    let err = connect(&server, None).await.err().expect("refused");
    let RemoteError::AuthNotConfigured(line) = &err else {
        panic!("{err:?}")
    };
    assert!(
        line.contains("\"billing\"") && line.contains("\"key\""),
        "{line}"
    );
    assert!(line.contains("auth.type to api_key,"), "{line}");
    assert_eq!(server.requests().len(), 1, "only the card was read");

    let server = ReplayServer::start(vec![card(requires_key)]).await;
    let err = connect(&server, Some(Rotating::new(0)))
        .await
        .err()
        .expect("a bearer is no API key");
    assert!(matches!(err, RemoteError::AuthNotConfigured(_)), "{err:?}");
}

#[tokio::test]
async fn the_extended_card_replaces_the_public_one_for_an_authenticated_caller() {
    let server = ReplayServer::start(vec![
        card(|c| c["capabilities"]["extendedAgentCard"] = json!(true)),
        // GetExtendedAgentCard: the fuller card moves the interface to /private.
        Reply::Json {
            status: 200,
            content_type: "application/json".into(),
            body: {
                let mut fuller =
                    fixture("a_jsonrpc_main/01_get_agent_card.json")["response"]["body"].clone();
                let url = fuller["supportedInterfaces"][0]["url"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                fuller["supportedInterfaces"][0]["url"] = json!(format!("{url}private"));
                json!({"jsonrpc": "2.0", "id": "x", "result": fuller})
                    .to_string()
                    .into_bytes()
            },
        },
        captured("a_jsonrpc_main/03_get_task_input_required.json"),
    ])
    .await;
    let client = connect(&server, Some(Rotating::new(0)))
        .await
        .expect("card");
    client.get_task(TASK).await.expect("task");
    let requests = server.requests();
    assert_eq!(requests[1].json()["method"], "GetExtendedAgentCard");
    assert_eq!(requests[1].header("authorization"), Some("Bearer v0"));
    assert!(
        requests[2].target.ends_with("/private"),
        "{}",
        requests[2].target
    );
}

#[tokio::test]
async fn without_credentials_the_extended_card_is_not_asked_for() {
    let server = ReplayServer::start(vec![
        card(|c| c["capabilities"]["extendedAgentCard"] = json!(true)),
        captured("a_jsonrpc_main/03_get_task_input_required.json"),
    ])
    .await;
    let client = connect(&server, None).await.expect("card");
    client.get_task(TASK).await.expect("task");
    assert_eq!(server.requests()[1].json()["method"], "GetTask");
}
