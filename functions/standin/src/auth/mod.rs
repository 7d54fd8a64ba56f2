//! How the stand-in authenticates to an agent: the entry's `auth` (`spec`), the secrets
//! it names (`secrets`, read from Secrets Manager by `secretsmanager`), OAuth2's
//! client-credentials tokens (`oauth2`), SigV4 for AgentCore Runtime with the role the
//! entry names (`sigv4`, its keys assumed through STS by `sts`). What
//! leaves here is [`Credentials`], the remote crate's port: no secret is stored, logged
//! or shown by anything in this slice, and an error names a secret's id at most.

pub mod agentcore;
pub mod held;
pub mod oauth2;
pub mod secrets;
pub mod secretsmanager;
pub mod sigv4;
pub mod spec;
pub mod sts;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use futures_util::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use serde::Deserialize;
use standin_remote::RemoteError;
use standin_remote::auth::{ClientIdentity, Credentials, Scheme};

use oauth2::{ClientCredentials, TokenCache, fetch_token};
use secrecy::ExposeSecret;
use secrets::{SecretValue, Secrets};
use sigv4::{AgentCoreSigner, AgentRole};
pub use spec::AuthSpec;
use spec::KeyIn;

/// What the functions hold to authenticate: the secrets' cache, the client the token
/// endpoints are reached with, AgentCore Runtime's signer, and one set of credentials per
/// agent entry (so an OAuth2 token is shared by every call of the process).
pub struct Keyring {
    secrets: Arc<Secrets>,
    http: reqwest::Client,
    /// Whether an entry's token endpoint may be on a private address (`AllowPrivateAgents`).
    allow_private: bool,
    signer: Arc<AgentCoreSigner>,
    by_entry: Mutex<HashMap<String, Arc<AgentCredentials>>>,
}

/// Entries whose credentials are kept at once, past which the cache starts again.
const MAX_KEPT_CREDENTIALS: usize = 256;

impl Keyring {
    pub fn new(
        secrets: Secrets,
        http: reqwest::Client,
        signer: AgentCoreSigner,
        allow_private: bool,
    ) -> Self {
        Self {
            secrets: Arc::new(secrets),
            http,
            allow_private,
            signer: Arc::new(signer),
            by_entry: Mutex::default(),
        }
    }

    /// The credentials for `spec` (by `key`, the agent's entry: an edited entry gets
    /// new ones).
    pub fn credentials(&self, key: &str, spec: &AuthSpec) -> Arc<dyn Credentials> {
        if let Some(kept) = self.by_entry.lock().ok().and_then(|k| k.get(key).cloned()) {
            return kept;
        }
        let made = Arc::new(AgentCredentials {
            spec: spec.clone(),
            secrets: self.secrets.clone(),
            http: self.http.clone(),
            signer: self.signer.clone(),
            token: TokenCache::default(),
            allow_private: self.allow_private,
        });
        if let Ok(mut kept) = self.by_entry.lock() {
            if kept.len() >= MAX_KEPT_CREDENTIALS {
                kept.clear();
            }
            kept.insert(key.to_owned(), made.clone());
        }
        made
    }

    /// Every credential value this process holds (secrets read, tokens fetched, the
    /// agents' roles' keys): what the echo guard blanks if an agent echoes one.
    pub async fn held_values(&self) -> Vec<String> {
        let mut values = self.secrets.held_values();
        values.extend(self.signer.held());
        let kept: Vec<Arc<AgentCredentials>> = self
            .by_entry
            .lock()
            .map(|k| k.values().cloned().collect())
            .unwrap_or_default();
        for credentials in kept {
            values.extend(credentials.token.held().await);
        }
        values
    }
}

/// One agent's credentials.
pub struct AgentCredentials {
    spec: AuthSpec,
    secrets: Arc<Secrets>,
    http: reqwest::Client,
    signer: Arc<AgentCoreSigner>,
    token: TokenCache,
    allow_private: bool,
}

fn entry(secret: &str) -> String {
    format!("the Secrets Manager entry {secret:?}")
}

fn unreadable(err: impl std::fmt::Display) -> RemoteError {
    RemoteError::Credentials(err.to_string())
}

