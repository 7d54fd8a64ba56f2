//! What `standin agents put` sends: one entry, or each entry of an agents document
//! (`{"agents": [...]}`, the Agents parameter's form), read from a file or standard input.

use serde_json::Value;

use crate::error::CliError;

/// What a file puts: one entry (`PUT /agents/{id}`), or a document, put whole or not at
/// all (`PUT /agents`).
#[derive(Debug, PartialEq)]
pub enum Put {
    One(Value),
    Document(Value),
}

/// What `text` (from `path`, for the errors) puts.
pub fn to_put(path: &str, text: &str) -> Result<Put, CliError> {
    let listed = entries(path, text)?;
    let document: Value = serde_json::from_str(text).unwrap_or_default();
    Ok(match listed.into_iter().next() {
        Some(one) if document.get("agents").is_none() => Put::One(one),
        _ => Put::Document(serde_json::json!({"agents": document["agents"]})),
    })
}

/// The entries of `text` (from `path`, for the errors), each an object with an id.
pub fn entries(path: &str, text: &str) -> Result<Vec<Value>, CliError> {
    let input = |detail: String| CliError::Input {
        path: path.to_owned(),
        detail,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| input(format!("not JSON: {e}")))?;
    let (entries, at): (Vec<Value>, fn(usize) -> String) = match value {
        Value::Object(ref doc) if doc.contains_key("agents") => match &doc["agents"] {
            Value::Array(list) => (list.clone(), |i| format!("agents[{i}]")),
            _ => return Err(input("agents: must be a list of agents".into())),
        },
        Value::Object(_) => (vec![value], |_| "the entry".to_owned()),
        _ => {
            return Err(input(
                "must be an agent (an object with an id and a url) or {\"agents\": [...]}".into(),
            ));
        }
    };
    for (i, entry) in entries.iter().enumerate() {
        if !entry.is_object() {
            return Err(input(format!("{}: must be an object", at(i))));
        }
        if !entry["id"].is_string() {
            return Err(input(format!("{}.id: a string is required", at(i))));
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> String {
        match entries("f.json", text) {
            Err(CliError::Input { detail, .. }) => detail,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_document_is_put_whole_and_one_entry_by_its_id() {
        let one = to_put("f", r#"{"id":"a","url":"http://h"}"#).expect("one");
        assert!(matches!(one, Put::One(ref e) if e["id"] == "a"), "{one:?}");
        let doc = to_put(
            "f",
            r#"{"agents":[{"id":"a"},{"id":"b","follow_interval":0.5}]}"#,
        )
        .expect("document");
        let Put::Document(doc) = doc else {
            panic!("a document: {doc:?}")
        };
        assert_eq!(doc["agents"][1]["follow_interval"], 0.5);
        assert!(to_put("f", r#"{"agents":[{"url":"u"}]}"#).is_err());
    }

    #[test]
    fn one_entry_or_a_document_of_them() {
        let one = entries("f", r#"{"id":"a","url":"http://h"}"#).expect("one");
        assert_eq!(one.len(), 1);
        let doc = entries(
            "f",
            r#"{"agents":[{"id":"a","url":"u"},{"id":"b","url":"u"}]}"#,
        )
        .expect("two");
        assert_eq!(
            doc.iter().map(|e| e["id"].clone()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn what_cannot_be_sent_is_named_before_any_call() {
        assert!(problem("nope").starts_with("not JSON"));
        assert!(problem("[1]").contains("an object with an id"));
        assert_eq!(
            problem(r#"{"agents":{}}"#),
            "agents: must be a list of agents"
        );
        assert_eq!(
            problem(r#"{"agents":[{"id":"a"},3]}"#),
            "agents[1]: must be an object"
        );
        assert_eq!(
            problem(r#"{"agents":[{"url":"u"}]}"#),
            "agents[0].id: a string is required"
        );
        assert_eq!(
            problem(r#"{"url":"u"}"#),
            "the entry.id: a string is required"
        );
    }
}
