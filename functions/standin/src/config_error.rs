//! A configuration that cannot be used, by the field that is wrong
//! (`agents[1].follow_interval`) and what is wrong with it.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ConfigError {
    pub field: String,
    pub problem: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Whether a configured URL may be sent a secret: https, or http on loopback only (a
/// test's server), so a secret never crosses a network in clear.
pub fn https_or_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let ip = host.trim_matches(['[', ']']).parse::<std::net::IpAddr>();
    match url.scheme() {
        "https" => !host.is_empty(),
        "http" => host == "localhost" || ip.is_ok_and(|ip| ip.is_loopback()),
        _ => false,
    }
}
