//! The two bindings that travel as plain HTTP requests, JSON-RPC and HTTP+JSON: each
//! writes its own envelope (`Envelope`); what they share is here: the request sent with
//! its credentials, the answer read through the skim within its bound, and a stream's
//! server-sent events read one by one within the idle and total bounds.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Client, RequestBuilder, Url};
use serde_json::Value;

use super::{Items, Link, Transport};
use crate::a2a::call::{Answer, Call};
use crate::a2a::collect::Collect;
use crate::a2a::http::{send_authorized, timeout_or};
use crate::a2a::limits::{MAX_EVENT_BYTES, MAX_RESPONSE_BYTES, MAX_STREAM_BYTES};
use crate::a2a::skim::Skim;
use crate::a2a::sse::{SseDecoder, SseEvent};
use crate::error::RemoteError;

/// One HTTP binding's envelope: how a call is written as a request, and how its answer,
/// or a stream's item, is read out of what the binding wraps it in.
pub trait Envelope: Send + Sync + 'static {
    /// The request that carries `call` to `endpoint`.
    fn request(
        &self,
        http: &Client,
        endpoint: &Url,
        call: &Call,
    ) -> Result<RequestBuilder, RemoteError>;

    /// A call's answer out of its envelope; `nothing`: the call answers nothing worth
    /// reading (a 0.3 delete may send no result at all).
    fn result(&self, value: Value, status: u16, nothing: bool) -> Result<Value, RemoteError>;

    /// One streamed event's item out of its envelope.
    fn item(&self, value: Value) -> Result<Value, RemoteError>;

    /// A 0.3 stream item (or send result) as this binding writes it, in 1.0's form.
    fn v03_item(&self, item: &Value) -> Value;
}

/// An HTTP binding as a transport.
pub struct OverHttp<E>(pub Arc<E>);

impl<E: Envelope> Transport for OverHttp<E> {
    fn unary<'a>(
        &'a self,
        link: &'a Link<'a>,
        call: &'a Call,
    ) -> BoxFuture<'a, Result<Value, RemoteError>> {
        Box::pin(unary(self.0.as_ref(), link, call))
    }

    fn stream<'a>(
        &'a self,
        link: &'a Link<'a>,
        call: &'a Call,
    ) -> BoxFuture<'a, Result<Items, RemoteError>> {
        Box::pin(stream(self.0.clone(), link, call))
    }

    fn v03_item(&self, item: &Value) -> Value {
        self.0.v03_item(item)
    }
}

fn request(
    envelope: &dyn Envelope,
    link: &Link<'_>,
    call: &Call,
) -> Result<RequestBuilder, RemoteError> {
    let builder = envelope.request(link.http, link.endpoint, call)?;
    Ok(builder.headers(link.headers.clone()))
}

/// Reads a JSON body through `Skim`: what the stand-in never reads is dropped as it
/// arrives (and collected artifacts' large content handed on, chunk by chunk); past
/// `limit` kept bytes the answer is refused without reading further.
async fn read_skimmed(
    mut response: reqwest::Response,
    limit: usize,
    collect: Option<&Collect>,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut skim = collect.map_or_else(|| Skim::new(limit), |c| c.skim(limit));
    while let Some(chunk) = response.chunk().await? {
        skim.push(&chunk);
        if let Some(collect) = collect {
            collect.hand_on(skim.take_spilled()).await;
        }
        if skim.is_over() {
            return Ok(None);
        }
    }
    Ok(skim.finish())
}

async fn unary<E: Envelope>(
    envelope: &E,
    link: &Link<'_>,
    call: &Call,
) -> Result<Value, RemoteError> {
    let timeout = link.timeouts.call;
    let operation = call.operation;
    let response = send_authorized(link.http, link.credentials, || {
        Ok(request(envelope, link, call)?.timeout(timeout))
    })
    .await
    .map_err(|e| e.or_timeout(operation, timeout))?;
    let status = response.status();
    let body = read_skimmed(response, MAX_RESPONSE_BYTES, link.collect)
        .await
        .map_err(|e| timeout_or(operation, timeout, e))?
        .ok_or(RemoteError::TooLarge {
            what: "an answer",
            limit: MAX_RESPONSE_BYTES,
        })?;
    // A 0.3 delete may answer an empty body, or JSON-RPC with no result.
    let nothing = call.answer == Answer::Nothing;
    if nothing && status.is_success() && body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    let value = parse_json_or_status(&body, status.as_u16())?;
    envelope.result(value, status.as_u16(), nothing)
}

