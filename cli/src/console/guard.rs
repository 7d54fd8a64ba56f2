//! What may reach the console. It acts with the operator's AWS credentials, so a web page
//! elsewhere must not drive it: a request must name the console's own host (a DNS name
//! rebound to 127.0.0.1 does not), another site may only navigate to it (not load its
//! pages or parts as resources: each read is a signed call), and a form must come from
//! the console's own pages (its Origin, when sent, is the console's) and carry the token
//! those pages were given.

use std::net::SocketAddr;

use axum::http::Method;
use subtle::ConstantTimeEq;

pub(crate) struct Guard {
    hosts: Vec<String>,
    token: String,
}

impl Guard {
    /// The guard of a console bound to `bound`.
    pub(crate) fn new(bound: SocketAddr) -> Self {
        let token = hex::encode(rand::random::<[u8; 16]>());
        let port = bound.port();
        let mut hosts = vec![bound.to_string(), format!("localhost:{port}")];
        // A browser leaves the default port out of Host.
        if port == 80 {
            hosts.extend([bound.ip().to_string(), "localhost".to_owned()]);
            if bound.is_ipv6() {
                hosts.push(format!("[{}]", bound.ip()));
            }
        }
        Self { hosts, token }
    }

    /// The token every form of the console carries.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// Whether a posted form carries this console's token.
    pub(crate) fn token_matches(&self, given: &str) -> bool {
        given.as_bytes().ct_eq(self.token.as_bytes()).into()
    }

    /// Whether `host` (a Host header) names this console: its address, or localhost on
    /// its port.
    fn is_own_host(&self, host: &str) -> bool {
        self.hosts.iter().any(|own| own.eq_ignore_ascii_case(host))
    }

    /// Whether a request may be served: its Host is the console's; from another site, only
    /// a navigation (`Sec-Fetch-Site`, `Sec-Fetch-Mode`, as browsers send them); and a
    /// request that changes something comes from a page of the console (its Origin, when
    /// sent).
    pub(super) fn admits(&self, method: &Method, sent: &Sent<'_>) -> bool {
        let Some(host) = sent.host.filter(|h| self.is_own_host(h)) else {
            return false;
        };
        let elsewhere = sent
            .fetch_site
            .is_some_and(|site| !matches!(site, "same-origin" | "none"));
        if elsewhere && sent.fetch_mode != Some("navigate") {
            return false;
        }
        let reads = matches!(*method, Method::GET | Method::HEAD);
        reads
            || sent
                .origin
                .is_none_or(|origin| origin.eq_ignore_ascii_case(&format!("http://{host}")))
    }
}

/// The headers the guard reads.
#[derive(Default)]
pub(super) struct Sent<'a> {
    pub(super) host: Option<&'a str>,
    pub(super) origin: Option<&'a str>,
    pub(super) fetch_site: Option<&'a str>,
    pub(super) fetch_mode: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(addr: &str) -> Guard {
        Guard::new(addr.parse().unwrap_or_else(|e| panic!("{addr}: {e}")))
    }

    fn sent<'a>(host: &'a str, origin: Option<&'a str>) -> Sent<'a> {
        Sent {
            host: Some(host),
            origin,
            ..Sent::default()
        }
    }

    #[test]
    fn only_the_consoles_own_host_and_pages_are_admitted() {
        let guard = at("127.0.0.1:8787");
        let own = "127.0.0.1:8787";
        assert!(guard.admits(&Method::GET, &sent(own, None)));
        assert!(guard.admits(&Method::GET, &sent("localhost:8787", None)));
        assert!(guard.admits(&Method::POST, &sent(own, Some("http://127.0.0.1:8787"))));
        assert!(
            guard.admits(&Method::POST, &sent(own, None)),
            "a form without Origin"
        );
        // DNS rebinding: a name of the attacker's resolving to 127.0.0.1.
        assert!(!guard.admits(&Method::GET, &sent("evil.example:8787", None)));
        assert!(!guard.admits(&Method::GET, &sent("127.0.0.1:9999", None)));
        assert!(!guard.admits(&Method::GET, &Sent::default()));
        // A page elsewhere posting a form here.
        let evil = Some("https://evil.example");
        assert!(!guard.admits(&Method::POST, &sent(own, evil)));
        assert!(!guard.admits(&Method::POST, &sent(own, Some("null"))));
        // A page elsewhere loading a page or a part as its resource: each is a signed call.
        let embedded = |site, mode| Sent {
            fetch_site: Some(site),
            fetch_mode: Some(mode),
            ..sent(own, None)
        };
        assert!(!guard.admits(&Method::GET, &embedded("cross-site", "no-cors")));
        assert!(!guard.admits(&Method::GET, &embedded("same-site", "cors")));
        assert!(
            guard.admits(&Method::GET, &embedded("cross-site", "navigate")),
            "a link"
        );
        assert!(
            guard.admits(&Method::GET, &embedded("same-origin", "cors")),
            "the refresh"
        );
        assert!(
            guard.admits(&Method::GET, &embedded("none", "navigate")),
            "typed in"
        );
    }

    #[test]
    fn the_guard_knows_the_address_it_was_bound_to() {
        assert!(at("127.0.0.2:9000").is_own_host("127.0.0.2:9000"));
        assert!(at("[::1]:9000").is_own_host("[::1]:9000"));
        assert!(
            at("127.0.0.1:80").is_own_host("127.0.0.1"),
            "the default port left out"
        );
        assert!(!at("127.0.0.1:9000").is_own_host("127.0.0.1"));
    }

    #[test]
    fn a_form_needs_the_token_its_page_was_given() {
        let guard = at("127.0.0.1:1");
        let token = guard.token().to_owned();
        assert_eq!(token.len(), 32);
        assert!(guard.token_matches(&token));
        assert!(!guard.token_matches(""));
        assert!(!guard.token_matches(&token[..31]));
        assert_ne!(at("127.0.0.1:1").token(), token, "a token per console");
    }
}
