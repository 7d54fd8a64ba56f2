//! Support for the integration tests: a scriptable A2A agent and the stack's handles.

#![allow(clippy::expect_used, clippy::unwrap_used)] // test support fails loudly by design

pub use standin_scripted_agent as agent;

#[path = "src/stack.rs"]
pub mod stack;

#[path = "src/e2e.rs"]
pub mod e2e;

#[path = "src/soak/mod.rs"]
pub mod soak;

#[path = "src/bench/mod.rs"]
pub mod bench;
