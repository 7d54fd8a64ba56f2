//! The HTTP/2 under tonic's gRPC: the agent client every binding uses, so a gRPC call
//! leaves through the same roots, resolver (no private address where none is allowed),
//! client certificate and credentials as any other call to the agent.

use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use http_body_util::BodyExt;
use tonic::body::Body;

use crate::a2a::binding::Link;
use crate::error::RemoteError;

/// Borrowed for one call: tonic sends its request through it and reads the answer back.
#[derive(Clone, Copy)]
pub struct OverReqwest<'a> {
    pub link: &'a Link<'a>,
}

impl<'a> tower_service::Service<http::Request<Body>> for OverReqwest<'a> {
    type Response = http::Response<reqwest::Body>;
    type Error = RemoteError;
    type Future = BoxFuture<'a, Result<Self::Response, RemoteError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RemoteError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let link = self.link;
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            // One request message (the stand-in never streams to an agent): read whole,
            // so credentials that sign the body (SigV4) can.
            let body = body
                .collect()
                .await
                .map_err(|e| RemoteError::Transport(format!("cannot frame the request: {e}")))?
                .to_bytes();
            let mut url = link.endpoint.clone();
            let path = format!(
                "{}{}",
                link.endpoint.path().trim_end_matches('/'),
                parts.uri.path()
            );
            url.set_path(&path);
            url.set_query(None);
            let mut request = link
                .http
                .post(url)
                .headers(link.headers.clone())
                .headers(parts.headers)
                .body(body)
                .build()?;
            if let Some(credentials) = link.credentials {
                credentials.authorize(&mut request).await?;
            }
            let response = link.http.execute(request).await?;
            Ok(http::Response::from(response))
        })
    }
}
