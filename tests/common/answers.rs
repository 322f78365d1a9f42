//! The server's answers as the tests read them: the API's own view types (`frontrow_command`'s
//! views and answers, `frontrow_query`'s views and stream events, the projector's ledger views,
//! the search API's page, the analytics report), which read back as they are sent. A test reads
//! `r.reservation.status` instead of `v["status"]`, so a misspelt field is a compile error
//! rather than a `null` found at run time, an answer that lost a field fails where it is read,
//! with its body, and a field added to a view is one change, not two.
//!
//! A test that checks a field is *absent*, or the raw shape of an answer, reads the JSON instead.
//! [`Problem`] is the one type kept here: the server's problem type is built, not read.

use frontrow_schema::EventId;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// `v` read as a `T`; fails, showing the body, when it is not one.
pub fn typed<T: DeserializeOwned>(v: Value) -> T {
    match T::deserialize(&v) {
        Ok(t) => t,
        Err(e) => panic!("the answer is not a {}: {e}\n{v}", std::any::type_name::<T>()),
    }
}

/// An amount of euros, in cents.
pub fn eur(amount: i64) -> Money {
    Money {
        amount,
        currency: Currency::parse("EUR").unwrap(),
    }
}

/// The write side's answers (reserving, reading, releasing or cancelling a reservation; the
/// payment webhook; an organizer's writes; the waiting room's writes), read back as they are sent.
pub use frontrow_command::api::{
    EventWritten, QueueOpenedResponse, QueueTicketResponse, ReservationResponse, WebhookAnswer,
};
pub use frontrow_command::views::{QueueTicketView, RefundView, ReservationView};
pub use frontrow_schema::{Currency, Money, RefundReason, ReservationId, SeatId};

/// The query side's answers (`GET /events`, `GET /events/{id}`, `GET /events/{id}/availability`,
/// the seat and status streams' events) and the seat map they carry, read back as they are sent.
pub use frontrow_query::sse::{QueueStatus, SeatData};
pub use frontrow_query::{
    AvailabilityMap, EventDetails, EventList, EventSummary, Legend, RowAvailability, SeatCounts, SectionAvailability,
    ZoneAvailability,
};
pub use frontrow_schema::{PriceTier, Row, SeatAttributes, SeatMap, Section, Standing};

/// The ledger's answers (`GET /me/bookings`, `GET /events/{id}/sales`,
/// `GET /events/{id}/seats/{seat}/history`), read back as the projector sends them.
pub use frontrow_projector::{
    BookingStatus, CustomerBooking, CustomerBookings, EventSales, SalesLine, SeatHistory, SeatHistoryEntry,
};

/// `GET /search`: the search API's own answer.
pub use frontrow_search::api::{SearchHit, SearchResponse};

/// Whether `event` is among a search page's hits.
pub fn has_hit(page: &SearchResponse, event: EventId) -> bool {
    page.hits.iter().any(|h| h.listing.event_id == event)
}

/// `frontrow analytics --json`'s report, read back as the command writes it.
pub use frontrow_analytics::figures::{Counts, QueueFigures, Revenue, RevenueLine};
pub use frontrow_analytics::{EventReport, Report};

/// An `application/problem+json` refusal (`Problem`, RFC 9457): its standard members, and the
/// problem-specific ones the tests read, each absent (`None`) unless the kind of problem has it.
#[derive(Debug, Clone, Deserialize)]
pub struct Problem {
    /// `urn:frontrow:problem:<kind>`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The seats a refusal is about (`unknown-seats`, `seats-unavailable`, `orphan-seat`,
    /// `seats-in-sale`, `already-withheld`).
    pub seats: Option<Vec<String>>,
    /// Places left (`not-enough-places`, `zone-sold-out`).
    pub available: Option<u32>,
    /// `customer-limit`: the limit, and what the customer holds or owns.
    pub max_seats_per_customer: Option<u32>,
    pub seats_held_or_booked: Option<u32>,
    /// `bad-withhold-size`.
    pub max_seats: Option<u32>,
    /// `accessible-too-few`.
    pub min_seats: Option<u32>,
    /// `queue-full`.
    pub max_size: Option<u32>,
    /// `already-withheld`: the label the seats are withheld under.
    pub label: Option<String>,
    /// `rate-limited`: which limit (`customer`, `address`, ...).
    pub limit: Option<String>,
}

impl Problem {
    /// [`Self::seats`], empty when absent.
    pub fn seats(&self) -> Vec<&str> {
        self.seats.iter().flatten().map(String::as_str).collect()
    }
}
