//! A2A 0.3 at the edge: its two wire forms read as 1.0's and 1.0's written as them, so
//! that one set of types (`types`) and one reading (`map`) serve both versions.
//!
//! - JSON-RPC (`kind`-tagged objects and parts, kebab-case states, lowercase roles), as
//!   a2a-sdk 0.3 and Strands' `A2AServer` speak it;
//! - HTTP+JSON (`/v1/...`), the 0.3 protobuf's JSON: `content` for a message's parts,
//!   `update` for a status's message, `msg` for a message result, `TASK_STATE_CANCELLED`.
//!
//! Every function is Value to Value: what a 0.3 agent adds that 1.0 lacks is dropped, and
//! what is not an object stays as it is (the 1.0 parser then names what is wrong).

use serde_json::{Map, Value, json};

/// A 0.3 state (`input-required`) as 1.0 names it (`TASK_STATE_INPUT_REQUIRED`).
fn state_v1(state: &str) -> Value {
    let name = match state {
        "submitted" => "TASK_STATE_SUBMITTED",
        "working" => "TASK_STATE_WORKING",
        "input-required" => "TASK_STATE_INPUT_REQUIRED",
        "auth-required" => "TASK_STATE_AUTH_REQUIRED",
        "completed" => "TASK_STATE_COMPLETED",
        "canceled" | "TASK_STATE_CANCELLED" => "TASK_STATE_CANCELED",
        "failed" => "TASK_STATE_FAILED",
        "rejected" => "TASK_STATE_REJECTED",
        // 0.3's protobuf names are 1.0's, but for the one spelled CANCELLED.
        other if other.starts_with("TASK_STATE_") => other,
        _ => "TASK_STATE_UNSPECIFIED",
    };
    Value::String(name.to_owned())
}

fn role_v1(role: &str) -> Value {
    Value::String(
        match role {
            "user" | "ROLE_USER" => "ROLE_USER",
            "agent" | "ROLE_AGENT" => "ROLE_AGENT",
            _ => "ROLE_UNSPECIFIED",
        }
        .to_owned(),
    )
}

fn object(value: &Value) -> Option<&Map<String, Value>> {
    value.as_object()
}

/// Copies the named members that are present.
fn copy(from: &Map<String, Value>, names: &[&str]) -> Map<String, Value> {
    names
        .iter()
        .filter_map(|name| from.get(*name).map(|v| ((*name).to_owned(), v.clone())))
        .collect()
}

/// A part of either 0.3 form as 1.0's: text, data, or a file's URL and media type.
fn part_v1(part: &Value) -> Value {
    let Some(p) = object(part) else {
        return part.clone();
    };
    // 1.0's own members too: a 1.0 agent's `kind`-tagged event is read here.
    let mut out = copy(
        p,
        &[
            "text",
            "data",
            "metadata",
            "url",
            "raw",
            "mediaType",
            "filename",
        ],
    );
    if let Some(file) = p.get("file").and_then(object) {
        if let Some(uri) = file.get("uri").or_else(|| file.get("fileWithUri")) {
            out.insert("url".into(), uri.clone());
        }
        if let Some(bytes) = file.get("bytes").or_else(|| file.get("fileWithBytes")) {
            out.insert("raw".into(), bytes.clone());
        }
        if let Some(media) = file.get("mimeType") {
            out.insert("mediaType".into(), media.clone());
        }
        if let Some(name) = file.get("name") {
            out.insert("filename".into(), name.clone());
        }
    }
    Value::Object(out)
}

fn parts_v1(parts: Option<&Value>) -> Value {
    Value::Array(
        parts
            .and_then(Value::as_array)
            .map(|parts| parts.iter().map(part_v1).collect())
            .unwrap_or_default(),
    )
}

/// A message of either 0.3 form (`parts` or the protobuf's `content`) as 1.0's.
pub fn message_v1(message: &Value) -> Value {
    let Some(m) = object(message) else {
        return message.clone();
    };
    let mut out = copy(m, &["messageId", "contextId", "taskId", "metadata"]);
    if let Some(role) = m.get("role").and_then(Value::as_str) {
        out.insert("role".into(), role_v1(role));
    }
    out.insert(
        "parts".into(),
        parts_v1(m.get("parts").or_else(|| m.get("content"))),
    );
    Value::Object(out)
}

