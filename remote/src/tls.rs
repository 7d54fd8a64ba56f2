//! The certificate roots the agent client trusts: Mozilla's, built into the binary, and
//! the CAs of `AGENT_CA_FILE` when it is set.
//!
//! Why not the system's roots: loading them means reading and decoding the system's PEM
//! bundle and, on distributions that keep one file per certificate, opening each of them.
//! The AWS SDK does it once at start (its client keeps the system's roots, its default);
//! reqwest's platform verifier did it a second time, which was 7 ms of a 15 ms cold start
//! on a Debian host. The built-in set (the `webpki-root-certs` crate) is already DER and
//! costs about 0.2 ms. An agent behind a private CA is trusted by pointing
//! `AGENT_CA_FILE` at a PEM bundle of that CA: it adds to the built-in set and leaves the
//! AWS SDK's trust alone.

use std::path::Path;
use std::time::Duration;

/// A trust the client cannot be built on; `field` names the setting at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct TlsError {
    pub field: String,
    pub problem: String,
}

pub const AGENT_CA_FILE: &str = "AGENT_CA_FILE";

/// The agent client's roots: the built-in set, plus the certificates of a PEM bundle.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    extra: Vec<reqwest::Certificate>,
    /// The clients connect to public addresses only: the one check, made on the
    /// addresses the connection uses (`crate::a2a::reach::PublicOnly`).
    public_only: bool,
}

fn refused(problem: String) -> TlsError {
    TlsError {
        field: AGENT_CA_FILE.into(),
        problem,
    }
}

impl Roots {
    /// Mozilla's roots alone.
    pub fn built_in() -> Self {
        Self::default()
    }

    /// The agent client for `AGENT_CA_FILE`'s value: the built-in set, plus the bundle's
    /// certificates when one is named. Built once: a bundle whose certificates do not
    /// load is refused here, so the cold start fails naming `AGENT_CA_FILE`.
    pub fn agent_client(ca_file: Option<&Path>) -> Result<reqwest::Client, TlsError> {
        match ca_file {
            None => Self::built_in().agent_http_client(),
            Some(path) => Self::with_file(path)?
                .agent_http_client()
                .map_err(|e| refused(format!("{}: {}", path.to_string_lossy(), e.problem))),
        }
    }

