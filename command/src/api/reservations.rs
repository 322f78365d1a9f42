//! Customer routes: reserve seats, read, release or cancel one's own reservation.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use frontrow_http::admission::AdmissionError;
use frontrow_http::auth::Customer;
use frontrow_http::{ApiJson, ApiPath, Problem};
use frontrow_schema::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{CommandErrorProblem, CommandState, idempotency_key, position_header, send_command};
use crate::domain::{Command, SeatNeeds, SeatSelection};
use crate::views::ReservationView;
use crate::writer::{Outcome, Request};

/// Which seats to hold: `seats`, `best_available`, or `zone` with `count` (places of a standing
/// zone).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReserveRequest {
    /// Exactly these seats.
    #[schema(value_type = Option<Vec<String>>, example = json!(["101-C-7", "101-C-8"]))]
    pub seats: Option<Vec<SeatId>>,
    /// Or the best adjacent seats in a section.
    pub best_available: Option<BestAvailable>,
    /// Or places of a standing (general admission) zone: any `count` free places of it.
    #[schema(value_type = Option<String>, example = "FLOOR")]
    pub zone: Option<SectionCode>,
    /// How many places of `zone` (only with `zone`).
    #[schema(example = 4)]
    pub count: Option<u8>,
    /// For an event with a waiting room: the admission token (or send it in the
    /// `FrontRow-Admission` header).
    pub admission_token: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BestAvailable {
    #[schema(value_type = String, example = "101")]
    pub section: SectionCode,
    /// With `accessible`, the whole block: 2 is a wheelchair space and its companion seat.
    #[schema(example = 2)]
    pub count: u8,
    /// A block holding a wheelchair space with a companion seat next to it (`count` at least 2).
    #[serde(default)]
    pub accessible: bool,
    /// Prefer a block that holds an aisle seat (any block when none is left; under the
    /// no-orphan rule, only among the blocks that leave no single seat alone).
    #[serde(default)]
    pub aisle: bool,
}

/// A reservation and the log position of the write that made or changed it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReservationResponse {
    #[serde(flatten)]
    pub reservation: ReservationView,
    /// `partition:offset`, for `?after=` on availability reads.
    pub position: Option<String>,
}

type Ids = (EventId, ReservationId);

fn respond(status: StatusCode, outcome: Outcome) -> Result<impl IntoResponse, Problem> {
    let reservation = outcome
        .reservation
        .ok_or_else(|| Problem::internal("writer answered a reservation command without the reservation"))?;
    let body = ReservationResponse {
        reservation,
        position: outcome.position.map(|p| p.to_string()),
    };
    Ok((status, position_header(outcome.position), axum::Json(body)))
}

frontrow_http::problems! {
    /// What reserving refuses with.
    ReserveProblems = [CUSTOMER_TOKEN, EVENT_PATH, JSON_BODY, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(400, "`idempotency-key-required`: reserving needs an `Idempotency-Key`"),
          Cause::new(403, "`admission-required`, `admission-invalid`, `admission-expired`, \
              `admission-wrong-event`: the event has a waiting room and the admission token is missing, \
              forged, another customer's, expired or for another event"),
          Cause::new(409, "`seats-unavailable` (`seats` lists them), `no-adjacent-seats`, `orphan-seat` (the \
              selection would leave a single free seat alone in its row, `seats` lists it, while another \
              selection of as many seats in that row would not; the event's no-orphan rule), `no-accessible-seats` \
              (no free wheelchair space with its companion seat in a block of `count`), `zone-sold-out`, \
              `not-enough-places` (`available` says how many places the zone has left), `not-on-sale` \
              (`onsale_at` says when), `sales-closed`, `admission-spent`, `admission-in-use` \
              (`reservation_id` names the hold), or `customer-limit` (the customer's seat limit for the \
              event, `max_seats_per_customer`, is reached; `seats_held_or_booked` says how many they have)"),
          Cause::new(422, "`bad-selection` (not exactly one of `seats`, `best_available`, `zone` + `count`), \
              `bad-seat-count` (`max_seats`), `accessible-too-few` (`accessible` with fewer than `min_seats`), \
              `duplicate-seat`, `unknown-seats`, `unknown-section`, \
              `unknown-zone`, `not-a-zone` (`zone` names a seated section), `standing-zone` (seat ids or \
              `best_available` in a standing zone: reserve a `count` from it), \
              `idempotency-key-reused` (the key was used for a different request), `amount-too-large` (the \
              seats' total does not fit the money type)")]];
    /// What reading a reservation refuses with.
    ReadProblems = [CUSTOMER_TOKEN, EVENT_PATH, RESERVATION_PATH, RATE_LIMITED, WRITER_BUSY];
    /// What releasing a hold refuses with.
    ReleaseProblems = [CUSTOMER_TOKEN, EVENT_PATH, RESERVATION_PATH, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(409, "`already-booked`: a booking is cancelled, not released")]];
    /// What cancelling a booking refuses with.
    CancelProblems = [CUSTOMER_TOKEN, EVENT_PATH, RESERVATION_PATH, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(409, "`not-booked` (only a booking can be cancelled) or `sales-closed` (the event has started)")]];
}

/// The reservation id of the path is unknown, or someone else's.
const RESERVATION_PATH: &[frontrow_http::openapi::Cause] = &[frontrow_http::openapi::Cause::new(
    404,
    "`reservation-not-found`: no such reservation of the caller's (another customer's is not found either)",
)];