fn status_v1(status: &Value) -> Value {
    let Some(s) = object(status) else {
        return status.clone();
    };
    let mut out = copy(s, &["timestamp"]);
    if let Some(state) = s.get("state").and_then(Value::as_str) {
        out.insert("state".into(), state_v1(state));
    }
    if let Some(message) = s.get("message").or_else(|| s.get("update")) {
        out.insert("message".into(), message_v1(message));
    }
    Value::Object(out)
}

fn artifact_v1(artifact: &Value) -> Value {
    let Some(a) = object(artifact) else {
        return artifact.clone();
    };
    let mut out = copy(a, &["artifactId", "name", "description", "metadata"]);
    out.insert("parts".into(), parts_v1(a.get("parts")));
    Value::Object(out)
}

/// A task of either 0.3 form as 1.0's.
pub fn task_v1(task: &Value) -> Value {
    let Some(t) = object(task) else {
        return task.clone();
    };
    let mut out = copy(t, &["id", "contextId", "metadata"]);
    if let Some(status) = t.get("status") {
        out.insert("status".into(), status_v1(status));
    }
    for (name, each) in [
        ("artifacts", artifact_v1 as fn(&Value) -> Value),
        ("history", message_v1),
    ] {
        if let Some(list) = t.get(name).and_then(Value::as_array) {
            out.insert(name.into(), list.iter().map(each).collect());
        }
    }
    Value::Object(out)
}

fn status_update_v1(update: &Map<String, Value>) -> Value {
    let mut out = copy(update, &["taskId", "contextId", "metadata"]);
    if let Some(status) = update.get("status") {
        out.insert("status".into(), status_v1(status));
    }
    Value::Object(out)
}

fn artifact_update_v1(update: &Map<String, Value>) -> Value {
    let mut out = copy(update, &["taskId", "contextId", "append", "lastChunk"]);
    if let Some(artifact) = update.get("artifact") {
        out.insert("artifact".into(), artifact_v1(artifact));
    }
    Value::Object(out)
}

/// A JSON-RPC result, stream item or push body (one `kind`-tagged object) as 1.0's
/// stream response: `{"task": …}`, `{"message": …}`, `{"statusUpdate": …}` or
/// `{"artifactUpdate": …}`. An object without a kind it knows is left as it is.
pub fn kinded_v1(item: &Value) -> Value {
    let Some(o) = object(item) else {
        return item.clone();
    };
    match o.get("kind").and_then(Value::as_str) {
        Some("task") => json!({ "task": task_v1(item) }),
        Some("message") => json!({ "message": message_v1(item) }),
        Some("status-update") => json!({ "statusUpdate": status_update_v1(o) }),
        Some("artifact-update") => json!({ "artifactUpdate": artifact_update_v1(o) }),
        _ => item.clone(),
    }
}

/// An HTTP+JSON stream item or send result (`{"task"}`, `{"msg"}`, `{"statusUpdate"}`,
/// `{"artifactUpdate"}`) as 1.0's.
pub fn proto_v1(item: &Value) -> Value {
    let Some(o) = object(item) else {
        return item.clone();
    };
    if let Some(task) = o.get("task") {
        json!({ "task": task_v1(task) })
    } else if let Some(message) = o.get("msg").or_else(|| o.get("message")) {
        json!({ "message": message_v1(message) })
    } else if let Some(update) = o.get("statusUpdate").and_then(object) {
        json!({ "statusUpdate": status_update_v1(update) })
    } else if let Some(update) = o.get("artifactUpdate").and_then(object) {
        json!({ "artifactUpdate": artifact_update_v1(update) })
    } else {
        item.clone()
    }
}

/// 1.0's message (the stand-in's turn) in JSON-RPC 0.3's form.
pub fn message_kinded(message: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), "message".into());
    if let Some(m) = object(message) {
        out.extend(copy(m, &["messageId", "contextId", "taskId", "metadata"]));
        out.insert("role".into(), "user".into());
        let parts = m
            .get("parts")
            .and_then(Value::as_array)
            .map(|parts| parts.iter().map(part_kinded).collect())
            .unwrap_or_default();
        out.insert("parts".into(), Value::Array(parts));
    }
    Value::Object(out)
}

