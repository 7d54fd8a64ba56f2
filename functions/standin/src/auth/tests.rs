#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::secrets::MemorySecrets;
use super::*;

fn keyring(store: &Arc<MemorySecrets>) -> Keyring {
    keyring_where(store, true)
}

/// Roles assumed by a count: each assumption gives keys of their own, named after the
/// role (`AKID-<n>`), as STS would.
#[derive(Default)]
struct CountedRoles {
    assumed: Mutex<Vec<AgentRole>>,
}

impl sigv4::RoleKeys for CountedRoles {
    fn assume<'a>(
        &'a self,
        role: &'a AgentRole,
    ) -> BoxFuture<'a, Result<aws_credential_types::Credentials, RemoteError>> {
        Box::pin(async move {
            let mut assumed = self.assumed.lock().unwrap();
            assumed.push(role.clone());
            let n = assumed.len();
            Ok(aws_credential_types::Credentials::new(
                format!("AKID-{n}"),
                format!("secret-key-of-assumption-{n}"),
                Some(format!("session-token-of-assumption-{n}")),
                Some(std::time::SystemTime::now() + std::time::Duration::from_secs(3600)),
                "test",
            ))
        })
    }
}

/// A keyring on `store` whose SigV4 entries assume roles through `roles`;
/// `allow_private` as the deployment's; AgentCore Runtime at `agentcore` (None: AWS's).
fn keyring_with(
    store: &Arc<MemorySecrets>,
    allow_private: bool,
    roles: Arc<CountedRoles>,
    agentcore: Option<&str>,
) -> Keyring {
    Keyring::new(
        Secrets::new(store.clone()),
        reqwest::Client::new(),
        AgentCoreSigner::new(
            roles,
            Some("us-east-1".into()),
            agentcore.map(str::to_owned),
        ),
        allow_private,
    )
}

/// A keyring on `store`; `allow_private` as the deployment's.
fn keyring_where(store: &Arc<MemorySecrets>, allow_private: bool) -> Keyring {
    keyring_with(store, allow_private, Arc::default(), None)
}

fn spec(value: serde_json::Value) -> AuthSpec {
    AuthSpec::parse("auth", value).expect("valid")
}

async fn authorized(credentials: &dyn Credentials, url: &str) -> reqwest::Request {
    let mut request = reqwest::Client::new()
        .post(url)
        .body("{\"jsonrpc\":\"2.0\"}")
        .build()
        .unwrap();
    credentials
        .authorize(&mut request)
        .await
        .expect("authorized");
    request
}

