//! Organizer routes: create an event with its seat map, change the seat map before the onsale.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use frontrow_http::auth::Organizer;
use frontrow_http::{ApiJson, ApiPath, Problem};
use frontrow_schema::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{CommandState, idempotency_key, position_header, send_command};
use crate::domain::Command;

/// Namespace for event ids derived from an organizer's `Idempotency-Key`, so a retried create
/// routes to the same partition and finds the event it already made.
const EVENT_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2b8e_4d1a_5c7e_9b3f_0a2d_8e4c_1f60);

/// A new event and its seat map.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEvent {
    #[schema(example = "The Eras Tour")]
    pub title: String,
    #[schema(example = "Taylor Swift")]
    pub artist: String,
    #[schema(example = "Riverside Arena")]
    pub venue: String,
    #[schema(example = "Amsterdam")]
    pub city: String,
    /// Words fans may search by, e.g. `["pop", "world tour"]` (at most 10, each 1 to 40 characters).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Other names of the artist fans search by, e.g. `["방탄소년단", "Bangtan Boys"]` (at most
    /// 10, each 1 to 200 characters).
    #[serde(default)]
    pub aliases: Vec<String>,
    pub starts_at: DateTime<Utc>,
    /// When fans may start reserving.
    pub onsale_at: DateTime<Utc>,
    /// How long a hold lasts, 5 to 15 minutes (default 10).
    #[serde(default)]
    pub hold_minutes: HoldMinutes,
    /// Most seats in one order (default 8, at most 20).
    #[serde(default = "default_max_seats")]
    pub max_seats_per_order: u8,
    /// Most seats one customer may hold and own at once at this event, held plus booked
    /// (default: `max_seats_per_order`; at least that, at most 1000).
    #[serde(default)]
    pub max_seats_per_customer: Option<u16>,
    /// Turn the no-orphan-seat rule off (default `false`: best-available never leaves a single
    /// free seat alone in its row when another block avoids it, and an explicit selection that
    /// would is refused with `409 orphan-seat` unless no selection of as many seats in that row
    /// avoids it).
    #[serde(default)]
    pub allow_orphan_seats: bool,
    #[schema(value_type = String, example = "EUR")]
    pub currency: Currency,
    pub seat_map: SeatMap,
}

fn default_max_seats() -> u8 {
    8
}

/// An event written to the log.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventWritten {
    pub event_id: EventId,
    /// Log position of the write (`partition:offset`), for `?after=` on reads.
    pub position: Option<String>,
}

frontrow_http::problems! {
    /// What creating an event refuses with.
    CreateProblems = [ORGANIZER_KEY, JSON_BODY, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(409, "`event-exists`: this `Idempotency-Key` already created an event"),
          Cause::new(422, "`invalid-event` (dates, hold time, order limit, texts, tags) or `invalid-seat-map`")]];
    /// What replacing a seat map refuses with.
    SeatMapProblems = [ORGANIZER_KEY, OTHER_ORGANIZER, EVENT_PATH, JSON_BODY, IDEMPOTENCY_KEY, RATE_LIMITED,
        WRITER_BUSY,
        &[Cause::new(409, "`onsale-started`: the seat map is fixed once the onsale begins"),
          Cause::new(422, "`invalid-seat-map`: empty, duplicate codes, unknown tiers, too many seats")]];
}

