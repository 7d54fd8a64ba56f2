//! gRPC, the third binding (A2A 1.0 only): tonic frames each call as a2a.proto's
//! `A2AService` method of 1.0's operation name, over the agent's own HTTP client
//! (`over_reqwest`). Requests are the JSON params the other bindings send, encoded
//! through the proto's descriptor; answers are cut to what is read (`prune`) and come
//! back as the same JSON (`messages`), so they are skimmed, collected and bounded as
//! every other binding's are.

mod messages;
mod over_reqwest;
mod prune;

#[cfg(test)]
pub use messages::test_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use prost_reflect::DynamicMessage;
use serde_json::Value;
use tonic::codec::Streaming;
use tonic::{Code, Status};

use super::{Items, Link, Transport};
use crate::a2a::call::Call;
use crate::a2a::collect::Collect;
use crate::a2a::error::by_reason;
use crate::a2a::limits::{
    MAX_EVENT_BYTES, MAX_GRPC_MESSAGE_BYTES, MAX_RESPONSE_BYTES, MAX_STREAM_BYTES, bounded_message,
};
use crate::a2a::skim::Skim;
use crate::error::RemoteError;
use crate::error::grpc_code::{PERMISSION_DENIED, UNAUTHENTICATED};
use messages::{DynamicCodec, Method};
use over_reqwest::{Meter, OverReqwest};

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

fn client<'a>(link: &'a Link<'a>, meter: Arc<Meter>) -> tonic::client::Grpc<OverReqwest<'a>> {
    tonic::client::Grpc::new(OverReqwest { link, meter })
        .max_decoding_message_size(MAX_GRPC_MESSAGE_BYTES)
}

/// The service's method for `call`, and its request.
fn prepared(call: &Call) -> Result<(Method, DynamicMessage), RemoteError> {
    let method = messages::method(call.operation)?;
    let message = messages::request(&method, &call.params)?;
    Ok((method, message))
}

/// Within the call timeout, or the call's timeout error.
async fn within<T>(
    link: &Link<'_>,
    call: &Call,
    sent: impl Future<Output = Result<T, RemoteError>>,
) -> Result<T, RemoteError> {
    let timeout = link.timeouts.call;
    tokio::time::timeout(timeout, sent)
        .await
        .map_err(|_| RemoteError::Timeout {
            operation: call.operation,
            seconds: timeout.as_secs(),
        })?
}

async fn unary(link: &Link<'_>, call: &Call) -> Result<Value, RemoteError> {
    let (method, message) = prepared(call)?;
    let attempt = || async {
        let codec = DynamicCodec {
            output: method.output.clone(),
        };
        let mut request = tonic::Request::new(message.clone());
        // The agent learns the call's deadline (`grpc-timeout`), as gRPC servers expect.
        // A stream gets none: a server holds a stream to it, and a follow's stream lives
        // its window.
        request.set_timeout(link.timeouts.call);
        // tonic reads on to the trailers past the one message: they are bounded too.
        let meter = Arc::new(Meter::new("an answer", 2 * MAX_GRPC_MESSAGE_BYTES));
        let sent = client(link, meter)
            .unary(request, method.path.clone(), codec)
            .await;
        sent.map(tonic::Response::into_inner)
    };
    let answer = within(link, call, authorized(link, attempt)).await?;
    skimmed(answer, MAX_RESPONSE_BYTES, link.collect, "an answer").await
}

async fn stream(link: &Link<'_>, call: &Call) -> Result<Items, RemoteError> {
    let (method, message) = prepared(call)?;
    let meter = Arc::new(Meter::new("a stream", MAX_STREAM_BYTES));
    let attempt = || async {
        let codec = DynamicCodec {
            output: method.output.clone(),
        };
        let request = tonic::Request::new(message.clone());
        let opened = client(link, meter.clone())
            .server_streaming(request, method.path.clone(), codec)
            .await;
        opened.map(tonic::Response::into_inner)
    };
    // Many gRPC servers send a stream's headers with its first message: a task with
    // nothing to say yet opens no sooner. That is silence, as a stream's is.
    let opened = match within(link, call, authorized(link, attempt)).await {
        Err(RemoteError::Timeout { seconds, .. }) => {
            let silence = RemoteError::Timeout {
                operation: "stream read",
                seconds,
            };
            return Ok(futures_util::stream::once(async { Err(silence) }).boxed());
        }
        opened => opened?,
    };
    let reading = Reading {
        messages: opened,
        meter,
        idle: link.timeouts.stream_idle,
        collect: link.collect.cloned(),
        heard: false,
        done: false,
    };
    Ok(reading.items())
}

