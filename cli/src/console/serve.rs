//! The console's server: its routes, the guard before every one, and the headers every
//! page carries.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::guard::{Guard, Sent};
use super::{Console, pages, parts};
use crate::{CliError, ControlClient};

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
            only_this_console,
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

/// Refuses what does not come from the console's own pages (403, with why).
pub(crate) async fn only_this_console(
    State(console): State<Arc<Console>>,
    request: Request,
    next: Next,
) -> Response {
    let admitted = {
        let header_of = |name| {
            request
                .headers()
                .get(name)
                .and_then(|v: &axum::http::HeaderValue| v.to_str().ok())
        };
        let sent = Sent {
            host: header_of(header::HOST),
            origin: header_of(header::ORIGIN),
            fetch_site: header_of(HeaderName::from_static("sec-fetch-site")),
            fetch_mode: header_of(HeaderName::from_static("sec-fetch-mode")),
        };
        console.guard.admits(request.method(), &sent)
    };
    if admitted {
        return next.run(request).await;
    }
    (
        StatusCode::FORBIDDEN,
        "the console answers only its own pages, at the address it printed",
    )
        .into_response()
}
