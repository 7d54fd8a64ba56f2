use serde_json::Value;

/// Every way an A2A call can fail, with the JSON-RPC codes the stand-in acts on broken out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum A2aError {
    #[error("remote task not found (-32001): {0}")]
    TaskNotFound(String),
    #[error("remote task cannot be canceled (-32002): {0}")]
    TaskNotCancelable(String),
    #[error("agent does not support push notifications (-32003): {0}")]
    PushNotSupported(String),
    /// Also what SubscribeToTask and SendMessage answer for a task in a terminal state.
    #[error("unsupported operation (-32004): {0}")]
    UnsupportedOperation(String),
    #[error("agent refuses A2A version 1.0 (-32009): {0}")]
    VersionNotSupported(String),
    #[error("JSON-RPC error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("HTTP status {status} from agent")]
    Http { status: u16 },
    #[error("transport error: {0}")]
    Transport(String),
    #[error("{operation} timed out after {seconds} s")]
    Timeout {
        operation: &'static str,
        seconds: u64,
    },
    #[error("agent sent an invalid response: {0}")]
    InvalidResponse(String),
    #[error("agent card unusable: {0}")]
    Card(String),
    /// An answer past one of the read limits (`a2a::limits`): not kept, and an agent error
    /// like any other.
    #[error("{what} from the agent is over the {limit}-byte limit")]
    TooLarge { what: &'static str, limit: usize },
    /// Where the stand-in may not connect: another origin than the configured one, a
    /// private address, a redirect.
    #[error("agent location refused: {0}")]
    Refused(String),
}

impl A2aError {
    /// Whether trying the same call again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport(_) | Self::Timeout { .. } => true,
            Self::Http { status } => *status == 429 || *status >= 500,
            Self::Rpc { code, .. } => *code == -32603,
            _ => false,
        }
    }

    /// -32004 on SubscribeToTask: the task is finished; GetTask tells how.
    pub fn is_terminal_task(&self) -> bool {
        matches!(self, Self::UnsupportedOperation(_))
    }

    /// Maps an error object by its code first, then by its `reason` detail (REST).
    pub(crate) fn from_error_object(error: &Value) -> Self {
        let message = super::limits::bounded_message(
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        let code = error.get("code").and_then(Value::as_i64);
        let by_code = match code {
            Some(-32001) => Some(Self::TaskNotFound(message.clone())),
            Some(-32002) => Some(Self::TaskNotCancelable(message.clone())),
            Some(-32003) => Some(Self::PushNotSupported(message.clone())),
            Some(-32004) => Some(Self::UnsupportedOperation(message.clone())),
            Some(-32009) => Some(Self::VersionNotSupported(message.clone())),
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
        match reason {
            Some("TASK_NOT_FOUND") => Self::TaskNotFound(message),
            Some("TASK_NOT_CANCELABLE") => Self::TaskNotCancelable(message),
            Some("PUSH_NOTIFICATION_NOT_SUPPORTED") => Self::PushNotSupported(message),
            Some("UNSUPPORTED_OPERATION") => Self::UnsupportedOperation(message),
            Some("VERSION_NOT_SUPPORTED") => Self::VersionNotSupported(message),
            _ => match code {
                // REST puts the HTTP status in `code`; JSON-RPC codes are negative.
                Some(status) if (100..600).contains(&status) => Self::Http {
                    status: status as u16,
                },
                Some(code) => Self::Rpc { code, message },
                None => Self::InvalidResponse(format!("error without a code: {message}")),
            },
        }
    }
}

impl From<reqwest::Error> for A2aError {
    fn from(err: reqwest::Error) -> Self {
        // reqwest's Display names the URL; agent URLs carry no secrets, but keep the
        // message to its kind so a query string can never reach a log.
        let kind = if err.is_connect() {
            "connection failed"
        } else if err.is_timeout() {
            "timed out"
        } else if err.is_body() || err.is_decode() {
            "body could not be read"
        } else if err.is_request() {
            "request failed"
        } else {
            "HTTP error"
        };
        Self::Transport(kind.to_owned())
    }
}
