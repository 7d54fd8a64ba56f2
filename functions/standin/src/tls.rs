//! The certificate roots the agent client trusts: Mozilla's, built into the binary.
//!
//! Why not the system's roots: loading them means reading and decoding the system's PEM
//! bundle and, on distributions that keep one file per certificate, opening each of them.
//! The AWS SDK does it once at start (its own client keeps the system's roots, which is
//! what AWS documents); reqwest's platform verifier did it a second time, which was 7 ms
//! of a 15 ms cold start on a Debian host. The built-in set (the `webpki-root-certs`
//! crate) is already DER and costs no file access. An agent behind a private CA is
//! reached by pointing `SSL_CERT_FILE` at a PEM bundle: it replaces the built-in set here
//! and, being OpenSSL's convention, the system's roots in the AWS SDK too, so the bundle
//! must hold the public roots as well (the system bundle with the private CA appended).

use std::time::Duration;

use crate::config::ConfigError;

/// Where the roots come from.
#[derive(Debug, Clone)]
pub enum Roots {
    /// Mozilla's roots, compiled in.
    BuiltIn,
    /// A PEM bundle read from `SSL_CERT_FILE`.
    Pem(Vec<u8>),
}

impl Roots {
    /// The built-in set, or `SSL_CERT_FILE`'s bundle when that variable is set.
    pub fn from_env() -> Result<Self, ConfigError> {
        match std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
            None => Ok(Self::BuiltIn),
            Some(path) => Self::from_file(std::path::Path::new(&path)),
        }
    }

    /// A PEM bundle's certificates, in place of the built-in set.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        let pem = std::fs::read(path).map_err(|e| ConfigError {
            field: "SSL_CERT_FILE".into(),
            problem: format!("cannot read {}: {e}", path.to_string_lossy()),
        })?;
        let roots = Self::Pem(pem);
        if roots.reqwest_certificates()?.is_empty() {
            return Err(ConfigError {
                field: "SSL_CERT_FILE".into(),
                problem: format!("{} holds no PEM certificate", path.to_string_lossy()),
            });
        }
        Ok(roots)
    }

    fn reqwest_certificates(&self) -> Result<Vec<reqwest::Certificate>, ConfigError> {
        let invalid = |e: reqwest::Error| ConfigError {
            field: "SSL_CERT_FILE".into(),
            problem: format!("not a PEM certificate bundle: {e}"),
        };
        match self {
            Self::BuiltIn => webpki_root_certs::TLS_SERVER_ROOT_CERTS
                .iter()
                .map(|der| reqwest::Certificate::from_der(der))
                .collect::<Result<_, _>>()
                .map_err(invalid),
            Self::Pem(pem) => reqwest::Certificate::from_pem_bundle(pem).map_err(invalid),
        }
    }

    /// The client for remote agents, built once per process: these roots only, a bounded
    /// connect, and redirects never followed: a 307/308 would re-send a POST (the push
    /// token at registration, the parent's reply) to wherever the agent points.
    pub fn agent_http_client(&self) -> Result<reqwest::Client, ConfigError> {
        reqwest::Client::builder()
            .tls_certs_only(self.reqwest_certificates()?)
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError {
                field: "agent HTTP client".into(),
                problem: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in set as one PEM bundle, as a user's `SSL_CERT_FILE` would hold it.
    fn built_in_as_pem() -> Vec<u8> {
        use base64::Engine;
        let mut pem = Vec::new();
        for der in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
            let encoded = base64::engine::general_purpose::STANDARD.encode(der);
            pem.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
            for line in encoded.as_bytes().chunks(64) {
                pem.extend_from_slice(line);
                pem.push(b'\n');
            }
            pem.extend_from_slice(b"-----END CERTIFICATE-----\n");
        }
        pem
    }

    #[test]
    fn the_agent_client_builds_on_mozillas_roots() {
        let roots = Roots::BuiltIn.reqwest_certificates().expect("certificates");
        assert!(roots.len() > 100, "Mozilla's set has well over 100 roots");
        Roots::BuiltIn.agent_http_client().expect("agent client");
    }

    fn bundle_file(name: &str, contents: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("standin-tls-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("temp file");
        path
    }

    #[test]
    fn a_bundle_without_certificates_is_refused_naming_the_variable() {
        let path = bundle_file("empty.pem", b"not a certificate\n");
        let err = Roots::from_file(&path).expect_err("no certificate in it");
        assert_eq!(err.field, "SSL_CERT_FILE");
        assert!(err.problem.contains("no PEM certificate"), "{err}");
    }

    #[test]
    fn a_missing_bundle_is_refused_naming_the_variable_and_the_path() {
        let err = Roots::from_file(std::path::Path::new("/nonexistent/roots.pem"))
            .expect_err("no such file");
        assert_eq!(err.field, "SSL_CERT_FILE");
        assert!(err.problem.contains("/nonexistent/roots.pem"), "{err}");
    }

    #[test]
    fn a_bundle_file_is_read_whole() {
        let path = bundle_file("all.pem", &built_in_as_pem());
        let roots = Roots::from_file(&path).expect("a valid bundle");
        assert_eq!(
            roots.reqwest_certificates().expect("certificates").len(),
            webpki_root_certs::TLS_SERVER_ROOT_CERTS.len()
        );
        roots.agent_http_client().expect("agent client");
    }
}
