//! The read API: events, their seat maps and live availability.
//!
//! Every event read carries the event's version as a strong `ETag` (`"PARTITION-OFFSET"`, the
//! log position of the last record that changed it), answers `304 Not Modified` to a matching
//! `If-None-Match`, and allows shared caches to keep it for a second and serve it stale while
//! they revalidate: seats move fast, but a CDN in front still absorbs an onsale's peak.
//!
//! A client that just wrote through the command API can pass the position it got back as
//! `?after=PARTITION:OFFSET`; the read then waits (up to `wait_ms`) until this node has applied
//! that position, and answers `503` with `Retry-After` if it does not in time.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, VARY};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use frontrow_http::page::{self, Cursor};
use frontrow_http::read_after::{ReadAfter, not_visible};
use frontrow_http::{ApiPath, ApiQuery, IfNoneMatch, NotModified, Problem, none_match};
use frontrow_journal::Position;
use frontrow_schema::EventId;
use serde::Deserialize;
use utoipa::{IntoParams, OpenApi};

use crate::catalog::{Catalog, EventFilter};
use crate::replays::{Replayer, replay_permit_or_overloaded};
use crate::streams::StreamSlots;
use crate::travel::{At, ReplayFrom, TravelError, TravelLimits, replay_to};
use crate::views::{
    AvailabilityMap, EventDetails, EventList, EventSummary, Legend, RowAvailability, SeatCounts, SectionAvailability,
    ZoneAvailability,
};

/// Short because seats move fast; `stale-while-revalidate` lets a CDN answer a peak from its
/// copy while it fetches the next version.
pub const CACHE_CONTROL_VALUE: &str = "public, max-age=1, stale-while-revalidate=5";
/// The query side's OpenAPI description.
#[derive(OpenApi)]
#[openapi(
    paths(
        list_events, event_details, availability, crate::sse::seat_stream, crate::sse::my_queue_status,
        crate::sse::my_queue_stream
    ),
    components(schemas(
        EventList, EventSummary, EventDetails, AvailabilityMap, SectionAvailability,
        RowAvailability, ZoneAvailability, SeatCounts, Legend, Problem, crate::sse::QueueStatus, crate::sse::SeatData
    )),
    tags(
        (name = "events", description = "Events, seat maps and live availability"),
        (name = "queue", description = "The virtual waiting room")
    )
)]
pub struct QueryApi;

/// The read API over `catalog`, with the default stream caps.
pub fn router(catalog: Arc<Catalog>) -> Router {
    router_with_streams(catalog, StreamSlots::new(&frontrow_http::limits::Limits::default()))
}

/// The read API over `catalog`, its server-sent event streams counted in `streams`.
pub fn router_with_streams(catalog: Arc<Catalog>, streams: Arc<StreamSlots>) -> Router {
    Router::new()
        .route("/events", get(list_events))
        .route("/events/{event_id}", get(event_details))
        .route("/events/{event_id}/availability", get(availability))
        .route("/events/{event_id}/seats/stream", get(crate::sse::seat_stream))
        .route("/events/{event_id}/queue/me", get(crate::sse::my_queue_status))
        .route("/events/{event_id}/queue/me/stream", get(crate::sse::my_queue_stream))
        .with_state(catalog)
        .layer(axum::Extension(streams))
}

/// Waits until `catalog` has applied `read`'s position, if it names one.
pub(crate) async fn wait(read: &ReadAfter, catalog: &Catalog) -> Result<(), Problem> {
    let Some((position, wait)) = read.target(catalog.partitions())? else {
        return Ok(());
    };
    if catalog.wait_for(position, wait).await {
        Ok(())
    } else {
        Err(not_visible(position, "this node"))
    }
}

/// The availability read: read-your-writes, or a map of the past.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AvailabilityQuery {
    /// A log position from a command response (`PARTITION:OFFSET`): answer only once this node
    /// has applied it, waiting up to `wait_ms`; `503` with `Retry-After` if it has not by then.
    #[param(example = "3:1207", pattern = r"^[0-9]+:[0-9]+$")]
    after: Option<String>,
    /// How long to wait for `after`, in milliseconds (0 to 10000, default 2000).
    #[param(minimum = 0, maximum = 10000, default = 2000)]
    wait_ms: Option<u64>,
    /// Time travel: the map as it was at this instant, replayed from the log. An RFC 3339 time
    /// (everything recorded at or before it) or a log position `PARTITION:OFFSET` in the
    /// event's partition (everything at or before it).
    #[param(example = "2026-03-01T10:00:05Z")]
    at: Option<String>,
}

