//! Waiting-room routes: the organizer opens a queue; fans join it, leave it, or join the waiting
//! list of a sold-out event. Positions, waits and the admission token stream from the query
//! side (`GET /events/{id}/queue/me` and `/queue/me/stream`); a join answers with the token at
//! once when the fan is let in straight away.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use frontrow_http::auth::{Customer, Organizer};
use frontrow_http::{ApiJson, ApiPath, Problem};
use frontrow_schema::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{CommandState, idempotency_key, position_header, send_command};
use crate::domain::{Command, QueueSettings};
use crate::views::QueueTicketView;
use crate::writer::Outcome;

/// The waiting room's settings.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Most fans waiting at once; joining beyond it answers `429` (absent: no limit).
    // The bounds are the type's: utoipa would document a `u32` as `int32`, half its range.
    #[schema(example = 100000, value_type = Option<u64>, minimum = 1, maximum = 4294967295_u64)]
    pub max_size: Option<u32>,
    /// Most admitted fans shopping at once (1 to 1000000).
    #[schema(example = 500, minimum = 1, maximum = 1000000)]
    pub max_shoppers: u32,
    /// How long an admission lasts, 60 to 3600 seconds (default 600).
    #[serde(default = "default_admission_secs")]
    #[schema(example = 600, minimum = 60, maximum = 3600)]
    pub admission_secs: u32,
}

fn default_admission_secs() -> u32 {
    600
}

/// The waiting room's settings as recorded. (Not a flattened `QueueConfig`: that schema
/// allows no other members, as the request refuses unknown fields.)
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QueueOpenedResponse {
    pub event_id: EventId,
    pub max_size: Option<u32>,
    pub max_shoppers: u32,
    pub admission_secs: u32,
    /// Log position of the write (`partition:offset`).
    pub position: Option<String>,
}

/// A fan's ticket, and their admission token once let in.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QueueTicketResponse {
    #[serde(flatten)]
    pub ticket: QueueTicketView,
    /// Present while admitted: send it with the reservation (`FrontRow-Admission` header or
    /// `admission_token` field).
    pub admission_token: Option<String>,
    /// Log position of the write (`partition:offset`), for `?after=` on the query side.
    pub position: Option<String>,
}

frontrow_http::problems! {
    /// What opening a waiting room refuses with.
    OpenProblems = [ORGANIZER_KEY, OTHER_ORGANIZER, EVENT_PATH, JSON_BODY, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(409, "`onsale-started`: a waiting room opens before the onsale"),
          Cause::new(422, "`invalid-queue`: `max_shoppers`, `max_size` or `admission_secs` out of range")]];
    /// What joining the queue refuses with.
    JoinProblems = [CUSTOMER_TOKEN, EVENT_PATH, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(404, "`no-queue`: the event has no waiting room"),
          Cause::new(409, "`sold-out` (join the waiting list) or `sales-closed`"),
          Cause::new(429, "`queue-full`: the queue holds `max_size` fans")]];
    /// What leaving the queue refuses with.
    LeaveProblems = [CUSTOMER_TOKEN, EVENT_PATH, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(404, "`no-queue` (the event has no waiting room) or `not-in-queue`")]];
    /// What joining the waiting list refuses with.
    WaitlistProblems = [CUSTOMER_TOKEN, EVENT_PATH, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(404, "`no-queue`: the event has no waiting room"),
          Cause::new(409, "`not-sold-out` (join the queue) or `sales-closed`")]];
}

/// Put an event behind a virtual waiting room (or change its settings) before the onsale.
/// From then on reserving needs an admission token. Fans who join before the onsale are
/// shuffled at the onsale instant by a lottery whose seed is recorded in the log.
#[utoipa::path(
    put, path = "/events/{event_id}/queue", tag = "organizers",
    request_body = QueueConfig,
    params(("event_id" = EventId, Path)),
    responses(
        (status = 200, description = "the waiting room's settings as recorded", body = QueueOpenedResponse,
            headers(("FrontRow-Position" = String))),
        OpenProblems
    ),
    security(("organizer_key" = []))
)]
pub(super) async fn open_queue(
    State(state): State<Arc<CommandState>>,
    Organizer(organizer): Organizer,
    ApiPath(event_id): ApiPath<EventId>,
    headers: HeaderMap,
    ApiJson(config): ApiJson<QueueConfig>,
) -> Result<impl IntoResponse, Problem> {
    let command = Command::OpenQueue {
        organizer,
        settings: QueueSettings {
            max_size: config.max_size,
            max_shoppers: config.max_shoppers,
            admission_secs: config.admission_secs,
        },
    };
    let outcome = send_command(&state, event_id, command, &headers, idempotency_key(&headers)?).await?;
    let body = QueueOpenedResponse {
        event_id,
        max_size: config.max_size,
        max_shoppers: config.max_shoppers,
        admission_secs: config.admission_secs,
        position: outcome.position.map(|p| p.to_string()),
    };
    Ok((position_header(outcome.position), axum::Json(body)))
}

