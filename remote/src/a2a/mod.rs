//! A2A as the official SDKs speak it, 1.0 and 0.3 (the choices are in docs/decisions.md).
//! Private to the crate: what leaves it is the model (`map`). One set of wire types
//! (`types`, 1.0's) and one reading of them (`map`); each dialect and binding is read into
//! them at the edge (`dialect`, `v03`); each binding is a transport of its own
//! (`binding`).

pub mod artifact;
pub mod binding;
pub mod call;
pub mod card;
pub mod client;
pub mod collect;
pub mod dialect;
pub mod divert;
pub mod error;
pub mod http;
pub mod limits;
pub mod map;
pub mod profile;
pub mod reach;
pub mod said;
pub mod security;
pub mod signature;
pub mod skim;
pub mod sse;
pub mod types;
pub mod v03;
