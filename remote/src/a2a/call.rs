//! One call the stand-in makes, in every binding's terms at once (the dialect fills them
//! in, the binding's transport sends the ones it speaks), and how its answer is read back.

use reqwest::Method;
use serde_json::Value;

/// How to read a call's answer back as 1.0's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A task.
    Task,
    /// SendMessage's task or message.
    Sent,
    /// A push config, set on this task.
    PushConfig(String),
    /// Nothing worth reading (a delete); 0.3 may send no result at all.
    Nothing,
    /// An agent card, read as either version's.
    Card,
}

/// One operation in both bindings' terms. `operation` is 1.0's name, for errors and logs.
#[derive(Debug, Clone)]
pub struct Call {
    pub operation: &'static str,
    pub rpc_method: &'static str,
    pub params: Value,
    pub rest_method: Method,
    pub rest_path: Vec<String>,
    pub rest_query: Option<(&'static str, &'static str)>,
    pub rest_body: Option<Value>,
    pub answer: Answer,
}
