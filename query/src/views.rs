//! What the query side answers, in the API's words.
//!
//! These are the JSON shapes of the read API and their OpenAPI schemas. The availability map is
//! deliberately compact: one status letter per seat in a string per row, so a 50,000-seat venue
//! is about 100 KB instead of a 50,000-element array of objects.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use frontrow_schema::seatmap::RowName;
use frontrow_schema::{Currency, EventId, SeatAttributes, SeatMap, SectionCode, TierCode};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where one seat stands (the contract's, shown here as one letter per seat).
pub use frontrow_schema::SeatStatus;

/// How many seats are in each state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct SeatCounts {
    pub total: u32,
    pub available: u32,
    pub held: u32,
    pub booked: u32,
    /// Withheld by the organizer; `available + held + booked + withheld = total`.
    pub withheld: u32,
}

impl SeatCounts {
    pub(crate) fn all_available(total: u32) -> Self {
        Self {
            total,
            available: total,
            held: 0,
            booked: 0,
            withheld: 0,
        }
    }

    pub(crate) fn slot(&mut self, status: SeatStatus) -> &mut u32 {
        match status {
            SeatStatus::Available => &mut self.available,
            SeatStatus::Held => &mut self.held,
            SeatStatus::Booked => &mut self.booked,
            SeatStatus::Withheld => &mut self.withheld,
        }
    }

    /// Moves one seat from `from` to `to`.
    pub(crate) fn moved(&mut self, from: SeatStatus, to: SeatStatus) {
        *self.slot(from) -= 1;
        *self.slot(to) += 1;
    }
}

/// What each letter of a row's `seats` string means.
// `Cow` so that a client can read it back; the server's are always borrowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Legend {
    #[serde(rename = "A")]
    #[schema(example = "available")]
    pub available: Cow<'static, str>,
    #[serde(rename = "H")]
    #[schema(example = "held")]
    pub held: Cow<'static, str>,
    #[serde(rename = "B")]
    #[schema(example = "booked")]
    pub booked: Cow<'static, str>,
    #[serde(rename = "W")]
    #[schema(example = "withheld")]
    pub withheld: Cow<'static, str>,
}

impl Legend {
    pub const SEATS: Legend = Legend {
        available: Cow::Borrowed(SeatStatus::Available.as_str()),
        held: Cow::Borrowed(SeatStatus::Held.as_str()),
        booked: Cow::Borrowed(SeatStatus::Booked.as_str()),
        withheld: Cow::Borrowed(SeatStatus::Withheld.as_str()),
    };
}

/// The live seat map of one event: counts, and one letter per seat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AvailabilityMap {
    pub event_id: EventId,
    /// The log position (`PARTITION:OFFSET`) of the last change to this event; the `ETag` is
    /// derived from it.
    #[schema(example = "3:1207")]
    pub position: String,
    pub seats: SeatCounts,
    /// Always [`Legend::SEATS`].
    pub legend: Legend,
    pub sections: Vec<SectionAvailability>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SectionAvailability {
    pub code: SectionCode,
    pub name: String,
    pub available: u32,
    pub held: u32,
    pub booked: u32,
    pub withheld: u32,
    /// Front to back. Empty for a standing zone.
    pub rows: Vec<RowAvailability>,
    /// For a standing (general admission) zone: its counts instead of one letter per place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<ZoneAvailability>,
}

/// How many places of a standing zone are in each state; they add up to `capacity`
/// (`withheld` counted as 0 when absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ZoneAvailability {
    #[schema(value_type = String, example = "FLOOR")]
    pub zone: SectionCode,
    #[schema(example = 5000)]
    pub capacity: u32,
    pub tier: TierCode,
    /// Price of each place, in minor units of the event's currency.
    pub price: i64,
    pub available: u32,
    pub held: u32,
    pub booked: u32,
    /// Places the organizer keeps out of the sale (a guest list); absent when none are, so a
    /// zone's counts read as they did before organizer holds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub withheld: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RowAvailability {
    pub name: RowName,
    pub tier: TierCode,
    /// Price of each seat of the row, in minor units of the event's currency.
    pub price: i64,
    /// One letter per seat (see `legend`): seat number N is character N-1.
    #[schema(example = "AAHBAW")]
    pub seats: String,
    /// Seat numbers that are wheelchair spaces, companion seats, restricted view or on an
    /// aisle (each list absent when empty).
    #[serde(flatten)]
    pub attributes: SeatAttributes,
}

/// One event in the list of events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventSummary {
    pub event_id: EventId,
    pub title: String,
    pub artist: String,
    pub venue: String,
    pub city: String,
    pub starts_at: DateTime<Utc>,
    pub onsale_at: DateTime<Utc>,
    pub currency: Currency,
    pub seats: SeatCounts,
}

/// A page of the events a list's filters admit, soonest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventList {
    pub events: Vec<EventSummary>,
    /// How many events the filters admit, on all pages.
    pub total: usize,
    /// The `cursor` of the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// One event with its seat map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventDetails {
    /// What the list of events says of it.
    #[serde(flatten)]
    pub summary: EventSummary,
    /// How long a reservation holds its seats.
    #[schema(example = 10)]
    pub hold_minutes: u8,
    pub max_seats_per_order: u8,
    /// Most seats one customer may hold and own at once at this event (held plus booked).
    pub max_seats_per_customer: u16,
    /// The organizer turned the no-orphan-seat rule off: a selection may leave a single free
    /// seat alone in its row (otherwise refused with `409 orphan-seat` where avoidable).
    pub allow_orphan_seats: bool,
    /// Sections, rows (seat count and price tier) and the price tiers.
    pub seat_map: SeatMap,
    /// The event has a virtual waiting room: reserving needs an admission from
    /// `POST /events/{id}/queue/join` (see the queue stream).
    pub waiting_room: bool,
    /// The log position of the last change to this event.
    #[schema(example = "3:1207")]
    pub position: String,
}
