//! The facts of the log, in the past tense.
//!
//! These are the current version (v1) of every event's payload. They are stored through the
//! codec in [`crate::envelope`], which tags them with a type name and a schema version; when a
//! payload changes shape, the old struct moves to a `v1` module and the codec upcasts it, so
//! every event ever written stays readable (pinned by `tests/golden/v1`).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{CustomerId, EventId, OrganizerId, ReservationId};
use crate::queue::QueueEvent;
use crate::seatmap::{Currency, HoldMinutes, Money, SeatId, SeatMap};

/// Every fact FrontRow records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    EventScheduled(EventScheduled),
    SeatMapChanged(SeatMapChanged),
    SeatsReserved(SeatsReserved),
    SeatsBooked(SeatsBooked),
    SeatsReleased(SeatsReleased),
    PaymentRefunded(PaymentRefunded),
    PaymentFailed(PaymentFailed),
    /// Organizer holds: seats out of the sale and back (see [`SeatsWithheld`]).
    SeatsWithheld(SeatsWithheld),
    SeatsReturned(SeatsReturned),
    /// The virtual waiting room (see [`crate::queue`]).
    Queue(QueueEvent),
}

/// Which kind of fact an [`Event`] is, without its payload (waiting-room facts are one kind):
/// what a command's answer says it recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    EventScheduled,
    SeatMapChanged,
    SeatsReserved,
    SeatsBooked,
    SeatsReleased,
    PaymentRefunded,
    PaymentFailed,
    SeatsWithheld,
    SeatsReturned,
    Queue,
}

impl Event {
    /// Which kind of fact this is.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::EventScheduled(_) => EventKind::EventScheduled,
            Event::SeatMapChanged(_) => EventKind::SeatMapChanged,
            Event::SeatsReserved(_) => EventKind::SeatsReserved,
            Event::SeatsBooked(_) => EventKind::SeatsBooked,
            Event::SeatsReleased(_) => EventKind::SeatsReleased,
            Event::PaymentRefunded(_) => EventKind::PaymentRefunded,
            Event::PaymentFailed(_) => EventKind::PaymentFailed,
            Event::SeatsWithheld(_) => EventKind::SeatsWithheld,
            Event::SeatsReturned(_) => EventKind::SeatsReturned,
            Event::Queue(_) => EventKind::Queue,
        }
    }

    /// The CloudEvents `type` of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::EventScheduled(_) => "frontrow.event.scheduled",
            Event::SeatMapChanged(_) => "frontrow.seatmap.changed",
            Event::SeatsReserved(_) => "frontrow.seats.reserved",
            Event::SeatsBooked(_) => "frontrow.seats.booked",
            Event::SeatsReleased(_) => "frontrow.seats.released",
            Event::PaymentRefunded(_) => "frontrow.payment.refunded",
            Event::PaymentFailed(_) => "frontrow.payment.failed",
            Event::SeatsWithheld(_) => "frontrow.seats.withheld",
            Event::SeatsReturned(_) => "frontrow.seats.returned",
            Event::Queue(q) => q.type_name(),
        }
    }

    /// The provider event id (webhook id) this fact consumed, if any. A webhook is applied at
    /// most once because its id is in the log forever.
    pub fn provider_event_id(&self) -> Option<&str> {
        match self {
            Event::SeatsBooked(e) => Some(&e.payment.provider_event_id),
            Event::PaymentRefunded(e) => Some(&e.payment.provider_event_id),
            Event::PaymentFailed(e) => Some(&e.provider_event_id),
            _ => None,
        }
    }

    /// The seats this fact moves and where it moves them; `None` for a fact that moves no seat
    /// (a new seat map frees every seat instead). Every reader that keeps seat states follows
    /// this one rule.
    pub fn seat_move(&self) -> Option<(&[SeatId], SeatStatus)> {
        match self {
            Event::SeatsReserved(e) => Some((&e.seats, SeatStatus::Held)),
            Event::SeatsBooked(e) => Some((&e.seats, SeatStatus::Booked)),
            Event::SeatsReleased(e) => Some((&e.seats, SeatStatus::Available)),
            Event::SeatsWithheld(e) => Some((&e.seats, SeatStatus::Withheld)),
            Event::SeatsReturned(e) => Some((&e.seats, SeatStatus::Available)),
            Event::EventScheduled(_)
            | Event::SeatMapChanged(_)
            | Event::PaymentRefunded(_)
            | Event::PaymentFailed(_)
            | Event::Queue(_) => None,
        }
    }
}

/// Where one seat stands, as the seat facts move it. Readers keep it as one byte per seat; the
/// availability maps show it as one letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum SeatStatus {
    #[default]
    Available,
    /// Reserved by someone until their hold ends or they pay.
    Held,
    Booked,
    /// Kept out of the sale by the organizer (house seats, production holds): not for sale.
    Withheld,
}

impl SeatStatus {
    /// The letter of this status in an availability map's row strings.
    pub fn letter(self) -> char {
        match self {
            SeatStatus::Available => 'A',
            SeatStatus::Held => 'H',
            SeatStatus::Booked => 'B',
            SeatStatus::Withheld => 'W',
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            SeatStatus::Available => "available",
            SeatStatus::Held => "held",
            SeatStatus::Booked => "booked",
            SeatStatus::Withheld => "withheld",
        }
    }
}

