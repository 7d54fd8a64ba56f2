//! The front's card: the remote agent's name, description and skills as its own card
//! says them, at the front's address, with what the front offers.

use serde_json::{Value, json};

use crate::model::Profile;

/// Which of the front's doors a card is for: each names its own URL and how its caller
/// proves who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// `/a2a/…`: the caller signs with SigV4 (IAM), as on the rest of the control API.
    /// A2A has no scheme for it, so the card declares none.
    Signed,
    /// `/keyed/a2a/…`: the caller sends a key the operator issued, as a bearer token.
    Keyed,
}

/// The name the keyed door's card gives its security scheme.
pub const KEY_SCHEME: &str = "standinKey";

impl Door {
    /// The path the agents' ids follow at this door.
    pub fn path(self) -> &'static str {
        match self {
            Door::Signed => "/a2a",
            Door::Keyed => "/keyed/a2a",
        }
    }
}

/// The card of the front of agent `agent`, served at `url`. `profile` is what the remote
/// agent's card says, when it reads; `push`, whether the deployment delivers webhooks.
pub fn front_card(
    agent: &str,
    url: &str,
    profile: Option<&Profile>,
    push: bool,
    door: Door,
) -> Value {
    let name = profile
        .map(|p| p.name.as_str())
        .filter(|n| !n.is_empty())
        .unwrap_or(agent);
    let description = profile
        .map(|p| p.description.clone())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| format!("Agent {agent}, reached through Stand-in"));
    let skills: Vec<Value> = profile
        .into_iter()
        .flat_map(|p| &p.skills)
        .map(|skill| {
            json!({
                "id": skill.id, "name": skill.name,
                "description": skill.description, "tags": skill.tags,
            })
        })
        .collect();
    let mut card = json!({
        "name": name,
        "description": description,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {"streaming": false, "pushNotifications": push},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
    });
    if door == Door::Keyed {
        // As A2A 1.0 declares a bearer scheme, so the official clients' auth interceptors
        // send the key they hold for it.
        card["securitySchemes"] = json!({KEY_SCHEME: {"httpAuthSecurityScheme": {
            "scheme": "Bearer",
            "bearerFormat": "sik",
            "description": "A key the operator issued with `standin keys create`",
        }}});
        card["securityRequirements"] = json!([{"schemes": {KEY_SCHEME: {"list": []}}}]);
    }
    card
}