fn unknown_event(event_id: &EventId) -> Problem {
    Problem::not_found(format!("there is no event {event_id}"))
}

/// The strong entity tag of an event version.
pub fn etag(version: Position) -> String {
    format!("\"{}-{}\"", version.partition, version.offset)
}

/// A cacheable JSON answer of one event version, or `304` when the client has it.
fn versioned_json(headers: &HeaderMap, version: Position, body: impl FnOnce() -> Bytes) -> Response {
    tagged_json(headers, etag(version), body)
}

/// [`versioned_json`] with the entity tag given.
fn tagged_json(headers: &HeaderMap, tag: String, body: impl FnOnce() -> Bytes) -> Response {
    // Digits, a dash and quotes are always a valid header value.
    let tag_value = HeaderValue::from_str(&tag).expect("etag is a valid header value");
    let cache = HeaderValue::from_static(CACHE_CONTROL_VALUE);
    if none_match(headers, &tag) {
        return (StatusCode::NOT_MODIFIED, [(ETAG, tag_value), (CACHE_CONTROL, cache)]).into_response();
    }
    let json = HeaderValue::from_static("application/json");
    (
        [(CONTENT_TYPE, json), (ETAG, tag_value), (CACHE_CONTROL, cache)],
        body(),
    )
        .into_response()
}

/// Whether the client's `Accept-Encoding` takes gzip (a `q=0` refuses it).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// The live availability map: the version's precompressed gzip body when the client takes it
/// (compressed once per version, not per request), else the plain JSON.
fn live_availability(catalog: &Catalog, event_id: &EventId, headers: &HeaderMap) -> Result<Response, Problem> {
    let vary = (VARY, HeaderValue::from_static("accept-encoding"));
    if accepts_gzip(headers) {
        let (version, body) = catalog
            .availability_gzip(event_id)
            .ok_or_else(|| unknown_event(event_id))?;
        // Another representation of the same version: its own strong tag.
        let tag = format!("\"{}-{}-gzip\"", version.partition, version.offset);
        let mut res = tagged_json(headers, tag, || body);
        if res.status() == StatusCode::OK {
            res.headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        res.headers_mut().insert(vary.0, vary.1);
        return Ok(res);
    }
    let (version, body) = catalog
        .availability_body(event_id)
        .ok_or_else(|| unknown_event(event_id))?;
    let mut res = versioned_json(headers, version, || body);
    res.headers_mut().insert(vary.0, vary.1);
    Ok(res)
}

frontrow_http::problems! {
    /// What listing events refuses with.
    ListProblems = [READ_AFTER, &[
        Cause::new(400, "`bad-limit`: `limit` is not a whole number from 1 to 100; `bad-cursor`: `cursor` is not a \
            `next` this API gave; `bad-date`: `from` or `to` is neither a day (`YYYY-MM-DD`) nor an RFC 3339 instant"),
        Cause::new(422, "`city-too-long`: `city` is over 100 characters; `bad-date-range`: `from` is after `to`"),
    ]];
    /// What reading one event refuses with.
    DetailsProblems = [EVENT_PATH, READ_AFTER];
    /// What an availability read refuses with.
    AvailabilityProblems = [EVENT_PATH, READ_AFTER,
        &[Cause::new(400, "`bad-instant`: `at` is neither an RFC 3339 time nor a position of the event's partition"),
          Cause::new(404, "`not-found`: the event did not exist yet at `at`"),
          Cause::new(422, "`history-too-deep`: `at` needs a longer replay of the log than one request may do"),
          Cause::new(503, "`overloaded`: with `at`, this node already runs its two log replays for other \
              requests; retry after `Retry-After` seconds")]];
}

/// Events on a page when the client does not say, and at most.
const EVENTS_PAGE: usize = 20;
const MAX_EVENTS_PAGE: usize = 100;

/// Which events to list, and which page of them.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct EventsQuery {
    /// Only events in this city: its whole name, in any case (at most 100 characters).
    #[param(example = "Berlin")]
    city: Option<String>,
    /// Only events starting at or after this day (`YYYY-MM-DD`, UTC) or RFC 3339 instant.
    #[param(example = "2027-02-01")]
    from: Option<String>,
    /// Only events starting at or before this instant, or on or before this day (all of it).
    #[param(example = "2027-02-28")]
    to: Option<String>,
    /// Events on the page, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// The `next` of the page before (opaque); without it, the soonest events.
    #[param(example = "1796126400000000.0192f5c1a3e47d2b9c1e5f3a7b8d9e01")]
    cursor: Option<String>,
}

