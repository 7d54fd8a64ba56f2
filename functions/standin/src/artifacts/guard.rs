//! Nothing of ours in an artifact: an agent may echo the push token we gave it, or the
//! credentials it was called with. Content is checked as it is stored, and any echo is
//! blanked (the part is then flagged `redacted`).

use crate::digest::TokenDigest;

/// A push token: 43 base64url characters (32 random bytes).
const TOKEN_LEN: usize = 43;
/// Shorter credentials are not looked for: they would match ordinary text.
const MIN_SECRET_LEN: usize = 8;
/// Longer credentials (a PEM key, a long JWT) are looked for in equal pieces of at most
/// this many bytes (so at least half of it), each blanked wherever it appears: what is
/// held back stays bounded, and an echo of the whole credential is blanked whole.
const MAX_SECRET_PIECE: usize = 4096;
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
                .flat_map(|s| pieces(&s))
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

    /// Blanks every echo in `bytes`; true when there was one. Every echo is found
    /// before any is blanked, so one overlapping another (a token inside a credential)
    /// is blanked whole.
    pub fn redact(&self, bytes: &mut [u8]) -> bool {
        let mut echoes = Vec::new();
        for secret in &self.secrets {
            let mut from = 0;
            while let Some(at) = find(&bytes[from..], secret) {
                let start = from + at;
                echoes.push(start..start + secret.len());
                from = start + secret.len();
            }
        }
        if let Some(digest) = &self.token {
            for run in token_runs(bytes) {
                // Every window of a run, so a token glued to other characters is seen.
                for at in run.start..=run.end - TOKEN_LEN {
                    let window = at..at + TOKEN_LEN;
                    let candidate = std::str::from_utf8(&bytes[window.clone()]).unwrap_or_default();
                    if TokenDigest::of(candidate).matches(digest) {
                        echoes.push(window);
                    }
                }
            }
        }
        for echo in &echoes {
            bytes[echo.clone()].fill(BLANK);
        }
        !echoes.is_empty()
    }

    /// Blanks every echo in `value`'s strings (keys included) as they read unescaped.
    pub fn blank_value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => *s = self.blank(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.blank_value(v)),
            Value::Object(members) => {
                *members = std::mem::take(members)
                    .into_iter()
                    .map(|(key, mut v)| {
                        self.blank_value(&mut v);
                        (self.blank(&key), v)
                    })
                    .collect();
            }
            _ => {}
        }
    }

    /// `text` with every echo blanked.
    pub fn blank(&self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        if !self.redact(&mut bytes) {
            return text.to_owned();
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A credential in equal pieces of at most `MAX_SECRET_PIECE` bytes: none is short
/// enough to match ordinary text (a PEM key's footer alone).
fn pieces(secret: &[u8]) -> Vec<Vec<u8>> {
    let count = secret.len().div_ceil(MAX_SECRET_PIECE).max(1);
    let size = secret.len().div_ceil(count).max(1);
    secret.chunks(size).map(<[u8]>::to_vec).collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Runs of at least `TOKEN_LEN` token characters: only their windows are hashed, so
/// checking a file costs a scan, and a hash per position only inside such runs.
fn token_runs(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let (mut runs, mut start) = (Vec::new(), 0);
    for run in bytes.split(|&b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_')) {
        if run.len() >= TOKEN_LEN {
            runs.push(start..start + run.len());
        }
        start += run.len() + 1;
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

    /// A credential longer than a piece (a PEM key) is blanked to its last byte, and what
    /// is held back stays one piece.
    #[test]
    fn a_long_credential_is_blanked_whole() {
        // Random-looking, as a key's body is.
        let mut state = 0x2545_f491_u32;
        let key: String = (0..10_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                char::from(b'A' + u8::try_from(state % 26).unwrap_or(0))
            })
            .collect();
        let guard = EchoGuard::new(None, [key.clone()]);
        assert!(guard.hold() <= MAX_SECRET_PIECE);
        let mut bytes = format!("before {key} after").into_bytes();
        assert!(guard.redact(&mut bytes));
        let out = String::from_utf8(bytes).unwrap_or_default();
        assert_eq!(
            out,
            format!("before {} after", "*".repeat(key.len())),
            "every byte of the key blanked"
        );
        // Equal pieces: none left short enough to match ordinary text.
        let odd = "k".repeat(MAX_SECRET_PIECE + 1);
        let split = pieces(odd.as_bytes());
        assert_eq!(
            split.iter().map(Vec::len).collect::<Vec<_>>(),
            [MAX_SECRET_PIECE / 2 + 1, MAX_SECRET_PIECE / 2]
        );
        assert_eq!(pieces(b"sk-live-0123"), [b"sk-live-0123".to_vec()]);
    }

    /// The push token echoed inside a credential's echo: both blanked whole, though each
    /// match overlaps the other.
    #[test]
    fn a_token_overlapping_a_credential_is_blanked_whole() {
        let token = PushToken::generate();
        let exposed = token.expose();
        // The credential ends with the token's first ten characters.
        let credential = format!("cred-{}", &exposed[..10]);
        let guard = EchoGuard::new(Some(token.digest()), [credential.clone()]);
        let text = format!("x cred-{exposed} y");
        let mut bytes = text.clone().into_bytes();
        assert!(guard.redact(&mut bytes));
        let out = String::from_utf8(bytes).unwrap_or_default();
        assert_eq!(
            out,
            format!("x {} y", "*".repeat(credential.len() - 10 + exposed.len())),
            "the credential and the whole token blanked: {out}"
        );
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
