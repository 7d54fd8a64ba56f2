//! Nothing of ours in an artifact: an agent may echo the push token we gave it, or the
//! credentials it was called with. Content is checked as it is stored, and any echo is
//! blanked (the part is then flagged `redacted`).

use crate::push::TokenDigest;

/// A push token: 43 base64url characters (32 random bytes).
const TOKEN_LEN: usize = 43;
/// Shorter credentials are not looked for: they would match ordinary text.
const MIN_SECRET_LEN: usize = 8;
/// Longer credentials are looked for by their first this many bytes (a PEM key's
/// body, a long JWT): held back at most this much.
const MAX_SECRET_PREFIX: usize = 4096;
const BLANK: u8 = b'*';

#[derive(Clone, Default)]
pub struct EchoGuard {
    token: Option<TokenDigest>,
    secrets: Vec<Vec<u8>>,
}

// The secrets must never reach a log line.
impl std::fmt::Debug for EchoGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EchoGuard")
            .field("token", &self.token.is_some())
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl EchoGuard {
    /// `token`: the digest of the push token the agent was given; `secrets`: the
    /// credential values this process presents to it.
    pub fn new(token: Option<TokenDigest>, secrets: impl IntoIterator<Item = String>) -> Self {
        Self {
            token,
            secrets: secrets
                .into_iter()
                .map(String::into_bytes)
                .filter(|s| s.len() >= MIN_SECRET_LEN)
                .map(|mut s| {
                    s.truncate(MAX_SECRET_PREFIX);
                    s
                })
                .collect(),
        }
    }

    /// Bytes to hold back from the end of what is checked, so an echo split across
    /// two chunks is seen whole.
    pub fn hold(&self) -> usize {
        self.secrets
            .iter()
            .map(Vec::len)
            .chain([TOKEN_LEN + 1])
            .max()
            .unwrap_or(TOKEN_LEN + 1)
    }

    /// Blanks every echo in `bytes`; true when there was one.
    pub fn redact(&self, bytes: &mut [u8]) -> bool {
        let mut found = false;
        for secret in &self.secrets {
            let mut from = 0;
            while let Some(at) = find(&bytes[from..], secret) {
                let start = from + at;
                bytes[start..start + secret.len()].fill(BLANK);
                from = start + secret.len();
                found = true;
            }
        }
        if let Some(digest) = &self.token {
            for run in token_runs(bytes) {
                // Every window of a run, so a token glued to other characters is seen.
                for at in run.start..=run.end - TOKEN_LEN {
                    let window = at..at + TOKEN_LEN;
                    let candidate = std::str::from_utf8(&bytes[window.clone()]).unwrap_or_default();
                    if TokenDigest::of(candidate).matches(digest) {
                        bytes[window].fill(BLANK);
                        found = true;
                    }
                }
            }
        }
        found
    }
}

impl EchoGuard {
    /// `text` with every echo blanked.
    pub fn blank(&self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        if !self.redact(&mut bytes) {
            return text.to_owned();
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Runs of at least `TOKEN_LEN` token characters: only their windows are hashed, so
/// checking a file costs a scan, and a hash per position only inside such runs.
fn token_runs(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, &b) in bytes.iter().chain([&b' ']).enumerate() {
        match (is_token_char(b) && i < bytes.len(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if i - s >= TOKEN_LEN {
                    runs.push(s..i);
                }
                start = None;
            }
            _ => {}
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::PushToken;

    #[test]
    fn an_echoed_push_token_and_credential_are_blanked_and_nothing_else() {
        let token = PushToken::generate();
        let guard = EchoGuard::new(Some(token.digest()), ["sk-live-0123456789".to_owned()]);
        let other = PushToken::generate();
        let text = format!(
            "ours: {} theirs: {} key=sk-live-0123456789. glued: x{}y",
            token.expose(),
            other.expose(),
            token.expose()
        );
        let mut bytes = text.clone().into_bytes();
        assert!(guard.redact(&mut bytes));
        let out = String::from_utf8(bytes).unwrap_or_default();
        assert!(!out.contains(token.expose()) && !out.contains("sk-live-0123456789"));
        assert!(
            out.contains(other.expose()),
            "a token not ours stays: {out}"
        );
        assert_eq!(out.len(), text.len());
        let mut clean = b"nothing here".to_vec();
        assert!(!guard.redact(&mut clean));
    }

    #[test]
    fn short_credentials_are_not_looked_for_and_debug_shows_none() {
        let guard = EchoGuard::new(None, ["abc".to_owned(), "longer-secret-value".to_owned()]);
        let mut bytes = b"abc abc".to_vec();
        assert!(!guard.redact(&mut bytes));
        assert!(!format!("{guard:?}").contains("longer-secret"));
        assert_eq!(guard.hold(), "longer-secret-value".len().max(TOKEN_LEN + 1));
    }
}
