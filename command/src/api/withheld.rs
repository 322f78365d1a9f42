//! Organizer holds: withhold seats from the sale (house seats, production holds) and return
//! them to it. Both need the event's organizer key; both say what the seats should be, so a
//! retry changes nothing more, and a retry with the request's `Idempotency-Key` changes nothing
//! even after the seats were returned (or withheld) in between.

use axum::http::HeaderMap;
use axum::response::IntoResponse;
use frontrow_http::auth::Organizer;
use frontrow_http::{ApiJson, ApiPath, Problem};
use frontrow_schema::*;
use serde::Deserialize;
use utoipa::ToSchema;

use super::events::{EventWritten, write};
use super::{CommandState, idempotency_key};
use crate::domain::Command;

/// Seats to take out of the sale, and why.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WithholdRequest {
    /// 1 to 1000 available seats.
    #[schema(value_type = Vec<String>, example = json!(["101-A-1", "101-A-2"]))]
    pub seats: Vec<SeatId>,
    /// The organizer's words for the hold, 1 to 100 characters.
    #[schema(example = "house seats")]
    pub label: String,
}

/// Withheld seats to put back on sale.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReturnRequest {
    /// 1 to 1000 seats; those that are not withheld are left as they are.
    #[schema(value_type = Vec<String>, example = json!(["101-A-2"]))]
    pub seats: Vec<SeatId>,
}

frontrow_http::problems! {
    /// What withholding seats refuses with.
    WithholdProblems = [ORGANIZER_KEY, OTHER_ORGANIZER, EVENT_PATH, JSON_BODY, IDEMPOTENCY_KEY, RATE_LIMITED,
        WRITER_BUSY,
        &[Cause::new(409, "`seats-in-sale`: customers hold or bought these `seats`; `already-withheld`: these \
              `seats` are withheld under another `label`"),
          Cause::new(422, "`bad-withhold-size` (1 to `max_seats`), `duplicate-seat`, `unknown-seats` (`seats`), \
              `invalid-label` (1 to 100 characters, not blank), `idempotency-key-reused` (the key wrote another \
              request)")]];
    /// What returning withheld seats refuses with.
    ReturnProblems = [ORGANIZER_KEY, OTHER_ORGANIZER, EVENT_PATH, JSON_BODY, IDEMPOTENCY_KEY, RATE_LIMITED,
        WRITER_BUSY,
        &[Cause::new(422, "`bad-withhold-size` (1 to `max_seats`), `duplicate-seat`, `unknown-seats` (`seats`), \
              `idempotency-key-reused` (the key wrote another request)")]];
}

/// Withhold available seats from the sale under a label. They show as `W` (withheld) on the
/// availability map and cannot be reserved until they are returned. Seats already withheld
/// under the same label are left as they are, so a retry is harmless; a retry with the request's
/// `Idempotency-Key` changes nothing even when the seats were returned in between.
#[utoipa::path(
    post, path = "/events/{event_id}/withheld-seats", tag = "organizers",
    request_body = WithholdRequest,
    params(("event_id" = EventId, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "recorded with the write",
            min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "the seats are withheld (or already were)", body = EventWritten,
            headers(("FrontRow-Position" = String))),
        WithholdProblems
    ),
    security(("organizer_key" = []))
)]
pub(super) async fn withhold(
    axum::extract::State(state): axum::extract::State<CommandState>,
    Organizer(organizer): Organizer,
    ApiPath(event_id): ApiPath<EventId>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<WithholdRequest>,
) -> Result<impl IntoResponse, Problem> {
    let key = idempotency_key(&headers)?;
    let command = Command::Withhold {
        organizer,
        seats: body.seats,
        label: body.label,
        idempotency_key: key.clone(),
    };
    write(state, event_id, &headers, key, command).await
}

/// Put withheld seats back on sale. For an event with a waiting room, admission goes on
/// against them (a sold-out event offers them to its waiting list).
#[utoipa::path(
    post, path = "/events/{event_id}/withheld-seats/return", tag = "organizers",
    request_body = ReturnRequest,
    params(("event_id" = EventId, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "recorded with the write",
            min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "the seats are on sale (or already were)", body = EventWritten,
            headers(("FrontRow-Position" = String))),
        ReturnProblems
    ),
    security(("organizer_key" = []))
)]
pub(super) async fn return_seats(
    axum::extract::State(state): axum::extract::State<CommandState>,
    Organizer(organizer): Organizer,
    ApiPath(event_id): ApiPath<EventId>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ReturnRequest>,
) -> Result<impl IntoResponse, Problem> {
    let key = idempotency_key(&headers)?;
    let command = Command::ReturnWithheld {
        organizer,
        seats: body.seats,
        idempotency_key: key.clone(),
    };
    write(state, event_id, &headers, key, command).await
}