/// Create an event. With an `Idempotency-Key`, a retry returns the same event.
#[utoipa::path(
    post, path = "/events", tag = "organizers",
    request_body = CreateEvent,
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retried create return the same event",
        min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses(
        (status = 201, description = "created (or already created by this key)", body = EventWritten,
            headers(("Location" = String), ("FrontRow-Position" = String))),
        CreateProblems
    ),
    security(("organizer_key" = []))
)]
pub(super) async fn create_event(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<CommandState>>,
    Organizer(organizer): Organizer,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateEvent>,
) -> Result<impl IntoResponse, Problem> {
    let key = idempotency_key(&headers)?;
    let event_id = match &key {
        Some(key) => EventId::from_uuid(Uuid::new_v5(
            &EVENT_ID_NAMESPACE,
            format!("{organizer}\n{key}").as_bytes(),
        )),
        // A fresh id on a partition this node serves, if it serves any: no forwarding needed.
        None => (0..64)
            .map(|_| EventId::new())
            .find(|id| state.writers.owns(state.writers.partition_of(id)))
            .unwrap_or_default(),
    };
    let info = EventScheduled {
        event_id,
        organizer,
        title: body.title,
        artist: body.artist,
        venue: body.venue,
        city: body.city,
        tags: body.tags,
        aliases: body.aliases,
        starts_at: body.starts_at,
        onsale_at: body.onsale_at,
        hold_minutes: body.hold_minutes,
        max_seats_per_order: body.max_seats_per_order,
        max_seats_per_customer: body.max_seats_per_customer,
        allow_orphan_seats: body.allow_orphan_seats,
        currency: body.currency,
        seat_map: body.seat_map.into(),
    };
    let outcome = send_command(&state, event_id, Command::Schedule(Box::new(info)), &headers, key).await?;
    let mut headers = position_header(outcome.position);
    if let Ok(location) = format!("/events/{event_id}").parse() {
        headers.insert(header::LOCATION, location);
    }
    let body = EventWritten {
        event_id,
        position: outcome.position.map(|p| p.to_string()),
    };
    Ok((StatusCode::CREATED, headers, axum::Json(body)))
}

/// Defines an organizer's write to one of their events, `$method $path` with a `$body` JSON
/// body, answered with where it was written: the handler sending the command that
/// `|organizer, body, key| command` makes (`key` is the request's `Idempotency-Key`) and its
/// OpenAPI operation, whose `200` says `$answer`, whose refusals are `$problems`, and which
/// documents the `Idempotency-Key` header as `$key_doc` when given.
macro_rules! organizer_write {
    ($(#[doc = $doc:tt])* $name:ident = $method:ident $path:tt, $body:ident, $answer:tt, $problems:ident,
     $(idempotency_key: $key_doc:tt,)? |$organizer:ident, $request:ident, $key:ident| $command:expr) => {
        $(#[doc = $doc])*
        #[utoipa::path(
            $method, path = $path, tag = "organizers",
            request_body = $body,
            params(("event_id" = EventId, Path)
                $(, ("Idempotency-Key" = Option<String>, Header, description = $key_doc,
                    min_length = 1, max_length = 255, pattern = "^[!-~]+$"))?),
            responses(
                (status = 200, description = $answer, body = EventWritten,
                    headers(("FrontRow-Position" = String))),
                $problems
            ),
            security(("organizer_key" = []))
        )]
        pub(super) async fn $name(
            axum::extract::State(state): axum::extract::State<std::sync::Arc<CommandState>>,
            Organizer($organizer): Organizer,
            ApiPath(event_id): ApiPath<EventId>,
            headers: HeaderMap,
            ApiJson($request): ApiJson<$body>,
        ) -> Result<impl IntoResponse, Problem> {
            let $key = super::idempotency_key(&headers)?;
            let command = $command;
            super::events::write(&state, event_id, &headers, $key, command).await
        }
    };
}
pub(super) use organizer_write;

organizer_write! {
    /// Replace the seat map of an event before its onsale.
    change_seat_map = put "/events/{event_id}/seat-map", SeatMap, "the new seat map is recorded", SeatMapProblems,
    |organizer, seat_map, key| Command::ChangeSeatMap { organizer, seat_map }
}

/// Sends an organizer's `command` for `event_id` with the request's metadata; answers where
/// it was written.
pub(super) async fn write(
    state: &CommandState,
    event_id: EventId,
    headers: &HeaderMap,
    key: Option<String>,
    command: Command,
) -> Result<impl IntoResponse + use<>, Problem> {
    let outcome = send_command(state, event_id, command, headers, key).await?;
    let body = EventWritten {
        event_id,
        position: outcome.position.map(|p| p.to_string()),
    };
    Ok((position_header(outcome.position), axum::Json(body)))
}
