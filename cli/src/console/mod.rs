//! `standin console`: a web console an operator opens in a browser. It is served on
//! loopback by the CLI's own process and reads through the control API with the caller's
//! AWS credentials, so the stack exposes nothing new. Pages are rendered on the server;
//! the only script refreshes the live part of a page, and every page reads without it.

mod chart;
mod guard;
mod pages;
mod parts;
mod respond;
mod serve;
mod time;
mod views;

use crate::ControlClient;
use guard::Guard;

pub use serve::serve;

/// What every page is served with: the control API, the stack's name, and the guard on
/// what may reach the console.
pub(crate) struct Console {
    control: ControlClient,
    stack: String,
    guard: Guard,
    /// The agents' ids for the list's filter, read at most once a minute: each read of
    /// `/agents` reads every agent's card too.
    agent_ids: tokio::sync::Mutex<Option<(std::time::Instant, Vec<String>)>>,
}

impl Console {
    async fn agent_ids(&self) -> Vec<String> {
        let mut kept = self.agent_ids.lock().await;
        if let Some((read, ids)) = kept.as_ref()
            && read.elapsed() < std::time::Duration::from_secs(60)
        {
            return ids.clone();
        }
        let Ok(agents) = self.control.agents().await else {
            return kept
                .as_ref()
                .map(|(_, ids)| ids.clone())
                .unwrap_or_default();
        };
        let mut ids: Vec<String> = agents
            .iter()
            .filter_map(|view| view.agent["id"].as_str().map(str::to_owned))
            .collect();
        ids.sort();
        ids.dedup();
        *kept = Some((std::time::Instant::now(), ids.clone()));
        ids
    }
}
