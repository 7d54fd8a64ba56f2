//! What a card says its callers must present: its security requirements, read from
//! either version's form (1.0's `securityRequirements` and `*SecurityScheme` objects,
//! 0.3's `security` and `type`-tagged schemes), and whether it offers an extended card.

use serde_json::Value;

use super::types::AgentCard;
use crate::auth::{Required, Requirements};

pub fn requirements(card: &AgentCard) -> Requirements {
    let listed = if card.security_requirements.is_empty() {
        &card.security
    } else {
        &card.security_requirements
    };
    let alternatives = listed
        .iter()
        .filter_map(Value::as_object)
        .map(|requirement| {
            // 1.0 nests the names under `schemes`; 0.3 lists them at the top.
            let names = match requirement.get("schemes").and_then(Value::as_object) {
                Some(schemes) => schemes,
                None => requirement,
            };
            names
                .keys()
                .map(|name| (name.clone(), described(card.security_schemes.get(name))))
                .collect()
        })
        .collect();
    Requirements { alternatives }
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn described(scheme: Option<&Value>) -> Required {
    let Some(scheme) = scheme else {
        return Required::Unknown;
    };
    if let Some(key) = scheme.get("apiKeySecurityScheme") {
        return Required::ApiKey {
            location: text(key, "location"),
            name: text(key, "name"),
        };
    }
    if let Some(http) = scheme.get("httpAuthSecurityScheme") {
        return Required::Http {
            scheme: text(http, "scheme"),
        };
    }
    if scheme.get("oauth2SecurityScheme").is_some() {
        return Required::OAuth2;
    }
    if scheme.get("openIdConnectSecurityScheme").is_some() {
        return Required::OpenIdConnect;
    }
    if scheme.get("mtlsSecurityScheme").is_some() {
        return Required::MutualTls;
    }
    match scheme.get("type").and_then(Value::as_str) {
        Some("apiKey") => Required::ApiKey {
            location: text(scheme, "in"),
            name: text(scheme, "name"),
        },
        Some("http") => Required::Http {
            scheme: text(scheme, "scheme"),
        },
        Some("oauth2") => Required::OAuth2,
        Some("openIdConnect") => Required::OpenIdConnect,
        Some("mutualTLS") => Required::MutualTls,
        _ => Required::Unknown,
    }
}

/// The card offers a fuller one to authenticated callers.
pub fn offers_extended_card(card: &AgentCard) -> bool {
    card.capabilities.extended_agent_card || card.supports_authenticated_extended_card
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use crate::auth::Scheme;
    use serde_json::json;

    fn card(value: Value) -> AgentCard {
        serde_json::from_value(value).expect("a card")
    }

    #[test]
    fn a_one_point_zero_card_says_its_schemes_as_the_sdk_writes_them() {
        let card = card(json!({
            "securitySchemes": {
                "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
                "jwt": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}
            },
            "securityRequirements": [{"schemes": {"jwt": {"list": []}}}, {"schemes": {"key": {}}}],
            "capabilities": {"extendedAgentCard": true}
        }));
        let needs = requirements(&card);
        assert_eq!(needs.alternatives.len(), 2);
        assert_eq!(needs.unmet("a", Some(Scheme::ApiKey)), None);
        assert_eq!(
            needs.unmet("a", Some(Scheme::OAuth2ClientCredentials)),
            None
        );
        assert!(needs.unmet("a", Some(Scheme::Basic)).is_some());
        assert!(offers_extended_card(&card));
    }

    #[test]
    fn a_zero_point_three_card_says_them_with_a_type() {
        let card = card(json!({
            "url": "http://127.0.0.1:1/", "protocolVersion": "0.3.0",
            "securitySchemes": {"oauth": {"type": "oauth2", "flows": {}}, "tls": {"type": "mutualTLS"}},
            "security": [{"oauth": ["read"]}],
            "supportsAuthenticatedExtendedCard": true
        }));
        let needs = requirements(&card);
        assert_eq!(
            needs.unmet("a", Some(Scheme::OAuth2ClientCredentials)),
            None
        );
        let line = needs.unmet("a", None).expect("unmet");
        assert!(line.contains("oauth2_client_credentials"), "{line}");
        assert!(offers_extended_card(&card));
    }

    #[test]
    fn a_requirement_naming_an_undescribed_scheme_is_met_only_by_sigv4() {
        let card = card(json!({"security": [{"mystery": []}]}));
        let needs = requirements(&card);
        assert!(needs.unmet("a", Some(Scheme::Bearer)).is_some());
        assert_eq!(needs.unmet("a", Some(Scheme::SigV4)), None);
        assert!(!offers_extended_card(&card));
    }
}