/// A header value that is never printed (`HeaderValue::set_sensitive`); `from` says
/// where it came from when it cannot be one.
fn sensitive(value: &str, from: &str) -> Result<HeaderValue, RemoteError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        RemoteError::Credentials(format!(
            "{from} does not make a header value (visible ASCII only)"
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

#[derive(Deserialize)]
struct UserPassword {
    username: String,
    password: SecretValue,
}

impl AgentCredentials {
    /// The secret's value, without the line end a secret made from a file keeps.
    async fn secret(&self, id: &str) -> Result<SecretValue, RemoteError> {
        let value = self.secrets.read(id).await.map_err(unreadable)?;
        Ok(SecretValue::from(
            value.expose_secret().trim_end_matches(['\r', '\n']),
        ))
    }
}

impl Credentials for AgentCredentials {
    fn scheme(&self) -> Scheme {
        match self.spec {
            AuthSpec::ApiKey { .. } => Scheme::ApiKey,
            AuthSpec::Bearer { .. } => Scheme::Bearer,
            AuthSpec::Basic { .. } => Scheme::Basic,
            AuthSpec::OAuth2ClientCredentials { .. } => Scheme::OAuth2ClientCredentials,
            AuthSpec::SigV4 { .. } => Scheme::SigV4,
            AuthSpec::MutualTls { .. } => Scheme::MutualTls,
        }
    }

    fn authorize<'a>(
        &'a self,
        request: &'a mut reqwest::Request,
    ) -> BoxFuture<'a, Result<(), RemoteError>> {
        Box::pin(async move {
            let (name, value) = match &self.spec {
                AuthSpec::ApiKey {
                    location: KeyIn::Header,
                    name,
                    secret,
                } => {
                    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        unreadable(format!("auth.name {name:?} is not a header name"))
                    })?;
                    let value = self.secret(secret).await?;
                    (name, sensitive(value.expose_secret(), &entry(secret))?)
                }
                AuthSpec::Bearer { secret } => {
                    let value = self.secret(secret).await?;
                    let bearer = format!("Bearer {}", value.expose_secret().trim());
                    (AUTHORIZATION, sensitive(&bearer, &entry(secret))?)
                }
                AuthSpec::Basic { secret } => {
                    let value = self.secret(secret).await?;
                    let pair: UserPassword =
                        serde_json::from_str(value.expose_secret()).map_err(|_| {
                            RemoteError::Credentials(format!(
                                "the Secrets Manager entry {secret:?} must be JSON with a username and a password"
                            ))
                        })?;
                    let encoded = base64::engine::general_purpose::STANDARD.encode(format!(
                        "{}:{}",
                        pair.username,
                        pair.password.expose_secret()
                    ));
                    (
                        AUTHORIZATION,
                        sensitive(&format!("Basic {encoded}"), &entry(secret))?,
                    )
                }
                AuthSpec::OAuth2ClientCredentials {
                    token_url,
                    client_id,
                    secret,
                    scopes,
                    audience,
                } => {
                    let grant = ClientCredentials {
                        token_url: token_url.clone(),
                        client_id: client_id.clone(),
                        scopes: scopes.clone(),
                        audience: audience.clone(),
                    };
                    let token = self
                        .token
                        .token(|| async {
                            // An entry names the endpoint: held to the agents' reach rule.
                            standin_remote::check_reach(
                                token_url,
                                "the OAuth2 token_url",
                                self.allow_private,
                            )
                            .await?;
                            let client_secret = self.secret(secret).await?;
                            fetch_token(&self.http, &grant, &client_secret).await
                        })
                        .await?;
                    let bearer = format!("Bearer {}", token.expose_secret());
                    (
                        AUTHORIZATION,
                        sensitive(&bearer, "the OAuth2 endpoint's access_token")?,
                    )
                }
                AuthSpec::ApiKey {
                    location: KeyIn::Query,
                    name,
                    secret,
                } => {
                    let value = self.secret(secret).await?;
                    request
                        .url_mut()
                        .query_pairs_mut()
                        .append_pair(name, value.expose_secret());
                    return Ok(());
                }
                AuthSpec::SigV4 {
                    role_arn,
                    external_id,
                    region,
                } => {
                    let role = AgentRole {
                        role_arn: role_arn.clone(),
                        external_id: external_id.clone(),
                    };
                    return self.signer.sign(request, &role, region.as_deref()).await;
                }
                // A certificate is presented when the connection is made (`identity`).
                AuthSpec::MutualTls { .. } => return Ok(()),
            };
            request.headers_mut().insert(name, value);
            Ok(())
        })
    }

    fn renew(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            match &self.spec {
                // The role is assumed afresh: its trust policy may have changed.
                AuthSpec::SigV4 {
                    role_arn,
                    external_id,
                    ..
                } => {
                    self.signer.forget(&AgentRole {
                        role_arn: role_arn.clone(),
                        external_id: external_id.clone(),
                    });
                    true
                }
                // A certificate is presented when the connection is made, before any
                // call: read afresh when its cache runs out, not by sending again.
                AuthSpec::MutualTls { .. } => false,
                spec => {
                    if let Some(secret) = spec.secret() {
                        self.secrets.forget(secret);
                    }
                    self.token.forget().await;
                    true
                }
            }
        })
    }

    fn identity(&self) -> BoxFuture<'_, Result<Option<ClientIdentity>, RemoteError>> {
        Box::pin(async move {
            let AuthSpec::MutualTls { secret } = &self.spec else {
                return Ok(None);
            };
            let pem = self.secret(secret).await?;
            Ok(Some(ClientIdentity {
                pem: pem.expose_secret().as_bytes().to_vec(),
            }))
        })
    }
}

#[cfg(test)]
mod tests;
