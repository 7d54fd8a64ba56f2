//! What the AWS SDK's clients trust: the built-in root set the agent client trusts too
//! (Mozilla's, from the `webpki-root-certs` crate), not the host's certificate store.
//!
//! The SDK's default reads the host's store at start (rustls-native-certs: the bundle,
//! then every file of the certificate directory, 146 more on Debian): about half of a
//! function's cold start on this project's machine, and what it costs depends on how the
//! host lays its certificates out. The built-in set is already in the binary; every AWS
//! endpoint's chain ends at a root in it (Amazon Root CA 1–4, Starfield).
//!
//! And the roots are read once, at the first AWS call: the SDK's client builds a
//! throwaway connector (its roots parsed anew) each time an SDK client is made, "so
//! native certs load at client initialization"; the steps make six.

use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use base64::Engine as _;

/// The built-in roots as one PEM bundle, the form the SDK's trust store takes.
pub fn built_in_roots_pem() -> Vec<u8> {
    let mut pem = String::with_capacity(webpki_root_certs::TLS_SERVER_ROOT_CERTS.len() * 2048);
    for der in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        let encoded = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in encoded.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    pem.into_bytes()
}

fn built_in_trust() -> TrustStore {
    TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(built_in_roots_pem())
}

/// The HTTPS client every SDK client of the function shares.
pub fn aws_http_client() -> SharedHttpClient {
    client_on(built_in_trust())
}

fn client_on(trust: TrustStore) -> SharedHttpClient {
    let mut builder = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc));
    // Building a context from a trust store cannot fail today; if it ever does, the
    // SDK's own default (the host's store) is still a working trust.
    if let Ok(context) = TlsContext::builder().with_trust_store(trust).build() {
        builder = builder.tls_context(context);
    }
    SharedHttpClient::new(ConnectorOnFirstCall(builder.build_https()))
}

/// The SDK's HTTPS client without its warm-up at each SDK client's construction; its
/// connectors are still built, and cached, at the first call that needs one.
#[derive(Debug)]
struct ConnectorOnFirstCall(SharedHttpClient);

impl HttpClient for ConnectorOnFirstCall {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.0.http_connector(settings, components)
    }

    fn connector_metadata(&self) -> Option<ConnectorMetadata> {
        self.0.connector_metadata()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

    /// The remote crate's test-only CA and the 127.0.0.1 certificate it signed.
    const TLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../remote/tests/data/tls");

    /// An HTTPS endpoint on loopback answering every call as SQS answers an empty
    /// ListQueues; its URL.
    async fn aws_over_tls() -> String {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(format!("{TLS}/server.pem"))
                .and_then(|certs| certs.collect::<Result<_, _>>())
                .unwrap_or_default();
        let key = PrivateKeyDer::from_pem_file(format!("{TLS}/server.key"));
        let config = key.ok().and_then(|key| {
            tokio_rustls::rustls::ServerConfig::builder_with_provider(Arc::new(
                tokio_rustls::rustls::crypto::aws_lc_rs::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .ok()?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .ok()
        });
        let Some(config) = config else {
            panic!("the test certificate in {TLS} did not load");
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
            panic!("no loopback port");
        };
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        return; // the client refused the certificate
                    };
                    let mut request = [0u8; 4096];
                    let _ = tls.read(&mut request).await;
                    let _ = tls
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                        )
                        .await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        format!("https://127.0.0.1:{port}")
    }

    async fn list_queues(http: SharedHttpClient, endpoint: &str) -> Result<(), String> {
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .region(aws_sdk_sqs::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_sqs::config::Credentials::for_tests())
            .endpoint_url(endpoint)
            .http_client(http)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_sqs::Client::from_conf(config)
            .list_queues()
            .send()
            .await
            .map(|_| ())
            .map_err(|e| format!("{e:?}"))
    }

    #[tokio::test]
    async fn an_endpoint_no_built_in_root_vouches_for_is_refused() {
        let endpoint = aws_over_tls().await;
        let refused = list_queues(aws_http_client(), &endpoint).await;
        let Err(chain) = refused else {
            panic!("a privately signed endpoint was trusted");
        };
        assert!(chain.contains("UnknownIssuer"), "{chain}");
    }

    #[tokio::test]
    async fn the_client_speaks_tls_to_an_endpoint_its_roots_vouch_for() {
        let endpoint = aws_over_tls().await;
        let ca = std::fs::read(format!("{TLS}/ca.pem")).unwrap_or_default();
        let trusting = client_on(built_in_trust().with_pem_certificate(ca));
        assert_eq!(list_queues(trusting, &endpoint).await, Ok(()));
    }

    #[test]
    fn the_built_in_bundle_holds_every_root_amazons_among_them() {
        let pem = String::from_utf8(built_in_roots_pem()).unwrap_or_default();
        let decoded: Vec<Vec<u8>> = pem
            .split("-----BEGIN CERTIFICATE-----\n")
            .skip(1)
            .map(|block| {
                let body: String = block
                    .split("-----END CERTIFICATE-----")
                    .next()
                    .unwrap_or_default()
                    .lines()
                    .collect();
                base64::engine::general_purpose::STANDARD
                    .decode(body)
                    .unwrap_or_default()
            })
            .collect();
        let built_in: Vec<&[u8]> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|der| der.as_ref())
            .collect();
        assert_eq!(decoded, built_in);
        for issuer in [
            &b"Amazon Root CA 1"[..],
            b"Starfield Services Root Certificate Authority - G2",
        ] {
            assert!(
                built_in
                    .iter()
                    .any(|der| der.windows(issuer.len()).any(|w| w == issuer)),
                "{} is not among the built-in roots",
                String::from_utf8_lossy(issuer)
            );
        }
    }
}
