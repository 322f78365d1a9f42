//! Live pushes over server-sent events: seat-map deltas per event, and each fan's place in the
//! waiting room.
//!
//! Every SSE event's `id:` is a log position (`PARTITION:OFFSET`), so a client that reconnects
//! with `Last-Event-ID` resumes exactly after what it saw:
//!
//! - **Seat stream** (`GET /events/{id}/seats/stream`): a fresh client first gets `snapshot`
//!   (the availability map, id = its version), then one `seat` event per record that moved
//!   seats (`{"seats": [...], "status": "held" | "booked" | "available"}`), and `reset` if
//!   the organizer replaced the seat map (refetch it). A record that moved places of a
//!   standing zone is followed by a `zone` event per zone it touched, with the same id: the
//!   zone's counts (`ZoneAvailability`) as the node has them when it sends, so at least as
//!   new as the record. A `zone` event is a state, not a delta: a client sets the zone's
//!   counts to it and may ignore the `seat` event's place ids. A resuming client gets the records after
//!   its `Last-Event-ID`, read back from the journal (or a new `snapshot` when it is too far
//!   behind), then the live ones; each record is sent once, in log order.
//! - **Queue stream** (`GET /events/{id}/queue/me/stream`): a `status` event whenever the
//!   fan's place changes, id = the waiting room's version. A status is a state, not a delta:
//!   a resuming client gets the current status only if the waiting room changed since its
//!   `Last-Event-ID`, and a connection never sends the same status twice in a row. Streams
//!   wait on their event's waiting room, not on the partition, and a fan's first join wakes
//!   none of them: in a flash crowd the joins do not queue behind thousands of wakeups.
//!
//! Both send a keep-alive comment every [`HEARTBEAT`]. Nothing is buffered per connection
//! beyond one applied batch: live seat changes come from a bounded broadcast, and a client
//! that falls more than [`DELTA_BACKLOG`] batches behind is disconnected (it resumes from the
//! journal); queue statuses coalesce, a slow client only ever gets the newest.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use frontrow_http::auth::{Auth, Customer, StreamCustomer};
use frontrow_http::limits::ClientAddr;
use frontrow_http::openapi::{Cause, sse_events, sse_response};
use frontrow_http::read_after::ReadAfter;
use frontrow_http::{ApiPath, ApiQuery, Problem};
use frontrow_journal::Position;
use frontrow_schema::partition::partition_of;
use frontrow_schema::seatmap::STANDING_ROW;
use frontrow_schema::{CustomerId, EventId, SeatId, SectionCode};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use utoipa::ToSchema;
use utoipa::openapi::schema::ObjectBuilder;
use utoipa::openapi::{Ref, RefOr};

use crate::api::wait;
use crate::catalog::{Catalog, DELTA_BACKLOG, SeatChange, SeatDelta};
use crate::queue::LiveStatus;
use crate::replays::{Replayer, replay_permit};
use crate::streams::{StreamOwner, StreamSlot, StreamSlots};

/// How often an idle stream sends a keep-alive comment.
pub const HEARTBEAT: Duration = Duration::from_secs(15);
/// Longest `PARTITION:OFFSET` (`u32:u64`).
const MAX_POSITION_CHARS: usize = 31;
/// Most journal records a resuming seat stream reads back before it sends a snapshot instead.
pub const MAX_REPLAY: usize = 100_000;

/// A fan's place in an event's waiting room.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueStatus {
    pub event_id: EventId,
    /// The fan's queue number.
    pub ticket: u64,
    /// `waiting`, `admitted`, `spent`, `lapsed`, `left` or `sold_out`.
    #[schema(value_type = String, example = "waiting")]
    pub status: Cow<'static, str>,
    /// On the waiting list of a sold-out event.
    pub waitlist: bool,
    /// Joined before the onsale: the place is drawn by lottery at the onsale instant.
    pub awaiting_lottery: bool,
    /// 1 = next in line (while waiting and placed).
    pub position: Option<u64>,
    /// Fans ahead (while waiting and placed).
    pub ahead: Option<u64>,
    /// Estimated wait in seconds, from the recent admission rate.
    pub eta_seconds: Option<u64>,
    /// Until when the admission lasts (while admitted).
    pub admitted_until: Option<DateTime<Utc>>,
    /// Send it when reserving (`FrontRow-Admission` header or `admission_token` field).
    pub admission_token: Option<String>,
    /// Nothing is left to buy.
    pub sold_out: bool,
    /// The waiting room's version (`PARTITION:OFFSET`).
    pub version: String,
}

