//! gRPC, the third binding (A2A 1.0 only): tonic frames each call as a2a.proto's
//! `A2AService` method of 1.0's operation name, over the agent's own HTTP client
//! (`over_reqwest`). Requests are the JSON params the other bindings send, encoded
//! through the proto's descriptor; answers come back as the same JSON (`messages`), so
//! they are skimmed, collected and bounded as every other binding's are.

mod messages;
mod over_reqwest;

#[cfg(test)]
pub use messages::test_support;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use prost::Message as _;
use prost_reflect::DynamicMessage;
use serde_json::Value;
use tonic::codec::Streaming;
use tonic::{Code, Status};

use super::{Items, Link, Transport};
use crate::a2a::call::Call;
use crate::a2a::client::Collect;
use crate::a2a::error::by_reason;
use crate::a2a::limits::{
    MAX_EVENT_BYTES, MAX_GRPC_MESSAGE_BYTES, MAX_RESPONSE_BYTES, MAX_STREAM_BYTES, bounded_message,
};
use crate::a2a::skim::Skim;
use crate::error::RemoteError;
use messages::DynamicCodec;
use over_reqwest::OverReqwest;

pub struct Grpc;

impl Transport for Grpc {
    fn unary<'a>(
        &'a self,
        link: &'a Link<'a>,
        call: &'a Call,
    ) -> BoxFuture<'a, Result<Value, RemoteError>> {
        Box::pin(unary(link, call))
    }

    fn stream<'a>(
        &'a self,
        link: &'a Link<'a>,
        call: &'a Call,
    ) -> BoxFuture<'a, Result<Items, RemoteError>> {
        Box::pin(stream(link, call))
    }

    /// Never used: a card's gRPC interface is taken at 1.0 only.
    fn v03_item(&self, item: &Value) -> Value {
        item.clone()
    }
}

fn client<'a>(link: &'a Link<'a>) -> tonic::client::Grpc<OverReqwest<'a>> {
    tonic::client::Grpc::new(OverReqwest { link }).max_decoding_message_size(MAX_GRPC_MESSAGE_BYTES)
}

fn request(link: &Link<'_>, message: DynamicMessage) -> tonic::Request<DynamicMessage> {
    let mut request = tonic::Request::new(message);
    // The agent learns the caller's deadline (`grpc-timeout`), as gRPC servers expect.
    request.set_timeout(link.timeouts.call);
    request
}

async fn unary(link: &Link<'_>, call: &Call) -> Result<Value, RemoteError> {
    let method = messages::method(call.operation)?;
    let message = messages::request(&method, &call.params)?;
    let attempt = || async {
        let codec = DynamicCodec {
            output: method.output.clone(),
        };
        let sent = client(link)
            .unary(request(link, message.clone()), method.path.clone(), codec)
            .await;
        sent.map(tonic::Response::into_inner)
    };
    let timeout = link.timeouts.call;
    let answer = tokio::time::timeout(timeout, authorized(link, attempt))
        .await
        .map_err(|_| RemoteError::Timeout {
            operation: call.operation,
            seconds: timeout.as_secs(),
        })??;
    skimmed(&answer, MAX_RESPONSE_BYTES, link.collect, "an answer").await
}

async fn stream(link: &Link<'_>, call: &Call) -> Result<Items, RemoteError> {
    let method = messages::method(call.operation)?;
    let message = messages::request(&method, &call.params)?;
    let attempt = || async {
        let codec = DynamicCodec {
            output: method.output.clone(),
        };
        let opened = client(link)
            .server_streaming(request(link, message.clone()), method.path.clone(), codec)
            .await;
        opened.map(tonic::Response::into_inner)
    };
    let timeout = link.timeouts.call;
    let messages = tokio::time::timeout(timeout, authorized(link, attempt))
        .await
        .map_err(|_| RemoteError::Timeout {
            operation: call.operation,
            seconds: timeout.as_secs(),
        })??;
    Ok(items(
        messages,
        link.timeouts.stream_idle,
        link.collect.cloned(),
    ))
}

struct Reading {
    messages: Streaming<DynamicMessage>,
    idle: std::time::Duration,
    collect: Option<Collect>,
    /// Encoded bytes read so far (bounded by `MAX_STREAM_BYTES`, as a stream's are).
    read: usize,
    done: bool,
}

