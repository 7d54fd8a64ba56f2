//! What a parent's `SendMessage` becomes: the text, the parts beside it in the control
//! API's form, and what the parent asked of the answer.

use serde_json::{Value, json};

use super::rpc::{RpcError, field, history_length};

/// The control API's longest `reply_id`: a longer `messageId` makes no reply id.
const MAX_REPLY_ID_CHARS: usize = 128;

pub struct Sent {
    /// The task this message continues; none starts one.
    pub task_id: Option<String>,
    /// The message's text parts, one after another.
    pub text: String,
    /// Its data and file parts, as the control API takes them.
    pub parts: Vec<Value>,
    /// The parent's id for the message: the start's (digested) and the reply's, so a
    /// message sent again is one task, one reply.
    pub message_id: Option<String>,
    pub return_immediately: bool,
    pub history: Option<usize>,
    /// The parent's context for a task it starts.
    pub context_id: Option<String>,
}

pub fn read(params: &Value) -> Result<Sent, RpcError> {
    let message = Some(field(params, "message"))
        .filter(|m| m.is_object())
        .ok_or_else(|| RpcError::invalid_params("message: SendMessage needs a message"))?;
    let mut texts = Vec::new();
    let mut parts = Vec::new();
    let given = message["parts"].as_array().cloned().unwrap_or_default();
    for (i, part) in given.iter().enumerate() {
        match input_part(part) {
            Some(Input::Text(text)) => texts.push(text),
            Some(Input::Other(part)) => parts.push(part),
            None => {
                return Err(RpcError::invalid_params(format!(
                    "message.parts[{i}]: a part holds one of text, data, url or raw"
                )));
            }
        }
    }
    if texts.iter().all(String::is_empty) {
        return Err(RpcError::invalid_params(
            "message.parts: a message needs a text part (data and files go beside it)",
        ));
    }
    let message_id = field(message, "messageId")
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    Ok(Sent {
        task_id: field(message, "taskId")
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_owned),
        text: texts.join("\n\n"),
        parts,
        message_id,
        return_immediately: field(field(params, "configuration"), "returnImmediately") == true,
        history: history_length(params)?,
        context_id: field(message, "contextId")
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_owned),
    })
}

impl Sent {
    /// The message id as the control API's `reply_id`, when it is one (1 to 128
    /// printable characters): another makes a reply with no id.
    pub fn reply_id(&self) -> Option<&str> {
        self.message_id.as_deref().filter(|id| {
            id.chars().count() <= MAX_REPLY_ID_CHARS && id.chars().all(|c| c.is_ascii_graphic())
        })
    }
}

enum Input {
    Text(String),
    Other(Value),
}

/// A 1.0 part (`text`, `data`, `url` or `raw`, with `mediaType` and `filename`) in the
/// control API's terms.
fn input_part(part: &Value) -> Option<Input> {
    if let Some(text) = part["text"].as_str() {
        return Some(Input::Text(text.to_owned()));
    }
    if let Some(data) = part.get("data").filter(|d| !d.is_null()) {
        return Some(Input::Other(json!({"kind": "data", "data": data})));
    }
    let mut file = json!({"kind": "file"});
    if let Some(url) = part["url"].as_str() {
        file["url"] = url.into();
    } else if let Some(raw) = part["raw"].as_str() {
        file["bytes"] = raw.into();
    } else {
        return None;
    }
    if let Some(name) = part["filename"].as_str().filter(|s| !s.is_empty()) {
        file["name"] = name.into();
    }
    if let Some(media_type) = field(part, "mediaType").as_str().filter(|s| !s.is_empty()) {
        file["media_type"] = media_type.into();
    }
    Some(Input::Other(file))
}