impl EventsQuery {
    /// The filter, the page's cursor and its size, or the problem with the first that is bad.
    fn checked(&self) -> Result<(EventFilter, Option<Cursor>, usize), Problem> {
        let city = page::city(self.city.as_deref())?;
        let (from, to) = page::date_range(self.from.as_deref(), self.to.as_deref())?;
        let limit = page::limit(self.limit.as_deref(), EVENTS_PAGE, MAX_EVENTS_PAGE)?;
        let cursor = page::cursor(self.cursor.as_deref(), "events")?;
        Ok((EventFilter::new(city, from, to), cursor, limit))
    }
}

/// A page of the events, soonest first, optionally of one city and within dates: `limit` of them
/// (20 by default), the next page at `?cursor=` the answer's `next`, and how many there are in
/// all (`total`).
#[utoipa::path(
    get, path = "/events", tag = "events",
    params(EventsQuery, ReadAfter),
    responses(
        (status = 200, description = "A page of the events, soonest first", body = EventList,
            headers(("Cache-Control" = String))),
        ListProblems,
    )
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn list_events(
    State(catalog): State<Arc<Catalog>>,
    ApiQuery(list): ApiQuery<EventsQuery>,
    ApiQuery(read): ApiQuery<ReadAfter>,
) -> Result<Response, Problem> {
    let (filter, cursor, limit) = list.checked()?;
    wait(&read, &catalog).await?;
    let page = catalog.list(&filter, cursor, limit);
    let list = EventList {
        events: page.events,
        total: page.total,
        next: page.next.map(|c| c.to_string()),
    };
    let body = serde_json::to_vec(&list).map_err(Problem::internal)?;
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL_VALUE)),
    ];
    Ok((headers, body).into_response())
}

/// One event with its seat map, hold time and order limit.
#[utoipa::path(
    get, path = "/events/{event_id}", tag = "events",
    params(
        ("event_id" = EventId, Path, description = "The event"),
        IfNoneMatch,
        ReadAfter,
    ),
    responses(
        (status = 200, description = "The event", body = EventDetails,
            headers(("ETag" = String), ("Cache-Control" = String))),
        NotModified,
        DetailsProblems,
    )
)]
#[tracing::instrument(level = "debug", skip_all, fields(%event_id))]
async fn event_details(
    State(catalog): State<Arc<Catalog>>,
    ApiPath(event_id): ApiPath<EventId>,
    ApiQuery(read): ApiQuery<ReadAfter>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    wait(&read, &catalog).await?;
    let (version, details) = catalog
        .with_event(&event_id, |e| (e.position(), e.details()))
        .ok_or_else(|| unknown_event(&event_id))?;
    let body = serde_json::to_vec(&details).map_err(Problem::internal)?;
    Ok(versioned_json(&headers, version, || Bytes::from(body)))
}

/// The live availability map of one event: counts per section and one letter per seat; with
/// `at`, the map as it was at that instant, replayed from the log.
#[utoipa::path(
    get, path = "/events/{event_id}/availability", tag = "events",
    params(
        ("event_id" = EventId, Path, description = "The event"),
        IfNoneMatch,
        AvailabilityQuery,
    ),
    responses(
        (status = 200, description = "The availability map", body = AvailabilityMap,
            headers(("ETag" = String, description = "\"PARTITION-OFFSET\" of the last change"),
                    ("Cache-Control" = String))),
        NotModified,
        AvailabilityProblems,
    )
)]
#[tracing::instrument(level = "debug", skip_all, fields(%event_id))]
async fn availability(
    State(catalog): State<Arc<Catalog>>,
    ApiPath(event_id): ApiPath<EventId>,
    ApiQuery(query): ApiQuery<AvailabilityQuery>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let at = match &query.at {
        Some(at) => Some(at.parse::<At>().map_err(|e| Problem::bad_request("bad-instant", e))?),
        None => None,
    };
    let read = ReadAfter {
        after: query.after,
        wait_ms: query.wait_ms,
    };
    wait(&read, &catalog).await?;
    let Some(at) = at else {
        return live_availability(&catalog, &event_id, &headers);
    };
    let _permit = replay_permit_or_overloaded(Replayer::Public)?;
    let journal = catalog.journal();
    let past = replay_to(
        journal.as_ref(),
        event_id,
        at,
        TravelLimits::default(),
        ReplayFrom::NearestSnapshot,
    )
    .await
    .map_err(|e| match e {
        TravelError::WrongPartition { .. } => Problem::bad_request("bad-instant", e.to_string()),
        TravelError::TooDeep { .. } => Problem::unprocessable("history-too-deep", e.to_string()),
        TravelError::Journal(e) => Problem::internal(e),
    })?
    .ok_or_else(|| Problem::not_found(format!("event {event_id} did not exist at {at}")))?;
    Ok(versioned_json(&headers, past.position(), || past.availability_body()))
}

