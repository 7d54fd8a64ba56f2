//! The HTTP/2 under tonic's gRPC: the agent client every binding uses, so a gRPC call
//! leaves through the same roots, resolver (no private address where none is allowed),
//! client certificate and credentials as any other call to the agent. What comes back is
//! checked to be gRPC before tonic reads it, and metered (`Meter`) as it arrives.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;
use reqwest::header::CONTENT_TYPE;
use tonic::body::Body;

use crate::a2a::binding::Link;
use crate::error::RemoteError;

/// Borrowed for one call: tonic sends its request through it and reads the answer back.
#[derive(Clone)]
pub struct OverReqwest<'a> {
    pub link: &'a Link<'a>,
    /// What the answer's bytes are counted against.
    pub meter: Arc<Meter>,
}

impl<'a> tower_service::Service<http::Request<Body>> for OverReqwest<'a> {
    type Response = http::Response<Metered>;
    type Error = RemoteError;
    type Future = BoxFuture<'a, Result<Self::Response, RemoteError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RemoteError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let (link, meter) = (self.link, self.meter.clone());
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            // One request message (the stand-in never streams to an agent): read whole,
            // so credentials that sign the body (SigV4) can.
            let body = body
                .collect()
                .await
                .map_err(|e| RemoteError::Transport(format!("cannot frame the request: {e}")))?
                .to_bytes();
            let mut url = link.endpoint.clone();
            let path = format!(
                "{}{}",
                link.endpoint.path().trim_end_matches('/'),
                parts.uri.path()
            );
            url.set_path(&path);
            url.set_query(None);
            let mut request = link
                .http
                .post(url)
                .headers(link.headers.clone())
                .headers(parts.headers)
                .body(body)
                .build()?;
            if let Some(credentials) = link.credentials {
                credentials.authorize(&mut request).await?;
            }
            // gRPC routes on the exact path: a key in the query would be refused as an
            // unknown method, and sit in a path proxies log.
            if request.url().query().is_some() {
                return Err(RemoteError::AuthNotConfigured(
                    "the agent's API key goes in the query, which gRPC has no place for: put it in a header (auth.in: header)".into(),
                ));
            }
            let response = link.http.execute(request).await?;
            is_grpc(&response)?;
            let mut response = http::Response::from(response);
            readable_details(response.headers_mut());
            Ok(response.map(|body| Metered { body, meter }))
        })
    }
}

/// An answer that is not gRPC's (a proxy's 401 or 502 page, an HTTP/1.1 server) is the
/// HTTP error it is, never frames misread: tonic would read a JSON body's `{` as a
/// compression flag.
fn is_grpc(response: &reqwest::Response) -> Result<(), RemoteError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let says_grpc = content_type.starts_with("application/grpc")
        || response.headers().contains_key("grpc-status");
    if status != 200 || !says_grpc {
        return Err(match status {
            200 => RemoteError::InvalidResponse(format!(
                "the gRPC interface answered {content_type:?}, not application/grpc"
            )),
            status => RemoteError::Http { status },
        });
    }
    if response.version() != http::Version::HTTP_2 {
        return Err(RemoteError::InvalidResponse(
            "the gRPC interface answered over HTTP/1.1; gRPC needs HTTP/2".into(),
        ));
    }
    Ok(())
}

/// Status details tonic can read, or none: tonic panics on a `grpc-status-details-bin`
/// that is not base64, and the agent writes that header.
fn readable_details(headers: &mut http::HeaderMap) {
    use base64::Engine as _;
    use base64::alphabet;
    use base64::engine::DecodePaddingMode;
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    // As tonic reads it: the standard alphabet, padded or not.
    const AS_TONIC: GeneralPurpose = GeneralPurpose::new(
        &alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let readable = headers
        .get(DETAILS)
        .is_none_or(|value| AS_TONIC.decode(value.as_bytes()).is_ok());
    if !readable {
        headers.remove(DETAILS);
    }
}

const DETAILS: &str = "grpc-status-details-bin";

/// What one answer has read: its bytes on the wire (frames' headers included) against
/// its bound, and when the last of them came, so a long message still arriving is not
/// taken for silence.
pub struct Meter {
    read: AtomicUsize,
    /// What is read (for the error past the limit), and its limit.
    what: &'static str,
    limit: usize,
    started: Instant,
    last_millis: AtomicU64,
}

impl Meter {
    pub fn new(what: &'static str, limit: usize) -> Self {
        Self {
            read: AtomicUsize::new(0),
            what,
            limit,
            started: Instant::now(),
            last_millis: AtomicU64::new(0),
        }
    }

    /// When bytes last arrived (when the meter started, before any did).
    pub fn last_heard(&self) -> Instant {
        self.started + std::time::Duration::from_millis(self.last_millis.load(Ordering::Relaxed))
    }

    /// Counts `n` bytes read; false past the limit. Only bytes are news: an empty frame
    /// does not keep a quiet stream open.
    fn count(&self, n: usize) -> bool {
        if n > 0 {
            let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.last_millis.store(elapsed, Ordering::Relaxed);
        }
        let read = self.read.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        read <= self.limit
    }
}

/// The answer's body, each data frame counted by the meter (past its bound the body ends
/// in the bound's error), its trailers' details made safe to read.
pub struct Metered {
    body: reqwest::Body,
    meter: Arc<Meter>,
}

impl HttpBody for Metered {
    type Data = Bytes;
    type Error = RemoteError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, RemoteError>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(mut frame))) => {
                if let Some(trailers) = frame.trailers_mut() {
                    readable_details(trailers);
                }
                let n = frame.data_ref().map_or(0, Bytes::len);
                if self.meter.count(n) {
                    Poll::Ready(Some(Ok(frame)))
                } else {
                    Poll::Ready(Some(Err(RemoteError::TooLarge {
                        what: self.meter.what,
                        limit: self.meter.limit,
                    })))
                }
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(err.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_details_that_are_not_base64_are_dropped_and_others_kept() {
        let mut headers = http::HeaderMap::new();
        headers.insert(DETAILS, "!!!".parse().unwrap());
        readable_details(&mut headers);
        assert!(headers.get(DETAILS).is_none());
        for kept in ["CAUSBGdvbmU", "CAUSBGdvbmU="] {
            headers.insert(DETAILS, kept.parse().unwrap());
            readable_details(&mut headers);
            assert!(headers.get(DETAILS).is_some(), "{kept}");
        }
    }

    #[test]
    fn a_meter_refuses_past_its_bound_and_notes_when_it_last_heard() {
        let meter = Meter::new("a stream", 10);
        let before = meter.last_heard();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(meter.count(0));
        assert_eq!(meter.last_heard(), before, "an empty frame is no news");
        assert!(meter.count(6));
        assert!(meter.last_heard() > before);
        assert!(meter.count(4), "at the bound is within it");
        assert!(!meter.count(1));
    }
}
