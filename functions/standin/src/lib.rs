//! Stand-in: hears a remote A2A task's state changes between turns and tells the parent.
//!
//! `domain` holds the rules (no AWS types), `ports` the interfaces it talks through,
//! `a2a` the protocol client, `memory` in-memory ports for tests.

pub mod a2a;
pub mod clock;
pub mod config;
pub mod domain;
pub mod memory;
pub mod ports;
