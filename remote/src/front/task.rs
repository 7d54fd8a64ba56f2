//! A stand-in as an A2A 1.0 task: its status from the latest note, its history from the
//! notes, its artifacts as kept. Ids the parent never sent are the stand-in's own: the
//! task's is the stand-in's id, its context the parent's (`context_id`, when its start
//! named one) or the stand-in's id, a note's message is `{task}-{seq}`.

use serde_json::{Map, Value, json};

/// The most pages of the note log one read takes (100 notes a page).
pub const MAX_NOTE_PAGES: usize = 3;
/// The messages a task's history shows when the parent names no `historyLength`, and the
/// most it shows when it does: each note may carry 64 KiB of artifacts, and an answer
/// must stay within Lambda's 6 MB.
pub const DEFAULT_HISTORY: usize = 20;
pub const MAX_HISTORY: usize = 100;
/// The most pages of artifacts a task shows (about 1 MiB a page).
pub const MAX_ARTIFACT_PAGES: usize = 2;
/// The most artifacts whose stored parts are given as links in one answer.
pub const MAX_LINKED_ARTIFACTS: usize = 8;

/// The states in which a task takes the parent's message.
pub const ASKING: [&str; 2] = ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"];

/// Whether the stand-in `row` takes a message now: it asks, and no reply waits for it.
pub fn takes_a_message(task_id: &str, row: &Value) -> Result<(), super::rpc::RpcError> {
    let state = row["state"].as_str().unwrap_or("TASK_STATE_SUBMITTED");
    if row["closed"] == true {
        return Err(super::rpc::RpcError::unsupported(format!(
            "Task {task_id} is in terminal state: {state}"
        )));
    }
    let queued = row["pending"]["replies"].as_u64().unwrap_or_default() > 0;
    if !ASKING.contains(&state) || queued {
        return Err(super::rpc::RpcError::unsupported(format!(
            "Task {task_id} is working (TASK_STATE_WORKING), not asking: send a message when it asks (TASK_STATE_INPUT_REQUIRED)"
        )));
    }
    Ok(())
}

/// The stand-in id of the task that message `message_id` starts at `agent`: the same
/// message sent again starts nothing new.
pub fn id_for(agent: &str, message_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{agent}\n{message_id}"));
    format!("a2a-{}", &hex::encode(digest)[..40])
}

/// A note after which a blocking SendMessage answers: the task asks or has ended.
pub fn asks_or_ends(note: &Value) -> bool {
    ends(note) || note["state"].as_str().is_some_and(|s| ASKING.contains(&s))
}

pub fn ends(note: &Value) -> bool {
    note["final"] == true
}

/// A part of the control API's view (text, data, a stored or linked file) as 1.0 writes
/// it; `link` is a stored part's link, when the API gave one.
fn part(view: &Value, link: Option<&str>) -> Option<Value> {
    let mut part = Map::new();
    if let Some(text) = view["text"].as_str() {
        part.insert("text".into(), text.into());
    } else if let Some(data) = view.get("data").filter(|d| !d.is_null()) {
        part.insert("data".into(), data.clone());
    } else if let Some(url) = view["url"].as_str().or(link) {
        part.insert("url".into(), url.into());
    } else {
        return None;
    }
    if let Some(media_type) = view["media_type"].as_str() {
        part.insert("mediaType".into(), media_type.into());
    }
    if let Some(filename) = view["filename"].as_str() {
        part.insert("filename".into(), filename.into());
    }
    Some(Value::Object(part))
}

/// An artifact of the control API as 1.0 writes it, each stored part by its link.
pub fn artifact(view: &Value, links: &[Value]) -> Value {
    let parts: Vec<Value> = view["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| part(p, links.get(i).and_then(Value::as_str)))
        .collect();
    let mut artifact = json!({"artifactId": view["artifact_id"], "parts": parts});
    for (from, to) in [("name", "name"), ("description", "description")] {
        if let Some(text) = view[from].as_str() {
            artifact[to] = text.into();
        }
    }
    artifact
}

/// The task's context: the parent's, when its start named one, else the task's own id.
/// `stand_in` is the control API's view of it (its status or a listed summary).
pub fn context_of<'a>(task_id: &'a str, stand_in: &'a Value) -> &'a str {
    stand_in["context_id"].as_str().unwrap_or(task_id)
}

/// A note as the agent's message in context `context`.
fn said(task_id: &str, context: &str, note: &Value) -> Value {
    let text = note["text"].as_str().unwrap_or_default();
    let mut parts: Vec<Value> = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"text": text}));
    }
    parts.extend(
        note["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| part(p, None)),
    );
    json!({
        "messageId": format!("{task_id}-{}", note["seq"]),
        "contextId": context,
        "taskId": task_id,
        "role": "ROLE_AGENT",
        "parts": parts,
    })
}

