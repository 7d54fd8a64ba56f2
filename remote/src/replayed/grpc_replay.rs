#![allow(clippy::expect_used, clippy::unwrap_used)] // test support fails loudly by design
//! A loopback HTTP/2 server (h2c, or TLS with ALPN) that answers the n-th gRPC call with
//! the n-th scripted answer, framed as gRPC frames them, its status in the trailers, and
//! records what it was sent.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::a2a::binding::grpc_test_support::encode;

/// One call's answer.
#[derive(Clone)]
pub enum Answer {
    /// These messages (a2a.proto's, named and in 1.0's JSON), then `grpc-status` 0.
    Messages(&'static str, Vec<Value>),
    /// Frames as given (each a message's bytes), then the status; `hold_open`: after the
    /// frames, say nothing more.
    Raw {
        frames: Vec<Vec<u8>>,
        hold_open: bool,
    },
    /// These frames, then the error status `code` with `message` in the trailers.
    Failing {
        frames: Vec<Vec<u8>>,
        code: i32,
        message: &'static str,
    },
    /// A status whose details are not base64 (in the headers, or in the trailers after
    /// these frames).
    BadDetails {
        code: i32,
        frames: Option<Vec<Vec<u8>>>,
    },
    /// The response's headers only after this long (as servers that send them with the
    /// first message do for a quiet task), then nothing.
    Late(std::time::Duration),
    /// Not gRPC at all: what a proxy in front answers.
    Http {
        status: u16,
        content_type: &'static str,
        body: &'static str,
    },
    /// One message's frame sent in `pieces`, `gap` apart, then `grpc-status` 0.
    Trickle {
        message: Vec<u8>,
        pieces: usize,
        gap: std::time::Duration,
    },
    /// No message: `grpc-status` `code` with `message`, and the details' bytes, in the
    /// headers (Trailers-Only).
    Status {
        code: i32,
        message: &'static str,
        details: Option<Vec<u8>>,
    },
}

#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: http::HeaderMap,
    /// The request message's bytes (without the frame's header).
    pub message: Vec<u8>,
}

