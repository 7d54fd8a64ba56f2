//! Stand-in's tools over the Model Context Protocol, so an LLM orchestrator (Claude,
//! Strands, LangGraph, ADK, CrewAI) delegates to A2A agents with no code of its own:
//! list the agents, delegate, wait for what the agent says, reply, read what it made.
//!
//! The tools speak the control API's own contract (its paths and bodies), through a
//! port: the `standin mcp` command signs each call with the caller's AWS credentials;
//! the control function serves them at its own `/mcp`, each call going to its routes in
//! the same process; a test calls a double. Built on the official Rust SDK (`rmcp`).

mod api;
mod shapes;
mod tools;

pub use api::{ControlAnswer, ControlApi};
pub use shapes::*;
pub use tools::{MAX_WAIT_SECS, StandInTools};

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

/// The longest `wait` over HTTP: within API Gateway's 29 s, and short, as each wait holds
/// one of the control function's concurrent executions while it polls.
#[cfg(feature = "http")]
pub const HTTP_MAX_WAIT_SECS: u64 = 10;

/// The tools over Streamable HTTP, as a tower service: stateless (any request may reach
/// any process, as behind API Gateway and Lambda) and answering plain JSON (API Gateway
/// buffers the answer whole). The host is not checked: the service sits behind the
/// control API's own authorization, not on a loopback address a browser could be
/// rebound to.
#[cfg(feature = "http")]
pub fn http_service<A: ControlApi>(
    api: A,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    StandInTools<A>,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let api = std::sync::Arc::new(api);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(StandInTools::sharing(api.clone()).waiting_at_most(HTTP_MAX_WAIT_SECS)),
        std::sync::Arc::default(),
        config,
    )
}