fn items(
    messages: Streaming<DynamicMessage>,
    idle: std::time::Duration,
    collect: Option<Collect>,
) -> Items {
    let reading = Reading {
        messages,
        idle,
        collect,
        read: 0,
        done: false,
    };
    futures_util::stream::unfold(reading, |mut r| async move {
        if r.done {
            return None;
        }
        let next = tokio::time::timeout(r.idle, r.messages.message()).await;
        let item = match next {
            Err(_) => Err(RemoteError::Timeout {
                operation: "stream read",
                seconds: r.idle.as_secs(),
            }),
            Ok(Ok(None)) => return None,
            Ok(Err(status)) => Err(remote_error(&status)),
            Ok(Ok(Some(message))) => {
                r.read += message.encoded_len();
                if r.read > MAX_STREAM_BYTES {
                    Err(RemoteError::TooLarge {
                        what: "a stream",
                        limit: MAX_STREAM_BYTES,
                    })
                } else {
                    skimmed(
                        &message,
                        MAX_EVENT_BYTES,
                        r.collect.as_ref(),
                        "a stream event",
                    )
                    .await
                }
            }
        };
        r.done = item.is_err();
        Some((item, r))
    })
    .boxed()
}

/// A message's JSON through the skim every binding's answers go through: history
/// dropped, artifacts' large content stored, what is kept held to `limit`.
async fn skimmed(
    message: &DynamicMessage,
    limit: usize,
    collect: Option<&Collect>,
    what: &'static str,
) -> Result<Value, RemoteError> {
    let json = messages::json(message)?;
    let mut skim = collect.map_or_else(|| Skim::new(limit), |c| c.skim(limit));
    skim.push(&json);
    drop(json);
    if let Some(collect) = collect {
        collect.hand_on(skim.take_spilled()).await;
    }
    let kept = skim.finish().ok_or(RemoteError::TooLarge { what, limit })?;
    serde_json::from_slice(&kept)
        .map_err(|e| RemoteError::InvalidResponse(format!("a gRPC answer as JSON: {e}")))
}

/// Sends with the credentials on; UNAUTHENTICATED (or, with credentials, PERMISSION_DENIED)
/// is their refusal: they are read afresh and the call sent once more, as over HTTP.
async fn authorized<T, F, Fut>(link: &Link<'_>, attempt: F) -> Result<T, RemoteError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let mut renewed = false;
    loop {
        let status = match attempt().await {
            Ok(answer) => return Ok(answer),
            Err(status) => status,
        };
        let http_status = match (status.code(), link.credentials) {
            (Code::Unauthenticated, _) => 401,
            (Code::PermissionDenied, Some(_)) => 403,
            _ => return Err(remote_error(&status)),
        };
        match link.credentials {
            Some(credentials) if !renewed && credentials.renew().await => renewed = true,
            configured => {
                return Err(RemoteError::Unauthorized {
                    status: http_status,
                    scheme: configured.map(|c| c.scheme()),
                });
            }
        }
    }
}

/// A gRPC status as the stand-in's error: its own (raised under tonic) as it was; else by
/// the `ErrorInfo` reason in the status details (as the SDK sends them), else by code.
fn remote_error(status: &Status) -> RemoteError {
    let mut source = std::error::Error::source(status);
    while let Some(err) = source {
        if let Some(own) = err.downcast_ref::<RemoteError>() {
            return own.clone();
        }
        if err.downcast_ref::<reqwest::Error>().is_some() {
            return RemoteError::Transport("the gRPC connection failed".into());
        }
        source = err.source();
    }
    // tonic's own refusal of a message past `MAX_GRPC_MESSAGE_BYTES` (before reading it).
    if status.code() == Code::OutOfRange
        && status
            .message()
            .starts_with("Error, decoded message length too large")
    {
        return RemoteError::TooLarge {
            what: "a gRPC message",
            limit: MAX_GRPC_MESSAGE_BYTES,
        };
    }
    let message = bounded_message(status.message());
    let reason = messages::status_details(status.details()).and_then(|details| {
        details
            .get("details")?
            .as_array()?
            .iter()
            .find_map(|d| d.get("reason").and_then(Value::as_str).map(str::to_owned))
    });
    if let Some(err) = reason.and_then(|reason| by_reason(&reason, &message)) {
        return err;
    }
    RemoteError::Grpc {
        code: status.code() as i32,
        message,
    }
}
