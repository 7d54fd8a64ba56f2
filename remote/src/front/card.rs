//! The front's card: the remote agent's name, description and skills as its own card
//! says them, at the front's address, with what the front offers.

use serde_json::{Value, json};

use crate::model::Profile;

/// The card of the front of agent `agent`, served at `url`. `profile` is what the remote
/// agent's card says, when it reads; `push`, whether the deployment delivers webhooks.
pub fn front_card(agent: &str, url: &str, profile: Option<&Profile>, push: bool) -> Value {
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
    json!({
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
    })
}