fn header<'a>(request: &'a reqwest::Request, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn each_secret_scheme_puts_the_secret_where_the_agent_expects_it() {
    let store = Arc::new(MemorySecrets::default());
    store.set("p/key", "k-123");
    store.set("p/basic", r#"{"username": "ann", "password": "pw:1"}"#);
    let ring = keyring(&store);

    let key = ring.credentials(
        "a",
        &spec(json!({"type": "api_key", "in": "header", "name": "X-API-Key", "secret": "p/key"})),
    );
    assert_eq!(key.scheme(), Scheme::ApiKey);
    let request = authorized(key.as_ref(), "http://127.0.0.1:1/").await;
    assert_eq!(header(&request, "x-api-key"), Some("k-123"));
    assert!(request.headers()["x-api-key"].is_sensitive());

    let query = ring.credentials(
        "q",
        &spec(json!({"type": "api_key", "in": "query", "name": "code", "secret": "p/key"})),
    );
    let request = authorized(query.as_ref(), "http://127.0.0.1:1/a?x=1").await;
    assert_eq!(request.url().query(), Some("x=1&code=k-123"));

    let bearer = ring.credentials("b", &spec(json!({"type": "bearer", "secret": "p/key"})));
    let request = authorized(bearer.as_ref(), "http://127.0.0.1:1/").await;
    assert_eq!(header(&request, "authorization"), Some("Bearer k-123"));

    let basic = ring.credentials("c", &spec(json!({"type": "basic", "secret": "p/basic"})));
    let request = authorized(basic.as_ref(), "http://127.0.0.1:1/").await;
    // base64("ann:pw:1")
    assert_eq!(
        header(&request, "authorization"),
        Some("Basic YW5uOnB3OjE=")
    );

    let mtls = ring.credentials("m", &spec(json!({"type": "mtls", "secret": "p/key"})));
    let request = authorized(mtls.as_ref(), "http://127.0.0.1:1/").await;
    assert!(header(&request, "authorization").is_none());
    assert_eq!(
        mtls.identity().await.expect("read").map(|i| i.pem),
        Some(b"k-123".to_vec())
    );
}

#[tokio::test]
async fn a_refusal_reads_a_rotated_secret_and_errors_never_show_a_value() {
    let store = Arc::new(MemorySecrets::default());
    store.set("p/b", "old-value");
    let ring = keyring(&store);
    let bearer = ring.credentials("b", &spec(json!({"type": "bearer", "secret": "p/b"})));
    authorized(bearer.as_ref(), "http://127.0.0.1:1/").await;
    store.set("p/b", "new-value");
    let cached = authorized(bearer.as_ref(), "http://127.0.0.1:1/").await;
    assert_eq!(header(&cached, "authorization"), Some("Bearer old-value"));
    assert!(bearer.renew().await);
    let fresh = authorized(bearer.as_ref(), "http://127.0.0.1:1/").await;
    assert_eq!(header(&fresh, "authorization"), Some("Bearer new-value"));

    store.set("p/basic", "not json: hunter2");
    let basic = ring.credentials("c", &spec(json!({"type": "basic", "secret": "p/basic"})));
    let mut request = bare_request();
    let err = basic.authorize(&mut request).await.expect_err("unreadable");
    assert!(err.to_string().contains("\"p/basic\""), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");

    let missing = ring.credentials("d", &spec(json!({"type": "bearer", "secret": "p/none"})));
    let err = missing.authorize(&mut request).await.expect_err("missing");
    assert!(err.to_string().contains("does not exist"), "{err}");
}

const AGENT_ROLE: &str = "arn:aws:iam::123456789012:role/standin-agent-billing";

#[tokio::test]
async fn sigv4_signs_for_agentcore_with_the_keys_of_the_role_the_entry_names() {
    let store = Arc::new(MemorySecrets::default());
    let roles = Arc::new(CountedRoles::default());
    let ring = keyring_with(&store, true, roles.clone(), None);
    let sigv4 = ring.credentials(
        "s",
        &spec(json!({"type": "sigv4", "role_arn": AGENT_ROLE, "external_id": "tenant-7"})),
    );
    let url = "https://bedrock-agentcore.us-east-1.amazonaws.com/runtimes/x/invocations?q=1";
    let request = authorized(sigv4.as_ref(), url).await;
    let auth = header(&request, "authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKID-1/")
            && auth.contains("/us-east-1/bedrock-agentcore/aws4_request"),
        "{auth}"
    );
    assert_eq!(
        header(&request, "x-amz-security-token"),
        Some("session-token-of-assumption-1"),
        "the assumed session's token goes with its signature"
    );
    assert_eq!(
        roles.assumed.lock().unwrap().as_slice(),
        [AgentRole {
            role_arn: AGENT_ROLE.into(),
            external_id: Some("tenant-7".into())
        }]
    );
    // Kept while fresh; assumed afresh after a refusal.
    authorized(sigv4.as_ref(), url).await;
    assert_eq!(roles.assumed.lock().unwrap().len(), 1, "the keys are kept");
    assert!(sigv4.renew().await, "a refusal assumes the role again");
    let again = authorized(sigv4.as_ref(), url).await;
    assert!(
        header(&again, "authorization")
            .unwrap()
            .contains("Credential=AKID-2/"),
        "new keys after the refusal"
    );
    // What the echo guard blanks: the keys' secret parts.
    let held = ring.held_values().await;
    for secret in [
        "secret-key-of-assumption-2",
        "session-token-of-assumption-2",
    ] {
        assert!(held.iter().any(|h| h == secret), "{secret} in {held:?}");
    }
}

/// The confused deputy: whatever the request's destination, only AgentCore Runtime's
/// data plane gets a signature (an SQS or S3 URL, another region's AgentCore, its
/// control plane, a look-alike host).
#[tokio::test]
async fn sigv4_signs_nothing_but_a_call_to_agentcore_runtime() {
    let store = Arc::new(MemorySecrets::default());
    let roles = Arc::new(CountedRoles::default());
    let ring = keyring_with(&store, true, roles.clone(), None);
    let sigv4 = ring.credentials("s", &spec(json!({"type": "sigv4", "role_arn": AGENT_ROLE})));
    for url in [
        "https://sqs.us-east-1.amazonaws.com/123456789012/standin-parent.fifo?Action=SendMessage&MessageBody=x",
        "https://s3.us-east-1.amazonaws.com/bucket/key",
        "https://bedrock-agentcore.eu-west-1.amazonaws.com/runtimes/x/invocations",
        "https://bedrock-agentcore-control.us-east-1.amazonaws.com/runtimes",
        "https://bedrock-agentcore.us-east-1.amazonaws.com.evil.example/x",
        "https://bedrock-agentcore.us-east-1.amazonaws.com/memories/m/events",
        "http://bedrock-agentcore.us-east-1.amazonaws.com/x",
    ] {
        let mut request = reqwest::Client::new().get(url).build().unwrap();
        let refused = sigv4.authorize(&mut request).await;
        assert!(
            matches!(&refused, Err(RemoteError::Refused(m)) if m.contains("AgentCore Runtime")),
            "{url}: {refused:?}"
        );
        assert!(header(&request, "authorization").is_none(), "{url}");
    }
    assert!(
        roles.assumed.lock().unwrap().is_empty(),
        "no role was assumed"
    );
    // A deployment's own AgentCore endpoint (a VPC endpoint's, a test agent's).
    let ring = keyring_with(&store, true, roles.clone(), Some("http://127.0.0.1:27166"));
    let sigv4 = ring.credentials("s", &spec(json!({"type": "sigv4", "role_arn": AGENT_ROLE})));
    let request = authorized(sigv4.as_ref(), "http://127.0.0.1:27166/").await;
    assert!(header(&request, "authorization").is_some());
    let mut elsewhere = reqwest::Client::new()
        .get("https://bedrock-agentcore.us-east-1.amazonaws.com/")
        .build()
        .unwrap();
    assert!(sigv4.authorize(&mut elsewhere).await.is_err());
}

/// OAuth2 credentials for client `client_id` at `url`, its secret `client_secret` in the
/// store; `allow_private` as the deployment's.
fn oauth2(
    url: &str,
    client_id: &str,
    client_secret: &str,
    allow_private: bool,
) -> Arc<dyn Credentials> {
    let store = Arc::new(MemorySecrets::default());
    store.set("p/client", client_secret);
    keyring_where(&store, allow_private).credentials(
        "o",
        &spec(json!({"type": "oauth2_client_credentials", "token_url": url, "client_id": client_id, "secret": "p/client"})),
    )
}

/// A request with nothing on it yet.
fn bare_request() -> reqwest::Request {
    reqwest::Client::new()
        .get("http://127.0.0.1:1/")
        .build()
        .unwrap()
}

/// A token endpoint on loopback: answers each request with the next reply, counting.
async fn token_endpoint(
    replies: Vec<(u16, serde_json::Value)>,
) -> (String, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (counter, heard) = (count.clone(), seen.clone());
    tokio::spawn(async move {
        let mut replies = replies.into_iter();
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut buf = vec![0u8; 8192];
            let n = conn.read(&mut buf).await.unwrap_or(0);
            heard
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            counter.fetch_add(1, Ordering::SeqCst);
            let (status, body) = replies.next().unwrap_or((500, json!({})));
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes()).await;
            let _ = conn.write_all(body.as_bytes()).await;
        }
    });
    (url, count, seen)
}