fn queue_status(
    catalog: &Catalog,
    auth: &Auth,
    event_id: EventId,
    customer: &CustomerId,
) -> Option<(Position, QueueStatus)> {
    let (version, s) = catalog
        .with_event(&event_id, |e| {
            e.queue().and_then(|(q, v)| Some((v, q.status_of(customer)?)))
        })
        .flatten()?;
    let admitted_until = match s.status {
        LiveStatus::Admitted { until } => Some(until),
        _ => None,
    };
    Some((
        version,
        QueueStatus {
            event_id,
            ticket: s.ticket,
            status: s.status.name().into(),
            waitlist: s.waitlist,
            awaiting_lottery: s.awaiting_lottery,
            position: s.ahead.map(|a| a + 1),
            ahead: s.ahead,
            eta_seconds: s.eta_secs,
            admitted_until,
            admission_token: admitted_until.map(|until| auth.admission_token(event_id, customer, s.ticket, until)),
            sold_out: s.sold_out,
            version: version.to_string(),
        },
    ))
}

fn not_in_queue(catalog: &Catalog, event_id: &EventId) -> Problem {
    match catalog.with_event(event_id, |e| e.queue().is_some()) {
        None => Problem::not_found(format!("there is no event {event_id}")),
        Some(false) => Problem::new(StatusCode::NOT_FOUND, "no-queue", "this event has no waiting room"),
        Some(true) => Problem::new(
            StatusCode::NOT_FOUND,
            "not-in-queue",
            "you are not in this event's queue",
        ),
    }
}

/// The caller is not in the event's waiting room.
const NOT_IN_QUEUE: &[Cause] = &[Cause::new(
    404,
    "`no-queue` (the event has no waiting room) or `not-in-queue` (the caller never joined it)",
)];

/// A `Last-Event-ID` that is not a position of the event's partition.
const LAST_EVENT_ID: &[Cause] = &[Cause::new(
    400,
    "`bad-last-event-id`: `Last-Event-ID` is not `PARTITION:OFFSET` of this event's partition",
)];

frontrow_http::problems! {
    /// What reading one's place in the queue refuses with.
    QueueMeProblems = [CUSTOMER_TOKEN, EVENT_PATH, NOT_IN_QUEUE, READ_AFTER];
    /// What opening one's queue status stream refuses with.
    QueueStreamProblems = [CUSTOMER_TOKEN, EVENT_PATH, NOT_IN_QUEUE, LAST_EVENT_ID, STREAM_CAP, READ_AFTER];
    /// What opening a seat stream refuses with.
    SeatStreamProblems = [EVENT_PATH, LAST_EVENT_ID, STREAM_CAP,
        &[Cause::new(503, "`journal-unavailable`: the log cannot be read back for `Last-Event-ID` right now; \
            retry after `Retry-After` seconds")]];
}

/// The `data` of a `seat` event: these seats now have this status.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SeatData<'a> {
    #[schema(value_type = Vec<String>, example = json!(["101-C-7", "101-C-8"]))]
    pub seats: Cow<'a, [SeatId]>,
    /// `held`, `booked`, `available` or `withheld` (kept out of the sale by the organizer).
    #[schema(value_type = String, pattern = "^(held|booked|available|withheld)$")]
    pub status: Cow<'static, str>,
}

/// The status stream's 200: `status` events, each a [`QueueStatus`].
struct QueueStream;

impl utoipa::IntoResponses for QueueStream {
    fn responses() -> std::collections::BTreeMap<String, RefOr<utoipa::openapi::Response>> {
        let events = sse_events(&[("status", Ref::from_schema_name("QueueStatus").into())]);
        let ok = sse_response(
            "`status` events (data: `QueueStatus`), id = the waiting room's version",
            events,
        );
        [("200".to_owned(), ok.into())].into()
    }
}

/// The seat stream's 200: a `snapshot`, then `seat` events, and `reset` when the map changes.
struct SeatStream;

