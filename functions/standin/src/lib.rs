//! Stand-in: hears a remote A2A task's state changes between turns and tells the parent.
//!
//! `domain` holds the rules (no AWS types), `ports` the interfaces it talks through,
//! `a2a` the protocol client, `adapters` the ports on AWS, `memory` in-memory ports for
//! tests.

pub mod a2a;
pub mod adapters;
pub mod clock;
pub mod config;
pub mod domain;
pub mod handlers;
pub mod lambda;
pub mod memory;
pub mod metrics;
pub mod ports;
pub mod row_store_contract;
pub mod tls;