/// 1.0's part as 0.3's JSON-RPC writes it: `kind` text, data, or a file with its `uri` or
/// its `bytes`.
fn part_kinded(part: &Value) -> Value {
    if let Some(data) = part.get("data") {
        return json!({"kind": "data", "data": data});
    }
    match file_v03(part, "uri", "bytes") {
        Some(file) => json!({"kind": "file", "file": file}),
        None => json!({"kind": "text", "text": part["text"]}),
    }
}

/// 1.0's part in the 0.3 protobuf's JSON: `text`, `data` (a `DataPart` around the
/// object), or `file` (`fileWithUri` or `fileWithBytes`).
///
/// `fileWithBytes` as a2a-sdk 0.3 reads it: that SDK keeps a file's bytes as base64 text
/// and carries the text's own bytes in the protobuf field, so the JSON holds the base64
/// of the base64 (a single encoding would reach its agent as the file's bytes taken for
/// base64 text, or fail to decode).
fn part_proto(part: &Value) -> Value {
    use base64::Engine;
    if let Some(data) = part.get("data") {
        return json!({"data": {"data": data}});
    }
    match file_v03(part, "fileWithUri", "fileWithBytes") {
        Some(mut file) => {
            if let Some(bytes) = file.get_mut("fileWithBytes")
                && let Some(text) = bytes.as_str()
            {
                *bytes = base64::engine::general_purpose::STANDARD
                    .encode(text)
                    .into();
            }
            json!({"file": file})
        }
        None => json!({"text": part["text"]}),
    }
}

/// A 1.0 file part's content under 0.3's names, with its `name` and `mimeType`.
fn file_v03(part: &Value, uri: &str, bytes: &str) -> Option<Value> {
    let (key, content) = match (part.get("url"), part.get("raw")) {
        (Some(url), _) => (uri, url),
        (None, Some(raw)) => (bytes, raw),
        (None, None) => return None,
    };
    let mut file = Map::new();
    file.insert(key.into(), content.clone());
    if let Some(media) = part.get("mediaType") {
        file.insert("mimeType".into(), media.clone());
    }
    if let Some(name) = part.get("filename") {
        file.insert("name".into(), name.clone());
    }
    Some(Value::Object(file))
}

/// 1.0's message in the 0.3 protobuf's JSON (HTTP+JSON).
pub fn message_proto(message: &Value) -> Value {
    let mut out = Map::new();
    if let Some(m) = object(message) {
        out.extend(copy(m, &["messageId", "contextId", "taskId", "metadata"]));
        out.insert("role".into(), "ROLE_USER".into());
        let content = m
            .get("parts")
            .and_then(Value::as_array)
            .map(|parts| parts.iter().map(part_proto).collect())
            .unwrap_or_default();
        out.insert("content".into(), Value::Array(content));
    }
    Value::Object(out)
}

/// 1.0's push config (`{id, taskId, url, token, authentication}`) as 0.3's
/// `PushNotificationConfig` (`authentication.schemes` a list).
pub fn push_config(config: &Value) -> Value {
    let mut out = Map::new();
    if let Some(c) = object(config) {
        out.extend(copy(c, &["id", "url", "token"]));
        if let Some(auth) = c.get("authentication").and_then(object) {
            let mut info = Map::new();
            if let Some(scheme) = auth.get("scheme") {
                info.insert("schemes".into(), json!([scheme]));
            }
            if let Some(credentials) = auth.get("credentials") {
                info.insert("credentials".into(), credentials.clone());
            }
            out.insert("authentication".into(), Value::Object(info));
        }
    }
    Value::Object(out)
}

