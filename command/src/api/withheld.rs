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

use super::CommandState;
use super::events::{EventWritten, organizer_write};
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

organizer_write! {
    /// Withhold available seats from the sale under a label. They show as `W` (withheld) on the
    /// availability map and cannot be reserved until they are returned. Seats already withheld
    /// under the same label are left as they are, so a retry is harmless; a retry with the request's
    /// `Idempotency-Key` changes nothing even when the seats were returned in between.
    withhold = post "/events/{event_id}/withheld-seats", WithholdRequest, "the seats are withheld (or already were)",
    WithholdProblems, idempotency_key: "recorded with the write",
    |organizer, body, key| Command::Withhold {
        organizer,
        seats: body.seats,
        label: body.label,
        idempotency_key: key.clone(),
    }
}

organizer_write! {
    /// Put withheld seats back on sale. For an event with a waiting room, admission goes on
    /// against them (a sold-out event offers them to its waiting list).
    return_seats = post "/events/{event_id}/withheld-seats/return", ReturnRequest,
    "the seats are on sale (or already were)", ReturnProblems, idempotency_key: "recorded with the write",
    |organizer, body, key| Command::ReturnWithheld {
        organizer,
        seats: body.seats,
        idempotency_key: key.clone(),
    }
}
