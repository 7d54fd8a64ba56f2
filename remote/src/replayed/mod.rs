//! The client against replayed exchanges: the official SDKs' answers, captured, served
//! from loopback by `replay`.

mod client;
mod client_artifacts;
mod client_auth;
mod client_v03;
mod frameworks;
mod grpc;
mod grpc_replay;
mod replay;
mod signed_cards;