impl utoipa::IntoResponses for SeatStream {
    fn responses() -> std::collections::BTreeMap<String, RefOr<utoipa::openapi::Response>> {
        let reset = ObjectBuilder::new()
            .description(Some("empty: refetch the seat map"))
            .into();
        let events = sse_events(&[
            ("snapshot", Ref::from_schema_name("AvailabilityMap").into()),
            ("seat", Ref::from_schema_name("SeatData").into()),
            ("zone", Ref::from_schema_name("ZoneAvailability").into()),
            ("reset", reset),
        ]);
        let ok = sse_response(
            "`snapshot` (data: `AvailabilityMap`) unless resuming, then `seat` events (data: `SeatData`), \
             after a `seat` event that moved standing places one `zone` event per zone (data: \
             `ZoneAvailability`, the zone's counts now), and `reset` (the organizer replaced the seat \
             map); id = the record's log position",
            events,
        );
        [("200".to_owned(), ok.into())].into()
    }
}

/// The caller's place in the waiting room: position, people ahead, estimated wait, and the
/// admission token once admitted. Right after joining, pass the join's `position` as
/// `?after=`: a node that has not applied the join yet waits for it instead of answering
/// `404 not-in-queue`.
#[utoipa::path(
    get, path = "/events/{event_id}/queue/me", tag = "queue",
    params(("event_id" = EventId, Path), ReadAfter),
    responses(
        (status = 200, description = "the caller's place", body = QueueStatus),
        QueueMeProblems
    ),
    security(("customer_token" = []))
)]
pub(crate) async fn my_queue_status(
    State(catalog): State<Arc<Catalog>>,
    Extension(auth): Extension<Arc<Auth>>,
    Customer(customer): Customer,
    ApiPath(event_id): ApiPath<EventId>,
    ApiQuery(read): ApiQuery<ReadAfter>,
) -> Result<Response, Problem> {
    wait(&read, &catalog).await?;
    let (_, status) =
        queue_status(&catalog, &auth, event_id, &customer).ok_or_else(|| not_in_queue(&catalog, &event_id))?;
    Ok(axum::Json(status).into_response())
}

/// Where a stream resumes: `?last_event_id=` names the first connection's starting point (a
/// browser's `EventSource` cannot send `Last-Event-ID` until it reconnects); the
/// `Last-Event-ID` header, sent on every reconnect with the newest id seen, wins over it.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct Resume {
    /// where the first connection resumes, for clients that cannot send `Last-Event-ID` on it
    /// (a browser's `EventSource`, e.g. from the availability map's `position`); the header
    /// wins when both are sent
    last_event_id: Option<String>,
}

/// The `Last-Event-ID` header of a stream's reconnect, as the API description lists it (read
/// from the `HeaderMap` by [`last_event_id`]).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
pub(crate) struct LastEventId {
    /// the last `id:` seen; resume after it
    #[param(rename = "Last-Event-ID", pattern = r"^[0-9]+:[0-9]+$")]
    _last_event_id: Option<String>,
}

fn last_event_id(
    headers: &HeaderMap,
    resume: &Resume,
    catalog: &Catalog,
    event_id: &EventId,
) -> Result<Option<Position>, Problem> {
    let bad = |detail: String| Problem::bad_request("bad-last-event-id", detail);
    let value = match (headers.get("last-event-id"), &resume.last_event_id) {
        (Some(header), _) => header
            .to_str()
            .map_err(|_| bad("Last-Event-ID must be PARTITION:OFFSET".into()))?,
        (None, Some(query)) => query.as_str(),
        (None, None) => return Ok(None),
    };
    if value.len() > MAX_POSITION_CHARS {
        return Err(bad("Last-Event-ID must be PARTITION:OFFSET".into()));
    }
    let position: Position = value.parse().map_err(|e: String| bad(e))?;
    let partition = partition_of(event_id, catalog.partitions());
    if position.partition != partition {
        return Err(bad(format!(
            "Last-Event-ID {position} is not a position of this event's partition {partition}"
        )));
    }
    Ok(Some(position))
}

