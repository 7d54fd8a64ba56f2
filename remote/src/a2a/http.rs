//! What every call to an agent shares, card or task: the time it may take, a body read
//! within a bound, and credentials put on and renewed once when refused.

use std::time::Duration;

use crate::auth::Credentials;
use crate::error::RemoteError;

#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Whole request for unary calls; time to the response head for streams.
    pub call: Duration,
    /// Longest silence tolerated on an open stream (the SDK pings every 15 s).
    pub stream_idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            call: Duration::from_secs(30),
            stream_idle: Duration::from_secs(60),
        }
    }
}

/// Reads a body whole; None past `limit` bytes (checked on Content-Length first, then
/// as it arrives, so nothing beyond the limit is held).
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// A failure to send: the agent's refusal, or the transport's error (which may be a
/// timeout of the caller's operation).
pub(super) enum SendError {
    Remote(RemoteError),
    Http(reqwest::Error),
}

impl From<RemoteError> for SendError {
    fn from(err: RemoteError) -> Self {
        Self::Remote(err)
    }
}

impl SendError {
    pub(super) fn or_timeout(self, operation: &'static str, timeout: Duration) -> RemoteError {
        match self {
            Self::Remote(err) => err,
            Self::Http(err) => timeout_or(operation, timeout, err),
        }
    }
}

/// Sends the request `build` makes with the credentials on it. A 401 or 403 is the
/// credentials' refusal: they are read afresh (the secret may have rotated, the token
/// expired) and the request sent once more; a second refusal, or one without
/// credentials configured, is an error that says what to do.
pub(super) async fn send_authorized(
    http: &reqwest::Client,
    credentials: Option<&dyn Credentials>,
    build: impl Fn() -> Result<reqwest::RequestBuilder, RemoteError>,
) -> Result<reqwest::Response, SendError> {
    let mut renewed = false;
    loop {
        let mut request = build()?.build().map_err(SendError::Http)?;
        if let Some(credentials) = credentials {
            credentials.authorize(&mut request).await?;
        }
        let response = http.execute(request).await.map_err(SendError::Http)?;
        let status = response.status().as_u16();
        // A 403 without credentials is a refusal like any other (its error body says
        // why); with them, it may be a stale secret as much as a 401.
        let refused = match credentials {
            Some(_) => matches!(status, 401 | 403),
            None => status == 401,
        };
        if !refused {
            return Ok(response);
        }
        match credentials {
            Some(credentials) if !renewed && credentials.renew().await => renewed = true,
            configured => {
                return Err(SendError::Remote(RemoteError::Unauthorized {
                    status,
                    scheme: configured.map(|c| c.scheme()),
                }));
            }
        }
    }
}

pub(super) fn timeout_or(
    operation: &'static str,
    timeout: Duration,
    err: reqwest::Error,
) -> RemoteError {
    if err.is_timeout() {
        RemoteError::Timeout {
            operation,
            seconds: timeout.as_secs(),
        }
    } else {
        err.into()
    }
}