/// A part the parent gave (the control API's `InputPart`) as 1.0 writes it; a part put
/// through `POST /uploads` has no content to show.
fn given_part(given: &Value) -> Option<Value> {
    let mut part = Map::new();
    match given["kind"].as_str()? {
        "text" => {
            part.insert("text".into(), given["text"].clone());
        }
        "data" => {
            part.insert("data".into(), given["data"].clone());
        }
        "file" => {
            if let Some(url) = given["url"].as_str() {
                part.insert("url".into(), url.into());
            } else if let Some(bytes) = given["bytes"].as_str() {
                part.insert("raw".into(), bytes.into());
            } else {
                return None;
            }
            if let Some(media_type) = given["media_type"].as_str() {
                part.insert("mediaType".into(), media_type.into());
            }
            if let Some(name) = given["name"].as_str() {
                part.insert("filename".into(), name.into());
            }
        }
        _ => return None,
    }
    Some(Value::Object(part))
}

/// A turn of the parent (`GET /standins/{id}/turns`) as the user's message in `context`:
/// a reply's message id is the reply's (the A2A message's own, for a reply sent here).
fn turn_said(task_id: &str, context: &str, turn: &Value) -> Value {
    let mut parts: Vec<Value> = Vec::new();
    if let Some(text) = turn["text"].as_str().filter(|t| !t.is_empty()) {
        parts.push(json!({"text": text}));
    }
    parts.extend(
        turn["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(given_part),
    );
    let message_id = match (turn["kind"].as_str(), turn["turn_id"].as_str()) {
        (Some("reply"), Some(id)) => id.to_owned(),
        _ => format!("{task_id}-start"),
    };
    json!({
        "messageId": message_id,
        "contextId": context,
        "taskId": task_id,
        "role": "ROLE_USER",
        "parts": parts,
    })
}

fn has_words(message: &Value) -> bool {
    message["parts"].as_array().is_some_and(|p| !p.is_empty())
}

/// The task's status as `note` tells it: its state, when, and what it says.
pub fn status_of(task_id: &str, context: &str, note: &Value) -> Value {
    let mut status = json!({"state": note["state"], "timestamp": note["at"]});
    let message = said(task_id, context, note);
    if has_words(&message) {
        status["message"] = message;
    }
    status
}

/// The task: `row` as `GET /standins/{id}` gives it, its notes in order (the newest, as
/// many as the history shows), the parent's turns, its artifacts. The history is both
/// sides in the order they were said (a turn after the note it came after), the newest
/// `history` of them; a turn said before the first of `notes` is left out with the notes
/// before it, so no agent's message is skipped between two of the parent's.
pub fn of(
    task_id: &str,
    row: &Value,
    notes: &[Value],
    turns: &[Value],
    artifacts: Vec<Value>,
    history: usize,
) -> Value {
    let context = context_of(task_id, row);
    let mut status = match notes.last() {
        Some(last) => status_of(task_id, context, last),
        None => json!({"state": row["state"].as_str().unwrap_or("TASK_STATE_SUBMITTED")}),
    };
    if status["state"].is_null() {
        status["state"] = "TASK_STATE_SUBMITTED".into();
    }
    let earlier = notes.len().saturating_sub(1);
    let agents = notes[..earlier].iter().map(|note| {
        (
            (note["seq"].as_u64().unwrap_or_default(), 0),
            said(task_id, context, note),
        )
    });
    let floor = notes
        .first()
        .and_then(|note| note["seq"].as_u64())
        .map_or(0, |first| first.saturating_sub(1));
    let parents = turns
        .iter()
        .map(|turn| (turn["after_seq"].as_u64().unwrap_or_default(), turn))
        .filter(|(after, _)| *after >= floor)
        .map(|(after, turn)| ((after, 1), turn_said(task_id, context, turn)));
    let mut placed: Vec<((u64, u8), Value)> = agents
        .chain(parents)
        .filter(|(_, message)| has_words(message))
        .collect();
    // Stable: turns after the same note keep the order the control API gave them.
    placed.sort_by_key(|(at, _)| *at);
    let mut messages: Vec<Value> = placed.into_iter().map(|(_, message)| message).collect();
    messages.drain(..messages.len().saturating_sub(history));
    let mut task = json!({"id": task_id, "contextId": context, "status": status});
    if !messages.is_empty() {
        task["history"] = messages.into();
    }
    if !artifacts.is_empty() {
        task["artifacts"] = artifacts.into();
    }
    task
}

/// A stand-in of `GET /standins` as a task of ListTasks (its status, no history).
pub fn listed(summary: &Value) -> Value {
    let task_id = summary["task_id"].as_str().unwrap_or_default();
    let context = context_of(task_id, summary);
    let state = summary["state"].as_str().unwrap_or("TASK_STATE_SUBMITTED");
    let mut status = json!({"state": state});
    if let Some(text) = summary["text"].as_str().filter(|t| !t.is_empty()) {
        status["message"] = json!({
            "messageId": format!("{task_id}-{}", summary["seq"]),
            "contextId": context, "taskId": task_id, "role": "ROLE_AGENT",
            "parts": [{"text": text}],
        });
    }
    json!({"id": task_id, "contextId": context, "status": status})
}
