//! The server's answers as the tests read them: owned, client-side copies of the JSON views the
//! API sends (field names from `command/src/views.rs`, `query/src/views.rs`, `query/src/sse.rs`,
//! `projector/src/ledger.rs`, `search/src/api.rs`, ...). A test reads `r.status` instead of
//! `v["status"]`, so a misspelt field is a compile error rather than a `null` found at run time,
//! and an answer that lost a field fails where it is read, with its body.
//!
//! Fields the tests never read may be left out (unknown fields are ignored); a test that checks
//! a field is *absent*, or a problem's body, reads the raw JSON instead.

use chrono::{DateTime, Utc};
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

/// An amount in minor units of `currency` (`Money`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Money {
    pub amount: i64,
    pub currency: String,
}

impl Money {
    pub fn eur(amount: i64) -> Self {
        Self {
            amount,
            currency: "EUR".to_owned(),
        }
    }
}

/// A reservation, as reserving, reading, releasing or cancelling it answers
/// (`ReservationResponse`: the `ReservationView` and the write's `position`).
#[derive(Debug, Clone, Deserialize)]
pub struct Reservation {
    pub reservation_id: String,
    pub event_id: EventId,
    /// `held`, `booked`, `released`, `expired`, `payment_failed` or `refunded`.
    pub status: String,
    pub seats: Vec<String>,
    pub amount: Money,
    pub hold_until: DateTime<Utc>,
    pub payment_intent: Option<String>,
    pub late_payment: bool,
    pub refunds: Vec<Refund>,
    /// `partition:offset` of the write (absent or `null` for a read).
    pub position: Option<String>,
}

/// A payment given back (`RefundView`).
#[derive(Debug, Clone, Deserialize)]
pub struct Refund {
    pub payment_intent: String,
    pub amount: Money,
    /// `seats_taken`, `duplicate_payment`, `amount_mismatch`, `booking_cancelled` or `customer_limit`.
    pub reason: String,
}

/// What the payment webhook (and the demo provider) answers (`WebhookAnswer`).
#[derive(Debug, Clone, Deserialize)]
pub struct WebhookAnswer {
    pub received: bool,
    /// `booked`, `refunded`, `payment_failed`, `duplicate` or `ignored`.
    pub outcome: String,
    pub reservation_status: Option<String>,
}

/// An organizer's write: creating an event, changing its seat map, withholding or returning
/// seats (`EventWritten`).
#[derive(Debug, Clone, Deserialize)]
pub struct EventWritten {
    pub event_id: EventId,
    pub position: Option<String>,
}

/// How many seats are in each state (`SeatCounts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct SeatCounts {
    pub total: u32,
    pub available: u32,
    pub held: u32,
    pub booked: u32,
    pub withheld: u32,
}

/// `GET /events/{id}/availability` (`AvailabilityMap`), also the seat stream's `snapshot`.
#[derive(Debug, Clone, Deserialize)]
pub struct AvailabilityMap {
    pub event_id: EventId,
    pub position: String,
    pub seats: SeatCounts,
    pub legend: Legend,
    pub sections: Vec<SectionAvailability>,
}

/// What each letter of a row's `seats` means.
#[derive(Debug, Clone, Deserialize)]
pub struct Legend {
    #[serde(rename = "A")]
    pub available: String,
    #[serde(rename = "H")]
    pub held: String,
    #[serde(rename = "B")]
    pub booked: String,
    #[serde(rename = "W")]
    pub withheld: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SectionAvailability {
    pub code: String,
    pub name: String,
    pub available: u32,
    pub held: u32,
    pub booked: u32,
    pub withheld: u32,
    pub rows: Vec<RowAvailability>,
    /// A standing zone's counts (absent for a seated section).
    pub standing: Option<ZoneAvailability>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RowAvailability {
    pub name: String,
    pub tier: String,
    pub price: i64,
    /// One letter per seat: seat number N is character N-1.
    pub seats: String,
    #[serde(flatten)]
    pub attributes: SeatAttributes,
}

/// A row's wheelchair spaces, companion seats, restricted view and aisle seats (each list
/// absent when empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SeatAttributes {
    #[serde(default)]
    pub wheelchair: Vec<u16>,
    #[serde(default)]
    pub companion: Vec<u16>,
    #[serde(default)]
    pub restricted_view: Vec<u16>,
    #[serde(default)]
    pub aisle: Vec<u16>,
}

/// A standing zone's counts (`ZoneAvailability`), also the seat stream's `zone` event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ZoneAvailability {
    pub zone: String,
    pub capacity: u32,
    pub tier: String,
    pub price: i64,
    pub available: u32,
    pub held: u32,
    pub booked: u32,
    /// Absent when no place is withheld.
    #[serde(default)]
    pub withheld: u32,
}

