//! A card's JWS signatures (A2A's agent card signing): each signs the card without its
//! `signatures`, empty values left out, in RFC 8785's canonical JSON, as a detached
//! payload. Verified as the official SDK's verifier does, against keys the stand-in was
//! given (pinned) or that the signature names (`jku`), never a key the card itself holds.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// Signatures looked at on one card; a card carries one per signing key, rarely more.
const MAX_SIGNATURES: usize = 8;
/// Nesting past which a card has no canonical form: a card is a few levels deep, and
/// the bound keeps a hostile one from exhausting the stack.
const MAX_DEPTH: usize = 64;
/// How long a key set may take to read: it is small, and a card read waits on it.
const JWKS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Only asymmetric algorithms: a card signed with a shared secret (HS256) would let any
/// holder of the "public" key forge it, and `none` signs nothing.
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::EdDSA,
];

/// One signature's protected header, as far as choosing its key goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    pub alg: String,
    pub kid: Option<String>,
    pub jku: Option<String>,
}

/// The card's signatures, each with its header read; an unreadable one is left out.
pub fn signatures(card: &Value) -> Vec<(Protected, String, String)> {
    let Some(list) = card.get("signatures").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .take(MAX_SIGNATURES)
        .filter_map(|s| {
            let protected = s.get("protected")?.as_str()?;
            let signature = s.get("signature")?.as_str()?;
            let header: Value =
                serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).ok()?).ok()?;
            let text = |name: &str| header.get(name).and_then(Value::as_str).map(str::to_owned);
            let read = Protected {
                alg: text("alg")?,
                kid: text("kid"),
                jku: text("jku"),
            };
            Some((read, protected.to_owned(), signature.to_owned()))
        })
        .collect()
}

