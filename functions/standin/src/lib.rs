//! Stand-in: hears a remote A2A task's state changes between turns and tells the parent.
//!
//! The library is sliced by capability, each slice keeping its rules, its port, its AWS
//! adapter, its fake and its contract together:
//!
//! - [`row`]: the row (one per stand-in), the `RowStore` port, DynamoDB, memory, contract.
//! - [`doorbell`]: ring, park, drain, apply, end; the `Doorbell` port on Step Functions.
//! - [`push`]: the push token and the receiver behind the push URL ([`digest`]: the only
//!   form of a token that is stored).
//! - [`watch`]: push, follow, poll or off, chosen once per remote task.
//! - [`follow`]: the follow park, holding the agent's stream for a window.
//! - [`steps`]: the state machine's steps; [`steps::next`] decides where each leads, a
//!   step ending the stand-in itself only with the reason the agent's exchange gave.
//! - [`outbox`]: a note's journey (`outbox::Teller`: artifacts folded, committed, sent at
//!   once, marked) and its delivery to the parent queue, note bus and Step Functions.
//! - [`webhook`]: the parent's webhooks, each sent every note in order.
//! - [`state`]: a remote task's state as the stand-in reports it (scrubbed, compared).
//! - [`agents`]: the agents document ([`config_error`]: a field that cannot be used);
//!   [`agent_rules`]: what a deployment lets an entry name (no AWS service endpoint,
//!   SigV4 to AgentCore only).
//! - [`registry`]: the agents added at run time, and the catalog of both.
//! - [`artifacts`]: what the sub-task produced: collected, stored (`Blobs` on S3), told.
//! - [`auth`]: an agent's credentials: its secrets (`SecretStore` on Secrets Manager),
//!   OAuth2 tokens, SigV4 for AgentCore Runtime with its role (`RoleKeys` on STS).
//! - [`lambda`]: the composition root: reads settings, builds adapters, serves.
//!
//! The remote agent is `standin_remote`'s port: no module here names an A2A type. What a
//! parent calls (control API, A2A front, MCP tools) is `standin_control_plane`'s.

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