/// The `data` of the seat stream's `seat` event: these seats now have this status.
#[derive(Debug, Clone, Deserialize)]
pub struct SeatData {
    pub seats: Vec<String>,
    /// `held`, `booked`, `available` or `withheld`.
    pub status: String,
}

/// `GET /events/{id}` (`EventDetails`).
#[derive(Debug, Clone, Deserialize)]
pub struct EventDetails {
    pub event_id: EventId,
    pub title: String,
    pub artist: String,
    pub venue: String,
    pub city: String,
    pub starts_at: DateTime<Utc>,
    pub onsale_at: DateTime<Utc>,
    pub currency: String,
    pub seats: SeatCounts,
    pub hold_minutes: u8,
    pub max_seats_per_order: u8,
    pub max_seats_per_customer: u16,
    pub allow_orphan_seats: bool,
    pub seat_map: SeatMap,
    pub waiting_room: bool,
    pub position: String,
}

/// An event's seat map as the API shows it (`SeatMap`).
#[derive(Debug, Clone, Deserialize)]
pub struct SeatMap {
    pub tiers: Vec<PriceTier>,
    pub sections: Vec<Section>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PriceTier {
    pub code: String,
    pub name: String,
    pub price: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Section {
    pub code: String,
    pub name: String,
    /// Absent for a standing zone.
    #[serde(default)]
    pub rows: Vec<Row>,
    /// Absent for a seated section.
    pub standing: Option<Standing>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Row {
    pub name: String,
    pub seats: u16,
    pub tier: String,
    #[serde(flatten)]
    pub attributes: SeatAttributes,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Standing {
    pub capacity: u32,
    pub tier: String,
}

/// `GET /events/{id}/queue/me` (`QueueStatus`), also the status stream's `status` event.
#[derive(Debug, Clone, Deserialize)]
pub struct QueueStatus {
    pub event_id: EventId,
    pub ticket: u64,
    /// `waiting`, `admitted`, `spent`, `lapsed`, `left` or `sold_out`.
    pub status: String,
    pub waitlist: bool,
    pub awaiting_lottery: bool,
    /// 1 = next in line (while waiting and placed).
    pub position: Option<u64>,
    pub ahead: Option<u64>,
    pub eta_seconds: Option<u64>,
    pub admitted_until: Option<DateTime<Utc>>,
    pub admission_token: Option<String>,
    pub sold_out: bool,
    pub version: String,
}

/// Joining the queue or the waiting list (`QueueTicketResponse`).
#[derive(Debug, Clone, Deserialize)]
pub struct QueueTicket {
    pub event_id: EventId,
    pub ticket: u64,
    pub status: String,
    pub waitlist: bool,
    pub admitted_until: Option<DateTime<Utc>>,
    pub admission_token: Option<String>,
    pub position: Option<String>,
}

/// Opening a waiting room (`QueueOpenedResponse`).
#[derive(Debug, Clone, Deserialize)]
pub struct QueueOpened {
    pub event_id: EventId,
    pub max_size: Option<u32>,
    pub max_shoppers: u32,
    pub admission_secs: u32,
    pub position: Option<String>,
}

/// `GET /me/bookings` (`CustomerBookings`).
#[derive(Debug, Clone, Deserialize)]
pub struct Bookings {
    pub customer: String,
    pub bookings: Vec<Booking>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Booking {
    pub reservation_id: String,
    pub event_id: EventId,
    pub title: String,
    pub venue: String,
    pub starts_at: DateTime<Utc>,
    pub seats: Vec<String>,
    /// Minor units of `currency`.
    pub amount: i64,
    pub currency: String,
    /// `booked` or `cancelled`.
    pub status: String,
    pub late: bool,
    pub booked_at: DateTime<Utc>,
    pub cancelled_at: Option<DateTime<Utc>>,
}

/// `GET /events/{id}/sales` (`EventSales`).
#[derive(Debug, Clone, Deserialize)]
pub struct Sales {
    pub event_id: EventId,
    pub title: String,
    pub currency: String,
    pub total: SalesLine,
    pub lines: Vec<SalesLine>,
}

/// Sales of one section and tier, or of the whole event (`SalesLine`).
#[derive(Debug, Clone, Deserialize)]
pub struct SalesLine {
    pub section: Option<String>,
    pub tier: Option<String>,
    pub seats: i64,
    pub available_now: i64,
    pub held_now: i64,
    pub booked_now: i64,
    pub withheld_now: i64,
    pub held: i64,
    pub booked: i64,
    pub expired: i64,
    pub released: i64,
    pub payment_failed: i64,
    pub refunded: i64,
    pub revenue: i64,
    pub booked_value: i64,
}

/// `GET /events/{id}/seats/{seat}/history` (`SeatHistory`).
#[derive(Debug, Clone, Deserialize)]
pub struct SeatHistory {
    pub event_id: EventId,
    pub seat: String,
    pub section: String,
    pub tier: String,
    pub price: i64,
    /// `available`, `held`, `booked` or `withheld`.
    pub state: String,
    pub history: Vec<SeatHistoryEntry>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SeatHistoryEntry {
    pub sequence: i64,
    /// `held`, `booked`, `expired`, `released`, `payment_failed`, `refunded`, `withheld`, `returned`.
    pub kind: String,
    pub reservation_id: Option<String>,
    pub at: DateTime<Utc>,
}

/// `GET /search` (`SearchResponse`).
#[derive(Debug, Clone, Deserialize)]
pub struct SearchPage {
    pub query: String,
    pub page: usize,
    pub per_page: usize,
    pub total: u64,
    pub pages: u64,
    pub hits: Vec<SearchHit>,
    pub suggestions: Vec<String>,
}

impl SearchPage {
    /// Whether `event` is among the hits.
    pub fn has(&self, event: EventId) -> bool {
        self.hits.iter().any(|h| h.event_id == event)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct SearchHit {
    pub event_id: EventId,
    pub title: String,
    pub artist: String,
    pub venue: String,
    pub city: String,
    pub seats_total: u32,
    pub seats_left: u32,
    pub sold_out: bool,
}

/// `frontrow analytics --json`'s report (`Report`), the figures the tests read.
#[derive(Debug, Clone, Deserialize)]
pub struct AnalyticsReport {
    pub events: Vec<EventReport>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventReport {
    pub event_id: EventId,
    pub title: String,
    pub seats_total: u64,
    pub seats_booked_now: u64,
    pub seats_held_now: u64,
    pub seats_withheld_now: u64,
    pub totals: ReportCounts,
    pub revenue: ReportRevenue,
    /// `null` for an event without a waiting room.
    pub queue: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReportCounts {
    pub reservations: u64,
    pub seats_reserved: u64,
    pub bookings: u64,
    pub seats_booked: u64,
    pub expired: u64,
    pub released: u64,
    pub payment_failed: u64,
    pub refunded: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReportRevenue {
    pub currency: String,
    pub payments: i64,
    pub gross: i64,
    pub refunded: i64,
    pub net: i64,
    pub lines: Vec<ReportRevenueLine>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReportRevenueLine {
    pub section: String,
    pub tier: String,
    pub seats_booked: u64,
    pub gross: i64,
    pub seats_refunded: u64,
    pub refunded: i64,
    pub net: i64,
}

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
