//! A2A error objects (JSON-RPC and HTTP+JSON) as the stand-in's errors.

use serde_json::Value;

use crate::error::RemoteError;

/// Maps an error object by its code first, then by its `reason` detail (REST).
pub(crate) fn from_error_object(error: &Value) -> RemoteError {
    let message = super::limits::bounded_message(
        error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    let code = error.get("code").and_then(Value::as_i64);
    let by_code = match code {
        Some(-32001) => Some(RemoteError::TaskNotFound(message.clone())),
        Some(-32002) => Some(RemoteError::TaskNotCancelable(message.clone())),
        Some(-32003) => Some(RemoteError::PushNotSupported(message.clone())),
        Some(-32004) => Some(RemoteError::UnsupportedOperation(message.clone())),
        Some(-32009) => Some(RemoteError::VersionNotSupported(message.clone())),
        _ => None,
    };
    if let Some(err) = by_code {
        return err;
    }
    let reason = ["data", "details"]
        .iter()
        .filter_map(|k| error.get(*k).and_then(Value::as_array))
        .flatten()
        .find_map(|d| d.get("reason").and_then(Value::as_str));
    if let Some(err) = reason.and_then(|reason| by_reason(reason, &message)) {
        return err;
    }
    match code {
        // REST puts the HTTP status in `code`; JSON-RPC codes are negative.
        Some(status) if (100..600).contains(&status) => RemoteError::Http {
            status: status as u16,
        },
        Some(code) => RemoteError::Rpc { code, message },
        None => RemoteError::InvalidResponse(format!("error without a code: {message}")),
    }
}

/// The error an `ErrorInfo` reason names (HTTP+JSON's and gRPC's details), if the
/// stand-in acts on it.
pub(crate) fn by_reason(reason: &str, message: &str) -> Option<RemoteError> {
    let message = message.to_owned();
    Some(match reason {
        "TASK_NOT_FOUND" => RemoteError::TaskNotFound(message),
        "TASK_NOT_CANCELABLE" => RemoteError::TaskNotCancelable(message),
        "PUSH_NOTIFICATION_NOT_SUPPORTED" => RemoteError::PushNotSupported(message),
        "UNSUPPORTED_OPERATION" => RemoteError::UnsupportedOperation(message),
        "VERSION_NOT_SUPPORTED" => RemoteError::VersionNotSupported(message),
        _ => return None,
    })
}
