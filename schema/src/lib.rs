//! The contract between FrontRow's sides.
//!
//! Everything that crosses a process boundary is defined here: the identifiers and value types
//! ([`ids`], [`seatmap`]), the facts that make up the log ([`events`], and the waiting room's in
//! [`queue`]), the envelope every fact travels in and its versioned wire codec ([`envelope`]),
//! and the partitioner that decides which journal partition (and so which single writer) owns an
//! event ([`partition`]). [`snapshot`] reads the seats out of a writer's partition snapshot, a
//! format the writer owns (both are pinned by golden files in the command crate). The
//! `testsuite` feature adds sample seat maps and events for other crates' tests. The write side,
//! the projectors and the query side all depend on this crate and on nothing of each other.

pub mod envelope;
pub mod events;
pub mod ids;
pub mod partition;
pub mod queue;
pub mod seatmap;
pub mod snapshot;
#[cfg(feature = "testsuite")]
pub mod testsuite;

pub use envelope::{DecodeError, Envelope, decode, encode};
pub use events::{
    Event, EventKind, EventScheduled, Payment, PaymentFailed, PaymentRefunded, RefundReason, ReleaseReason,
    SeatMapChanged, SeatStatus, SeatsBooked, SeatsReleased, SeatsReserved, SeatsReturned, SeatsWithheld,
};
pub use ids::{CustomerId, EventId, InvalidId, OrganizerId, ReservationId};
pub use queue::{
    AdmissionLapsed, AdmissionSpent, FanAdmitted, QueueEvent, QueueJoined, QueueLeft, QueueOpened, QueueShuffled,
    QueueSoldOut, WaitlistJoined, WaitlistOffered, lottery_order,
};
pub use seatmap::{
    Currency, HoldMinutes, MAX_PRICE, Money, PriceTier, Row, SeatAttributes, SeatId, SeatMap, SeatMapError, Section,
    SectionCode, Standing, TierCode, checked_sum, text_fits,
};
