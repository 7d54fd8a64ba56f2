//! Which of a card's interfaces an agent's entry would rather the stand-in spoke, named
//! as cards name them.

/// The binding to speak when the card offers it; otherwise the card's own choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub enum PreferredBinding {
    #[serde(rename = "JSONRPC")]
    JsonRpc,
    #[serde(rename = "HTTP+JSON")]
    HttpJson,
    #[serde(rename = "GRPC")]
    Grpc,
}
