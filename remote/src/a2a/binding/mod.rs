//! How calls travel, one file per binding the card may name: JSON-RPC to one endpoint
//! (`jsonrpc.rs`) or HTTP+JSON resources under it (`http_json.rs`). The client knows
//! only the `Transport`; a binding (gRPC, say) is a new file here, a `Binding` variant
//! with its transport, its name in `card.rs`, and its form of each call in
//! `dialect.rs` (`Call` carries each binding's, as it carries JSON-RPC's and REST's).

mod http_json;
mod jsonrpc;

use std::sync::Arc;

use reqwest::{Client, RequestBuilder, Url};
use serde_json::Value;

use super::call::Call;
use crate::error::RemoteError;

/// The bindings a card may name that the stand-in speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
}

impl Binding {
    /// This binding's transport, for one client (a JSON-RPC client numbers its calls).
    pub fn transport(self) -> Arc<dyn Transport> {
        match self {
            Self::JsonRpc => Arc::new(jsonrpc::JsonRpc::default()),
            Self::HttpJson => Arc::new(http_json::HttpJson),
        }
    }
}

/// One binding's wire: how a call is sent and how its answer, or a stream's item, is
/// read out of the binding's envelope.
pub trait Transport: Send + Sync {
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
