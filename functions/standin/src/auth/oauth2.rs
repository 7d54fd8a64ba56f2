//! OAuth 2.0's client-credentials grant (RFC 6749 §4.4): the access token fetched from the
//! token endpoint with the client's id and secret (HTTP Basic, §2.3.1), kept until
//! shortly before it expires, fetched again once when the agent refuses it.

use std::time::{Duration, Instant};

use serde::Deserialize;
use standin_remote::RemoteError;
use tokio::sync::Mutex;

use secrecy::ExposeSecret;

use super::secrets::SecretValue;

/// A token is fetched again this long before its `expires_in` runs out, so a call never
/// carries one that expires on the way.
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);
/// When the endpoint gives no `expires_in`: a token is kept this long.
const UNDATED_TOKEN_LIFETIME: Duration = Duration::from_secs(300);
/// The most of a token endpoint's answer that is read.
const MAX_TOKEN_ANSWER_BYTES: usize = 64 * 1024;

pub struct ClientCredentials {
    pub token_url: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub audience: Option<String>,
}

#[derive(Deserialize)]
struct Granted {
    access_token: String,
    /// A number, or (Azure AD v1, some others) a numeric string.
    expires_in: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Refusal {
    error: String,
    error_description: Option<String>,
}

/// The token, cached for one agent's grant.
#[derive(Default)]
pub struct TokenCache {
    token: Mutex<Option<(Instant, SecretValue)>>,
}

impl TokenCache {
    /// The token held now, if any (for the artifact guard: never logged).
    pub async fn held(&self) -> Option<String> {
        self.token
            .lock()
            .await
            .as_ref()
            .map(|(_, value)| value.expose_secret().to_owned())
    }

    /// The cached token while it is good, else a fresh one from `fetch`.
    pub async fn token<F, Fut>(&self, fetch: F) -> Result<SecretValue, RemoteError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(SecretValue, Duration), RemoteError>>,
    {
        // Held across the fetch: concurrent calls wait for one fetch, not one each.
        let mut token = self.token.lock().await;
        if let Some((until, value)) = token.as_ref()
            && Instant::now() < *until
        {
            return Ok(value.clone());
        }
        let (value, lifetime) = fetch().await?;
        super::held::remember_fleeting(value.expose_secret());
        let until = Instant::now() + lifetime.saturating_sub(EXPIRY_MARGIN);
        *token = Some((until, value.clone()));
        Ok(value)
    }

    pub async fn forget(&self) {
        *self.token.lock().await = None;
    }
}

fn plain(url: &str, problem: impl std::fmt::Display) -> RemoteError {
    // "token_url", not "token endpoint", and the URL in parentheses: a failure reason is
    // scrubbed, and a secret-sounding word followed by a space (as "token", which ends
    // most URLs) loses the next one.
    RemoteError::Credentials(format!("the OAuth2 token_url ({url}) {problem}"))
}

/// Asks the endpoint for a token; the answer's lifetime with it. Errors name the
/// endpoint and what it said (`invalid_client`), never the secret or a token.
pub async fn fetch_token(
    http: &reqwest::Client,
    grant: &ClientCredentials,
    client_secret: &SecretValue,
) -> Result<(SecretValue, Duration), RemoteError> {
    let url = grant.token_url.as_str();
    let mut form = vec![("grant_type", "client_credentials".to_owned())];
    if !grant.scopes.is_empty() {
        form.push(("scope", grant.scopes.join(" ")));
    }
    if let Some(audience) = &grant.audience {
        form.push(("audience", audience.clone()));
    }
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", form_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    // §2.3.1: the id and secret are form-encoded before they are joined.
    let mut response = http
        .post(url)
        .basic_auth(
            form_encode(&grant.client_id),
            Some(form_encode(client_secret.expose_secret())),
        )
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .timeout(Duration::from_secs(15))
        .send()
        .await
        .map_err(|e| {
            plain(
                url,
                format!("could not be reached: {}", RemoteError::from(e)),
            )
        })?;
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| plain(url, "broke off its answer"))?
    {
        if bytes.len() + chunk.len() > MAX_TOKEN_ANSWER_BYTES {
            return Err(plain(url, "answered more than 64 KiB"));
        }
        bytes.extend_from_slice(&chunk);
    }
    if !(200..300).contains(&status) {
        let said = serde_json::from_slice::<Refusal>(&bytes)
            .map(|r| {
                let description = r
                    .error_description
                    .map(|d| format!(" ({})", short(&d, 200)))
                    .unwrap_or_default();
                format!(": {}{description}", short(&r.error, 64))
            })
            .unwrap_or_default();
        return Err(plain(
            url,
            format!(
                "refused the client credentials of {:?} (HTTP {status}){said}",
                grant.client_id
            ),
        ));
    }
    let granted: Granted = serde_json::from_slice(&bytes).map_err(|_| {
        plain(
            url,
            "answered what does not read as a grant (an access_token)",
        )
    })?;
    if granted.access_token.is_empty() {
        return Err(plain(url, "answered an empty access_token"));
    }
    let seconds = match granted.expires_in {
        Some(serde_json::Value::Number(n)) => n.as_f64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    let lifetime = seconds
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(UNDATED_TOKEN_LIFETIME);
    Ok((SecretValue::from(granted.access_token), lifetime))
}

/// The endpoint's own words, scrubbed and cut: they reach a log line and a parent's note.
fn short(text: &str, chars: usize) -> String {
    standin_wire::scrub::scrub(text)
        .chars()
        .take(chars)
        .collect()
}

/// `application/x-www-form-urlencoded` for one value.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_token_is_kept_until_shortly_before_it_expires_and_forgotten_on_demand() {
        let cache = TokenCache::default();
        let fetched = AtomicUsize::new(0);
        let fetch = |life: u64| {
            let n = fetched.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok((
                    SecretValue::from(format!("t{n}")),
                    Duration::from_secs(life),
                ))
            }
        };
        // What the cache answers, for a fetch whose token lives `life` seconds.
        let token = |life: u64| {
            let cache = &cache;
            async move {
                let token = cache.token(|| fetch(life)).await.expect("t");
                token.expose_secret().to_owned()
            }
        };
        assert_eq!(token(3600).await, "t0");
        assert_eq!(token(3600).await, "t0");
        cache.forget().await;
        assert_eq!(token(30).await, "t1");
        // 30 s is inside the margin: it is not kept.
        assert_eq!(token(3600).await, "t2");
    }

    #[test]
    fn form_values_are_encoded() {
        assert_eq!(form_encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
