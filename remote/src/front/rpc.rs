//! The JSON-RPC envelope of A2A 1.0: a request read into a [`Call`], and A2A's errors
//! with their codes, as the official SDK writes them.

use serde_json::{Value, json};

use super::Answered;

/// What the parent asked.
pub enum Call {
    Send(Value),
    Get {
        id: String,
        history: Option<usize>,
    },
    Cancel {
        id: String,
    },
    List(ListFilter),
    /// CreateTaskPushNotificationConfig: its params, a `TaskPushNotificationConfig`.
    PushSet(Value),
    PushGet {
        task_id: String,
        id: String,
    },
    PushList {
        task_id: String,
    },
    PushDelete {
        task_id: String,
        id: String,
    },
}

/// The states a task may be in, as ProtoJSON names them.
const TASK_STATES: [&str; 8] = [
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
];

/// ListTasks' filters.
#[derive(Default)]
pub struct ListFilter {
    pub context_id: Option<String>,
    pub status: Option<String>,
    pub page_token: Option<String>,
}

impl ListFilter {
    pub fn keeps(&self, task: &Value) -> bool {
        let context = self
            .context_id
            .as_deref()
            .is_none_or(|id| task["contextId"] == id);
        let status = self
            .status
            .as_deref()
            .is_none_or(|state| task["status"]["state"] == state);
        context && status
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    /// The `google.rpc.ErrorInfo` reason A2A's errors carry (none for JSON-RPC's own).
    pub reason: Option<&'static str>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>, reason: Option<&'static str>) -> Self {
        Self {
            code,
            message: message.into(),
            reason,
        }
    }
    pub fn parse(message: impl Into<String>) -> Self {
        Self::new(-32700, message, None)
    }
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, message, None)
    }
    pub fn no_method(method: &str) -> Self {
        Self::new(-32601, format!("Method not found: {method}"), None)
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message, None)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, message, None)
    }
    pub fn not_found(task_id: &str) -> Self {
        Self::new(
            -32001,
            format!("Task {task_id} not found"),
            Some("TASK_NOT_FOUND"),
        )
    }
    pub fn not_cancelable(message: impl Into<String>) -> Self {
        Self::new(-32002, message, Some("TASK_NOT_CANCELABLE"))
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(-32004, message, Some("UNSUPPORTED_OPERATION"))
    }
    pub fn push_not_supported(message: impl Into<String>) -> Self {
        Self::new(-32003, message, Some("PUSH_NOTIFICATION_NOT_SUPPORTED"))
    }
    fn version(version: &str) -> Self {
        Self::new(
            -32009,
            format!("A2A version {version:?} is not supported here: send A2A-Version 1.0"),
            Some("VERSION_NOT_SUPPORTED"),
        )
    }
}

/// The answer naming `err`.
pub fn failure(id: &Value, err: &RpcError) -> Value {
    let mut error = json!({"code": err.code, "message": err.message});
    if let Some(reason) = err.reason {
        error["data"] = json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "a2a-protocol.org",
            "metadata": {},
        }]);
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A control API refusal as A2A's error: an unknown stand-in is TaskNotFound, a request
/// the API refused is invalid params in its words, anything else ours.
pub fn refused(answer: &Answered, task_id: &str) -> RpcError {
    let said = answer.body["error"].as_str().unwrap_or_default();
    match answer.status {
        404 => RpcError::not_found(task_id),
        400 | 413 => RpcError::invalid_params(said),
        429 => RpcError::internal(format!("{said}: send again later")),
        status => RpcError::internal(format!("the control API answered {status}: {said}")),
    }
}

/// An id as one path segment of the control API's routes, every byte but letters,
/// digits, `-` and `_` escaped, so no id reaches another path; an id of nothing or of
/// dots alone names no task.
pub fn segment(id: &str) -> Result<String, RpcError> {
    if id.is_empty() || id.bytes().all(|b| b == b'.') {
        return Err(RpcError::not_found(id));
    }
    Ok(standin_wire::path_segment(id))
}

/// A task id as a path segment: a stand-in's id is at most 64 characters, so a longer
/// one names no task (and is not sent on).
pub fn task_segment(id: &str) -> Result<String, RpcError> {
    if id.len() > 64 {
        return Err(RpcError::not_found(id));
    }
    segment(id)
}

