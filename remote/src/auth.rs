//! An agent's credentials, as the client presents them call by call. The stand-in
//! supplies them (it reads the secrets, fetches the tokens, signs); this crate decides
//! where they go, what the card requires, and what a refusal means.

use futures_util::future::BoxFuture;

use crate::error::RemoteError;

pub use crate::scheme::Scheme;

/// A client certificate chain and its private key, both PEM, as one buffer.
pub struct ClientIdentity {
    pub pem: Vec<u8>,
}

/// What an agent's calls are authenticated with. Implementations keep their secrets out
/// of every `Debug`, log line and error message: an error names the secret's id at most.
pub trait Credentials: Send + Sync {
    fn scheme(&self) -> Scheme;

    /// Adds the credential to a request about to go out: a header, a query parameter,
    /// a signature over the whole request. Nothing for mTLS (see `identity`).
    fn authorize<'a>(
        &'a self,
        request: &'a mut reqwest::Request,
    ) -> BoxFuture<'a, Result<(), RemoteError>>;

    /// The agent refused what `authorize` added (401 or 403): forget what is cached (the
    /// secret, a token) so the next `authorize` reads it afresh. False when nothing
    /// fresher can be had, so the call is not repeated.
    fn renew(&self) -> BoxFuture<'_, bool>;

    /// The certificate and key the TLS connection presents (mTLS), read afresh when the
    /// cached copy expires.
    fn identity(&self) -> BoxFuture<'_, Result<Option<ClientIdentity>, RemoteError>> {
        Box::pin(async { Ok(None) })
    }
}

/// A scheme an agent's card names as required, in the card's own vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Required {
    ApiKey {
        location: String,
        name: String,
    },
    Http {
        scheme: String,
    },
    OAuth2,
    OpenIdConnect,
    MutualTls,
    /// Named by a requirement but not described (or described in a way no version has).
    Unknown,
}

impl Required {
    /// Whether the configured scheme presents what this one asks for. SigV4 is outside
    /// the cards' vocabulary (AgentCore Runtime's cards cannot say it), so it is taken
    /// to answer any requirement: the operator said how this agent is reached.
    fn accepts(&self, configured: Scheme) -> bool {
        match (self, configured) {
            (_, Scheme::SigV4) => true,
            (Self::ApiKey { .. }, Scheme::ApiKey) => true,
            (Self::Http { scheme }, Scheme::Basic) => scheme.eq_ignore_ascii_case("basic"),
            (Self::Http { scheme }, Scheme::Bearer | Scheme::OAuth2ClientCredentials) => {
                scheme.eq_ignore_ascii_case("bearer")
            }
            (Self::OAuth2 | Self::OpenIdConnect, Scheme::Bearer)
            | (Self::OAuth2 | Self::OpenIdConnect, Scheme::OAuth2ClientCredentials) => true,
            (Self::MutualTls, Scheme::MutualTls) => true,
            _ => false,
        }
    }

    /// What an operator sets in the entry's `auth` to meet it. Worded so the scrub a
    /// failure reason goes through keeps it whole: a secret-sounding word is never
    /// followed by a space or a colon.
    fn to_configure(&self) -> String {
        const ENTRY: &str = "and name its Secrets Manager entry";
        match self {
            Self::ApiKey { location, name } => {
                format!("set auth.type to api_key, in {location}, name {name}, {ENTRY}")
            }
            Self::Http { scheme } if scheme.eq_ignore_ascii_case("basic") => {
                format!("set auth.type to basic, {ENTRY}")
            }
            Self::Http { .. } => format!("set auth.type to bearer, {ENTRY}"),
            Self::OAuth2 | Self::OpenIdConnect => {
                "set auth.type to oauth2_client_credentials, with its token_url, client_id and Secrets Manager entry".into()
            }
            Self::MutualTls => format!("set auth.type to mtls, {ENTRY} (PEM certificate and key)"),
            Self::Unknown => "set the auth the agent's documentation names".into(),
        }
    }
}

