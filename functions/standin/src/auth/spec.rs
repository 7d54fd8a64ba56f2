//! An agent entry's `auth`: how the stand-in authenticates to the agent. It names a
//! secret (never holds one), so the entry can be stored, shown and kept on a row as it
//! is. Parsed strictly; errors name the field (`auth.token_url`).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::agentcore::AGENTCORE_SERVICE;
use crate::config_error::{ConfigError, https_or_loopback};

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyIn {
    Header,
    Query,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthSpec {
    /// The secret's value, in a header or a query parameter named `name`.
    ApiKey {
        location: KeyIn,
        name: String,
        secret: String,
    },
    /// `Authorization: Bearer <the secret's value>`.
    Bearer { secret: String },
    /// `Authorization: Basic`, from a secret holding `{"username", "password"}`.
    Basic { secret: String },
    /// A token from the endpoint's client-credentials grant, the secret being the client's.
    OAuth2ClientCredentials {
        token_url: String,
        client_id: String,
        secret: String,
        scopes: Vec<String>,
        audience: Option<String>,
    },
    /// Signed for AgentCore Runtime with the keys of `role_arn`, assumed through STS
    /// (`external_id` when its trust policy asks for one); never the functions' own role.
    SigV4 {
        role_arn: String,
        external_id: Option<String>,
        region: Option<String>,
    },
    /// A client certificate: the secret holds the PEM chain and its private key.
    MutualTls { secret: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiKeyWritten {
    #[serde(rename = "in")]
    location: KeyIn,
    name: String,
    secret: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretWritten {
    secret: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuth2Written {
    token_url: String,
    client_id: String,
    secret: String,
    #[serde(default)]
    scopes: Vec<String>,
    audience: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SigV4Written {
    role_arn: String,
    external_id: Option<String>,
    /// Only AgentCore Runtime's: accepted when it says so, for entries that name it.
    service: Option<String>,
    region: Option<String>,
}

/// An IAM role's ARN: `arn:<partition>:iam::<12-digit account>:role/<path and name>`.
fn role_arn(field: String, text: String) -> Result<String, ConfigError> {
    let valid = (|| {
        let rest = text.strip_prefix("arn:")?;
        let (partition, rest) = rest.split_once(":iam::")?;
        let (account, name) = rest.split_once(":role/")?;
        let name_ok = |c: char| c.is_ascii_alphanumeric() || "+=,.@_-/".contains(c);
        Some(
            partition.starts_with("aws")
                && account.len() == 12
                && account.chars().all(|c| c.is_ascii_digit())
                && !name.is_empty()
                && name.len() <= 512
                && name.chars().all(name_ok),
        )
    })() == Some(true);
    let problem =
        format!("must be an IAM role's ARN (arn:aws:iam::123456789012:role/name), got {text:?}");
    valid.then_some(text).ok_or_else(|| err(field, problem))
}

/// An STS external id: 2 to 1,224 of the characters STS takes.
fn external_id(field: String, text: String) -> Result<String, ConfigError> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "+=,.@:/-_".contains(c);
    let problem = "must be 2 to 1224 letters, digits and +=,.@:/-_ (what STS takes)";
    let valid = (2..=1224).contains(&text.len()) && text.chars().all(ok);
    valid.then_some(text).ok_or_else(|| err(field, problem))
}

const TYPES: &str = "api_key, bearer, basic, oauth2_client_credentials, sigv4 or mtls";

/// Reads one scheme's fields; errors name the field under `at`.
fn fields<T: serde::de::DeserializeOwned>(at: &str, value: Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.inner().to_string();
        let field = match problem
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            Some(name) => format!("{at}.{name}"),
            None if path == "." => at.to_owned(),
            None => format!("{at}.{path}"),
        };
        err(field, problem)
    })
}

/// The longest secret id Secrets Manager takes (an ARN included).
const MAX_SECRET_ID_CHARS: usize = 2048;

fn err(field: String, problem: impl Into<String>) -> ConfigError {
    ConfigError::new(field, problem)
}

fn secret_id(at: &str, id: String) -> Result<String, ConfigError> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "/_+=.@-:".contains(c);
    if id.is_empty() || id.len() > MAX_SECRET_ID_CHARS || !id.chars().all(ok) {
        return Err(err(
            format!("{at}.secret"),
            "must be the name or ARN of a Secrets Manager secret (letters, digits and /_+=.@-)",
        ));
    }
    Ok(id)
}

fn non_empty(field: String, value: String) -> Result<String, ConfigError> {
    let problem = "must be non-empty text without control characters";
    let valid = !value.trim().is_empty() && !value.chars().any(char::is_control);
    valid.then_some(value).ok_or_else(|| err(field, problem))
}

/// A token endpoint the client secret may be sent to ([`https_or_loopback`]).
fn token_url(field: String, text: String) -> Result<String, ConfigError> {
    let url =
        reqwest::Url::parse(&text).map_err(|e| err(field.clone(), format!("not a URL: {e}")))?;
    if https_or_loopback(&url) {
        return Ok(text);
    }
    Err(err(
        field,
        "must be an https:// URL (http:// only on loopback): the client secret goes to it",
    ))
}

impl AuthSpec {
    /// Reads `value`, the entry's `auth` at field `at`.
    pub fn parse(at: &str, value: Value) -> Result<Self, ConfigError> {
        let Value::Object(mut object) = value else {
            return Err(err(
                at.to_owned(),
                format!("must be an object with a type: {TYPES}"),
            ));
        };
        let kind = match object.remove("type") {
            Some(Value::String(kind)) => kind,
            _ => return Err(err(format!("{at}.type"), format!("must be one of {TYPES}"))),
        };
        let rest = Value::Object(object);
        Ok(match kind.as_str() {
            "api_key" => {
                let ApiKeyWritten {
                    location,
                    name,
                    secret,
                } = fields(at, rest)?;
                let field = format!("{at}.name");
                let name = non_empty(field.clone(), name)?;
                if location == KeyIn::Header
                    && http::HeaderName::from_bytes(name.as_bytes()).is_err()
                {
                    return Err(err(field, format!("{name:?} is not a header name")));
                }
                Self::ApiKey {
                    location,
                    name,
                    secret: secret_id(at, secret)?,
                }
            }
            "bearer" => Self::Bearer {
                secret: secret_id(at, fields::<SecretWritten>(at, rest)?.secret)?,
            },
            "basic" => Self::Basic {
                secret: secret_id(at, fields::<SecretWritten>(at, rest)?.secret)?,
            },
            "mtls" => Self::MutualTls {
                secret: secret_id(at, fields::<SecretWritten>(at, rest)?.secret)?,
            },
            "oauth2_client_credentials" => {
                let OAuth2Written {
                    token_url: url,
                    client_id,
                    secret,
                    scopes,
                    audience,
                } = fields(at, rest)?;
                let bad = |s: &String| {
                    s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control())
                };
                if let Some(i) = scopes.iter().position(bad) {
                    return Err(err(
                        format!("{at}.scopes[{i}]"),
                        "must be one scope: non-empty, without spaces",
                    ));
                }
                Self::OAuth2ClientCredentials {
                    token_url: token_url(format!("{at}.token_url"), url)?,
                    client_id: non_empty(format!("{at}.client_id"), client_id)?,
                    secret: secret_id(at, secret)?,
                    scopes,
                    audience: audience
                        .map(|a| non_empty(format!("{at}.audience"), a))
                        .transpose()?,
                }
            }
            "sigv4" => {
                let SigV4Written {
                    role_arn: role,
                    external_id: external,
                    service,
                    region,
                } = fields(at, rest)?;
                if let Some(service) = service
                    && service != AGENTCORE_SERVICE
                {
                    return Err(err(
                        format!("{at}.service"),
                        format!(
                            "SigV4 signs for AgentCore Runtime only: must be {AGENTCORE_SERVICE:?} (or left out), got {service:?}"
                        ),
                    ));
                }
                let name = |field: String, v: String| {
                    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
                    let problem = format!("must be lowercase letters, digits and '-', got {v:?}");
                    let valid = !v.is_empty() && v.chars().all(ok);
                    valid.then_some(v).ok_or_else(|| err(field, problem))
                };
                Self::SigV4 {
                    role_arn: role_arn(format!("{at}.role_arn"), role)?,
                    external_id: external
                        .map(|e| external_id(format!("{at}.external_id"), e))
                        .transpose()?,
                    region: region
                        .map(|r| name(format!("{at}.region"), r))
                        .transpose()?,
                }
            }
            other => {
                return Err(err(
                    format!("{at}.type"),
                    format!("must be one of {TYPES}, got {other:?}"),
                ));
            }
        })
    }

    /// The secret the scheme reads, if it reads one.
    pub fn secret(&self) -> Option<&str> {
        match self {
            Self::ApiKey { secret, .. }
            | Self::Bearer { secret }
            | Self::Basic { secret }
            | Self::OAuth2ClientCredentials { secret, .. }
            | Self::MutualTls { secret } => Some(secret),
            Self::SigV4 { .. } => None,
        }
    }

    /// Refuses a secret outside the deployment's prefix (`at`: the entry's `auth`), which
    /// the functions cannot read: clearer now than an AccessDenied at the agent's first turn.
    pub fn check_secret_prefix(&self, at: &str, prefix: &str) -> Result<(), ConfigError> {
        let Some(secret) = self.secret() else {
            return Ok(());
        };
        // An ARN's name follows `:secret:`.
        let name = secret
            .split_once(":secret:")
            .map_or(secret, |(_, name)| name);
        if prefix.is_empty() || name.starts_with(prefix) {
            return Ok(());
        }
        Err(err(
            format!("{at}.secret"),
            format!("must name a secret under {prefix:?}, the prefix this deployment may read"),
        ))
    }

    /// The entry's `auth` as written.
    pub fn to_entry(&self) -> Value {
        written(match self {
            Self::ApiKey {
                location,
                name,
                secret,
            } => json!({"type": "api_key", "in": location, "name": name, "secret": secret}),
            Self::Bearer { secret } => json!({"type": "bearer", "secret": secret}),
            Self::Basic { secret } => json!({"type": "basic", "secret": secret}),
            Self::OAuth2ClientCredentials {
                token_url,
                client_id,
                secret,
                scopes,
                audience,
            } => json!({
                "type": "oauth2_client_credentials",
                "token_url": token_url,
                "client_id": client_id,
                "secret": secret,
                "scopes": (!scopes.is_empty()).then_some(scopes),
                "audience": audience,
            }),
            Self::SigV4 {
                role_arn,
                external_id,
                region,
            } => json!({
                "type": "sigv4",
                "role_arn": role_arn,
                "external_id": external_id,
                "region": region,
            }),
            Self::MutualTls { secret } => json!({"type": "mtls", "secret": secret}),
        })
    }
}

