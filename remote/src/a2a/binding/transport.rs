//! What every binding implements and every call travels with: the client holds a
//! `Transport` and knows no binding.

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use reqwest::header::HeaderMap;
use reqwest::{Client, Url};
use serde_json::Value;

use crate::a2a::call::Call;
use crate::a2a::collect::Collect;
use crate::a2a::http::Timeouts;
use crate::auth::Credentials;
use crate::error::RemoteError;

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
