//! The remote agent, in the stand-in's own terms, and the only code that knows A2A.
//!
//! The stand-in talks to an agent through one port, [`Agent`]: send a turn, get where
//! the task stands, stream its updates, register and delete a push, cancel. What comes
//! back is the stand-in's own model ([`Status`], [`Update`], [`Sent`], [`RemoteError`]),
//! never a wire type: the A2A types, the client, SSE, the skim of what is never read,
//! the reach rules and the TLS roots live in here and nowhere else. So does the other
//! side of the protocol: [`front`], Stand-in served as an A2A agent to parents that
//! speak A2A, behind a port of its own ([`front::ControlCalls`], the control API).
//!
//! Layout, so each new capability is a new file:
//! - `model.rs`, `error.rs`, `port.rs`: the port and its terms.
//! - `connector.rs`: from an agent's configured reach to a connected client (the card,
//!   read once per process, and the reach check), and what a card says of its agent
//!   (`describe`, read afresh for a listing).
//! - `front/`: the A2A front (`card.rs`, `rpc.rs` the JSON-RPC envelope and A2A's error
//!   codes, `message.rs` a parent's message, `task.rs` a stand-in as a task).
//! - `auth.rs`: the agent's credentials as a port the stand-in supplies (`Credentials`),
//!   and what a card requires of them (read by `a2a/security.rs`); `scheme.rs` names
//!   their kinds.
//! - `push.rs`: what a push body claims, read without keeping its text.
//! - `a2a/` (private): `types.rs` (the wire, 1.0's), `card.rs` (which interface, which
//!   dialect), `call.rs` (one call in every binding's terms, and how its answer reads),
//!   `dialect.rs` (each call in 1.0 or 0.3, each answer read as 1.0's),
//!   `v03.rs` (0.3's two wire forms), `client.rs` (the calls, over the chosen binding),
//!   `binding/` (one `Transport` per binding: `jsonrpc.rs` and `http_json.rs` over
//!   `over_http.rs`, and `grpc/`, tonic with `proto/a2a.proto`'s messages), `http.rs`
//!   (what every call shares: timeouts, bounded reads, credentials), `sse.rs`,
//!   `limits.rs`, `reach.rs`, `map.rs` (wire → model), `profile.rs` (what a card says
//!   of its agent), `skim.rs` (what is kept of an
//!   answer as it arrives), `divert.rs` and `artifact.rs` (artifacts collected, large
//!   content stored as it arrives through a [`ContentSink`]).
//! - `replayed/` (tests only): the client against exchanges captured from the official
//!   SDKs and replayed on loopback, and gRPC against a scripted HTTP/2 server.
//! - `fake.rs`: a scriptable agent behind the port, for other crates' tests (the
//!   `test-support` feature; never in a function).
//! - `tls.rs`: the roots the agent client trusts.
//!
//! Nothing outside this crate may name an A2A type: `a2a` is private, and the
//! workspace's layout test refuses a path into it from any other crate.

mod a2a;
pub mod auth;
mod card_signing;
mod connector;
mod error;
#[cfg(any(test, feature = "test-support"))]
pub mod fake;
pub mod front;
mod model;
mod port;
mod preferred_binding;
mod push;
#[cfg(test)]
mod replayed;
mod scheme;
pub mod tls;

pub use a2a::client::{AgentClient, Timeouts};
pub use card_signing::{CardSigning, CardSigningError, MAX_PINNED_KEYS};
pub use connector::{Connector, Reach, check_reach};
pub use error::{RemoteError, grpc_code};
pub use model::{
    Artifact, ArtifactUpdate, Content, ContentKind, FollowUp, Part, Profile, PushRequest, Sent,
    Skill, Spilled, Status, Turn, Update, UpdateStream,
};
pub use port::{Agent, ContentSink};
pub use preferred_binding::PreferredBinding;
pub use push::{PushBodyError, PushClaim, read_push};
pub use standin_wire::TaskState;
