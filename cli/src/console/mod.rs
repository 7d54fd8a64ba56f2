//! `standin console`: a web console an operator opens in a browser. It is served on
//! loopback by the CLI's own process and reads through the control API with the caller's
//! AWS credentials, so the stack exposes nothing new. Pages are rendered on the server;
//! the only script refreshes the live part of a page, and every page reads without it.

mod chart;
mod guard;
mod pages;
mod parts;
mod respond;
mod time;
mod views;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use axum::routing::{get, post};

use crate::{CliError, ControlClient};
use guard::Guard;

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

/// How pages protect themselves: nothing loads from elsewhere, no page can be framed,
/// forms post only here.
const PAGE_POLICY: &str = "default-src 'none'; style-src 'self'; script-src 'self'; \
    connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; \
    base-uri 'none'";

/// Serves the console on `listen` (loopback only) until interrupted; opens it in the
/// browser unless `open` is false. Prints its address first, on standard output.
pub async fn serve(
    control: ControlClient,
    stack: &str,
    listen: SocketAddr,
    open: bool,
) -> Result<(), CliError> {
    if !listen.ip().is_loopback() {
        return Err(CliError::Invalid {
            field: "--listen".into(),
            problem: format!(
                "must be a loopback address (127.0.0.1 or [::1]): the console acts with your \
                 AWS credentials, got {listen}"
            ),
        });
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CliError::Invalid {
            field: "--listen".into(),
            problem: format!("cannot listen on {listen}: {e}"),
        })?;
    let bound = listener.local_addr().map_err(|e| CliError::Invalid {
        field: "--listen".into(),
        problem: e.to_string(),
    })?;
    let console = Arc::new(Console {
        control,
        stack: stack.to_owned(),
        guard: Guard::new(bound),
        agent_ids: tokio::sync::Mutex::new(None),
    });
    let url = format!("http://{bound}/");
    println!("Stand-in console for stack {stack:?}: {url}");
    eprintln!("(it reads with your AWS credentials; Ctrl-C stops it)");
    if open && let Err(err) = webbrowser::open(&url) {
        eprintln!("could not open a browser ({err}): open {url} yourself");
    }
    axum::serve(listener, router(console))
        .await
        .map_err(|e| CliError::Invalid {
            field: "--listen".into(),
            problem: format!("the console stopped: {e}"),
        })
}

fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(pages::home))
        .route("/standins", get(pages::list))
        .route("/standins/{id}", get(pages::stand_in))
        .route("/standins/{id}/reply", post(pages::reply))
        .route("/standins/{id}/cancel", post(pages::cancel))
        .route("/standins/{id}/artifacts/{artifact}", get(pages::artifact))
        .route(
            "/standins/{id}/artifacts/{artifact}/parts/{index}",
            get(parts::part),
        )
        .route("/agents", get(pages::agents))
        .route("/assets/console.css", get(stylesheet))
        .route("/assets/console.js", get(script))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            guard::only_this_console,
        ))
        .layer(axum::middleware::map_response(with_page_headers))
        .with_state(console)
}

async fn with_page_headers(mut response: axum::response::Response) -> axum::response::Response {
    let headers = response.headers_mut();
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(PAGE_POLICY));
    // No other site may load the console's pages, images or parts as its own resources.
    headers.insert(
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: with it a browser sends a form's Origin as `null`, which the guard
    // refuses; same-origin keeps the real Origin on the console's own forms.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn stylesheet() -> impl axum::response::IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("../../assets/console.css"),
    )
}

async fn script() -> impl axum::response::IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("../../assets/console.js"),
    )
}