#[tokio::test]
async fn an_oauth2_token_is_fetched_once_kept_and_fetched_again_after_a_refusal() {
    let (url, fetched, seen) = token_endpoint(vec![
        (
            200,
            json!({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600}),
        ),
        (
            200,
            json!({"access_token": "tok-2", "token_type": "Bearer", "expires_in": 3600}),
        ),
    ])
    .await;
    let store = Arc::new(MemorySecrets::default());
    store.set("p/client", "s3cr3t");
    let ring = keyring(&store);
    let oauth = ring.credentials(
        "o",
        &spec(
            json!({"type": "oauth2_client_credentials", "token_url": url, "client_id": "stand in",
                     "secret": "p/client", "scopes": ["a2a.call", "read"], "audience": "agents"}),
        ),
    );
    for _ in 0..3 {
        let request = authorized(oauth.as_ref(), "http://127.0.0.1:1/").await;
        assert_eq!(header(&request, "authorization"), Some("Bearer tok-1"));
    }
    assert_eq!(
        fetched.load(Ordering::SeqCst),
        1,
        "kept until shortly before it expires"
    );
    assert!(oauth.renew().await);
    let request = authorized(oauth.as_ref(), "http://127.0.0.1:1/").await;
    assert_eq!(header(&request, "authorization"), Some("Bearer tok-2"));
    let asked = seen.lock().unwrap()[0].clone();
    assert!(
        asked.contains("grant_type=client_credentials&scope=a2a.call+read&audience=agents"),
        "{asked}"
    );
    // Basic base64("stand+in:s3cr3t")
    assert!(
        asked
            .to_ascii_lowercase()
            .contains("authorization: basic c3rhbmqraw46cznjcjn0"),
        "{asked}"
    );
}

