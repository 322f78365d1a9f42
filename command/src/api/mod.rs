//! The command API: organizers create and change events, customers reserve, release, cancel,
//! and the payment provider reports payments by webhook.
//!
//! Handlers only translate: they authenticate, parse into domain commands, send them to the
//! event's writer and map the outcome or rejection to HTTP. Every answer that wrote to the log
//! carries the log position in a `FrontRow-Position` header and a `position` field, which the
//! query side's `?after=` parameter accepts (read your own writes).

mod demo;
mod events;
mod queue;
mod reservations;
mod webhooks;
mod withheld;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::{get, post, put};
use frontrow_http::Problem;
use frontrow_journal::Position;
use frontrow_schema::EventId;
use secrecy::SecretString;
use utoipa::OpenApi;

use crate::clock::Clock;
use crate::domain::{Command, Rejection};
use crate::payments::Simulator;
use crate::writer::{CommandError, Meta, Outcome, Request, Writers};

pub use demo::DemoTokenRequest;
/// The answers of the write API, also for clients that read them back.
pub use events::EventWritten;
pub use queue::{QueueOpenedResponse, QueueTicketResponse};
pub use reservations::ReservationResponse;
pub use webhooks::WebhookAnswer;

/// What the command handlers share.
#[derive(Clone)]
pub struct CommandState {
    pub writers: Writers,
    pub clock: Arc<dyn Clock>,
    /// The webhook endpoint's signing secret.
    pub webhook_secret: SecretString,
    /// How far a webhook's signature timestamp may be from our clock.
    pub webhook_tolerance_secs: i64,
    /// Demo endpoints (token minting, simulated payments); `None` when demo mode is off.
    pub demo: Option<Arc<Demo>>,
    /// Forwards requests for partitions other nodes own (command nodes in a group).
    pub forwarder: Option<Arc<crate::forward::Forwarder>>,
    /// Issues and verifies admission tokens (the customer-token secret's derived key).
    pub auth: Arc<frontrow_http::auth::Auth>,
}

/// The demo's helpers.
pub struct Demo {
    pub auth: Arc<frontrow_http::auth::Auth>,
    pub simulator: Simulator,
    /// How long demo tokens last.
    pub token_ttl: chrono::Duration,
}

/// The command routes, with state applied: one row a route, beside the [`CommandApi`] that
/// documents each.
pub fn router(state: CommandState) -> Router {
    let mut router = Router::new()
        .route("/events", post(events::create_event))
        .route("/events/{event_id}/seat-map", put(events::change_seat_map))
        .route("/events/{event_id}/withheld-seats", post(withheld::withhold))
        .route("/events/{event_id}/withheld-seats/return", post(withheld::return_seats))
        .route("/events/{event_id}/reservations", post(reservations::reserve))
        .route(
            "/events/{event_id}/reservations/{reservation_id}",
            get(reservations::get_reservation),
        )
        .route(
            "/events/{event_id}/reservations/{reservation_id}/release",
            post(reservations::release),
        )
        .route(
            "/events/{event_id}/reservations/{reservation_id}/cancel",
            post(reservations::cancel),
        )
        .route("/webhooks/payments", post(webhooks::payment_webhook))
        .route("/events/{event_id}/queue", put(queue::open_queue))
        .route("/events/{event_id}/queue/join", post(queue::join))
        .route("/events/{event_id}/queue/leave", post(queue::leave))
        .route("/events/{event_id}/waitlist", post(queue::join_waitlist));
    if state.demo.is_some() {
        router = router
            .route("/demo/tokens", post(demo::mint_token))
            .route("/demo/payments", post(demo::pay));
    }
    let forwarder = state.forwarder.clone();
    // Shared, not copied per request (the state holds a secret: a copy is an allocation and
    // a zeroing on drop).
    let router = router.with_state(Arc::new(state));
    match forwarder {
        Some(f) => router.layer(axum::middleware::from_fn_with_state(
            f,
            crate::forward::forward_to_owner,
        )),
        None => router,
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        events::create_event,
        events::change_seat_map,
        withheld::withhold,
        withheld::return_seats,
        reservations::reserve,
        reservations::get_reservation,
        reservations::release,
        reservations::cancel,
        webhooks::payment_webhook,
        queue::open_queue,
        queue::join,
        queue::leave,
        queue::join_waitlist,
        demo::mint_token,
        demo::pay,
    ),
    components(schemas(
        Problem,
        events::CreateEvent,
        events::EventWritten,
        withheld::WithholdRequest,
        withheld::ReturnRequest,
        reservations::ReserveRequest,
        reservations::BestAvailable,
        reservations::ReservationResponse,
        webhooks::WebhookAnswer,
        queue::QueueConfig,
        queue::QueueOpenedResponse,
        queue::QueueTicketResponse,
        crate::views::QueueTicketView,
        crate::payments::ProviderEvent,
        demo::DemoTokenRequest,
        demo::DemoToken,
        demo::DemoPayment,
    )),
    modifiers(&SecuritySchemes)
)]
pub struct CommandApi;

struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "organizer_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Api-Key"))),
        );
        components.add_security_scheme(
            "customer_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// Reads the optional `Idempotency-Key` header: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, Problem> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            Problem::bad_request(
                "bad-idempotency-key",
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )
        })?;
    Ok(Some(key.to_owned()))
}

/// Metadata for the envelopes a request writes: its idempotency key and a correlation id
/// (from the request's `X-Request-Id`, see [`frontrow_http::observe::correlation_id`]).
fn meta(headers: &HeaderMap, idempotency_key: Option<String>) -> Meta {
    Meta {
        idempotency_key,
        correlation_id: Some(frontrow_http::observe::correlation_id(headers)),
        causation_id: None,
    }
}

/// Sends `command` for `event_id` to its writer with the request's metadata (`key` is its
/// `Idempotency-Key`); a failure becomes its problem.
async fn send_command(
    state: &CommandState,
    event_id: EventId,
    command: Command,
    headers: &HeaderMap,
    key: Option<String>,
) -> Result<Outcome, Problem> {
    let request = Request::Command {
        event_id,
        command,
        meta: meta(headers, key),
    };
    Ok(state.writers.send(request).await.map_err(CommandErrorProblem::from)?)
}

fn position_header(position: Option<Position>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(p) = position
        && let Ok(v) = HeaderValue::from_str(&p.to_string())
    {
        headers.insert("frontrow-position", v);
    }
    headers
}

impl From<CommandErrorProblem> for Problem {
    fn from(e: CommandErrorProblem) -> Self {
        e.0
    }
}

/// Wrapper so `?` converts writer errors into problems inside handlers.
pub(crate) struct CommandErrorProblem(Problem);

impl From<CommandError> for CommandErrorProblem {
    fn from(e: CommandError) -> Self {
        Self(problem(e))
    }
}

/// Maps a writer's refusal to its HTTP problem.
pub fn problem(e: CommandError) -> Problem {
    match e {
        CommandError::Rejected(r) => rejection(r),
        CommandError::Overloaded => Problem::overloaded("too many requests for this event right now; retry shortly"),
        CommandError::Unavailable(cause) => {
            tracing::warn!(error = %cause, "journal unavailable");
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "journal-unavailable",
                "cannot record commands right now",
            )
            .retry_after(2)
        }
        CommandError::NotOwner(partition) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-owner",
            "no node is serving this event right now; retry shortly",
        )
        .with("partition", partition)
        .retry_after(1)
        .hand_off(crate::forward::NotOwner(partition)),
    }
}