/// A 0.3 `TaskPushNotificationConfig` answer (`{taskId, pushNotificationConfig}` or the
/// protobuf's `{name, pushNotificationConfig}`) as 1.0's, for the task it was set on.
pub fn push_config_v1(answer: &Value, task_id: &str) -> Value {
    let config = &answer["pushNotificationConfig"];
    let mut out = object(config)
        .map(|c| copy(c, &["id", "url"]))
        .unwrap_or_default();
    out.insert("taskId".into(), task_id.into());
    out.entry("url").or_insert_with(|| "".into());
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinded_states_roles_and_parts_read_as_one_point_zero() {
        let item = json!({"kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
            "status": {"state": "input-required", "timestamp": "x",
                "message": {"kind": "message", "messageId": "m", "role": "agent",
                    "parts": [{"kind": "text", "text": "Which?"}, {"kind": "file", "file": {"uri": "https://f", "mimeType": "text/plain"}}]}}});
        assert_eq!(
            kinded_v1(&item),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "x",
                    "message": {"messageId": "m", "role": "ROLE_AGENT",
                        "parts": [{"text": "Which?"}, {"url": "https://f", "mediaType": "text/plain"}]}}}})
        );
        for (state, name) in [
            ("canceled", "TASK_STATE_CANCELED"),
            ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
            ("unknown", "TASK_STATE_UNSPECIFIED"),
            ("TASK_STATE_CANCELLED", "TASK_STATE_CANCELED"),
            ("TASK_STATE_WORKING", "TASK_STATE_WORKING"),
        ] {
            assert_eq!(state_v1(state), json!(name), "{state}");
        }
    }

    #[test]
    fn the_protobufs_names_read_as_one_point_zero() {
        let sent =
            json!({"msg": {"messageId": "m", "role": "ROLE_AGENT", "content": [{"text": "hi"}]}});
        assert_eq!(
            proto_v1(&sent),
            json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}})
        );
        let task = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_CANCELLED",
            "update": {"role": "ROLE_AGENT", "content": [{"text": "stopped"}]}}}});
        assert_eq!(
            proto_v1(&task)["task"]["status"],
            json!({"state": "TASK_STATE_CANCELED", "message": {"role": "ROLE_AGENT", "parts": [{"text": "stopped"}]}})
        );
    }

    #[test]
    fn a_turn_is_written_in_both_forms() {
        let turn = json!({"messageId": "m", "taskId": "t", "contextId": "c", "role": "ROLE_USER",
            "parts": [{"text": "blue"}]});
        assert_eq!(
            message_kinded(&turn),
            json!({"kind": "message", "messageId": "m", "taskId": "t", "contextId": "c",
                "role": "user", "parts": [{"kind": "text", "text": "blue"}]})
        );
        assert_eq!(
            message_proto(&turn),
            json!({"messageId": "m", "taskId": "t", "contextId": "c", "role": "ROLE_USER",
                "content": [{"text": "blue"}]})
        );
    }

    #[test]
    fn a_turn_s_data_and_files_are_written_in_both_forms_and_read_back() {
        let parts = json!([{"text": "review"}, {"data": {"rows": [1, 2]}},
            {"url": "https://x.test/c.pdf", "mediaType": "application/pdf", "filename": "c.pdf"},
            {"raw": "YSxi", "mediaType": "text/csv", "filename": "a.csv"}]);
        let turn = json!({"messageId": "m", "role": "ROLE_USER", "parts": parts});
        assert_eq!(
            message_kinded(&turn)["parts"],
            json!([{"kind": "text", "text": "review"}, {"kind": "data", "data": {"rows": [1, 2]}},
                {"kind": "file", "file": {"uri": "https://x.test/c.pdf", "mimeType": "application/pdf", "name": "c.pdf"}},
                {"kind": "file", "file": {"bytes": "YSxi", "mimeType": "text/csv", "name": "a.csv"}}])
        );
        assert_eq!(
            message_proto(&turn)["content"],
            json!([{"text": "review"}, {"data": {"data": {"rows": [1, 2]}}},
                {"file": {"fileWithUri": "https://x.test/c.pdf", "mimeType": "application/pdf", "name": "c.pdf"}},
                {"file": {"fileWithBytes": "WVN4aQ==", "mimeType": "text/csv", "name": "a.csv"}}])
        );
        // What the kinded form says reads back as the 1.0 parts it was written from.
        assert_eq!(message_v1(&message_kinded(&turn))["parts"], parts);
    }

    #[test]
    fn push_configs_go_out_with_a_list_of_schemes_and_come_back_for_their_task() {
        let config = json!({"id": "standin-1", "taskId": "t", "url": "https://p", "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "tok"}});
        assert_eq!(
            push_config(&config),
            json!({"id": "standin-1", "url": "https://p", "token": "tok",
                "authentication": {"schemes": ["Bearer"], "credentials": "tok"}})
        );
        let answer = json!({"taskId": "t", "pushNotificationConfig": {"id": "standin-1", "url": "https://p", "token": "tok"}});
        assert_eq!(
            push_config_v1(&answer, "t"),
            json!({"id": "standin-1", "url": "https://p", "taskId": "t"}),
            "the token does not come back into the stand-in"
        );
    }
}