/// The payload every signature signs, base64url: the card without `signatures`, with
/// empty strings, lists and objects left out (as the SDK signs it), canonical.
fn payload(card: &Value) -> Result<String, String> {
    let mut unsigned = card.clone();
    if let Some(object) = unsigned.as_object_mut() {
        object.remove("signatures");
    }
    let cleaned = without_empty(&unsigned, 1)?.unwrap_or(Value::Object(Default::default()));
    let canonical = serde_json_canonicalizer::to_vec(&cleaned)
        .map_err(|e| format!("has no canonical form: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(canonical))
}

fn without_empty(value: &Value, depth: usize) -> Result<Option<Value>, String> {
    if depth > MAX_DEPTH && (value.is_object() || value.is_array()) {
        return Err(format!("nests deeper than {MAX_DEPTH}"));
    }
    Ok(match value {
        Value::Object(members) => {
            let mut kept = serde_json::Map::new();
            for (name, member) in members {
                if let Some(member) = without_empty(member, depth + 1)? {
                    kept.insert(name.clone(), member);
                }
            }
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        Value::Array(items) => {
            let mut kept = Vec::new();
            for item in items {
                if let Some(item) = without_empty(item, depth + 1)? {
                    kept.push(item);
                }
            }
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::String(text) if text.is_empty() => None,
        other => Some(other.clone()),
    })
}

/// Whether one of the card's signatures verifies against `keys`: the key id of the one
/// that does, or why none does (to name in a refusal).
pub fn verify(card: &Value, keys: &JwkSet) -> Result<String, String> {
    let signed = signatures(card);
    if signed.is_empty() {
        let listed = card
            .get("signatures")
            .and_then(Value::as_array)
            .is_some_and(|list| !list.is_empty());
        return Err(if listed {
            "has signatures, none of which reads as a JWS (protected header and signature)".into()
        } else {
            "is not signed".into()
        });
    }
    let payload = payload(card)?;
    let mut reasons: Vec<String> = Vec::new();
    for (header, protected, signature) in &signed {
        match verify_one(header, protected, signature, &payload, keys) {
            Ok(()) => return Ok(header.kid.clone().unwrap_or_default()),
            Err(reason) if !reasons.contains(&reason) => reasons.push(reason),
            Err(_) => {}
        }
    }
    Err(reasons.join("; "))
}

fn verify_one(
    header: &Protected,
    protected: &str,
    signature: &str,
    payload: &str,
    keys: &JwkSet,
) -> Result<(), String> {
    let alg: Algorithm = header
        .alg
        .parse()
        .ok()
        .filter(|alg| ACCEPTED.contains(alg))
        .ok_or_else(|| {
            format!(
                "is signed with {:?}, which is not a public-key algorithm",
                header.alg
            )
        })?;
    // The key the signature names; a pinned key given without an id may be any of them.
    let named: Vec<_> = match &header.kid {
        Some(kid) => keys
            .keys
            .iter()
            .filter(|k| k.common.key_id.as_deref() == Some(kid))
            .collect(),
        None => Vec::new(),
    };
    // Then every key pinned without an id (a rotated key may reuse a kid).
    let mut candidates = named;
    let unnamed = keys
        .keys
        .iter()
        .filter(|k| k.common.key_id.is_none() || header.kid.is_none());
    for key in unnamed {
        if !candidates.iter().any(|c| std::ptr::eq(*c, key)) {
            candidates.push(key);
        }
    }
    if candidates.is_empty() {
        return Err(match &header.kid {
            Some(kid) => format!("is signed by key {kid:?}, which is not among the keys"),
            None => "names no key (kid), and no key is given without one".to_owned(),
        });
    }
    let message = format!("{protected}.{payload}");
    for jwk in candidates {
        let Ok(key) = DecodingKey::from_jwk(jwk) else {
            continue;
        };
        if let Ok(true) = jsonwebtoken::crypto::verify(signature, message.as_bytes(), &key, alg) {
            return Ok(());
        }
    }
    Err(format!(
        "does not verify: its signature by key {:?} does not match the card (changed since \
         it was signed, or signed over another form of it than the card without its \
         signatures in RFC 8785 JSON)",
        header.kid.as_deref().unwrap_or_default()
    ))
}

/// The most a key set may take: a few public keys are a few kilobytes.
const MAX_JWKS_BYTES: usize = 64 * 1024;

/// Reads a JSON Web Key Set, its address held to the agents' reach rules first (a key
/// URL is an entry's or an agent's word, and could name the function's neighbours).
pub async fn fetch_jwks(
    http: &reqwest::Client,
    url: &str,
    allow_private: bool,
) -> Result<JwkSet, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    super::reach::check_target(&parsed, "a card's key set", allow_private)
        .await
        .map_err(|e| e.to_string())?;
    let response = http
        .get(parsed.clone())
        .timeout(JWKS_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("{parsed} did not answer: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{parsed} answered HTTP {}", response.status()));
    }
    let body = super::http::read_capped(response, MAX_JWKS_BYTES)
        .await
        .map_err(|e| format!("{parsed} did not answer: {e}"))?
        .ok_or_else(|| format!("{parsed} is over {MAX_JWKS_BYTES} bytes"))?;
    let set: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("{parsed} is not a JSON Web Key Set: {e}"))?;
    let listed = set
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{parsed} is not a JSON Web Key Set: no keys list"))?;
    // Key by key: one key of a kind this build cannot read, or one for encryption, must
    // not hide the signing keys beside it.
    let keys = listed
        .iter()
        .filter(|k| k.get("use").and_then(Value::as_str) != Some("enc"))
        .filter_map(|k| serde_json::from_value(k.clone()).ok())
        .collect();
    Ok(JwkSet { keys })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn fixture(name: &str) -> Value {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/signed-cards")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn keys(name: &str) -> JwkSet {
        serde_json::from_value(fixture(name)).unwrap()
    }

    #[test]
    fn a_card_the_official_sdk_signed_verifies_against_its_key() {
        for card in [
            "signed-es256.json",
            "signed-rs256.json",
            "signed-eddsa.json",
        ] {
            let kid = verify(&fixture(card), &keys("jwks.json"));
            assert!(kid.is_ok(), "{card}: {kid:?}");
        }
    }

    #[test]
    fn one_changed_field_breaks_the_signature() {
        let mut card = fixture("signed-es256.json");
        card["description"] = json!("A friendlier agent, honest.");
        let why = verify(&card, &keys("jwks.json")).unwrap_err();
        assert!(why.contains("does not match the card"), "{why}");
        let mut card = fixture("signed-es256.json");
        card["supportedInterfaces"][0]["url"] = json!("https://evil.example/");
        assert!(verify(&card, &keys("jwks.json")).is_err());
    }

    #[test]
    fn an_unsigned_card_or_another_key_does_not_verify() {
        let mut card = fixture("signed-es256.json");
        let other = keys("other-jwks.json");
        let why = verify(&card, &other).unwrap_err();
        assert!(why.contains("not among the keys"), "{why}");
        card.as_object_mut().unwrap().remove("signatures");
        assert_eq!(
            verify(&card, &keys("jwks.json")).unwrap_err(),
            "is not signed"
        );
    }

    /// An attacker re-signs with HS256 and the public key's bytes as the secret, or
    /// with `none`: neither is a public-key algorithm, so neither is tried.
    #[test]
    fn a_shared_secret_or_no_algorithm_is_refused() {
        for alg in ["HS256", "none"] {
            let mut card = fixture("signed-es256.json");
            let header = URL_SAFE_NO_PAD.encode(json!({"alg": alg, "kid": "es256-1"}).to_string());
            card["signatures"][0]["protected"] = json!(header);
            let why = verify(&card, &keys("jwks.json")).unwrap_err();
            assert!(why.contains("not a public-key algorithm"), "{alg}: {why}");
        }
    }

    /// Only empty values are left out: a member added, even `false` or `0`, is a change.
    #[test]
    fn anything_added_but_an_empty_value_breaks_the_signature() {
        for (name, value) in [
            ("iconUrl", json!("https://agent.example/icon.png")),
            ("extra", json!(false)),
            ("other", json!(0)),
        ] {
            let mut card = fixture("signed-es256.json");
            card[name] = value;
            assert!(verify(&card, &keys("jwks.json")).is_err(), "{name}");
        }
    }

    #[test]
    fn a_pinned_key_given_without_its_id_still_verifies() {
        let mut set = keys("jwks.json");
        for key in &mut set.keys {
            key.common.key_id = None;
        }
        assert!(verify(&fixture("signed-rs256.json"), &set).is_ok());
        let mut listed = fixture("signed-es256.json");
        listed["signatures"] = json!([{"protected": "???", "signature": "x"}]);
        let why = verify(&listed, &set).unwrap_err();
        assert!(why.contains("none of which reads"), "{why}");
    }

    #[test]
    fn empty_values_are_left_out_as_the_sdk_leaves_them_out() {
        let mut card = fixture("signed-es256.json");
        card["documentationUrl"] = json!("");
        card["securitySchemes"] = json!({});
        card["skills"][0]["examples"] = json!([]);
        assert!(verify(&card, &keys("jwks.json")).is_ok());
    }
}
