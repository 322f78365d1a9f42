//! Any command node takes any request: one for a partition it does not own is forwarded.
//!
//! The middleware buffers the request, lets the handler try it, and when the handler's answer
//! hands it a [`NotOwner`] (the writer refused: this node does not serve the partition, nothing
//! was written) replays the same request to the partition's owner from the ownership
//! directory, returning the owner's answer. A request is forwarded at most once
//! (`FrontRow-Forwarded` header); with no known owner the client gets `503` + `Retry-After`.

use std::sync::Arc;

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use frontrow_http::Problem;
use tracing::{debug, warn};

use crate::ownership::Owners;

const FORWARDED: &str = "frontrow-forwarded";

pub struct Forwarder {
    pub owners: Arc<Owners>,
    pub client: reqwest::Client,
    pub max_body: usize,
}

impl Forwarder {
    pub fn new(owners: Arc<Owners>, max_body: usize) -> Self {
        Self {
            owners,
            client: node_client(),
            max_body,
        }
    }
}

/// The client for requests to a FrontRow node (another's forwarded command, the demo's
/// webhook deliveries): plain HTTP, 10 s to answer.
pub(crate) fn node_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .expect("an HTTP client without TLS builds")
}

/// What a handler's `not-owner` refusal hands the forwarder, in the response's extensions: the
/// partition this node does not serve (nothing was written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotOwner(pub u32);

pub async fn forward_to_owner(State(fwd): State<Arc<Forwarder>>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, fwd.max_body).await else {
        return Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            "the request body is too large",
        )
        .into_response();
    };
    let already_forwarded = parts.headers.contains_key(FORWARDED);
    let res = next
        .run(Request::from_parts(parts.clone(), Body::from(bytes.clone())))
        .await;
    let Some(&NotOwner(partition)) = res.extensions().get::<NotOwner>() else {
        return res;
    };
    let unavailable = || {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-owner",
            "no node is serving this event right now",
        )
        .with("partition", partition)
        .retry_after(1)
        .into_response()
    };
    let owner = match fwd.owners.owner_of(partition) {
        Some(owner) if owner != fwd.owners.node_url && !already_forwarded => owner,
        _ => return unavailable(),
    };
    let sent = send(&fwd, &parts, &owner, bytes.clone());
    // A keyed request whose owner the directory replaces while it waits for the answer (the
    // owner was paused or died, and the group moved its partitions) is sent once more, to the
    // new owner: the replaced one is fenced, and the key makes the retry answer whatever the
    // first attempt did. Without a key the answer of the first owner is awaited.
    let answer = if parts.headers.contains_key("idempotency-key") {
        tokio::select! {
            answer = sent => answer,
            moved = fwd.owners.moved_from(partition, &owner) => {
                if moved == fwd.owners.node_url {
                    return unavailable();
                }
                debug!(partition, from = %owner, to = %moved, "the owner moved during a forward; sending it to the new one");
                send(&fwd, &parts, &moved, bytes).await
            }
        }
    } else {
        sent.await
    };
    answer.unwrap_or_else(|e| {
        warn!(partition, error = %e, "forward to owner failed");
        unavailable()
    })
}

/// Sends the request on to `owner` (marked forwarded, with the client's address) and returns
/// the owner's answer.
async fn send(fwd: &Forwarder, parts: &Parts, owner: &str, bytes: Bytes) -> anyhow::Result<Response> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    debug!(%owner, path, "forwarding to the partition's owner");
    let mut request = fwd.client.request(parts.method.clone(), format!("{owner}{path}"));
    for (name, value) in &parts.headers {
        if !is_hop_by_hop(name) && name != "x-forwarded-for" {
            request = request.header(name, value);
        }
    }
    // Like any proxy, say whom the request came from: an owner that lists this node among its
    // `limits.trusted_proxies` then limits the client, not this node.
    if let Some(client) = parts.extensions.get::<frontrow_http::limits::ClientAddr>() {
        request = request.header("x-forwarded-for", client.0.to_string());
    }
    let answer = request.header(FORWARDED, "1").body(bytes).send().await?;
    let mut res = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if !is_hop_by_hop(name) {
            res = res.header(name, value);
        }
    }
    let body = answer.bytes().await.unwrap_or_default();
    Ok(res.body(Body::from(body))?)
}

fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host" | "content-length" | "connection" | "transfer-encoding" | "keep-alive" | "upgrade" | "te" | "trailer"
    )
}
