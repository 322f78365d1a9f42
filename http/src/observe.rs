//! What an operator sees of each request: a request id, one span and one log line, and the
//! HTTP metrics.
//!
//! [`observe`] is the outermost middleware of every node. It takes the caller's `X-Request-Id`
//! (1 to 128 visible ASCII characters) or makes one (a UUIDv7), puts it on the request so the
//! handlers and the forwarder see it, answers it in the response, and runs the request inside an
//! INFO span `request` with the method, the route template (never the raw path, so ids do not
//! explode the metrics' label sets), the status and the latency. The same labels feed
//! `frontrow_http_requests_total` and `frontrow_http_request_duration_seconds`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use uuid::Uuid;

/// The request id header, taken from the caller or generated, and echoed in every answer.
pub const REQUEST_ID: &str = "x-request-id";

/// Longest request id taken from a caller; a longer or non-ASCII one is replaced.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// Ids derived from a caller's request id that is not itself a UUID live in this namespace.
const REQUEST_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6f0c_6b3e_9a7d_4e51_8c2b_1d4f_a3e5_7b90);

/// The caller's request id if it is acceptable.
fn caller_request_id(headers: &HeaderMap) -> Option<&str> {
    let id = headers.get(REQUEST_ID)?.to_str().ok()?;
    (!id.is_empty() && id.len() <= MAX_REQUEST_ID_LEN && id.bytes().all(|b| b.is_ascii_graphic())).then_some(id)
}

/// The correlation id of the envelopes a request writes: its request id when that is a UUID,
/// else a UUIDv5 derived from it (the same id always gives the same correlation), else new.
pub fn correlation_id(headers: &HeaderMap) -> Uuid {
    match caller_request_id(headers) {
        Some(id) => Uuid::try_parse(id).unwrap_or_else(|_| Uuid::new_v5(&REQUEST_ID_NAMESPACE, id.as_bytes())),
        None => Uuid::now_v7(),
    }
}

/// The outermost middleware: request id, span, log line and metrics for every request.
pub async fn observe(mut req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let request_id = match caller_request_id(req.headers()) {
        Some(id) => id.to_owned(),
        None => {
            let id = Uuid::now_v7().to_string();
            let value = HeaderValue::from_str(&id).expect("a UUID is a valid header value");
            req.headers_mut().insert(REQUEST_ID, value);
            id
        }
    };
    let span = tracing::info_span!(
        "request",
        %method,
        route = %route,
        request_id = %request_id,
        status = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    );
    let mut res = next.run(req).instrument(span.clone()).await;
    let elapsed = start.elapsed();
    let status = res.status().as_u16();
    span.record("status", status);
    span.record("latency_ms", elapsed.as_secs_f64() * 1000.0);
    span.in_scope(|| tracing::info!("request answered"));
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        res.headers_mut().insert(REQUEST_ID, value);
    }
    let labels = [
        ("method", method.as_str().to_owned()),
        ("route", route),
        ("status", status.to_string()),
    ];
    metrics::counter!("frontrow_http_requests_total", &labels).increment(1);
    metrics::histogram!("frontrow_http_request_duration_seconds", &labels[..2]).record(elapsed.as_secs_f64());
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_id(id: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(REQUEST_ID, HeaderValue::from_str(id).unwrap());
        h
    }

    #[test]
    fn a_uuid_request_id_is_the_correlation_id() {
        let id = Uuid::now_v7();
        assert_eq!(correlation_id(&with_id(&id.to_string())), id);
    }

    #[test]
    fn another_request_id_derives_the_same_correlation_every_time() {
        let a = correlation_id(&with_id("checkout-42"));
        assert_eq!(a, correlation_id(&with_id("checkout-42")));
        assert_ne!(a, correlation_id(&with_id("checkout-43")));
    }

    #[test]
    fn an_overlong_request_id_is_not_taken() {
        let long = "x".repeat(MAX_REQUEST_ID_LEN + 1);
        assert!(caller_request_id(&with_id(&long)).is_none());
        assert!(caller_request_id(&with_id(&"x".repeat(MAX_REQUEST_ID_LEN))).is_some());
    }
}
