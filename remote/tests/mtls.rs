//! mTLS over real TLS on loopback: an agent that requires a client certificate (its card
//! says `mtlsSecurityScheme`) is reached with the certificate the credentials hand over,
//! its card read and a GetTask answered; without a certificate, or with one its client CA
//! did not sign, the handshake is refused. The
//! certificates in `tests/data/tls/` are test-only: `client-ca.pem` (its key discarded)
//! signed the certificate of `client-identity.pem`, which holds its key too.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::BoxFuture;
use standin_remote::auth::{ClientIdentity, Credentials, Scheme};
use standin_remote::tls::Roots;
use standin_remote::{Agent, Connector, Reach, RemoteError, TaskState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tls");

/// An A2A agent over TLS that requires a client certificate from `client-ca.pem`: it
/// serves its card and answers GetTask. Its URL, and how many requests it served.
async fn agent_requiring_a_client_certificate() -> (String, Arc<AtomicUsize>) {
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{DATA}/server.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{DATA}/server.key")).unwrap();
    let mut clients = RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(format!("{DATA}/client-ca.pem")).unwrap() {
        clients.add(ca.unwrap()).unwrap();
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(clients), provider.clone())
        .build()
        .unwrap();
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    let served = Arc::new(AtomicUsize::new(0));
    let (count, base) = (served.clone(), url.clone());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, count, base) = (acceptor.clone(), count.clone(), base.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return; // no certificate, or one we do not trust
                };
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let Ok(n) = tls.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                count.fetch_add(1, Ordering::SeqCst);
                let body = if request.starts_with(b"GET") {
                    serde_json::json!({
                        "name": "mTLS agent", "version": "1",
                        "supportedInterfaces": [{"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                        "capabilities": {},
                        "securitySchemes": {"tls": {"mtlsSecurityScheme": {}}},
                        "securityRequirements": [{"schemes": {"tls": {}}}]
                    })
                } else {
                    serde_json::json!({"jsonrpc": "2.0", "id": "1", "result": {
                        "id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}})
                }
                .to_string();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(head.as_bytes()).await;
                let _ = tls.write_all(body.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (url, served)
}

struct Certificate(Vec<u8>);

impl Credentials for Certificate {
    fn scheme(&self) -> Scheme {
        Scheme::MutualTls
    }
    fn authorize<'a>(
        &'a self,
        _: &'a mut reqwest::Request,
    ) -> BoxFuture<'a, Result<(), RemoteError>> {
        Box::pin(async { Ok(()) })
    }
    fn renew(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { false })
    }
    fn identity(&self) -> BoxFuture<'_, Result<Option<ClientIdentity>, RemoteError>> {
        let pem = self.0.clone();
        Box::pin(async move { Ok(Some(ClientIdentity { pem })) })
    }
}

async fn connect(
    url: &str,
    credentials: Option<Arc<dyn Credentials>>,
) -> Result<standin_remote::AgentClient, RemoteError> {
    let roots = Roots::with_file(std::path::Path::new(&format!("{DATA}/ca.pem"))).unwrap();
    let http = roots.agent_http_client().unwrap();
    let reach = Reach {
        agent: "tls-agent",
        url,
        card_url: None,
        allowed_origins: &[],
        participant: None,
        headers: &[],
        session: None,
        traceparent: None,
        extensions: &[],
        allow_private: true,
        credentials,
        card_signing: None,
        preferred_binding: None,
    };
    Connector::new(roots, http)
        .connect("tls-agent", reach)
        .await
}

#[tokio::test]
async fn an_agent_that_requires_a_client_certificate_is_reached_with_the_credentials_one() {
    let (url, served) = agent_requiring_a_client_certificate().await;
    let pem = std::fs::read(format!("{DATA}/client-identity.pem")).unwrap();
    let agent = connect(&url, Some(Arc::new(Certificate(pem))))
        .await
        .expect("the card is read over mTLS");
    let status = agent.get("t1").await.expect("GetTask over mTLS");
    assert_eq!(status.state, TaskState::Working);
    assert_eq!(served.load(Ordering::SeqCst), 2, "the card, then GetTask");
}

#[tokio::test]
async fn without_a_certificate_the_handshake_is_refused_and_a_foreign_one_too() {
    let (url, served) = agent_requiring_a_client_certificate().await;
    let err = connect(&url, None).await.err().expect("refused");
    assert!(matches!(err, RemoteError::Transport(_)), "{err:?}");
    // The server's own certificate is not one the client CA signed.
    let mut foreign = std::fs::read(format!("{DATA}/server.pem")).unwrap();
    foreign.extend(std::fs::read(format!("{DATA}/server.key")).unwrap());
    let err = connect(&url, Some(Arc::new(Certificate(foreign))))
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, RemoteError::Transport(_)), "{err:?}");
    assert_eq!(served.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_certificate_that_does_not_read_is_named_without_its_contents() {
    let (url, _) = agent_requiring_a_client_certificate().await;
    let err = connect(
        &url,
        Some(Arc::new(Certificate(b"not a pem: hunter2".to_vec()))),
    )
    .await
    .err()
    .expect("refused");
    let text = err.to_string();
    assert!(matches!(err, RemoteError::Credentials(_)), "{err:?}");
    assert!(text.contains("mTLS") && !text.contains("hunter2"), "{text}");
}