fn rejection(r: Rejection) -> Problem {
    let detail = r.to_string();
    match r {
        Rejection::UnknownEvent(_) => Problem::new(StatusCode::NOT_FOUND, "event-not-found", detail),
        Rejection::UnknownReservation(_) => Problem::new(StatusCode::NOT_FOUND, "reservation-not-found", detail),
        Rejection::EventExists(_) => Problem::conflict("event-exists", detail),
        Rejection::NotYourEvent => Problem::forbidden(detail),
        Rejection::InvalidEvent(_) => Problem::unprocessable("invalid-event", detail),
        Rejection::InvalidSeatMap(_) => Problem::unprocessable("invalid-seat-map", detail),
        Rejection::OnsaleStarted => Problem::conflict("onsale-started", detail),
        Rejection::NotOnSale(at) => Problem::conflict("not-on-sale", detail).with("onsale_at", at),
        Rejection::SalesClosed => Problem::conflict("sales-closed", detail),
        Rejection::BadSeatCount { max, .. } => Problem::unprocessable("bad-seat-count", detail).with("max_seats", max),
        Rejection::CustomerLimit { limit, have, .. } => Problem::conflict("customer-limit", detail)
            .with("max_seats_per_customer", limit)
            .with("seats_held_or_booked", have),
        Rejection::AmountTooLarge => Problem::unprocessable("amount-too-large", detail),
        Rejection::DuplicateSeat(seat) => Problem::unprocessable("duplicate-seat", detail).with("seats", [seat]),
        Rejection::UnknownSeats(seats) => Problem::unprocessable("unknown-seats", detail).with("seats", seats),
        Rejection::UnknownSection(_) => Problem::unprocessable("unknown-section", detail),
        Rejection::SeatsUnavailable(seats) => Problem::conflict("seats-unavailable", detail).with("seats", seats),
        Rejection::NoAdjacentSeats { .. } => Problem::conflict("no-adjacent-seats", detail),
        Rejection::OrphanSeat(seats) => Problem::conflict("orphan-seat", detail).with("seats", seats),
        Rejection::AccessibleTooFew { .. } => {
            Problem::unprocessable("accessible-too-few", detail).with("min_seats", crate::domain::MIN_ACCESSIBLE_SEATS)
        }
        Rejection::NoAccessibleSeats { .. } => Problem::conflict("no-accessible-seats", detail),
        Rejection::UnknownZone(_) => Problem::unprocessable("unknown-zone", detail),
        Rejection::NotAZone(_) => Problem::unprocessable("not-a-zone", detail),
        Rejection::StandingZone(_) => Problem::unprocessable("standing-zone", detail),
        Rejection::ZoneSoldOut(_) => Problem::conflict("zone-sold-out", detail).with("available", 0),
        Rejection::NotEnoughPlaces { available, .. } => {
            Problem::conflict("not-enough-places", detail).with("available", available)
        }
        Rejection::IdempotencyKeyReused => Problem::unprocessable("idempotency-key-reused", detail),
        Rejection::AlreadyBooked => Problem::conflict("already-booked", detail),
        Rejection::NotBooked(_) => Problem::conflict("not-booked", detail),
        Rejection::InvalidQueue(_) => Problem::unprocessable("invalid-queue", detail),
        Rejection::NoQueue => Problem::new(StatusCode::NOT_FOUND, "no-queue", detail),
        Rejection::QueueFull { max_size } => Problem::new(StatusCode::TOO_MANY_REQUESTS, "queue-full", detail)
            .with("max_size", max_size)
            .retry_after(30),
        Rejection::SoldOut => Problem::conflict("sold-out", detail),
        Rejection::NotSoldOut => Problem::conflict("not-sold-out", detail),
        Rejection::NotInQueue => Problem::new(StatusCode::NOT_FOUND, "not-in-queue", detail),
        Rejection::AdmissionRequired => Problem::new(StatusCode::FORBIDDEN, "admission-required", detail),
        Rejection::AdmissionInvalid => Problem::new(StatusCode::FORBIDDEN, "admission-invalid", detail),
        Rejection::AdmissionExpired => Problem::new(StatusCode::FORBIDDEN, "admission-expired", detail),
        Rejection::AdmissionSpent => Problem::conflict("admission-spent", detail),
        Rejection::AdmissionInUse(held) => Problem::conflict("admission-in-use", detail).with("reservation_id", held),
        Rejection::BadWithholdSize { .. } => {
            Problem::unprocessable("bad-withhold-size", detail).with("max_seats", crate::domain::MAX_SEATS_PER_WITHHOLD)
        }
        Rejection::BadLabel => Problem::unprocessable("invalid-label", detail),
        Rejection::SeatsInSale(seats) => Problem::conflict("seats-in-sale", detail).with("seats", seats),
        Rejection::WithheldOtherwise { label, seats } => Problem::conflict("already-withheld", detail)
            .with("label", label)
            .with("seats", seats),
    }
}
