//! The push token, its digest and the push URL (abuse cases 7 and 9).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng;
use secrecy::{ExposeSecret, SecretString};

use crate::digest::TokenDigest;

/// The route the push function serves; `{task_id}` is the percent-encoded local id.
pub const PUSH_PATH_PREFIX: &str = "/a2a/push/";

/// A 256-bit secret from the thread CSPRNG (ChaCha, seeded by the OS), held as `secrecy`'s
/// string: no `Display` or `Serialize`, a `Debug` that hides it, its memory zeroed when
/// dropped. `expose` is the one door, used to hand it to the remote agent.
pub struct PushToken(SecretString);

impl PushToken {
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(URL_SAFE_NO_PAD.encode(bytes).into())
    }

    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    pub fn digest(&self) -> TokenDigest {
        TokenDigest::of(self.expose())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushUrlError {
    #[error("push_base_url {0:?} must start with https:// or http://")]
    Scheme(String),
    #[error("push_base_url {0:?} must not carry a query or a fragment")]
    QueryOrFragment(String),
    #[error("push_base_url {0:?} has no host")]
    NoHost(String),
    #[error("the local task id is empty")]
    EmptyId,
}

/// An id no one can guess (a lease, a hearing): 128 bits from the thread CSPRNG, as hex.
pub(crate) fn unguessable_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// Whether `token` has the shape of one [`PushToken::generate`] makes (43 characters of
/// unpadded base64url): only such a token is worth a row read for an oversized push.
pub fn looks_like_ours(token: &str) -> bool {
    token.len() == 43
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `{base}/a2a/push/{id}` with every byte of the id outside `[A-Za-z0-9_-]` encoded, so
/// no id (`/`, `?`, `#`, `..`, `%`) can change the path, query or fragment.
pub fn push_url(base_url: &str, local_task_id: &str) -> Result<String, PushUrlError> {
    let rest = base_url
        .strip_prefix("https://")
        .or_else(|| base_url.strip_prefix("http://"))
        .ok_or_else(|| PushUrlError::Scheme(base_url.to_owned()))?;
    if rest.contains(['?', '#']) {
        return Err(PushUrlError::QueryOrFragment(base_url.to_owned()));
    }
    if rest.split('/').next().is_none_or(str::is_empty) {
        return Err(PushUrlError::NoHost(base_url.to_owned()));
    }
    if local_task_id.is_empty() {
        return Err(PushUrlError::EmptyId);
    }
    Ok(format!(
        "{}{PUSH_PATH_PREFIX}{}",
        base_url.trim_end_matches('/'),
        standin_wire::path_segment(local_task_id)
    ))
}

/// An id from outside (a push's path) as logs name it: cut to a bounded length, so a
/// hostile sender cannot fill the logs through it.
pub fn truncate_for_log(id: &str) -> &str {
    let mut end = id.len().min(128);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    &id[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn token_is_256_bits_url_safe_and_fresh() {
        let a = PushToken::generate();
        let b = PushToken::generate();
        assert_eq!(a.expose().len(), 43, "32 bytes in unpadded base64");
        assert!(
            a.expose()
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_ne!(a.expose(), b.expose());
        let decoded = URL_SAFE_NO_PAD.decode(a.expose()).expect("valid base64url");
        assert_eq!(decoded.len(), 32);
    }

    #[test]
    fn digest_is_sha256_hex() {
        // sha256("test"), a well-known vector.
        assert_eq!(
            TokenDigest::of("test").as_str(),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
        let t = PushToken::generate();
        assert!(t.digest().matches(&TokenDigest::of(t.expose())));
        assert!(!t.digest().matches(&TokenDigest::of("other")));
        assert!(!t.digest().matches(&TokenDigest::from_stored("")));
    }

    #[test]
    fn url_is_base_plus_encoded_id() {
        assert_eq!(
            push_url("https://api.example.com/Prod/", "task-1").as_deref(),
            Ok("https://api.example.com/Prod/a2a/push/task-1")
        );
        assert_eq!(
            push_url("http://h", "../../x?y#z").as_deref(),
            Ok("http://h/a2a/push/%2E%2E%2F%2E%2E%2Fx%3Fy%23z")
        );
    }

    #[test]
    fn bad_bases_are_refused_by_name() {
        assert!(matches!(
            push_url("ftp://h", "t"),
            Err(PushUrlError::Scheme(_))
        ));
        assert!(matches!(
            push_url("https://h/?a=b", "t"),
            Err(PushUrlError::QueryOrFragment(_))
        ));
        assert!(matches!(
            push_url("https://h#f", "t"),
            Err(PushUrlError::QueryOrFragment(_))
        ));
        assert!(matches!(
            push_url("https:///p", "t"),
            Err(PushUrlError::NoHost(_))
        ));
        assert!(matches!(
            push_url("https://h", ""),
            Err(PushUrlError::EmptyId)
        ));
    }

    fn decode(segment: &str) -> Vec<u8> {
        let bytes = segment.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ascii");
                out.push(u8::from_str_radix(hex, 16).expect("hex"));
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        out
    }

    proptest! {
        #[test]
        fn no_id_escapes_its_path_segment(id in "\\PC{1,40}|[./?#%\\\\ ]{1,12}") {
            let base = "https://abc.execute-api.eu-west-1.amazonaws.com/Prod";
            let url = push_url(base, &id).expect("valid base and id");
            let segment = url.strip_prefix(&format!("{base}{PUSH_PATH_PREFIX}")).expect("prefix kept");
            prop_assert!(segment.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'%'));
            prop_assert!(!segment.contains('/') && !segment.contains('?') && !segment.contains('#'));
            prop_assert!(segment != "." && segment != "..");
            prop_assert_eq!(decode(segment), id.as_bytes().to_vec());
        }

        #[test]
        fn base_keeps_its_path(path in "(/[a-zA-Z0-9]{1,8}){0,3}/?", id in "[a-z0-9-]{1,20}") {
            let base = format!("https://h{path}");
            let url = push_url(&base, &id).expect("valid");
            prop_assert_eq!(url, format!("{}{PUSH_PATH_PREFIX}{id}", base.trim_end_matches('/')));
        }
    }

    #[test]
    fn ten_thousand_of_our_tokens_are_all_redacted() {
        for _ in 0..10_000 {
            let token = PushToken::generate();
            let out = standin_wire::scrub::scrub(&format!("echo {} back", token.expose()));
            assert!(!out.contains(token.expose()), "{out}");
        }
    }

    #[test]
    fn our_push_token_is_redacted_wherever_it_appears() {
        let token = PushToken::generate();
        let text = format!("I was told to use {} for callbacks.", token.expose());
        let out = standin_wire::scrub::scrub(&text);
        assert!(!out.contains(token.expose()), "{out}");
        assert!(out.contains(standin_wire::scrub::REDACTED));
        assert!(out.starts_with("I was told to use "));
    }
}
