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
mod transport;

use std::sync::Arc;

use over_http::OverHttp;
pub use transport::{Items, Link, Transport};

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