/// The card's security requirements: any one alternative suffices, and an alternative
/// needs every scheme it names. Empty when the card requires nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Requirements {
    pub alternatives: Vec<Vec<(String, Required)>>,
}

impl Requirements {
    /// None when the configured scheme (or none) meets the card; otherwise one line
    /// naming the agent, the scheme the card asks for and what to configure.
    pub fn unmet(&self, agent: &str, configured: Option<Scheme>) -> Option<String> {
        if self.alternatives.is_empty() || self.alternatives.iter().any(Vec::is_empty) {
            return None;
        }
        let met = |alternative: &Vec<(String, Required)>| {
            configured.is_some_and(|c| alternative.iter().all(|(_, r)| r.accepts(c)))
        };
        if self.alternatives.iter().any(met) {
            return None;
        }
        let (name, first) = self.alternatives.first()?.first()?;
        let have = configured.map_or("none".to_owned(), |c| format!("{c}, configured"));
        Some(format!(
            "agent {agent:?} requires the card's security scheme {name:?}, which its auth ({have}) does not meet: {}",
            first.to_configure()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, required: Required) -> Requirements {
        Requirements {
            alternatives: vec![vec![(name.to_owned(), required)]],
        }
    }

    #[test]
    fn a_card_that_requires_nothing_is_met_by_anything() {
        assert_eq!(Requirements::default().unmet("a", None), None);
        let optional = Requirements {
            alternatives: vec![vec![], vec![("k".into(), Required::MutualTls)]],
        };
        assert_eq!(optional.unmet("a", None), None);
    }

    #[test]
    fn each_configured_scheme_meets_its_own_kind_of_requirement() {
        let bearer = Required::Http {
            scheme: "Bearer".into(),
        };
        let basic = Required::Http {
            scheme: "basic".into(),
        };
        let key = Required::ApiKey {
            location: "header".into(),
            name: "X-API-Key".into(),
        };
        for (required, scheme) in [
            (&bearer, Scheme::Bearer),
            (&bearer, Scheme::OAuth2ClientCredentials),
            (&basic, Scheme::Basic),
            (&key, Scheme::ApiKey),
            (&Required::OAuth2, Scheme::OAuth2ClientCredentials),
            (&Required::OpenIdConnect, Scheme::Bearer),
            (&Required::MutualTls, Scheme::MutualTls),
            (&Required::MutualTls, Scheme::SigV4),
        ] {
            assert_eq!(
                one("s", required.clone()).unmet("a", Some(scheme)),
                None,
                "{scheme} meets {required:?}"
            );
        }
        assert!(one("s", basic).unmet("a", Some(Scheme::Bearer)).is_some());
        assert!(one("s", key).unmet("a", Some(Scheme::Bearer)).is_some());
    }

    #[test]
    fn an_unmet_requirement_names_the_agent_the_scheme_and_what_to_configure() {
        let card = one(
            "apiKey",
            Required::ApiKey {
                location: "header".into(),
                name: "X-API-Key".into(),
            },
        );
        let line = card.unmet("billing", None).unwrap_or_default();
        assert!(line.contains("\"billing\""), "{line}");
        assert!(line.contains("\"apiKey\""), "{line}");
        assert!(line.contains("its auth (none)"), "{line}");
        assert!(
            line.contains("api_key, in header, name X-API-Key,"),
            "{line}"
        );
        let line = card
            .unmet("billing", Some(Scheme::Basic))
            .unwrap_or_default();
        assert!(line.contains("(basic, configured)"), "{line}");
        assert_eq!(
            standin_wire::scrub::scrub(&line),
            line,
            "the scrub keeps it whole"
        );
    }

    #[test]
    fn an_alternative_needs_every_scheme_it_names() {
        let both = Requirements {
            alternatives: vec![vec![
                ("tls".into(), Required::MutualTls),
                (
                    "jwt".into(),
                    Required::Http {
                        scheme: "bearer".into(),
                    },
                ),
            ]],
        };
        assert!(both.unmet("a", Some(Scheme::MutualTls)).is_some());
        assert!(both.unmet("a", Some(Scheme::Bearer)).is_some());
    }
}