fn respond(
    state: &CommandState,
    customer: &CustomerId,
    created: bool,
    outcome: Outcome,
) -> Result<impl IntoResponse + use<>, Problem> {
    let ticket = outcome
        .queue
        .ok_or_else(|| Problem::internal("writer answered a queue command without the ticket"))?;
    // The writer answered with the caller's own ticket.
    let admission_token = ticket.admitted_until.map(|until| {
        state
            .auth
            .admission_token(ticket.event_id, customer, ticket.ticket, until)
    });
    let status = if created && !outcome.recorded.is_empty() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = QueueTicketResponse {
        ticket,
        admission_token,
        position: outcome.position.map(|p| p.to_string()),
    };
    Ok((status, position_header(outcome.position), axum::Json(body)))
}

/// Defines a fan's waiting-room command, `POST $path`: the handler sending `Command::$variant`
/// for the caller and answering with their ticket, and its OpenAPI operation. With `new`, a
/// ticket the command made answers `201` (saying `$new`) and one the caller had `200`; with
/// `answer`, every answer is `200` (saying `$answer`).
macro_rules! fan_command {
    ($(#[doc = $doc:tt])* $name:ident = $path:tt, $variant:ident, new: $new:tt, $problems:ident) => {
        fan_command!(@define [$(#[doc = $doc])*] $name = $path, $variant, true,
            (status = 201, description = $new, body = QueueTicketResponse),
            (status = 200, description = "the ticket the caller had already", body = QueueTicketResponse),
            $problems);
    };
    ($(#[doc = $doc:tt])* $name:ident = $path:tt, $variant:ident, answer: $answer:tt, $problems:ident) => {
        fan_command!(@define [$(#[doc = $doc])*] $name = $path, $variant, false,
            (status = 200, description = $answer, body = QueueTicketResponse), $problems);
    };
    (@define [$($doc:tt)*] $name:ident = $path:tt, $variant:ident, $created:tt, $($responses:tt)+) => {
        $($doc)*
        #[utoipa::path(
            post, path = $path, tag = "queue",
            params(("event_id" = EventId, Path)),
            responses($($responses)+),
            security(("customer_token" = []))
        )]
        pub(super) async fn $name(
            State(state): State<Arc<CommandState>>,
            Customer(customer): Customer,
            ApiPath(event_id): ApiPath<EventId>,
            headers: HeaderMap,
        ) -> Result<impl IntoResponse, Problem> {
            let command = Command::$variant { customer: customer.clone() };
            let outcome = send_command(&state, event_id, command, &headers, idempotency_key(&headers)?).await?;
            respond(&state, &customer, $created, outcome)
        }
    };
}

fan_command! {
    /// Join the event's queue. Idempotent per customer: joining again (while waiting or admitted)
    /// answers with the same ticket. Before the onsale the place is drawn by lottery at the onsale
    /// instant; after it, first come first served.
    join = "/events/{event_id}/queue/join", JoinQueue, new: "a new ticket", JoinProblems
}

fan_command! {
    /// Leave the queue (or the waiting list, or give an admission back). Leaving twice is harmless.
    leave = "/events/{event_id}/queue/leave", LeaveQueue, answer: "left (or left already)", LeaveProblems
}

fan_command! {
    /// Join the waiting list of a sold-out event: seats that come back (cancellations) are offered
    /// to its fans in order, each with an admission token of their own. Idempotent per customer.
    join_waitlist = "/events/{event_id}/waitlist", JoinWaitlist, new: "a new waiting-list ticket", WaitlistProblems
}
