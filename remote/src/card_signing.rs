//! The keys an agent's card must be signed with, as an entry pins them (`card_signing`):
//! a JWKS to fetch, or public keys given inline. Checked when the entry is read, so a
//! wrong key is an entry's error naming its field, never a turn's.

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use serde_json::{Map, Value, json};

/// The most keys an entry pins inline (a rotation needs two).
pub const MAX_PINNED_KEYS: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub enum CardSigning {
    /// A JSON Web Key Set read from this URL whenever the card is read.
    JwksUrl(String),
    /// Public keys (JWKs), as the entry gives them.
    Keys(Vec<Value>),
}

/// What is wrong with an entry's `card_signing`: the member (`keys[0]`, empty for the
/// whole) and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardSigningError {
    pub member: String,
    pub problem: String,
}

fn wrong(member: impl Into<String>, problem: impl Into<String>) -> CardSigningError {
    CardSigningError {
        member: member.into(),
        problem: problem.into(),
    }
}

/// A JWK's members that only a private or secret key has: an entry is stored and shown
/// in plain text, so it must never hold one.
const PRIVATE_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "k"];

impl CardSigning {
    /// `{"jwks_url": "https://…"}` or `{"keys": [JWK, …]}`.
    pub fn parse(value: &Value) -> Result<Self, CardSigningError> {
        let Some(object) = value.as_object() else {
            return Err(wrong("", "must be an object with jwks_url or keys"));
        };
        if let Some(unknown) = object
            .keys()
            .find(|k| !matches!(k.as_str(), "jwks_url" | "keys"))
        {
            return Err(wrong(
                unknown.as_str(),
                "is not a member of card_signing (jwks_url or keys)",
            ));
        }
        match (object.get("jwks_url"), object.get("keys")) {
            (Some(url), None) => {
                let url = url
                    .as_str()
                    .ok_or_else(|| wrong("jwks_url", "must be a URL string"))?;
                let parsed = reqwest::Url::parse(url)
                    .map_err(|e| wrong("jwks_url", format!("not a URL: {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                    return Err(wrong(
                        "jwks_url",
                        "must be an http:// or https:// URL with a host",
                    ));
                }
                Ok(Self::JwksUrl(url.to_owned()))
            }
            (None, Some(keys)) => {
                let keys = keys
                    .as_array()
                    .ok_or_else(|| wrong("keys", "must be a list of public keys (JWKs)"))?;
                if keys.is_empty() || keys.len() > MAX_PINNED_KEYS {
                    return Err(wrong(
                        "keys",
                        format!("must hold 1 to {MAX_PINNED_KEYS} keys, got {}", keys.len()),
                    ));
                }
                for (i, key) in keys.iter().enumerate() {
                    public_key(key).map_err(|problem| wrong(format!("keys[{i}]"), problem))?;
                }
                Ok(Self::Keys(keys.clone()))
            }
            (Some(_), Some(_)) => Err(wrong("", "must have jwks_url or keys, not both")),
            (None, None) => Err(wrong("", "must have jwks_url or keys")),
        }
    }

    /// As an entry writes it; [`CardSigning::parse`] reads it back.
    pub fn to_entry(&self) -> Value {
        match self {
            Self::JwksUrl(url) => json!({ "jwks_url": url }),
            Self::Keys(keys) => json!({ "keys": keys }),
        }
    }

    /// Keys given inline, as a key set (each was checked when the entry was read).
    pub(crate) fn key_set(keys: &[Value]) -> JwkSet {
        JwkSet {
            keys: keys.iter().filter_map(|k| public_key(k).ok()).collect(),
        }
    }
}

/// A JWK that holds a public key of a kind a card may be signed with.
fn public_key(value: &Value) -> Result<Jwk, String> {
    let members: &Map<String, Value> = value.as_object().ok_or("must be a JWK object")?;
    if let Some(private) = PRIVATE_MEMBERS.iter().find(|m| members.contains_key(**m)) {
        return Err(format!(
            "holds a private or secret key ({private}): pin the public key only"
        ));
    }
    let jwk: Jwk =
        serde_json::from_value(value.clone()).map_err(|e| format!("is not a JSON Web Key: {e}"))?;
    match jwk.algorithm {
        AlgorithmParameters::EllipticCurve(_)
        | AlgorithmParameters::RSA(_)
        | AlgorithmParameters::OctetKeyPair(_) => Ok(jwk),
        AlgorithmParameters::OctetKey(_) => {
            Err("is a shared secret (oct): pin a public key".into())
        }
        _ => Err("is a kind of key a card is not signed with: pin an EC, RSA or OKP key".into()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const PUBLIC: &str = r#"{"kty": "EC", "crv": "P-256", "kid": "k1",
        "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;

    #[test]
    fn an_entry_pins_a_jwks_or_public_keys_and_reads_back() {
        let key: Value = serde_json::from_str(PUBLIC).unwrap();
        for value in [
            json!({"jwks_url": "https://agent.example/jwks.json"}),
            json!({"keys": [key]}),
        ] {
            let signing = CardSigning::parse(&value).unwrap();
            assert_eq!(signing.to_entry(), value);
        }
    }

    #[test]
    fn what_is_wrong_names_its_member() {
        let mut private: Value = serde_json::from_str(PUBLIC).unwrap();
        private["d"] = json!("jTvX");
        for (value, member, says) in [
            (json!("https://x"), "", "must be an object"),
            (json!({}), "", "jwks_url or keys"),
            (json!({"jwks_url": "ftp://x/k"}), "jwks_url", "http"),
            (json!({"keys": []}), "keys", "1 to 8"),
            (json!({"keys": [private]}), "keys[0]", "private"),
            (
                json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}),
                "keys[0]",
                "private or secret",
            ),
            (json!({"keys": [{"kty": "EC"}]}), "keys[0]", "key"),
            (json!({"keys": ["k1"]}), "keys[0]", "JWK object"),
            (json!({"jwks": "x"}), "jwks", "not a member"),
        ] {
            let err = CardSigning::parse(&value).unwrap_err();
            assert_eq!(err.member, member, "{value}: {err:?}");
            assert!(err.problem.contains(says), "{value}: {err:?}");
        }
    }
}