#[tokio::test]
async fn a_token_endpoints_refusal_is_named_plainly_without_the_secret() {
    let (url, _, _) = token_endpoint(vec![(
        401,
        json!({"error": "invalid_client", "error_description": "Client authentication failed"}),
    )])
    .await;
    let oauth = oauth2(&url, "c1", "s3cr3t", true);
    let mut request = bare_request();
    let err = oauth
        .authorize(&mut request)
        .await
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains(&url) && err.contains("invalid_client") && err.contains("\"c1\""),
        "{err}"
    );
    assert!(
        err.contains("HTTP 401") && err.contains("Client authentication failed"),
        "{err}"
    );
    assert!(!err.contains("s3cr3t"), "{err}");
}

#[tokio::test]
async fn a_token_endpoint_on_a_private_address_is_refused_unless_private_agents_are_allowed() {
    let (url, fetched, _) =
        token_endpoint(vec![(200, json!({"access_token": "t", "expires_in": 60}))]).await;
    let oauth = oauth2(&url, "c", "s", false);
    let mut request = bare_request();
    let err = oauth.authorize(&mut request).await.expect_err("refused");
    assert!(err.to_string().contains("AllowPrivateAgents"), "{err}");
    assert_eq!(fetched.load(Ordering::SeqCst), 0, "nothing was sent to it");
}

#[tokio::test]
async fn a_token_lifetime_given_as_text_reads() {
    let (url, fetched, _) = token_endpoint(vec![(
        200,
        json!({"access_token": "t1", "expires_in": "3599"}),
    )])
    .await;
    let oauth = oauth2(&url, "c", "s\n", true);
    for _ in 0..2 {
        let request = authorized(oauth.as_ref(), "http://127.0.0.1:1/").await;
        assert_eq!(header(&request, "authorization"), Some("Bearer t1"));
    }
    assert_eq!(
        fetched.load(Ordering::SeqCst),
        1,
        "kept an hour, as it said"
    );
}