/// The caller's place in the waiting room, pushed whenever it changes (`status` events).
/// Right after joining, pass the join's `position` as `?after=` (see `GET …/queue/me`).
#[utoipa::path(
    get, path = "/events/{event_id}/queue/me/stream", tag = "queue",
    params(
        ("event_id" = EventId, Path),
        LastEventId,
        Resume,
        ReadAfter,
        ("access_token" = Option<String>, Query, description = "the customer token, for clients that cannot send `Authorization` (a browser's `EventSource`)"),
    ),
    responses(QueueStream, QueueStreamProblems),
    security(("customer_token" = []))
)]
#[expect(clippy::too_many_arguments, reason = "an axum handler: one extractor each")]
pub(crate) async fn my_queue_stream(
    State(catalog): State<Arc<Catalog>>,
    Extension(auth): Extension<Arc<Auth>>,
    Extension(slots): Extension<Arc<StreamSlots>>,
    StreamCustomer(customer): StreamCustomer,
    ApiPath(event_id): ApiPath<EventId>,
    ApiQuery(resume): ApiQuery<Resume>,
    ApiQuery(read): ApiQuery<ReadAfter>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let last = last_event_id(&headers, &resume, &catalog, &event_id)?;
    wait(&read, &catalog).await?;
    if queue_status(&catalog, &auth, event_id, &customer).is_none() {
        return Err(not_in_queue(&catalog, &event_id));
    }
    let slot = slots.acquire(Some(StreamOwner::Customer(customer.clone())))?;
    // Subscribed before the first read below, so no change after that read is missed.
    let changes = catalog
        .watch_queue(&event_id)
        .ok_or_else(|| Problem::not_found(format!("there is no event {event_id}")))?;
    struct St {
        catalog: Arc<Catalog>,
        auth: Arc<Auth>,
        event_id: EventId,
        customer: CustomerId,
        changes: tokio::sync::watch::Receiver<u64>,
        last: Option<Position>,
        /// What this connection sent last, without its version: a change elsewhere in the
        /// queue that leaves this fan's status as it was is not sent again.
        sent: Option<QueueStatus>,
        first: bool,
    }
    let st_catalog = catalog.clone();
    let st = St {
        catalog,
        auth,
        event_id,
        customer,
        changes,
        last,
        sent: None,
        first: true,
    };
    let stream = futures::stream::unfold(st, |mut st| async move {
        loop {
            if !st.first && st.changes.changed().await.is_err() {
                return None;
            }
            st.first = false;
            let Some((version, status)) = queue_status(&st.catalog, &st.auth, st.event_id, &st.customer) else {
                continue;
            };
            if st.last.is_some_and(|l| version.offset <= l.offset) {
                continue;
            }
            st.last = Some(version);
            let unversioned = QueueStatus {
                version: String::new(),
                ..status.clone()
            };
            if st.sent.as_ref() == Some(&unversioned) {
                continue;
            }
            st.sent = Some(unversioned);
            let data = serde_json::to_string(&status).expect("status serialises");
            let event = SseEvent::default().event("status").id(version.to_string()).data(data);
            return Some((Ok::<_, Infallible>(event), st));
        }
    });
    Ok(sse(&st_catalog, &slots, slot, stream))
}

/// The stream as an SSE response that holds `slot` while open, and ends when the node shuts
/// down or the stream has been idle too long.
fn sse(
    catalog: &Catalog,
    slots: &StreamSlots,
    slot: StreamSlot,
    stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static,
) -> Response {
    let stream = slots.idle_ends(stream.take_until(catalog.closed()), slot);
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat"))
        .into_response()
}

/// The SSE events of one delta: the delta itself, then the counts of each standing zone whose
/// places it moved.
fn delta_events(catalog: &Catalog, d: &SeatDelta, out: &mut VecDeque<SseEvent>) {
    out.push_back(delta_event(d));
    let SeatChange::Seats { seats, .. } = &d.change else {
        return;
    };
    let mut zones: Vec<&SectionCode> = seats
        .iter()
        .filter(|s| s.row.as_str() == STANDING_ROW)
        .map(|s| &s.section)
        .collect();
    zones.dedup();
    for zone in zones {
        // A seated section with a row named like the zones' row is no zone: nothing to send.
        let Some(counts) = catalog.with_event(&d.event_id, |e| e.zone(zone)).flatten() else {
            continue;
        };
        let data = serde_json::to_string(&counts).expect("zone counts serialise");
        out.push_back(SseEvent::default().id(d.position.to_string()).event("zone").data(data));
    }
}