#[cfg(test)]
mod tests {
    use axum::http::header::IF_NONE_MATCH;

    use super::*;
    use crate::replays::replay_permit;

    use tower::ServiceExt;

    /// A catalog following a one-partition journal that holds one scheduled event.
    async fn catalog_with_one_event(dir: &std::path::Path) -> (Arc<Catalog>, EventId) {
        use frontrow_journal::{Journal, Record, SqliteJournal};

        let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::open(&dir.join("j.db"), 1).unwrap());
        let event = EventId::new();
        let info = serde_json::from_value(serde_json::json!({
            "event_id": event, "organizer": "acme", "title": "T", "artist": "A", "venue": "V", "city": "C",
            "starts_at": "2027-02-01T20:00:00Z", "onsale_at": "2027-01-01T10:00:00Z", "hold_minutes": 10,
            "max_seats_per_order": 4, "currency": "EUR",
            "seat_map": {"tiers": [{"code": "STD", "name": "Standard", "price": 100}],
                         "sections": [{"code": "A", "name": "A", "rows": [{"name": "1", "seats": 3, "tier": "STD"}]}]}
        }))
        .unwrap();
        let time = "2027-01-01T10:00:00Z".parse().unwrap();
        let scheduled = frontrow_schema::Envelope::new(event, 1, time, frontrow_schema::Event::EventScheduled(info));
        let record = Record {
            key: scheduled.key(),
            value: frontrow_schema::encode(&scheduled),
        };
        journal.append(0, vec![record]).await.unwrap();
        // Dropping the follower tasks' handles detaches them: they keep following.
        let (catalog, _) = Catalog::start(journal).await.unwrap();
        let applied = Position {
            partition: 0,
            offset: 0,
        };
        assert!(catalog.wait_for(applied, std::time::Duration::from_secs(10)).await);
        (catalog, event)
    }

    /// Held by the tests that take places among the process's replays ([`crate::replays::REPLAYS`]):
    /// tests run in parallel, and one that fills the places must not see another give one back.
    static REPLAY_PLACES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    #[tokio::test]
    async fn past_maps_beyond_the_replay_limit_are_refused_not_queued() {
        let _places = REPLAY_PLACES.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let (catalog, event) = catalog_with_one_event(dir.path()).await;
        let ask = || {
            let request = axum::http::Request::get(format!("/events/{event}/availability?at=0:0"))
                .body(axum::body::Body::empty())
                .unwrap();
            router(catalog.clone()).oneshot(request)
        };
        let busy: Vec<_> = std::iter::from_fn(|| replay_permit(Replayer::Public)).collect();
        let refused = ask().await.unwrap();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()["retry-after"], "1");
        drop(busy);
        assert_eq!(ask().await.unwrap().status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_seat_stream_resumes_after_the_last_offset_there_can_be() {
        let _places = REPLAY_PLACES.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let (catalog, event) = catalog_with_one_event(dir.path()).await;
        let resume = |offset: u64| {
            let request = axum::http::Request::get(format!("/events/{event}/seats/stream"))
                .header("last-event-id", format!("0:{offset}"))
                .body(axum::body::Body::empty())
                .unwrap();
            router(catalog.clone()).oneshot(request)
        };
        // The largest offset a position may name: resuming after it once overflowed `offset + 1`
        // and panicked the handler.
        let res = resume(i64::MAX as u64).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()[CONTENT_TYPE], "text/event-stream");
        // Beyond it, the position itself is refused.
        let res = resume(u64::MAX).await.unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        assert_eq!(res.headers()[CONTENT_TYPE], "application/problem+json");
    }

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(IF_NONE_MATCH, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn if_none_match_handles_lists_stars_and_weak_tags() {
        let tag = etag(Position {
            partition: 2,
            offset: 41,
        });
        assert_eq!(tag, "\"2-41\"");
        assert!(none_match(&headers(&["\"2-41\""]), &tag));
        assert!(none_match(&headers(&["\"1-1\", W/\"2-41\""]), &tag));
        assert!(none_match(&headers(&["\"1-1\"", "\"2-41\""]), &tag));
        assert!(none_match(&headers(&["*"]), &tag));
        assert!(!none_match(&headers(&["\"2-4\""]), &tag));
        assert!(!none_match(&headers(&["2-41"]), &tag));
        assert!(!none_match(&HeaderMap::new(), &tag));
    }
}
