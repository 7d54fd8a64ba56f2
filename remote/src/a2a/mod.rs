//! A2A 1.0 as the official SDK speaks it (the choices are in docs/decisions.md). Private
//! to the crate: what leaves it is the model (`map`).

pub mod client;
pub mod error;
pub mod limits;
pub mod map;
pub mod reach;
pub mod sse;
pub mod types;

#[cfg(test)]
mod client_tests;
#[cfg(test)]
mod replay;
