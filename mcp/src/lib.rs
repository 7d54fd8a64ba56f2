//! Stand-in's tools over the Model Context Protocol, so an LLM orchestrator (Claude,
//! Strands, LangGraph, ADK, CrewAI) delegates to A2A agents with no code of its own:
//! list the agents, delegate, wait for what the agent says, reply, read what it made.
//!
//! The tools speak the control API's own contract (its paths and bodies), through a
//! port: the `standin mcp` command signs each call with the caller's AWS credentials;
//! a test calls a double. Built on the official Rust SDK (`rmcp`).

mod api;
mod shapes;
mod tools;

pub use api::{ControlAnswer, ControlApi};
pub use shapes::*;
pub use tools::StandInTools;

/// Serves the tools on stdin and stdout until the client closes them.
#[cfg(feature = "stdio")]
pub async fn serve_stdio<A: ControlApi>(api: A) -> Result<(), String> {
    use rmcp::ServiceExt;
    let running = StandInTools::new(api)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| format!("the MCP session did not start: {err}"))?;
    running
        .waiting()
        .await
        .map(drop)
        .map_err(|err| format!("the MCP session ended in error: {err}"))
}