    /// The built-in set, plus the certificates of the PEM bundle at `path`, trusted for
    /// every agent. A file that cannot be read, holds no certificate or is not PEM is
    /// refused naming `AGENT_CA_FILE`.
    pub fn with_file(path: &Path) -> Result<Self, TlsError> {
        let shown = path.to_string_lossy();
        let pem = std::fs::read(path).map_err(|e| refused(format!("cannot read {shown}: {e}")))?;
        let extra = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| refused(format!("{shown} is not a PEM bundle: {e}")))?;
        if extra.is_empty() {
            return Err(refused(format!("{shown} holds no PEM certificate")));
        }
        Ok(Self {
            extra,
            public_only: false,
        })
    }

    /// These roots, for clients that connect to public addresses only (a deployment
    /// that does not allow private agents): a host is resolved once, and the addresses
    /// the connection is made to are the ones checked, so a DNS answer that changes
    /// between a check and the connection (a TTL of 0) cannot reach loopback.
    pub fn public_only(mut self) -> Self {
        self.public_only = true;
        self
    }

    fn certificates(&self) -> Result<Vec<reqwest::Certificate>, TlsError> {
        let mut all = webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError {
                field: "built-in roots".into(),
                problem: e.to_string(),
            })?;
        all.extend(self.extra.iter().cloned());
        Ok(all)
    }

    /// The client for remote agents, built once per process: these roots only, a bounded
    /// connect, and redirects never followed: a 307/308 would re-send a POST (the push
    /// token at registration, the parent's reply) to wherever the agent points.
    pub fn agent_http_client(&self) -> Result<reqwest::Client, TlsError> {
        self.builder()?.build().map_err(|e| TlsError {
            field: "agent HTTP client".into(),
            problem: e.to_string(),
        })
    }

    /// The agent client for gRPC without TLS: HTTP/2 from the first byte (h2c), as there
    /// is no TLS handshake to agree on it. Over TLS the agent client agrees on HTTP/2 by
    /// ALPN and serves gRPC as it is.
    pub fn agent_h2c_client(&self) -> Result<reqwest::Client, TlsError> {
        self.builder()?
            .http2_prior_knowledge()
            .build()
            .map_err(|e| TlsError {
                field: "agent HTTP/2 client".into(),
                problem: e.to_string(),
            })
    }

    /// The agent client presenting a client certificate (mTLS): `pem` holds the chain,
    /// leaf first, and its private key. A buffer that does not read is refused without
    /// quoting it.
    pub fn agent_http_client_presenting(&self, pem: &[u8]) -> Result<reqwest::Client, TlsError> {
        let refused = |problem: String| TlsError {
            field: "auth.secret".into(),
            problem,
        };
        let identity = reqwest::Identity::from_pem(pem).map_err(|_| {
            refused(
                "the mTLS Secrets Manager entry holds no PEM certificate chain and private key"
                    .into(),
            )
        })?;
        self.builder()?
            .identity(identity)
            .build()
            .map_err(|_| refused("the mTLS certificate and key do not make a TLS client".into()))
    }

    fn builder(&self) -> Result<reqwest::ClientBuilder, TlsError> {
        let builder = reqwest::Client::builder()
            .tls_certs_only(self.certificates()?)
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            // On HTTP/2 (gRPC, or an agent that agrees on it by ALPN) a peer gone without a
            // word is found by its unanswered ping, while a call is open: a gRPC stream
            // has no events of the agent's to say it is alive. gRPC servers allow about a
            // ping per 5 minutes without data and close the connection (too_many_pings)
            // at the third beyond: a quiet gRPC stream ends at the 60 s idle
            // (`Timeouts::stream_idle`), after two pings.
            .http2_keep_alive_interval(Duration::from_secs(20))
            .http2_keep_alive_timeout(Duration::from_secs(20));
        // No proxy from the environment either: a proxy would resolve and connect for
        // us, out of the resolver's reach.
        Ok(if self.public_only {
            builder
                .no_proxy()
                .dns_resolver(std::sync::Arc::new(crate::a2a::reach::PublicOnly))
        } else {
            builder
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle_file(name: &str, contents: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("standin-tls-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("temp file");
        path
    }

    #[test]
    fn the_agent_client_builds_on_mozillas_roots() {
        let roots = Roots::built_in().certificates().expect("certificates");
        assert!(roots.len() > 100, "Mozilla's set has well over 100 roots");
        Roots::built_in().agent_http_client().expect("agent client");
    }

    #[test]
    fn a_bundle_adds_its_certificates_to_the_built_in_set() {
        let ca = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/tls/ca.pem"
        ))
        .expect("the test CA");
        let path = bundle_file("ca.pem", &ca);
        let with = Roots::with_file(&path).expect("a valid bundle");
        let built_in = Roots::built_in().certificates().expect("built in").len();
        assert_eq!(with.certificates().expect("all").len(), built_in + 1);
    }

    #[test]
    fn a_bundle_without_certificates_is_refused_naming_the_variable() {
        let path = bundle_file("empty.pem", b"not a certificate\n");
        let err = Roots::with_file(&path).expect_err("no certificate in it");
        assert_eq!(err.field, AGENT_CA_FILE);
        assert!(err.problem.contains("no PEM certificate"), "{err}");
    }

    #[test]
    fn a_certificate_that_does_not_decode_is_refused_naming_the_variable() {
        let path = bundle_file(
            "garbage.pem",
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        );
        let err = Roots::agent_client(Some(&path)).expect_err("not a certificate");
        assert_eq!(err.field, AGENT_CA_FILE, "{err}");
    }

    #[test]
    fn a_missing_bundle_is_refused_naming_the_variable_and_the_path() {
        let err = Roots::with_file(Path::new("/nonexistent/roots.pem")).expect_err("no file");
        assert_eq!(err.field, AGENT_CA_FILE);
        assert!(err.problem.contains("/nonexistent/roots.pem"), "{err}");
    }
}
