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
