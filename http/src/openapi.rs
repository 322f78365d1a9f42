//! How the OpenAPI document describes problems and event streams, in one place.
//!
//! Every refusal is a [`Problem`](crate::Problem) sent as `application/problem+json`, and a `429`
//! or `503` carries `Retry-After`. Handlers do not spell that out one tuple at a time: each names
//! the [`Cause`]s it may answer with in a [`problems!`](crate::problems) type, and lists that type
//! in its `#[utoipa::path(responses(..))]`. Causes that share a status are merged into one
//! response whose description names each problem `type`. The causes most routes share (a bad
//! JSON body, a missing token, a busy writer, ...) are the constants below.
//!
//! [`sse_events`] documents a `text/event-stream` answer: OpenAPI 3.1 reads its schema as the
//! schema of one event (`event`, `id`, and `data` holding JSON of a named schema).

use std::collections::BTreeMap;

use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, RefOr, Response, ResponseBuilder};

/// The media type of every problem answer (RFC 9457).
pub const PROBLEM_JSON: &str = "application/problem+json";

/// One way a route can refuse a request: its status and what the problem says.
#[derive(Debug, Clone, Copy)]
pub struct Cause {
    pub status: u16,
    /// Markdown naming the problem `type` (its last segment) and when it happens.
    pub what: &'static str,
}

impl Cause {
    pub const fn new(status: u16, what: &'static str) -> Self {
        Self { status, what }
    }
}

/// A body that is not JSON, too large, or not what the schema describes.
pub const JSON_BODY: &[Cause] = &[
    Cause::new(400, "`malformed-json`: the body is not valid JSON"),
    Cause::new(
        413,
        "`body-too-large`: the body is larger than the server accepts (`max_body_bytes`)",
    ),
    Cause::new(
        415,
        "`unsupported-media-type`: the body is not sent as `Content-Type: application/json`",
    ),
    Cause::new(422, "`invalid-body`: the JSON does not match the request schema"),
];

/// Routes that take a customer's bearer token.
pub const CUSTOMER_TOKEN: &[Cause] = &[Cause::new(
    401,
    "`unauthorized`: no customer token, or one that is forged or expired (`WWW-Authenticate: Bearer`)",
)];

/// Routes that take an organizer's `X-Api-Key`.
pub const ORGANIZER_KEY: &[Cause] = &[Cause::new(401, "`unauthorized`: no `X-Api-Key`, or an unknown one")];

/// Organizer routes about one event.
pub const OTHER_ORGANIZER: &[Cause] = &[Cause::new(403, "`forbidden`: the event belongs to another organizer")];

/// Routes with an `{event_id}` in their path.
pub const EVENT_PATH: &[Cause] = &[Cause::new(
    404,
    "`not-found` / `event-not-found`: no such event, or a path id that does not parse",
)];

/// Routes that accept an optional `Idempotency-Key`.
pub const IDEMPOTENCY_KEY: &[Cause] = &[Cause::new(
    400,
    "`bad-idempotency-key`: `Idempotency-Key` is not 1 to 255 visible ASCII characters",
)];

/// Commands decided by the event's writer.
pub const WRITER_BUSY: &[Cause] = &[Cause::new(
    503,
    "`overloaded` (the event's writer has a full mailbox), `journal-unavailable` (the log cannot \
     record now) or `not-owner` (no node serves the event's partition right now, e.g. during a \
     failover): nothing was written; retry after `Retry-After` seconds",
)];

/// Reads that take `?after=PARTITION:OFFSET` (read your own writes).
pub const READ_AFTER: &[Cause] = &[
    Cause::new(
        400,
        "`bad-query` (a malformed parameter, `wait_ms` over 10000) or `bad-position` (`after` is not \
         `PARTITION:OFFSET` of this journal)",
    ),
    Cause::new(
        503,
        "`position-not-visible`: this node (for `/me/bookings` and `/sales`: the ledger) has not \
         applied the position `after` names yet (it waited `wait_ms`); the body's `position` repeats \
         it. Retry after `Retry-After` seconds, or ask another node",
    ),
];

/// The per-customer and per-address request rates of every command route (`[limits]`).
pub const RATE_LIMITED: &[Cause] = &[Cause::new(
    429,
    "`rate-limited`: too many requests from this customer or client address (`limit` says which); \
     retry after `Retry-After` seconds",
)];

/// The caps on open server-sent event streams (`[limits]`).
pub const STREAM_CAP: &[Cause] = &[Cause::new(
    429,
    "`rate-limited`: this node, customer or client address already holds its most streams \
     (`limit` says which); close one, or retry after `Retry-After` seconds",
)];

/// The responses of `causes`: one per status, descriptions joined, each an
/// `application/problem+json` [`Problem`](crate::Problem), with `Retry-After` on `429` and `503`.
pub fn problem_responses(causes: &[&[Cause]]) -> BTreeMap<String, RefOr<Response>> {
    let mut by_status: BTreeMap<u16, Vec<&str>> = BTreeMap::new();
    for cause in causes.iter().flat_map(|c| c.iter()) {
        let whats = by_status.entry(cause.status).or_default();
        if !whats.contains(&cause.what) {
            whats.push(cause.what);
        }
    }
    by_status
        .into_iter()
        .map(|(status, whats)| (status.to_string(), problem_response(status, &whats.join("; ")).into()))
        .collect()
}

