//! A2A 1.0 as the official SDK speaks it (the choices are in docs/decisions.md).

pub mod client;
pub mod error;
pub mod limits;
pub mod reach;
pub mod sse;
pub mod types;

pub use client::{A2aClient, Binding, EventStream, ResolvedAgent, Timeouts};
pub use error::A2aError;
pub use types::*;
