#![allow(clippy::expect_used, clippy::unwrap_used)] // test support fails loudly by design
//! A loopback HTTP/1.1 server that answers the n-th request with the n-th scripted reply
//! (captured from the official a2a-sdk 1.3.0) and records what it was sent.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const CAPTURED_BASE: &str = "http://127.0.0.1:41241";

#[derive(Debug, Clone)]
pub enum Reply {
    Json {
        status: u16,
        content_type: String,
        body: Vec<u8>,
    },
    /// An SSE body, written in pieces; `hold_open` keeps the connection open afterwards.
    Sse {
        body: Vec<u8>,
        piece: usize,
        hold_open: bool,
    },
    /// Accept the request and never answer.
    Silence,
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

pub struct ReplayServer {
    pub base: String,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

impl ReplayServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(replies.into_iter()));
        let (rec, base_for_task) = (recorded.clone(), base.clone());
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (rec, replies, base) = (rec.clone(), replies.clone(), base_for_task.clone());
                tokio::spawn(async move { serve(conn, rec, replies, base).await });
            }
        });
        Self { base, recorded }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().expect("lock").clone()
    }
}

async fn serve(
    mut conn: TcpStream,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    replies: Arc<Mutex<std::vec::IntoIter<Reply>>>,
    base: String,
) {
    loop {
        let Some(request) = read_request(&mut conn).await else {
            return;
        };
        recorded.lock().expect("lock").push(request);
        let reply = replies.lock().expect("lock").next();
        match reply {
            None => {
                let _ = conn.write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                return;
            }
            Some(Reply::Json {
                status,
                content_type,
                body,
            }) => {
                let body = String::from_utf8_lossy(&body).replace(CAPTURED_BASE, &base);
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                if conn.write_all(head.as_bytes()).await.is_err()
                    || conn.write_all(body.as_bytes()).await.is_err()
                {
                    return;
                }
            }
            Some(Reply::Sse {
                body,
                piece,
                hold_open,
            }) => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-store\r\nconnection: close\r\n\r\n";
                if conn.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for chunk in body.chunks(piece.max(1)) {
                    if conn.write_all(chunk).await.is_err() {
                        return;
                    }
                    let _ = conn.flush().await;
                }
                if hold_open {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                return;
            }
            Some(Reply::Silence) => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                return;
            }
        }
    }
}

async fn read_request(conn: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    conn.read_exact(&mut body).await.ok()?;
    Some(Recorded {
        method,
        target,
        headers,
        body,
    })
}

pub fn fixture_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/a2a-sdk-1.3.0")
        .join(rel)
}

pub fn fixture(rel: &str) -> Value {
    let text = std::fs::read_to_string(fixture_path(rel)).expect("fixture exists");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// The captured response of an exchange, as the server sent it.
pub fn captured(rel: &str) -> Reply {
    let f = fixture(rel);
    let response = &f["response"];
    let events = response["sse_events"].as_array().filter(|e| !e.is_empty());
    if let Some(events) = events {
        // Re-framed exactly as the SDK frames them: CRLF, a ping comment after the first event.
        let mut body = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if e["event"] != "message" {
                body.extend_from_slice(
                    format!("event: {}\r\n", e["event"].as_str().expect("name")).as_bytes(),
                );
            }
            body.extend_from_slice(
                format!("data: {}\r\n\r\n", e["data_raw"].as_str().expect("data")).as_bytes(),
            );
            if i == 0 {
                body.extend_from_slice(b": ping - 2026-11-30 04:51:39.451349+00:00\r\n\r\n");
            }
        }
        return Reply::Sse {
            body,
            piece: 13,
            hold_open: false,
        };
    }
    let content_type = response["headers"]
        .as_array()
        .and_then(|h| h.iter().find(|p| p[0] == "content-type"))
        .and_then(|p| p[1].as_str())
        .unwrap_or("application/json")
        .to_owned();
    Reply::Json {
        status: response["status"].as_u64().expect("status") as u16,
        content_type,
        body: response["body_raw"]
            .as_str()
            .expect("body_raw")
            .as_bytes()
            .to_vec(),
    }
}

/// A byte-exact captured SSE body (`e_raw_sse_framing/*.raw`).
pub fn raw_stream(rel: &str, piece: usize) -> Reply {
    Reply::Sse {
        body: std::fs::read(fixture_path(rel)).expect("raw fixture"),
        piece,
        hold_open: false,
    }
}

/// The captured request body, for comparing what we send with what the SDK accepted.
pub fn captured_request(rel: &str) -> Value {
    fixture(rel)["request"]["body"].clone()
}

pub fn json_reply(status: u16, body: Value) -> Reply {
    Reply::Json {
        status,
        content_type: "application/json".into(),
        body: body.to_string().into_bytes(),
    }
}

/// An exchange captured from a 0.3 server (`tests/data/a2a-0.3/`): its JSON body or its
/// SSE stream as it came, in `piece`-byte writes.
pub fn captured_03(rel: &str, edit: impl FnOnce(&mut Value)) -> Reply {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/a2a-0.3")
        .join(rel);
    let text = std::fs::read_to_string(path).expect("fixture exists");
    let mut fixture: Value = serde_json::from_str(&text).expect("fixture is JSON");
    let response = &mut fixture["response"];
    if let Some(raw) = response["sse_raw"].as_str() {
        return Reply::Sse {
            body: raw.as_bytes().to_vec(),
            piece: 17,
            hold_open: false,
        };
    }
    edit(&mut response["body"]);
    json_reply(
        response["status"].as_u64().expect("status") as u16,
        response["body"].clone(),
    )
}

/// The request a 0.3 capture sent.
pub fn captured_request_03(rel: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/a2a-0.3")
        .join(rel);
    let text = std::fs::read_to_string(path).expect("fixture exists");
    serde_json::from_str::<Value>(&text).expect("fixture is JSON")["request"]["body"].clone()
}
