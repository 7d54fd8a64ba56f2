//! Whom the agent client trusts, over real TLS on loopback: an agent whose certificate
//! a private CA signed is refused on Mozilla's roots alone and reached once that CA is
//! given as `AGENT_CA_FILE`. The certificates in `tests/data/tls/` are test-only: a CA
//! (`ca.pem`, its key discarded) and a server certificate for 127.0.0.1 it signed, valid
//! for a hundred years.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::Path;
use std::sync::Arc;

use standin_remote::tls::Roots;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tls");

/// An HTTPS server on loopback answering every request with 200 "ok"; its URL.
async fn agent_over_tls() -> String {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{DATA}/server.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{DATA}/server.key")).unwrap();
    let config = ServerConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return; // the client refused our certificate
                };
                let mut request = [0u8; 1024];
                let _ = tls.read(&mut request).await;
                let _ = tls
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    format!("https://127.0.0.1:{port}/")
}

#[tokio::test]
async fn a_privately_signed_agent_is_refused_on_the_built_in_roots() {
    let url = agent_over_tls().await;
    let client = Roots::built_in().agent_http_client().unwrap();
    let err = client
        .get(&url)
        .send()
        .await
        .expect_err("an unknown issuer");
    let chain = format!("{err:?}");
    assert!(chain.contains("UnknownIssuer"), "{chain}");
}

#[tokio::test]
async fn the_agents_ca_given_as_agent_ca_file_is_trusted() {
    let url = agent_over_tls().await;
    let roots = Roots::with_file(Path::new(&format!("{DATA}/ca.pem"))).unwrap();
    let client = roots.agent_http_client().unwrap();
    let answer = client.get(&url).send().await.expect("trusted");
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "ok");
}