fn delta_event(d: &SeatDelta) -> SseEvent {
    let event = SseEvent::default().id(d.position.to_string());
    match &d.change {
        SeatChange::Seats { seats, status } => {
            let data = serde_json::to_string(&SeatData {
                seats: Cow::Borrowed(seats),
                status: Cow::Borrowed(status.as_str()),
            })
            .expect("seat delta serialises");
            event.event("seat").data(data)
        }
        SeatChange::Reset => event.event("reset").data("{}"),
    }
}

/// Live seat changes of one event: a `snapshot` (the availability map), then one `seat` event
/// per record that moved seats; resumable with `Last-Event-ID`.
#[utoipa::path(
    get, path = "/events/{event_id}/seats/stream", tag = "events",
    params(("event_id" = EventId, Path), LastEventId, Resume),
    responses(SeatStream, SeatStreamProblems)
)]
pub(crate) async fn seat_stream(
    State(catalog): State<Arc<Catalog>>,
    Extension(slots): Extension<Arc<StreamSlots>>,
    client: Option<Extension<ClientAddr>>,
    ApiPath(event_id): ApiPath<EventId>,
    ApiQuery(resume): ApiQuery<Resume>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let resume = last_event_id(&headers, &resume, &catalog, &event_id)?;
    // Before any journal read: a refused stream costs nothing.
    let slot = slots.acquire(client.map(|Extension(c)| StreamOwner::Address(c.key())))?;
    let partition = partition_of(&event_id, catalog.partitions());
    // Subscribe before reading anything, so no batch falls between what is read and what is pushed.
    let rx = catalog
        .subscribe_deltas(partition)
        .ok_or_else(|| Problem::internal("no such partition"))?;
    let unknown = || Problem::not_found(format!("there is no event {event_id}"));
    let mut pending = VecDeque::new();
    let mut replayed = None;
    // Reading missed deltas back takes one of the node's few replay places; without one the
    // stream starts from a fresh snapshot instead, which costs no journal read.
    let place = resume.and_then(|after| Some((after, replay_permit(Replayer::Public)?)));
    if resume.is_some() {
        catalog.version(&event_id).ok_or_else(unknown)?;
    }
    if let Some((after, _place)) = place {
        let to = catalog.applied(partition).unwrap_or(0);
        let deltas = catalog
            .seat_deltas_between(&event_id, after.offset.saturating_add(1), to, MAX_REPLAY)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "journal read for an SSE resume failed");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "journal-unavailable",
                    "cannot resume right now",
                )
                .retry_after(1)
            })?;
        if let Some(deltas) = deltas {
            for d in &deltas {
                delta_events(&catalog, d, &mut pending);
            }
            replayed = Some(after.offset.max(to.saturating_sub(1)));
        }
    }
    let last = match replayed {
        Some(last) => last,
        None => {
            let (version, body) = catalog.availability_body(&event_id).ok_or_else(unknown)?;
            let body = String::from_utf8(body.to_vec()).map_err(Problem::internal)?;
            pending.push_back(SseEvent::default().event("snapshot").id(version.to_string()).data(body));
            version.offset
        }
    };
    struct St {
        catalog: Arc<Catalog>,
        rx: broadcast::Receiver<Arc<Vec<SeatDelta>>>,
        event_id: EventId,
        last: u64,
        pending: VecDeque<SseEvent>,
    }
    let st = St {
        catalog: catalog.clone(),
        rx,
        event_id,
        last,
        pending,
    };
    let stream = futures::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(event) = st.pending.pop_front() {
                return Some((Ok::<_, Infallible>(event), st));
            }
            match st.rx.recv().await {
                Ok(batch) => {
                    for d in batch.iter().filter(|d| d.event_id == st.event_id) {
                        if d.position.offset > st.last {
                            st.last = d.position.offset;
                            delta_events(&st.catalog, d, &mut st.pending);
                        }
                    }
                }
                // Too slow to keep up (more than DELTA_BACKLOG batches behind): drop the client
                // rather than buffer for it; it resumes from the journal with Last-Event-ID.
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, backlog = DELTA_BACKLOG, "slow SSE client dropped");
                    return None;
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Ok(sse(&catalog, &slots, slot, stream))
}
