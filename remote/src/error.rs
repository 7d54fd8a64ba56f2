//! Every way a call to an agent can fail, in the stand-in's terms; the protocol's error
//! codes it acts on are broken out.

/// The messages name the protocol's codes where one was given, so a log line leads to the
/// agent's side of the story.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemoteError {
    #[error("remote task not found (-32001): {0}")]
    TaskNotFound(String),
    #[error("remote task cannot be canceled (-32002): {0}")]
    TaskNotCancelable(String),
    #[error("agent does not support push notifications (-32003): {0}")]
    PushNotSupported(String),
    /// Also what a subscribe and a send answer for a task in a terminal state.
    #[error("unsupported operation (-32004): {0}")]
    UnsupportedOperation(String),
    #[error("agent refuses A2A version 1.0 (-32009): {0}")]
    VersionNotSupported(String),
    #[error("JSON-RPC error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("HTTP status {status} from agent")]
    Http { status: u16 },
    /// A gRPC status the stand-in has no closer name for (`code` is gRPC's number).
    #[error("gRPC status {code}: {message}")]
    Grpc { code: i32, message: String },
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
    /// An answer past one of the read limits: not kept, and an agent error like any other.
    #[error("{what} from the agent is over the {limit}-{} limit", unit(what))]
    TooLarge { what: &'static str, limit: usize },
    /// The agent refused the call's credentials (401, 403) even read afresh, or asked for
    /// some where none are configured.
    #[error("{}", unauthorized(*status, *scheme))]
    Unauthorized {
        status: u16,
        scheme: Option<crate::scheme::Scheme>,
    },
    /// The card requires a scheme the agent's entry does not configure.
    #[error("{0}")]
    AuthNotConfigured(String),
    /// The credentials could not be had: the secret, the token endpoint, the signer.
    #[error("{0}")]
    Credentials(String),
    /// Where the stand-in may not connect: another origin than the configured one, a
    /// private address, a redirect.
    #[error("agent location refused: {0}")]
    Refused(String),
}

/// gRPC's status codes the stand-in acts on (its numbers, as `RemoteError::Grpc` keeps them).
pub mod grpc_code {
    pub const UNKNOWN: i32 = 2;
    pub const DEADLINE_EXCEEDED: i32 = 4;
    pub const PERMISSION_DENIED: i32 = 7;
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    pub const UNIMPLEMENTED: i32 = 12;
    pub const INTERNAL: i32 = 13;
    pub const UNAVAILABLE: i32 = 14;
    pub const UNAUTHENTICATED: i32 = 16;
}

use grpc_code::*;

impl RemoteError {
    /// Whether trying the same call again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport(_) | Self::Timeout { .. } => true,
            Self::Http { status } => *status == 429 || *status >= 500,
            Self::Rpc { code, .. } => *code == -32603,
            // What HTTP's 429, 5xx and a timeout are in gRPC's words (UNKNOWN is a 500
            // or a stream cut without a status).
            Self::Grpc { code, .. } => matches!(
                *code,
                UNKNOWN | DEADLINE_EXCEEDED | RESOURCE_EXHAUSTED | INTERNAL | UNAVAILABLE
            ),
            _ => false,
        }
    }

    /// On a subscribe, the task is finished; `get` tells how: 1.0's -32004, or the
    /// -32602 with which a2a-sdk 0.3 says a task "is in terminal state".
    pub fn is_terminal_task(&self) -> bool {
        matches!(
            self,
            Self::UnsupportedOperation(_) | Self::Rpc { code: -32602, .. }
        )
    }

    /// A subscribe refused, though the task may still be there: "not found" (a2a-sdk 0.3
    /// and a2a-go for an input-required task), no such method, no such route, gRPC's
    /// UNIMPLEMENTED.
    pub fn refuses_subscribe(&self) -> bool {
        matches!(
            self,
            Self::TaskNotFound(_)
                | Self::Rpc { code: -32601, .. }
                | Self::Http {
                    status: 404 | 405 | 501
                }
                | Self::Grpc {
                    code: UNIMPLEMENTED,
                    ..
                }
        )
    }

    /// The error's kind alone, for a log line that must not echo the agent's text.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::TaskNotFound(_) => "task_not_found",
            Self::TaskNotCancelable(_) => "task_not_cancelable",
            Self::PushNotSupported(_) => "push_not_supported",
            Self::UnsupportedOperation(_) => "unsupported_operation",
            Self::VersionNotSupported(_) => "version_not_supported",
            Self::Rpc { .. } => "rpc_error",
            Self::Http { .. } => "http_error",
            Self::Grpc { .. } => "grpc_error",
            Self::Transport(_) => "transport",
            Self::Timeout { .. } => "timeout",
            Self::InvalidResponse(_) => "invalid_response",
            Self::Card(_) => "card",
            Self::TooLarge { .. } => "too_large",
            Self::Refused(_) => "refused",
            Self::Unauthorized { .. } => "unauthorized",
            Self::AuthNotConfigured(_) => "auth_not_configured",
            Self::Credentials(_) => "credentials",
        }
    }
}

/// What a `TooLarge` limit counts: bytes, but for a gRPC message's fields and nesting.
fn unit(what: &str) -> &'static str {
    if what.ends_with("fields") {
        "field"
    } else if what.ends_with("nesting") {
        "level"
    } else {
        "byte"
    }
}

fn unauthorized(status: u16, scheme: Option<crate::scheme::Scheme>) -> String {
    match scheme {
        Some(crate::scheme::Scheme::SigV4) => format!(
            "the agent refused the signature (auth.type sigv4, HTTP {status}): check that the functions' role may invoke it"
        ),
        Some(scheme) => format!(
            "the agent refused the credentials (auth.type {scheme}, HTTP {status}), also when read afresh: check the value in Secrets Manager and the agent's access rules"
        ),
        None => format!(
            "the agent requires credentials (HTTP {status}) and its entry has no auth: configure its auth"
        ),
    }
}

impl From<reqwest::Error> for RemoteError {
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