/// One problem response.
pub fn problem_response(status: u16, description: &str) -> Response {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("Problem")))
        .build();
    let mut response = ResponseBuilder::new()
        .description(description)
        .content(PROBLEM_JSON, content);
    if status == 429 || status == 503 {
        let seconds = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).build();
        response = response.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(seconds)
                .description(Some("seconds to wait before retrying"))
                .build(),
        );
    }
    response.build()
}

/// The schema of one server-sent event of each kind in `kinds`: (event name, the schema its
/// `data` holds as JSON). `id` is the log position `PARTITION:OFFSET` a client resumes after
/// with `Last-Event-ID`.
pub fn sse_events(kinds: &[(&str, RefOr<Schema>)]) -> Schema {
    let one = |name: &str, data: &RefOr<Schema>| -> Schema {
        let data = ObjectBuilder::new()
            .schema_type(Type::String)
            .content_media_type("application/json")
            .extensions(Some(content_schema(data)))
            .build();
        ObjectBuilder::new()
            .property(
                "event",
                ObjectBuilder::new().schema_type(Type::String).enum_values(Some([name])),
            )
            .property(
                "id",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(POSITION_PATTERN)),
            )
            .property("data", data)
            .required("event")
            .required("id")
            .required("data")
            .build()
            .into()
    };
    match kinds {
        [(name, data)] => one(name, data),
        _ => kinds
            .iter()
            .fold(OneOfBuilder::new(), |all, (name, data)| all.item(one(name, data)))
            .build()
            .into(),
    }
}

/// JSON Schema's `contentSchema` keyword (what a string holds), which utoipa has no builder for:
/// its extensions builder would prefix the key with `x-`.
fn content_schema(schema: &RefOr<Schema>) -> Extensions {
    let mut keywords = Extensions::default();
    keywords.insert(
        "contentSchema".to_owned(),
        serde_json::to_value(schema).unwrap_or_default(),
    );
    keywords
}

/// A `200` answer streaming `text/event-stream` events of `schema` (from [`sse_events`]).
pub fn sse_response(description: &str, schema: Schema) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content("text/event-stream", ContentBuilder::new().schema(Some(schema)).build())
        .build()
}

/// A log position as it appears in `after`, `Last-Event-ID`, SSE ids and `position` fields.
pub const POSITION_PATTERN: &str = "^[0-9]+:[0-9]+$";

/// Declares types that document problem answers for `#[utoipa::path(responses(..))]`:
///
/// ```ignore
/// frontrow_http::problems! {
///     /// What reserving refuses with.
///     pub(super) ReserveProblems = [CUSTOMER_TOKEN, JSON_BODY, &[Cause::new(409, "`seats-unavailable`: ...")]];
/// }
/// ```
///
/// Each element is a `&[Cause]`; the constants of [`openapi`](crate::openapi) are in scope.
#[macro_export]
macro_rules! problems {
    ($($(#[$doc:meta])* $vis:vis $name:ident = [$($causes:expr),* $(,)?];)+) => {$(
        $(#[$doc])*
        $vis struct $name;

        impl ::utoipa::IntoResponses for $name {
            fn responses() -> ::std::collections::BTreeMap<
                String,
                ::utoipa::openapi::RefOr<::utoipa::openapi::response::Response>,
            > {
                // The causes' constants by name; `problem_responses` keeps the import used.
                use $crate::openapi::*;
                problem_responses(&[$($causes),*])
            }
        }
    )+};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_of_one_status_become_one_response_with_retry_after_where_due() {
        let responses = problem_responses(&[JSON_BODY, IDEMPOTENCY_KEY, WRITER_BUSY]);
        assert_eq!(
            responses.keys().map(String::as_str).collect::<Vec<_>>(),
            ["400", "413", "415", "422", "503"]
        );
        let json = serde_json::to_value(&responses).unwrap();
        let bad = &json["400"];
        let description = bad["description"].as_str().unwrap();
        assert!(description.contains("malformed-json") && description.contains("bad-idempotency-key"));
        assert_eq!(
            bad["content"][PROBLEM_JSON]["schema"]["$ref"],
            "#/components/schemas/Problem"
        );
        assert!(bad["headers"].get("Retry-After").is_none());
        assert_eq!(json["503"]["headers"]["Retry-After"]["schema"]["type"], "integer");
    }

    #[test]
    fn an_event_schema_names_the_event_and_the_json_its_data_holds() {
        let schema = sse_events(&[("status", Ref::from_schema_name("QueueStatus").into())]);
        let json = serde_json::to_value(&schema).unwrap();
        assert_eq!(json["properties"]["event"]["enum"], serde_json::json!(["status"]));
        assert_eq!(json["properties"]["data"]["contentMediaType"], "application/json");
        assert_eq!(
            json["properties"]["data"]["contentSchema"]["$ref"],
            "#/components/schemas/QueueStatus"
        );
        let two = sse_events(&[
            ("a", Ref::from_schema_name("A").into()),
            ("b", Ref::from_schema_name("B").into()),
        ]);
        assert_eq!(
            serde_json::to_value(&two).unwrap()["oneOf"].as_array().unwrap().len(),
            2
        );
    }
}
