//! What the AWS SDK's clients trust: the built-in root set the agent client trusts too
//! (Mozilla's, from `webpki-root-certs`), plus the CAs of `SSL_CERT_FILE` when it is set;
//! not the host's certificate store.
//!
//! The SDK's default reads the host's store at start (the bundle, then 146 more files on
//! Debian): about half of a function's cold start here, at a cost that depends on the
//! host. The built-in set is in the binary and holds the roots the public AWS endpoints'
//! chains end at (Amazon Root CA 1–4, Starfield Services G2); a partition another CA
//! signs is reached by pointing `SSL_CERT_FILE` at its PEM bundle, as with any rustls or
//! OpenSSL client.
//!
//! The roots are parsed once, at the first AWS call (about 0.8 ms), not at each SDK
//! client made (the SDK's client builds a throwaway connector then; the steps make six).
//! Proxies come from the environment (`HTTPS_PROXY`, `NO_PROXY`) as in the SDK's own.

use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
use aws_smithy_http_client::{Builder, ConnectorBuilder};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use base64::Engine as _;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::config::Env;
use crate::agents::ConfigError;

/// The variable naming extra CAs for the AWS calls, as rustls and OpenSSL clients read it.
pub const SSL_CERT_FILE: &str = "SSL_CERT_FILE";

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

/// The AWS calls' trust: the built-in set, plus `SSL_CERT_FILE`'s CAs when it is set. A
/// file that cannot be read, or holds anything but certificates a TLS client can trust,
/// fails the cold start naming `SSL_CERT_FILE` (the SDK would panic on it at its first
/// call instead).
pub fn aws_trust(env: &impl Env) -> Result<TrustStore, ConfigError> {
    let trust = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(built_in_roots_pem());
    let Some(path) = env.var(SSL_CERT_FILE).filter(|p| !p.trim().is_empty()) else {
        return Ok(trust);
    };
    let refused = |problem: String| ConfigError::new(SSL_CERT_FILE, problem);
    let pem = std::fs::read(&path).map_err(|e| refused(format!("cannot read {path}: {e}")))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refused(format!("{path} is not a PEM bundle: {e}")))?;
    if certs.is_empty() {
        return Err(refused(format!("{path} holds no PEM certificate")));
    }
    let (_, unusable) = RootCertStore::empty().add_parsable_certificates(certs);
    if unusable > 0 {
        return Err(refused(format!(
            "{path} holds {unusable} certificate(s) that do not parse as a CA"
        )));
    }
    Ok(trust.with_pem_certificate(pem))
}

/// The HTTPS client every SDK client of the function shares, on `trust`. It is the SDK's
/// own default client (`aws-smithy-runtime`'s `default_https_client`) but for the trust
/// and the warm-up.
pub fn aws_http_client(trust: TrustStore) -> Result<SharedHttpClient, ConfigError> {
    let built = TlsContext::builder().with_trust_store(trust).build();
    let context = built.map_err(|e| {
        let problem = format!("the AWS calls' TLS trust does not build: {e}");
        ConfigError::new(SSL_CERT_FILE, problem)
    })?;
    let client = Builder::new().build_with_connector_fn(move |settings, components| {
        let mut connector =
            ConnectorBuilder::default().tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc));
        connector.set_connector_settings(settings.cloned());
        connector.set_sleep_impl(components.and_then(|c| c.sleep_impl()));
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.set_tls_context(context.clone());
        connector.build()
    });
    Ok(SharedHttpClient::new(ConnectorOnFirstCall(client)))
}

/// The SDK's HTTPS client without its warm-up at each SDK client's construction (a
/// connector built and thrown away); connectors are still built, and cached, at the
/// first call that needs one. Every other hook is passed through.
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

    fn validate_final_config(
        &self,
        components: &RuntimeComponents,
        cfg: &ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.validate_final_config(components, cfg)
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

    struct Vars(Vec<(&'static str, String)>);
    impl Env for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        }
    }

    fn client(vars: Vars) -> Result<SharedHttpClient, ConfigError> {
        aws_trust(&vars).and_then(aws_http_client)
    }

    #[tokio::test]
    async fn an_endpoint_no_built_in_root_vouches_for_is_refused() {
        let endpoint = aws_over_tls().await;
        let Ok(http) = client(Vars(vec![])) else {
            panic!("the built-in trust did not build");
        };
        let Err(chain) = list_queues(http, &endpoint).await else {
            panic!("a privately signed endpoint was trusted");
        };
        assert!(chain.contains("UnknownIssuer"), "{chain}");
    }

    #[tokio::test]
    async fn the_cas_of_ssl_cert_file_are_trusted_besides_the_built_in_set() {
        let endpoint = aws_over_tls().await;
        let Ok(http) = client(Vars(vec![(SSL_CERT_FILE, format!("{TLS}/ca.pem"))])) else {
            panic!("the test CA did not load");
        };
        assert_eq!(list_queues(http, &endpoint).await, Ok(()));
    }

    #[test]
    fn an_ssl_cert_file_that_is_not_a_ca_bundle_fails_the_start_naming_it() {
        let dir = std::env::temp_dir().join(format!("standin-trust-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let garbage = dir.join("garbage.pem");
        let _ = std::fs::write(
            &garbage,
            "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
        );
        let empty = dir.join("empty.pem");
        let _ = std::fs::write(&empty, "nothing here\n");
        for (path, says) in [
            (garbage, "do not parse as a CA"),
            (empty, "holds no PEM certificate"),
            (dir.join("missing.pem"), "cannot read"),
        ] {
            let shown = path.to_string_lossy().into_owned();
            let Err(err) = aws_trust(&Vars(vec![(SSL_CERT_FILE, shown.clone())])) else {
                panic!("{shown} was taken");
            };
            assert_eq!(err.field, SSL_CERT_FILE);
            assert!(
                err.problem.contains(says) && err.problem.contains(&shown),
                "{}",
                err.problem
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
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
            b"Amazon Root CA 2",
            b"Amazon Root CA 3",
            b"Amazon Root CA 4",
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