struct Reading {
    messages: Streaming<DynamicMessage>,
    /// The stream's bytes on the wire, bounded by `MAX_STREAM_BYTES` as any stream's are.
    meter: Arc<Meter>,
    idle: Duration,
    collect: Option<Collect>,
    /// Whether a message came: silence before the first is a timeout, as it is over SSE.
    heard: bool,
    done: bool,
}

impl Reading {
    fn items(self) -> Items {
        futures_util::stream::unfold(self, |mut r| async move {
            if r.done {
                return None;
            }
            let item = match r.next().await {
                Some(Ok(message)) => {
                    r.heard = true;
                    let collect = r.collect.as_ref();
                    skimmed(message, MAX_EVENT_BYTES, collect, "a stream event").await
                }
                Some(Err(status)) => Err(remote_error(&status)),
                None if r.heard => return None,
                None => Err(RemoteError::Timeout {
                    operation: "stream read",
                    seconds: r.idle.as_secs(),
                }),
            };
            r.done = item.is_err();
            Some((item, r))
        })
        .boxed()
    }

    /// The next message; None at the stream's end, or once nothing at all came for the
    /// idle time. gRPC sends nothing between a task's changes (SSE's servers ping), so
    /// after its first message a quiet task ends the stream as a server closing it does,
    /// and the stand-in asks again; a peer gone without a word is found by HTTP/2's
    /// ping (`tls.rs`). The idle time counts from when the stand-in listens again, too:
    /// bytes that waited for it are not silence.
    async fn next(&mut self) -> Option<Result<DynamicMessage, Status>> {
        let listening = Instant::now();
        loop {
            let quiet_until = self.meter.last_heard().max(listening) + self.idle;
            let next = tokio::time::timeout_at(quiet_until.into(), self.messages.message());
            match next.await {
                Ok(message) => return message.transpose(),
                // Bytes came meanwhile (a long message on its way): not silence.
                Err(_) if self.meter.last_heard().max(listening) + self.idle > Instant::now() => {
                    continue;
                }
                Err(_) => return None,
            }
        }
    }
}

/// A message's JSON through the skim every binding's answers go through: history
/// dropped, artifacts' large content stored, what is kept held to `limit`.
async fn skimmed(
    message: DynamicMessage,
    limit: usize,
    collect: Option<&Collect>,
    what: &'static str,
) -> Result<Value, RemoteError> {
    let json = messages::json(&message)?;
    // The decoded tree is the larger of the two: gone before the skim holds its part.
    drop(message);
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
/// is their refusal, as a proxy's 401 or 403 is: they are read afresh and the call sent
/// once more, as over HTTP.
async fn authorized<T, F, Fut>(link: &Link<'_>, attempt: F) -> Result<T, RemoteError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let mut renewed = false;
    loop {
        let err = match attempt().await {
            Ok(answer) => return Ok(answer),
            Err(status) => remote_error(&status),
        };
        let refused = match (&err, link.credentials) {
            (RemoteError::Grpc { code, .. }, _) if *code == UNAUTHENTICATED => 401,
            (RemoteError::Http { status: 401 }, _) => 401,
            (RemoteError::Grpc { code, .. }, Some(_)) if *code == PERMISSION_DENIED => 403,
            (RemoteError::Http { status: 403 }, Some(_)) => 403,
            _ => return Err(err),
        };
        match link.credentials {
            Some(credentials) if !renewed && credentials.renew().await => renewed = true,
            configured => {
                return Err(RemoteError::Unauthorized {
                    status: refused,
                    scheme: configured.map(|c| c.scheme()),
                });
            }
        }
    }
}

/// A gRPC status as the stand-in's error: its own (raised under tonic: a bound, an
/// answer that does not read, a refusal in HTTP's words) as it was; else by the
/// `ErrorInfo` reason in the status details (as the SDK sends them), else by code.
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
    // tonic's own refusal of a message past `MAX_GRPC_MESSAGE_BYTES`, before reading it
    // (its wording is pinned with tonic's version; a test reads it).
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
    let reason = messages::error_reason(status.details());
    if let Some(err) = reason.and_then(|reason| by_reason(&reason, &message)) {
        return err;
    }
    match status.code() {
        // What HTTP+JSON's 404 is: a server that gives no reason means the task.
        Code::NotFound => RemoteError::TaskNotFound(message),
        code => RemoteError::Grpc {
            code: code as i32,
            message,
        },
    }
}
