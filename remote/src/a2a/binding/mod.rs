//! How calls travel, one file per binding the card may name: JSON-RPC to one endpoint
//! (`jsonrpc.rs`) or HTTP+JSON resources under it (`http_json.rs`), both plain HTTP
//! requests (`over_http.rs`), and gRPC (`grpc/`). The client knows only the `Transport`:
//! a call goes out and its answer, or each item of its stream, comes back as 1.0's JSON
//! out of the binding's envelope, within the same bounds whatever the binding.

mod grpc;
#[cfg(test)]
pub use grpc::test_support as grpc_test_support;
mod http_json;
mod jsonrpc;
pub mod over_http;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use reqwest::header::HeaderMap;
use reqwest::{Client, Url};
use serde_json::Value;

use super::call::Call;
use super::collect::Collect;
use super::http::Timeouts;
use crate::auth::Credentials;
use crate::error::RemoteError;
use over_http::OverHttp;

/// The bindings a card may name that the stand-in speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
    Grpc,
}

impl Binding {
    /// This binding's transport, for one client (a JSON-RPC client numbers its calls).
    pub fn transport(self) -> Arc<dyn Transport> {
        match self {
            Self::JsonRpc => Arc::new(OverHttp(Arc::new(jsonrpc::JsonRpc::default()))),
            Self::HttpJson => Arc::new(OverHttp(Arc::new(http_json::HttpJson))),
            Self::Grpc => Arc::new(grpc::Grpc),
        }
    }
}

impl From<crate::preferred_binding::PreferredBinding> for Binding {
    fn from(preferred: crate::preferred_binding::PreferredBinding) -> Self {
        match preferred {
            crate::preferred_binding::PreferredBinding::JsonRpc => Self::JsonRpc,
            crate::preferred_binding::PreferredBinding::HttpJson => Self::HttpJson,
            crate::preferred_binding::PreferredBinding::Grpc => Self::Grpc,
        }
    }
}

/// What every call to one agent travels with.
pub struct Link<'a> {
    pub http: &'a Client,
    pub endpoint: &'a Url,
    /// The agent's own, its session and participant ones, the version and extensions.
    pub headers: &'a HeaderMap,
    pub credentials: Option<&'a dyn Credentials>,
    pub timeouts: Timeouts,
    /// Where the task's artifacts go, when they are collected.
    pub collect: Option<&'a Collect>,
}

/// A stream's items, each out of its envelope (1.0's stream response, or 0.3's item).
pub type Items = BoxStream<'static, Result<Value, RemoteError>>;

/// One binding's wire.
pub trait Transport: Send + Sync {
    /// A unary call's answer out of its envelope (`Null` for one that answers nothing).
    fn unary<'a>(
        &'a self,
        link: &'a Link<'a>,
        call: &'a Call,
    ) -> BoxFuture<'a, Result<Value, RemoteError>>;

    /// A streaming call's items, once the stream has opened.
    fn stream<'a>(
        &'a self,
        link: &'a Link<'a>,
        call: &'a Call,
    ) -> BoxFuture<'a, Result<Items, RemoteError>>;

    /// A 0.3 stream item (or send result) as this binding writes it, in 1.0's form.
    fn v03_item(&self, item: &Value) -> Value;
}