async fn stream<E: Envelope>(
    envelope: Arc<E>,
    link: &Link<'_>,
    call: &Call,
) -> Result<Items, RemoteError> {
    let timeout = link.timeouts.call;
    let operation = call.operation;
    let timed_out = |_| RemoteError::Timeout {
        operation,
        seconds: timeout.as_secs(),
    };
    let build = || Ok(request(envelope.as_ref(), link, call)?.header(ACCEPT, "text/event-stream"));
    let sent = send_authorized(link.http, link.credentials, build);
    let response = tokio::time::timeout(timeout, sent)
        .await
        .map_err(timed_out)?
        .map_err(|e| e.or_timeout(operation, timeout))?;
    let status = response.status().as_u16();
    let is_sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        // Errors found before the stream starts come back as plain JSON.
        let body = tokio::time::timeout(timeout, read_skimmed(response, MAX_RESPONSE_BYTES, None))
            .await
            .map_err(timed_out)?
            .map_err(|e| timeout_or(operation, timeout, e))?
            .ok_or(RemoteError::TooLarge {
                what: "an answer",
                limit: MAX_RESPONSE_BYTES,
            })?;
        let value = parse_json_or_status(&body, status)?;
        return Err(match value.get("error") {
            Some(error) => crate::a2a::error::from_error_object(error),
            None if (200..300).contains(&status) => RemoteError::InvalidResponse(format!(
                "{operation} answered JSON where a stream was expected"
            )),
            None => RemoteError::Http { status },
        });
    }
    Ok(event_stream(
        response,
        envelope,
        link.timeouts.stream_idle,
        link.collect.cloned(),
    ))
}

fn parse_json_or_status(body: &[u8], status: u16) -> Result<Value, RemoteError> {
    serde_json::from_slice(body).map_err(|_| {
        if (200..300).contains(&status) {
            RemoteError::InvalidResponse("body is not JSON".into())
        } else {
            RemoteError::Http { status }
        }
    })
}

/// One server-sent event's item out of its envelope (or the error it carries).
pub fn decode_event(event: &SseEvent, envelope: &dyn Envelope) -> Result<Value, RemoteError> {
    if event.oversized {
        return Err(RemoteError::TooLarge {
            what: "a stream event",
            limit: MAX_EVENT_BYTES,
        });
    }
    let value: Value = serde_json::from_str(&event.data)
        .map_err(|_| RemoteError::InvalidResponse("stream event is not JSON".into()))?;
    if event.event == "error" {
        return Err(match value.get("error") {
            Some(error) => crate::a2a::error::from_error_object(error),
            None => RemoteError::InvalidResponse("error event without an error object".into()),
        });
    }
    envelope.item(value)
}

struct StreamState<E> {
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: SseDecoder,
    pending: VecDeque<SseEvent>,
    envelope: Arc<E>,
    idle: Duration,
    collect: Option<Collect>,
    done: bool,
    /// Bytes read so far, skimmed ones included (bounded by `MAX_STREAM_BYTES`).
    read: usize,
}

fn event_stream<E: Envelope>(
    response: reqwest::Response,
    envelope: Arc<E>,
    idle: Duration,
    collect: Option<Collect>,
) -> Items {
    let decoder = match &collect {
        Some(collect) => SseDecoder::collecting(collect.names()),
        None => SseDecoder::new(),
    };
    let state = StreamState {
        body: response.bytes_stream().boxed(),
        decoder,
        pending: VecDeque::new(),
        envelope,
        idle,
        collect,
        done: false,
        read: 0,
    };
    futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.pending.pop_front() {
                let item = decode_event(&event, s.envelope.as_ref());
                if item.is_err() {
                    // An error ends the stream: the server closes it after an error event.
                    s.pending.clear();
                    s.done = true;
                }
                return Some((item, s));
            }
            if s.done {
                return None;
            }
            match tokio::time::timeout(s.idle, s.body.next()).await {
                Err(_) => {
                    s.done = true;
                    let err = RemoteError::Timeout {
                        operation: "stream read",
                        seconds: s.idle.as_secs(),
                    };
                    return Some((Err(err), s));
                }
                Ok(Some(Ok(chunk))) => {
                    s.read += chunk.len();
                    if s.read > MAX_STREAM_BYTES {
                        s.done = true;
                        let err = RemoteError::TooLarge {
                            what: "a stream",
                            limit: MAX_STREAM_BYTES,
                        };
                        return Some((Err(err), s));
                    }
                    s.pending.extend(s.decoder.push(&chunk));
                    // Stored before the events that name it are used.
                    if let Some(collect) = &s.collect {
                        collect.hand_on(s.decoder.take_spilled()).await;
                    }
                }
                Ok(Some(Err(e))) => {
                    s.done = true;
                    return Some((Err(e.into()), s));
                }
                Ok(None) => {
                    s.done = true;
                    s.pending.extend(s.decoder.finish());
                    if let Some(collect) = &s.collect {
                        collect.hand_on(s.decoder.take_spilled()).await;
                    }
                }
            }
        }
    })
    .boxed()
}
