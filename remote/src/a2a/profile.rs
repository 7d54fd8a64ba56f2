//! What a card says of its agent, cut to a size a page of many agents can carry (a card
//! may be 256 KiB, and a listing shows a hundred: at most about 7,000 characters, 28 KB,
//! an agent), with no control or bidirectional-override characters: the text is the
//! agent's own claim, shown to people and to LLMs.

use super::limits::{
    MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILL_DESCRIPTION_CHARS, MAX_SKILLS, MAX_TAGS,
};
use super::types::{AgentCard, AgentSkill};
use crate::model::{Profile, Skill};

/// Characters that would change how the text reads rather than what it says.
fn hidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn cut(text: &str, chars: usize) -> String {
    let mut kept: String = text
        .chars()
        .filter(|c| !hidden(*c))
        .take(chars + 1)
        .collect();
    if kept.chars().count() > chars {
        kept.pop();
        kept.push('…');
    }
    kept
}

fn skill(skill: &AgentSkill) -> Skill {
    Skill {
        id: cut(&skill.id, MAX_NAME_CHARS),
        name: cut(&skill.name, MAX_NAME_CHARS),
        description: cut(&skill.description, MAX_SKILL_DESCRIPTION_CHARS),
        tags: skill
            .tags
            .iter()
            .take(MAX_TAGS)
            .map(|tag| cut(tag, MAX_NAME_CHARS))
            .collect(),
    }
}

pub fn of(card: &AgentCard) -> Profile {
    Profile {
        name: cut(&card.name, MAX_NAME_CHARS),
        description: cut(&card.description, MAX_DESCRIPTION_CHARS),
        skills: card.skills.iter().take(MAX_SKILLS).map(skill).collect(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn card(value: serde_json::Value) -> AgentCard {
        serde_json::from_value(value).expect("a card")
    }

    #[test]
    fn a_cards_name_description_and_skills_are_its_profile() {
        let profile = of(&card(json!({
            "name": "Billing", "description": "Answers billing questions",
            "skills": [{"id": "refund", "name": "Refunds", "description": "Refunds an order",
                        "tags": ["money"], "examples": ["Refund order 7"]}]
        })));
        assert_eq!(
            profile,
            Profile {
                name: "Billing".into(),
                description: "Answers billing questions".into(),
                skills: vec![Skill {
                    id: "refund".into(),
                    name: "Refunds".into(),
                    description: "Refunds an order".into(),
                    tags: vec!["money".into()],
                }],
            }
        );
    }

    #[test]
    fn a_card_with_nulls_or_nothing_has_an_empty_profile() {
        let profile = of(&card(json!({"description": null, "skills": null})));
        assert_eq!(profile, Profile::default());
    }

    #[test]
    fn a_large_card_is_cut_to_the_bounds() {
        let long = "é".repeat(5000);
        let skills: Vec<_> = (0..40)
            .map(|i| {
                json!({"id": i.to_string(), "name": long, "description": long,
                            "tags": vec![long.clone(); 20]})
            })
            .collect();
        let profile = of(&card(
            json!({"name": long, "description": long, "skills": skills}),
        ));
        assert_eq!(profile.name.chars().count(), MAX_NAME_CHARS + 1);
        assert_eq!(
            profile.description.chars().count(),
            MAX_DESCRIPTION_CHARS + 1
        );
        assert!(profile.description.ends_with('…'));
        assert_eq!(profile.skills.len(), MAX_SKILLS);
        let first = &profile.skills[0];
        assert_eq!(
            first.description.chars().count(),
            MAX_SKILL_DESCRIPTION_CHARS + 1
        );
        assert_eq!(first.tags.len(), MAX_TAGS);
        assert_eq!(first.tags[0].chars().count(), MAX_NAME_CHARS + 1);
        assert_eq!(first.name.chars().count(), MAX_NAME_CHARS + 1);
        let id = "i".repeat(500);
        let one = of(&card(json!({"skills": [{"id": id}]})));
        assert_eq!(one.skills[0].id.chars().count(), MAX_NAME_CHARS + 1);
    }

    /// The card is what a stand-in talks to the agent by: what only a listing shows
    /// never makes it unreadable.
    #[test]
    fn malformed_skills_or_description_still_read_as_a_card() {
        let card = card(json!({
            "name": "Odd", "description": {"not": "text"},
            "supportedInterfaces": [{"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC",
                                     "protocolVersion": "1.0"}],
            "skills": [null, 7, {"id": 5, "tags": "x"}, {"id": "ok", "name": "Ok", "tags": ["a", 1]}]
        }));
        let profile = of(&card);
        assert_eq!(profile.description, "");
        assert_eq!(profile.skills.len(), 4);
        assert_eq!(profile.skills[3].tags, ["a"]);
        let base = reqwest::Url::parse("http://127.0.0.1:9/.well-known/agent-card.json").unwrap();
        assert!(super::super::card::ResolvedAgent::from_card(&card, &base, &[], None).is_ok());
        for skills in [json!("x"), json!({"a": 1}), json!(null)] {
            assert_eq!(of(&self::card(json!({"skills": skills}))).skills, vec![]);
        }
    }

    #[test]
    fn many_skills_keep_the_first_and_hidden_characters_go() {
        let skills: Vec<_> = (0..50_000).map(|i| json!({"id": i.to_string()})).collect();
        let profile = of(&card(
            json!({"name": "A\u{202E}B\u{0007}C", "skills": skills}),
        ));
        assert_eq!(profile.name, "ABC");
        assert_eq!(profile.skills.len(), MAX_SKILLS);
        assert_eq!(
            profile.skills[MAX_SKILLS - 1].id,
            (MAX_SKILLS - 1).to_string()
        );
    }
}