/// The request's id and what it asks, or the id (null when unknown) and why it cannot be
/// answered.
pub fn read(body: &[u8], version: Option<&str>) -> Result<(Value, Call), (Value, RpcError)> {
    let request: Value = serde_json::from_slice(body)
        .map_err(|e| (Value::Null, RpcError::parse(format!("not JSON: {e}"))))?;
    let id = match request.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let fail = |err| (id.clone(), err);
    if request["jsonrpc"] != "2.0" || id.is_null() {
        return Err(fail(RpcError::invalid_request(
            "not a JSON-RPC 2.0 request: jsonrpc must be \"2.0\" and id a string or a number",
        )));
    }
    // A client that names no version is taken at its word in 1.0's shapes: the method
    // names below are 1.0's alone.
    if let Some(version) = version.filter(|v| *v != "1" && !v.starts_with("1.")) {
        return Err(fail(RpcError::version(version)));
    }
    let method = request["method"].as_str().unwrap_or_default();
    let params = request.get("params").cloned().unwrap_or(json!({}));
    if !params.is_object() {
        return Err(fail(RpcError::invalid_params("params must be an object")));
    }
    let text = |key: &str| field(&params, key).as_str().map(str::to_owned);
    let task_id = || {
        text("id").ok_or_else(|| fail(RpcError::invalid_params("id: the task's id is required")))
    };
    let call = match method {
        "SendMessage" => Call::Send(params.clone()),
        "GetTask" => Call::Get {
            id: task_id()?,
            history: history_length(&params).map_err(fail)?,
        },
        "CancelTask" => Call::Cancel { id: task_id()? },
        "ListTasks" => {
            // "UNRECOGNIZED" is what the JS SDK sends for a status left out (ts-proto's
            // name for an enum's unset value): no filter, as the unspecified state is.
            let status = text("status")
                .filter(|s| !s.is_empty() && s != "TASK_STATE_UNSPECIFIED" && s != "UNRECOGNIZED");
            // A filter on a state no task has would list nothing, silently: said instead.
            if let Some(unknown) = status.as_deref().filter(|s| !TASK_STATES.contains(s)) {
                return Err(fail(RpcError::invalid_params(format!(
                    "status: {unknown:?} is not a task state (TASK_STATE_WORKING, …); leave it out to list every task"
                ))));
            }
            Call::List(ListFilter {
                context_id: text("contextId").filter(|s| !s.is_empty()),
                status,
                page_token: text("pageToken").filter(|s| !s.is_empty()),
            })
        }
        "SendStreamingMessage" | "SubscribeToTask" => {
            return Err(fail(RpcError::unsupported(
                "streaming is not offered (the card says streaming: false): send SendMessage, and hear the task by GetTask or a push notification config",
            )));
        }
        "CreateTaskPushNotificationConfig" => Call::PushSet(params.clone()),
        "GetTaskPushNotificationConfig" | "DeleteTaskPushNotificationConfig" => {
            let task_id = text("taskId").ok_or_else(|| {
                fail(RpcError::invalid_params(
                    "taskId: the task's id is required",
                ))
            })?;
            let id = text("id").ok_or_else(|| {
                fail(RpcError::invalid_params(
                    "id: the configuration's id is required",
                ))
            })?;
            if method == "GetTaskPushNotificationConfig" {
                Call::PushGet { task_id, id }
            } else {
                Call::PushDelete { task_id, id }
            }
        }
        "ListTaskPushNotificationConfigs" => Call::PushList {
            task_id: text("taskId").ok_or_else(|| {
                fail(RpcError::invalid_params(
                    "taskId: the task's id is required",
                ))
            })?,
        },
        other => return Err(fail(RpcError::no_method(other))),
    };
    Ok((id, call))
}

/// `key` (camelCase, as ProtoJSON writes it) or its snake_case name, as the official
/// SDK's server takes either.
pub fn field<'v>(object: &'v Value, key: &str) -> &'v Value {
    let snake: String = key
        .chars()
        .flat_map(|c| {
            let lower = c.to_ascii_lowercase();
            (c.is_ascii_uppercase().then_some('_').into_iter()).chain([lower])
        })
        .collect();
    match object.get(key) {
        Some(value) if !value.is_null() => value,
        _ => object.get(&snake).unwrap_or(&Value::Null),
    }
}

/// `historyLength`: absent for the default, 0 for none, N for the last N.
pub fn history_length(params: &Value) -> Result<Option<usize>, RpcError> {
    let given = field(params, "historyLength");
    let length = if given.is_null() {
        field(field(params, "configuration"), "historyLength")
    } else {
        given
    };
    match length {
        Value::Null => Ok(None),
        value => value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| RpcError::invalid_params("historyLength: must be 0 or more")),
    }
}
