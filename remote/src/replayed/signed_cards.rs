//! Cards signed by the official SDK's signing utilities (`tests/data/signed-cards/`),
//! read through the connector: an entry that pins keys gets only a card one of them
//! signed; without pinning, a signed card is read whatever its signature says.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use serde_json::{Value, json};

use super::replay::*;
use crate::a2a::client::http_client;
use crate::card_signing::CardSigning;
use crate::connector::{Connector, Reach};
use crate::error::RemoteError;

fn signed(name: &str) -> Value {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/signed-cards")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Reads the card the server answers with, as `/agents` does, under `signing`.
async fn described(
    replies: Vec<Reply>,
    signing: Option<CardSigning>,
) -> Result<String, RemoteError> {
    let server = ReplayServer::start(replies).await;
    let signing = signing.map(|s| match s {
        CardSigning::JwksUrl(path) => CardSigning::JwksUrl(format!("{}{path}", server.base)),
        keys => keys,
    });
    let reach = Reach {
        agent: "widgets",
        card_signing: signing.as_ref(),
        preferred_binding: None,
        ..crate::connector::tests::reach(&server.base, true)
    };
    Connector::new(crate::tls::Roots::built_in(), http_client().unwrap())
        .describe(reach)
        .await
        .map(|profile| profile.name)
}

fn pinned() -> CardSigning {
    CardSigning::Keys(signed("jwks.json")["keys"].as_array().unwrap().clone())
}

#[tokio::test]
async fn a_card_signed_by_a_pinned_key_is_read() {
    for card in [
        "signed-es256.json",
        "signed-rs256.json",
        "signed-eddsa.json",
    ] {
        let name = described(vec![json_reply(200, signed(card))], Some(pinned())).await;
        assert_eq!(name.unwrap(), "Widget agent (a2a-sdk)", "{card}");
    }
    // The pinned keys read from a JWKS URL, when the card is read.
    let name = described(
        vec![
            json_reply(200, signed("signed-es256.json")),
            json_reply(200, signed("jwks.json")),
        ],
        Some(CardSigning::JwksUrl("/jwks.json".into())),
    )
    .await;
    assert_eq!(name.unwrap(), "Widget agent (a2a-sdk)");
}

#[tokio::test]
async fn a_tampered_unsigned_or_foreign_signed_card_is_refused_naming_the_agent() {
    let mut tampered = signed("signed-es256.json");
    tampered["skills"][0]["description"] = json!("Builds a widget, and reads your mail");
    let mut unsigned = signed("signed-es256.json");
    unsigned.as_object_mut().unwrap().remove("signatures");
    let other = CardSigning::Keys(
        signed("other-jwks.json")["keys"]
            .as_array()
            .unwrap()
            .clone(),
    );
    for (card, signing, says) in [
        (tampered, pinned(), "does not match the card"),
        (unsigned, pinned(), "is not signed"),
        (signed("signed-es256.json"), other, "not among the keys"),
    ] {
        let err = described(vec![json_reply(200, card)], Some(signing))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, RemoteError::Card(m) if m.starts_with("agent \"widgets\": its card") && m.contains(says)),
            "{err}"
        );
    }
}

/// Without pinning, the keys a signature names are fetched and the result logged; a
/// signature that fails is no reason to refuse a card nobody asked to be signed.
#[tokio::test]
async fn without_pinning_a_signed_card_is_read_whatever_its_signature_says() {
    let mut tampered = signed("signed-es256.json");
    tampered["description"] = json!("changed");
    let name = described(vec![json_reply(200, tampered)], None).await;
    assert_eq!(name.unwrap(), "Widget agent (a2a-sdk)");
}