/// An organizer put an event on sale at `onsale_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventScheduled {
    pub event_id: EventId,
    pub organizer: OrganizerId,
    pub title: String,
    pub artist: String,
    /// Other names fans know the artist by (a romanisation, an abbreviation), searched like
    /// the artist. Absent in events written before aliases existed, which read as none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub venue: String,
    pub city: String,
    /// Free-form words fans search by (genre, tour, ...). Absent in events written before
    /// tags existed, which read as none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub starts_at: DateTime<Utc>,
    pub onsale_at: DateTime<Utc>,
    pub hold_minutes: HoldMinutes,
    pub max_seats_per_order: u8,
    /// Most seats one customer may hold and own at once at this event (live holds plus
    /// bookings). Absent when the organizer set none, and in events written before the limit
    /// existed: then it is `max_seats_per_order` ([`EventScheduled::seats_per_customer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seats_per_customer: Option<u16>,
    /// The organizer turned the no-orphan-seat rule off: best-available may leave a single
    /// free seat stranded in its row, and an explicit selection that strands one is accepted.
    /// Absent while the rule is on (the default), and in events written before the rule
    /// existed, which read as on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_orphan_seats: bool,
    pub currency: Currency,
    /// Shared, not copied, by everything in a process that keeps this event (its state, its
    /// layout, a clone of this record): the map is the largest part of an event.
    pub seat_map: Arc<SeatMap>,
}

impl EventScheduled {
    /// The per-customer seat limit in force: the organizer's, or one order's worth.
    pub fn seats_per_customer(&self) -> u16 {
        self.max_seats_per_customer
            .unwrap_or(u16::from(self.max_seats_per_order))
    }
}

/// The organizer replaced the seat map before the onsale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatMapChanged {
    pub seat_map: Arc<SeatMap>,
}

/// A customer holds these seats until `hold_until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsReserved {
    pub reservation_id: ReservationId,
    pub customer: CustomerId,
    pub seats: Vec<SeatId>,
    #[serde(deserialize_with = "crate::envelope::rfc3339")]
    pub hold_until: DateTime<Utc>,
    /// What the customer has to pay for these seats.
    pub amount: Money,
    /// The queue ticket whose admission this hold uses, for an event with a waiting room.
    /// Absent otherwise (and in holds written before waiting rooms existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_ticket: Option<u64>,
}

/// A payment the provider reported, identified by its webhook event id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payment {
    /// The provider's event id (`evt_...`): the webhook's idempotency key.
    pub provider_event_id: String,
    /// The provider's payment id (`pi_...`).
    pub payment_intent: String,
    pub amount: Money,
}

/// A payment succeeded and the reservation's seats are sold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsBooked {
    pub reservation_id: ReservationId,
    pub customer: CustomerId,
    pub seats: Vec<SeatId>,
    pub payment: Payment,
    /// The payment arrived after the hold had ended and the seats were still free.
    pub late: bool,
}

/// Why seats went back to `AVAILABLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseReason {
    /// The hold's deadline passed without a payment.
    Expired,
    /// The customer let the seats go.
    Released,
    /// The provider reported the payment failed.
    PaymentFailed,
    /// A booking was cancelled and refunded.
    Refunded,
}

impl ReleaseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseReason::Expired => "expired",
            ReleaseReason::Released => "released",
            ReleaseReason::PaymentFailed => "payment_failed",
            ReleaseReason::Refunded => "refunded",
        }
    }
}

/// The seats of one reservation are available again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsReleased {
    pub reservation_id: ReservationId,
    pub seats: Vec<SeatId>,
    pub reason: ReleaseReason,
}

/// Why money goes back to a customer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundReason {
    /// The payment arrived after the hold ended and someone else had the seats by then.
    SeatsTaken,
    /// The reservation was already paid (or already refunded): a second payment.
    DuplicatePayment,
    /// The amount paid is not the reservation's amount.
    AmountMismatch,
    /// The customer cancelled the booking.
    BookingCancelled,
    /// The payment came after the hold ended, and booking it would give the customer more
    /// seats than the event's per-customer limit.
    CustomerLimit,
}

/// Money owed back to a customer; the provider is told to refund it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRefunded {
    pub reservation_id: ReservationId,
    pub customer: CustomerId,
    pub payment: Payment,
    pub reason: RefundReason,
}

/// The provider reported that a payment attempt failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentFailed {
    pub reservation_id: ReservationId,
    pub provider_event_id: String,
    pub payment_intent: String,
    /// The provider's message, if it gave one.
    pub message: Option<String>,
}

/// The organizer took available seats out of the sale (house seats, production holds), under a
/// label of their own choosing. Withheld seats are neither sellable nor available until
/// [`SeatsReturned`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsWithheld {
    /// The seats this write took out of the sale: those of the request that were not withheld
    /// under its label already (empty when the request changed nothing but came with an
    /// `Idempotency-Key`, which is recorded all the same).
    pub seats: Vec<SeatId>,
    /// Why, in the organizer's words (`house seats`, `camera position`).
    pub label: String,
    /// A digest of the organizer's request (its kind, label and seats, whatever their order),
    /// present when it came with an `Idempotency-Key` (in the envelope): a retry with that key
    /// is answered from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

/// The organizer put withheld seats back on sale: they are available again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsReturned {
    /// The seats this write put back on sale (empty as for [`SeatsWithheld::seats`]).
    pub seats: Vec<SeatId>,
    /// As [`SeatsWithheld::request`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}