/// An entry as written: the fields it leaves out (null here) are not written.
pub(crate) fn written(mut entry: Value) -> Value {
    if let Value::Object(fields) = &mut entry {
        fields.retain(|_, value| !value.is_null());
    }
    entry
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    fn field_of(value: Value) -> String {
        AuthSpec::parse("auth", value).expect_err("refused").field
    }

    #[test]
    fn every_scheme_reads_and_writes_back_the_same() {
        for value in [
            json!({"type": "api_key", "in": "header", "name": "X-API-Key", "secret": "standin/s/key"}),
            json!({"type": "api_key", "in": "query", "name": "key", "secret": "standin/s/key"}),
            json!({"type": "bearer", "secret": "standin/s/b"}),
            json!({"type": "basic", "secret": "arn:aws:secretsmanager:us-east-1:000000000000:secret:standin/s/b-AbCdEf"}),
            json!({"type": "oauth2_client_credentials", "token_url": "https://login.example/token",
                   "client_id": "stand-in", "secret": "standin/s/o", "scopes": ["a2a.call"], "audience": "agents"}),
            json!({"type": "oauth2_client_credentials", "token_url": "http://127.0.0.1:9/token",
                   "client_id": "c", "secret": "standin/s/o"}),
            json!({"type": "sigv4", "role_arn": "arn:aws:iam::123456789012:role/standin-agent-a", "region": "us-west-2"}),
            json!({"type": "sigv4", "role_arn": "arn:aws:iam::123456789012:role/standin-agent-a", "external_id": "tenant-7"}),
            json!({"type": "mtls", "secret": "standin/s/cert"}),
        ] {
            let spec = AuthSpec::parse("auth", value.clone()).expect("reads");
            assert_eq!(spec.to_entry(), value);
        }
    }

    #[test]
    fn bad_auth_is_refused_naming_the_field() {
        assert_eq!(field_of(json!({"type": "kerberos"})), "auth.type");
        assert_eq!(field_of(json!({"secret": "s"})), "auth.type");
        assert_eq!(field_of(json!({"type": "bearer"})), "auth.secret");
        assert_eq!(
            field_of(json!({"type": "bearer", "secret": ""})),
            "auth.secret"
        );
        assert_eq!(
            field_of(json!({"type": "bearer", "secret": "a b"})),
            "auth.secret"
        );
        assert_eq!(
            field_of(json!({"type": "bearer", "secret": "s", "value": "x"})),
            "auth.value"
        );
        assert_eq!(
            field_of(json!({"type": "api_key", "in": "cookie", "name": "k", "secret": "s"})),
            "auth.in"
        );
        assert_eq!(
            field_of(json!({"type": "api_key", "in": "header", "name": "bad name", "secret": "s"})),
            "auth.name"
        );
        let oauth = |url: &str| json!({"type": "oauth2_client_credentials", "token_url": url, "client_id": "c", "secret": "s"});
        assert_eq!(
            field_of(oauth("http://login.example/token")),
            "auth.token_url"
        );
        assert_eq!(field_of(oauth("not a url")), "auth.token_url");
        assert_eq!(
            field_of(
                json!({"type": "oauth2_client_credentials", "token_url": "https://l/t",
                            "client_id": "c", "secret": "s", "scopes": ["a b"]})
            ),
            "auth.scopes[0]"
        );
        assert_eq!(
            field_of(
                json!({"type": "oauth2_client_credentials", "token_url": "https://l/t",
                            "client_id": " ", "secret": "s"})
            ),
            "auth.client_id"
        );
        let role = "arn:aws:iam::123456789012:role/standin-agent-a";
        // The confused deputy's entries: any service but AgentCore Runtime's is refused.
        for service in ["sqs", "s3", "Bedrock", "bedrock-agentcore-control"] {
            assert_eq!(
                field_of(json!({"type": "sigv4", "role_arn": role, "service": service})),
                "auth.service",
                "{service}"
            );
        }
        assert_eq!(
            field_of(json!({"type": "sigv4", "service": "bedrock-agentcore"})),
            "auth.role_arn",
            "signing with the functions' own role is not an option"
        );
        for bad in [
            "standin-agent-a",
            "arn:aws:iam::1:role/a",
            "arn:aws:sts::123456789012:assumed-role/a/s",
            "arn:aws:iam::123456789012:user/a",
        ] {
            assert_eq!(
                field_of(json!({"type": "sigv4", "role_arn": bad})),
                "auth.role_arn",
                "{bad}"
            );
        }
        assert_eq!(
            field_of(json!({"type": "sigv4", "role_arn": role, "external_id": "x"})),
            "auth.external_id"
        );
        assert_eq!(
            field_of(json!({"type": "sigv4", "role_arn": role, "region": "US-EAST-1"})),
            "auth.region"
        );
        assert!(
            AuthSpec::parse(
                "auth",
                json!({"type": "sigv4", "role_arn": role, "service": "bedrock-agentcore"})
            )
            .is_ok(),
            "AgentCore Runtime's service may be named"
        );
    }

    #[test]
    fn a_secret_outside_the_deployments_prefix_is_refused() {
        let spec = |secret: &str| {
            AuthSpec::parse("auth", json!({"type": "bearer", "secret": secret})).expect("reads")
        };
        assert!(
            spec("standin/prod/b")
                .check_secret_prefix("auth", "standin/prod/")
                .is_ok()
        );
        assert!(
            spec("arn:aws:secretsmanager:eu-west-1:1:secret:standin/prod/b-x1")
                .check_secret_prefix("auth", "standin/prod/")
                .is_ok()
        );
        let refused = spec("other/b")
            .check_secret_prefix("auth", "standin/prod/")
            .expect_err("refused");
        assert_eq!(refused.field, "auth.secret");
        assert!(refused.problem.contains("standin/prod/"));
        let sigv4 = AuthSpec::parse(
            "auth",
            json!({"type": "sigv4", "role_arn": "arn:aws:iam::123456789012:role/standin-agent-a"}),
        )
        .expect("reads");
        assert!(sigv4.check_secret_prefix("auth", "standin/prod/").is_ok());
    }
}
