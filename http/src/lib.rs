//! FrontRow's HTTP edge, shared by the command and query sides.
//!
//! [`Problem`] is the one error type every handler returns: an RFC 9457
//! `application/problem+json` body with a precise status, which hides internals on 5xx and logs
//! them. The extractors ([`ApiJson`], [`ApiPath`], [`ApiQuery`], [`ApiBytes`]) turn every
//! malformed request into such a problem. [`auth`] says who is calling: organizers by API key,
//! customers by a signed bearer token. [`limits`] works out the client's address and keeps
//! request rates per customer and per address. [`observe`] gives every request its id, span
//! and metrics. [`admission`] verifies the waiting room's admission tokens, [`openapi`] holds
//! what the API description of every problem shares, [`read_after`] the read-your-writes
//! parameters, [`page`] the paged lists' `limit`, `cursor` and date filters, and [`strict`]
//! makes struct bodies JSON objects only (serde would also take an array, matched by position).

pub mod admission;
pub mod auth;
mod conditional;
mod extract;
pub mod limits;
pub mod observe;
pub mod openapi;
pub mod page;
mod problem;
pub mod read_after;
pub mod strict;

pub use conditional::{IfNoneMatch, NotModified, none_match};
pub use extract::{ApiBytes, ApiJson, ApiPath, ApiQuery};
pub use problem::{Problem, fallback, method_not_allowed};
