//! Stand-in: hears a remote A2A task's state changes between turns and tells the parent.
//!
//! The library is sliced by capability; each slice keeps its rules, its port, its AWS
//! adapter, its fake and its contract together:
//!
//! - [`row`]: the row (one per stand-in), the `RowStore` port, DynamoDB, memory, contract.
//! - [`doorbell`]: ring, park, drain, apply, end; the `Doorbell` port on Step Functions.
//! - [`push`]: the push token and the receiver behind the push URL ([`digest`]: the only
//!   form of a token that is stored).
//! - [`watch`]: push, follow, poll or off, chosen once per remote task.
//! - [`follow`]: the follow park, holding the agent's stream for a window.
//! - [`steps`]: the state machine's steps; [`steps::next`] decides where each leads (the
//!   parks, rechecks, rolls and turns), a step ending the stand-in itself only with the
//!   reason its exchange with the agent gave.
//! - [`outbox`]: a note's journey (`outbox::Teller`: artifacts folded, committed, sent at
//!   once, marked) and the notes' delivery to the parent queue, the note bus and Step
//!   Functions parents.
//! - [`webhook`]: the parent's webhooks, each sent every note in order (the webhook
//!   function, fed by the outbox's webhook queue).
//! - [`state`]: a remote task's state as the stand-in reports it (scrubbed, compared).
//! - [`agents`]: the agents document and its entries ([`config_error`]: a field that
//!   cannot be used); [`agent_rules`]: what a
//!   deployment lets an entry name (no AWS service endpoint, SigV4 to AgentCore only).
//! - [`registry`]: the agents added at run time, and the catalog of both.
//! - [`artifacts`]: what the sub-task produced: collected as it arrives, stored (the
//!   `Blobs` port on S3), told in the notes.
//! - [`auth`]: an agent's credentials: the entry's `auth`, the secrets it names
//!   (`SecretStore` port on Secrets Manager), OAuth2 tokens, SigV4 for AgentCore Runtime
//!   with the entry's role (`RoleKeys` port on STS).
//! - [`lambda`]: the composition root: reads settings, builds adapters, serves; decides
//!   nothing.
//!
//! The remote agent is `standin_remote`'s port: no module here names an A2A type. What a
//! parent calls (the control API, its A2A front and MCP tools, keys, turns, cards) is the
//! control plane's crate, `standin_control_plane`, above this one.

pub mod agent_rules;
pub mod agents;
pub mod artifacts;
pub mod auth;
pub mod clock;
pub mod config_error;
pub mod digest;
pub mod doorbell;
pub mod follow;
pub mod lambda;
pub mod metrics;
pub mod outbox;
pub mod push;
pub mod registry;
pub mod row;
pub mod state;
pub mod steps;
pub mod uploads;
pub mod watch;
pub mod webhook;