/// Hold seats for payment. Requires an `Idempotency-Key`: a retry with the same key and the
/// same request answers with the same reservation and holds nothing more. For an event with a
/// waiting room it also needs the caller's admission token (`FrontRow-Admission` header or
/// `admission_token` field): a forged, expired or other event's token is `403`, and a token
/// holds one reservation at a time (`409 admission-in-use`) until a booking spends it
/// (`409 admission-spent`).
#[utoipa::path(
    post, path = "/events/{event_id}/reservations", tag = "customers",
    request_body = ReserveRequest,
    params(
        ("event_id" = EventId, Path),
        ("Idempotency-Key" = String, Header, description = "required; one per intended reservation",
            min_length = 1, max_length = 255, pattern = "^[!-~]+$"),
        ("FrontRow-Admission" = Option<String>, Header, description = "admission token, for events with a waiting room"),
    ),
    responses(
        (status = 201, description = "the seats are held until `hold_until`", body = ReservationResponse,
            headers(("FrontRow-Position" = String))),
        ReserveProblems
    ),
    security(("customer_token" = []))
)]
pub(super) async fn reserve(
    State(state): State<Arc<CommandState>>,
    Customer(customer): Customer,
    ApiPath(event_id): ApiPath<EventId>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ReserveRequest>,
) -> Result<impl IntoResponse, Problem> {
    let key = idempotency_key(&headers)?
        .ok_or_else(|| Problem::bad_request("idempotency-key-required", "reserving needs an Idempotency-Key header"))?;
    let selection = match (body.seats, body.best_available, body.zone, body.count) {
        (Some(seats), None, None, None) => SeatSelection::Explicit(seats),
        (None, Some(best), None, None) if best.accessible || best.aisle => SeatSelection::BestWith {
            section: best.section,
            count: best.count,
            needs: SeatNeeds {
                accessible: best.accessible,
                aisle: best.aisle,
            },
        },
        (None, Some(best), None, None) => SeatSelection::BestAvailable {
            section: best.section,
            count: best.count,
        },
        (None, None, Some(zone), Some(count)) => SeatSelection::Zone { zone, count },
        _ => {
            return Err(Problem::unprocessable(
                "bad-selection",
                "give exactly one of `seats` (a list of seat ids), `best_available` ({section, count}), \
                 or `zone` with `count` (places of a standing zone)",
            ));
        }
    };
    let token = match headers.get("frontrow-admission") {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| admission_problem(AdmissionError::Invalid))?
                .to_owned(),
        ),
        None => body.admission_token,
    };
    let admission = match token {
        Some(token) => Some(
            state
                .auth
                .verify_admission(&token, event_id, &customer, state.clock.now())
                .map_err(admission_problem)?
                .ticket,
        ),
        None => None,
    };
    let command = Command::Reserve {
        customer,
        reservation_id: ReservationId::new(),
        selection,
        idempotency_key: key.clone(),
        admission,
    };
    let outcome = send_command(&state, event_id, command, &headers, Some(key)).await?;
    respond(StatusCode::CREATED, outcome)
}

fn admission_problem(e: AdmissionError) -> Problem {
    let slug = match e {
        AdmissionError::Invalid | AdmissionError::OtherCustomer => "admission-invalid",
        AdmissionError::Expired => "admission-expired",
        AdmissionError::OtherEvent => "admission-wrong-event",
    };
    Problem::new(StatusCode::FORBIDDEN, slug, e.to_string())
}

/// One of the caller's reservations.
#[utoipa::path(
    get, path = "/events/{event_id}/reservations/{reservation_id}", tag = "customers",
    params(("event_id" = EventId, Path), ("reservation_id" = ReservationId, Path)),
    responses((status = 200, description = "the reservation", body = ReservationResponse), ReadProblems),
    security(("customer_token" = []))
)]
pub(super) async fn get_reservation(
    State(state): State<Arc<CommandState>>,
    Customer(customer): Customer,
    ApiPath((event_id, reservation_id)): ApiPath<Ids>,
) -> Result<impl IntoResponse, Problem> {
    let request = Request::GetReservation {
        event_id,
        customer,
        reservation_id,
    };
    let outcome = state.writers.send(request).await.map_err(CommandErrorProblem::from)?;
    respond(StatusCode::OK, outcome)
}

/// Defines a customer's command on one of their reservations, `POST $path` answered with the
/// reservation: the handler sending `Command::$variant` and its OpenAPI operation, whose `200`
/// says `$answer` and whose refusals are `$problems`.
macro_rules! reservation_command {
    ($(#[doc = $doc:tt])* $name:ident = $path:tt, $variant:ident, $answer:tt, $problems:ident) => {
        $(#[doc = $doc])*
        #[utoipa::path(
            post, path = $path, tag = "customers",
            params(("event_id" = EventId, Path), ("reservation_id" = ReservationId, Path)),
            responses(
                (status = 200, description = $answer, body = ReservationResponse,
                    headers(("FrontRow-Position" = String))),
                $problems
            ),
            security(("customer_token" = []))
        )]
        pub(super) async fn $name(
            State(state): State<Arc<CommandState>>,
            Customer(customer): Customer,
            ApiPath((event_id, reservation_id)): ApiPath<Ids>,
            headers: HeaderMap,
        ) -> Result<impl IntoResponse, Problem> {
            let command = Command::$variant { customer, reservation_id };
            let key = idempotency_key(&headers)?;
            let outcome = send_command(&state, event_id, command, &headers, key).await?;
            respond(StatusCode::OK, outcome)
        }
    };
}

reservation_command! {
    /// Let a hold go: its seats are available again at once. Releasing twice is harmless.
    release = "/events/{event_id}/reservations/{reservation_id}/release", Release,
        "released (or released already)", ReleaseProblems
}

reservation_command! {
    /// Cancel a booking before the event: the payment is refunded and the seats go back on sale.
    cancel = "/events/{event_id}/reservations/{reservation_id}/cancel", Cancel,
        "cancelled and refunded (or cancelled already)", CancelProblems
}
