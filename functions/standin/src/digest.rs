//! The only form of a secret token the stack stores: a push token's on the row, an API
//! key's in the keys table.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// SHA-256 of a token, lower-case hex: the only form of the token that is ever stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct TokenDigest(String);

impl TokenDigest {
    pub fn of(token: &str) -> Self {
        Self(hex::encode(Sha256::digest(token.as_bytes())))
    }

    /// Wraps a digest read back from the row store.
    pub fn from_stored(hex: impl Into<String>) -> Self {
        Self(hex.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Constant time in the digest bytes; the length of a digest is public.
    pub fn matches(&self, other: &TokenDigest) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}