pub struct GrpcReplay {
    pub address: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl GrpcReplay {
    /// Over h2c (HTTP/2 without TLS).
    pub async fn start(answers: Vec<Answer>) -> Self {
        Self::serve(answers, None).await
    }

    /// Over TLS (the test certificate for 127.0.0.1), HTTP/2 agreed by ALPN.
    pub async fn start_tls(answers: Vec<Answer>) -> Self {
        Self::serve(answers, Some(acceptor())).await
    }

    async fn serve(answers: Vec<Answer>, tls: Option<TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(Mutex::new(answers.into_iter()));
        let recorded = seen.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (seen, answers, tls) = (recorded.clone(), answers.clone(), tls.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        answer(request, seen.clone(), answers.clone())
                    });
                    let http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                    let _ = match tls {
                        None => http2.serve_connection(TokioIo::new(conn), service).await,
                        Some(tls) => {
                            let Ok(conn) = tls.accept(conn).await else {
                                return;
                            };
                            http2.serve_connection(TokioIo::new(conn), service).await
                        }
                    };
                });
            }
        });
        Self { address, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

type Body = StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

async fn answer(
    request: hyper::Request<hyper::body::Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
    answers: Arc<Mutex<std::vec::IntoIter<Answer>>>,
) -> Result<hyper::Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    seen.lock().unwrap().push(Seen {
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        message: body.get(5..).unwrap_or_default().to_vec(),
    });
    let next = answers
        .lock()
        .unwrap()
        .next()
        .expect("an answer for every call");
    let (frames, status, hold_open) = match next {
        Answer::Messages(name, messages) => (
            messages.iter().map(|m| encode(name, m)).collect(),
            trailers(0, "", None),
            false,
        ),
        Answer::Raw { frames, hold_open } => (frames, trailers(0, "", None), hold_open),
        Answer::Failing {
            frames,
            code,
            message,
        } => (frames, trailers(code, message, None), false),
        Answer::BadDetails { code, frames } => {
            let mut bad = trailers(code, "details that do not read", None);
            bad.insert("grpc-status-details-bin", "!!!".parse().unwrap());
            let Some(frames) = frames else {
                let mut response = hyper::Response::builder()
                    .header("content-type", "application/grpc")
                    .body(StreamBody::new(futures_util::stream::empty().boxed()))
                    .unwrap();
                response.headers_mut().extend(bad);
                return Ok(response);
            };
            (frames, bad, false)
        }
        Answer::Late(after) => {
            tokio::time::sleep(after).await;
            let response = hyper::Response::builder()
                .header("content-type", "application/grpc")
                .body(StreamBody::new(futures_util::stream::pending().boxed()))
                .unwrap();
            return Ok(response);
        }
        Answer::Http {
            status,
            content_type,
            body,
        } => {
            let frame = Ok(Frame::data(Bytes::from_static(body.as_bytes())));
            let response = hyper::Response::builder()
                .status(status)
                .header("content-type", content_type)
                .body(StreamBody::new(futures_util::stream::iter([frame]).boxed()))
                .unwrap();
            return Ok(response);
        }
        Answer::Trickle {
            message,
            pieces,
            gap,
        } => {
            let framed = framed(&message);
            let size = framed.len().div_ceil(pieces);
            let chunks: Vec<Bytes> = framed.chunks(size).map(Bytes::copy_from_slice).collect();
            let paced = futures_util::stream::iter(chunks).then(move |chunk| async move {
                tokio::time::sleep(gap).await;
                Ok(Frame::data(chunk))
            });
            let end = futures_util::stream::iter([Ok(Frame::trailers(trailers(0, "", None)))]);
            let response = hyper::Response::builder()
                .header("content-type", "application/grpc")
                .body(StreamBody::new(paced.chain(end).boxed()))
                .unwrap();
            return Ok(response);
        }
        // As gRPC servers answer an error before any message: "Trailers-Only", the
        // status in the response's headers and no body.
        Answer::Status {
            code,
            message,
            details,
        } => {
            let mut response = hyper::Response::builder()
                .header("content-type", "application/grpc")
                .body(StreamBody::new(futures_util::stream::empty().boxed()))
                .unwrap();
            response
                .headers_mut()
                .extend(trailers(code, message, details));
            return Ok(response);
        }
    };
    let mut out: Vec<Result<Frame<Bytes>, Infallible>> = frames
        .into_iter()
        .map(|message| Ok(Frame::data(Bytes::from(framed(&message)))))
        .collect();
    let stream = if hold_open {
        futures_util::stream::iter(out)
            .chain(futures_util::stream::pending())
            .boxed()
    } else {
        out.push(Ok(Frame::trailers(status)));
        futures_util::stream::iter(out).boxed()
    };
    let response = hyper::Response::builder()
        .header("content-type", "application/grpc")
        .body(StreamBody::new(stream))
        .unwrap();
    Ok(response)
}

/// A message as gRPC frames it: not compressed, its length, its bytes.
fn framed(message: &[u8]) -> Vec<u8> {
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    framed
}

fn trailers(code: i32, message: &str, details: Option<Vec<u8>>) -> http::HeaderMap {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", code.to_string().parse().unwrap());
    if !message.is_empty() {
        trailers.insert("grpc-message", message.parse().unwrap());
    }
    if let Some(details) = details {
        use base64::Engine as _;
        let value = base64::engine::general_purpose::STANDARD_NO_PAD.encode(details);
        trailers.insert("grpc-status-details-bin", value.parse().unwrap());
    }
    trailers
}

/// The test CA's certificate for 127.0.0.1 (`tests/data/tls/`), offering only HTTP/2.
fn acceptor() -> TlsAcceptor {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tls");
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{data}/server.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{data}/server.key")).unwrap();
    let mut config = ServerConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}
