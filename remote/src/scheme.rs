//! The kinds of credential, named as an agent entry names them: what a refusal and a
//! card's requirement are stated in.

/// The kinds of credential the stand-in presents, by the name an agent entry gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    ApiKey,
    Bearer,
    Basic,
    OAuth2ClientCredentials,
    SigV4,
    MutualTls,
}

impl Scheme {
    /// The entry's `auth.type`.
    pub fn name(self) -> &'static str {
        match self {
            Self::ApiKey => "api_key",
            Self::Bearer => "bearer",
            Self::Basic => "basic",
            Self::OAuth2ClientCredentials => "oauth2_client_credentials",
            Self::SigV4 => "sigv4",
            Self::MutualTls => "mtls",
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
