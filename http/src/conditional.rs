//! Conditional requests: the one `If-None-Match` check every cacheable answer uses (the event
//! reads and the web app's assets).

use axum::http::HeaderMap;
use axum::http::header::IF_NONE_MATCH;

/// Whether `If-None-Match` matches `etag`: any of the header's values and list items, `*`, and
/// weak tags compared weakly, as RFC 9110 asks for this header.
pub fn none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// The `If-None-Match` request header, as the API description lists it for every read that
/// answers with an `ETag` (the handlers read it from their `HeaderMap`, through [`none_match`]).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IfNoneMatch {
    /// ETags the client already has
    #[param(rename = "If-None-Match")]
    pub if_none_match: Option<String>,
}

/// The `304` of a conditional read, as the API description lists it.
#[derive(utoipa::IntoResponses)]
#[response(status = 304, description = "The client's copy is current",
    headers(("ETag" = String), ("Cache-Control" = String)))]
pub struct NotModified;
