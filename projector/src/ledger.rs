//! The ledger port: what the projector writes and what the read API asks.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use frontrow_http::page::Cursor;
use frontrow_schema::{CustomerId, EventId, ReservationId, SeatId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::LedgerError;
use crate::rows::{Op, Ty, Val};

/// One projected batch: the row changes of the records `from..to` of one partition.
#[derive(Debug, Clone)]
pub struct Batch {
    pub partition: u32,
    /// The offset of the first record; the ledger refuses the batch unless its stored position
    /// for the partition is exactly this.
    pub from: u64,
    /// The offset after the last record: the position stored with the rows.
    pub to: u64,
    pub ops: Vec<Op>,
    /// Test hook: write everything, then abandon the transaction instead of committing, as a
    /// process killed in the middle of a batch would.
    #[doc(hidden)]
    pub crash_before_commit: bool,
}

impl Batch {
    /// Refuses the batch unless it starts at `stored`, the partition's position in the ledger.
    pub(crate) fn check_from(&self, stored: u64) -> Result<(), LedgerError> {
        if stored == self.from {
            return Ok(());
        }
        Err(LedgerError::OutOfOrder {
            partition: self.partition,
            stored,
            batch_from: self.from,
        })
    }

    /// Commits `tx`, the transaction that wrote this batch and its position, or abandons it
    /// when the batch asks for an injected crash.
    pub(crate) async fn commit<DB: sqlx::Database>(&self, tx: sqlx::Transaction<'_, DB>) -> Result<(), LedgerError> {
        if self.crash_before_commit {
            drop(tx);
            return Err(LedgerError::InjectedCrash);
        }
        tx.commit().await?;
        Ok(())
    }
}

/// What the ledger holds about events and reservations a batch refers to.
#[derive(Debug, Default)]
pub struct Lookup {
    /// `(event, organizer, currency, seat map JSON)`.
    pub events: Vec<(EventId, String, String, String)>,
    /// `(reservation, comma-separated seat ids)`.
    pub reservations: Vec<(ReservationId, String)>,
}

/// One read of [`Ledger::query_together`]: a statement in the SQL both dialects share, its
/// parameters, and how to decode its columns.
#[derive(Debug, Clone)]
pub struct Read {
    pub sql: String,
    pub params: Vec<Val>,
    pub types: &'static [Ty],
}

/// A relational ledger kept by the projector: SQLite embedded, PostgreSQL at scale.
#[async_trait]
pub trait Ledger: Send + Sync + 'static {
    /// Where it lives, for logs (`postgres schema ledger`, `sqlite ledger-1.db`).
    fn describe(&self) -> String;

    /// The generation's name: the serving ledger's, or a rebuild's before it is promoted.
    fn generation(&self) -> String;

    /// How many partitions may usefully write batches at the same time (a rebuild replays that
    /// many at once).
    fn concurrent_writers(&self) -> usize {
        1
    }

    /// The stored position per partition: the offset of the next record to apply.
    async fn positions(&self) -> Result<BTreeMap<u32, u64>, LedgerError>;

    /// What the ledger knows about these events and reservations (missing ones are left out).
    async fn lookup(&self, events: &[EventId], reservations: &[ReservationId]) -> Result<Lookup, LedgerError>;

    /// Writes a batch and its new position in one transaction; refuses it with
    /// [`LedgerError::OutOfOrder`] (writing nothing) unless it starts at the stored position.
    async fn write(&self, batch: &Batch) -> Result<(), LedgerError>;

    /// Runs a read written in the SQL both dialects share (`$1` parameters, `CAST`), decoding
    /// each column as `types` says; the building block of the shared read functions.
    async fn query(&self, sql: &str, params: Vec<Val>, types: &[Ty]) -> Result<Vec<Vec<Val>>, LedgerError>;

    /// Runs `reads` as [`Ledger::query`] does, in one read-only transaction: together they see
    /// one state of the ledger, never a projector's batch committed between two of them.
    async fn query_together(&self, reads: Vec<Read>) -> Result<Vec<Vec<Vec<Val>>>, LedgerError>;

    /// Every row of every table and the positions, one canonical line per row, sorted: two
    /// ledgers of one dialect with equal dumps are equal row for row.
    async fn dump(&self) -> Result<BTreeMap<String, Vec<String>>, LedgerError>;

    /// Creates a new, empty generation beside this (serving) one, ready to be replayed into.
    async fn next_generation(&self) -> Result<Arc<dyn Ledger>, LedgerError>;

    /// On a generation nobody reads yet: drops the indexes no write needs (those that enforce
    /// no key or uniqueness), so a replay fills the tables without keeping them up row by row.
    /// [`Ledger::restore_indexes`] builds them again, each in one pass over its table. A
    /// generation left without them (a rebuild that failed) is never promoted.
    async fn defer_indexes(&self) -> Result<(), LedgerError> {
        Ok(())
    }

    /// Builds the indexes [`Ledger::defer_indexes`] dropped.
    async fn restore_indexes(&self) -> Result<(), LedgerError> {
        Ok(())
    }

    /// Makes `generation` (from [`Ledger::next_generation`]) the serving ledger in one atomic
    /// step and retires the current one. Readers see either the old or the new ledger.
    async fn promote(&self, generation: &str) -> Result<(), LedgerError>;
}

/// Whether a booking still stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BookingStatus {
    Booked,
    /// Cancelled by the customer and refunded.
    Cancelled,
}

/// One of a customer's bookings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CustomerBooking {
    #[schema(value_type = String, format = Uuid)]
    pub reservation_id: Uuid,
    #[schema(value_type = String, format = Uuid)]
    pub event_id: Uuid,
    pub title: String,
    pub venue: String,
    pub starts_at: DateTime<Utc>,
    #[schema(value_type = Vec<String>, example = json!(["101-C-7", "101-C-8"]))]
    pub seats: Vec<String>,
    /// Minor units of `currency`.
    pub amount: i64,
    pub currency: String,
    pub status: BookingStatus,
    /// Paid after the hold had ended, while the seats were still free.
    pub late: bool,
    pub booked_at: DateTime<Utc>,
    pub cancelled_at: Option<DateTime<Utc>>,
}

/// One page of a customer's bookings, newest first, and how many there are in all.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CustomerBookings {
    pub customer: String,
    pub bookings: Vec<CustomerBooking>,
    /// All of the customer's bookings that stand, on every page.
    pub booked_count: i64,
    /// All of the customer's cancelled bookings, on every page.
    pub cancelled_count: i64,
    /// The `cursor` of the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// Where a page of a customer's bookings starts: just after the booking at `at` (its
/// `booked_at`) with reservation `id`, in the order newest first, then by reservation id (a
/// batch books many at one instant).
pub type BookingCursor = Cursor;

/// The cursor just after `booking`.
pub fn booking_cursor(booking: &CustomerBooking) -> BookingCursor {
    Cursor::new(booking.booked_at, booking.reservation_id)
}

/// Sales of one section and price tier (or of the whole event, with both empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SalesLine {
    pub section: Option<String>,
    pub tier: Option<String>,
    /// Seats in the current seat map.
    pub seats: i64,
    pub available_now: i64,
    pub held_now: i64,
    pub booked_now: i64,
    /// Withheld by the organizer: `available_now + held_now + booked_now + withheld_now = seats`.
    pub withheld_now: i64,
    /// Seat holds placed.
    pub held: i64,
    /// Seats sold.
    pub booked: i64,
    /// Holds that ran out.
    pub expired: i64,
    /// Holds let go by the customer.
    pub released: i64,
    /// Holds ended by a failed payment.
    pub payment_failed: i64,
    /// Sold seats given back by a cancelled booking.
    pub refunded: i64,
    /// Net revenue (minor units): bookings minus cancelled bookings, from the money entries.
    pub revenue: i64,
    /// The price of the seats booked now; equals `revenue` when the ledger reconciles.
    pub booked_value: i64,
}

/// An event's sales for its organizer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventSales {
    #[schema(value_type = String, format = Uuid)]
    pub event_id: Uuid,
    pub title: String,
    #[serde(skip)]
    pub organizer: String,
    pub currency: String,
    pub total: SalesLine,
    /// Per section and price tier, in seat-map order of codes.
    pub lines: Vec<SalesLine>,
}

/// One thing that happened to a seat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SeatHistoryEntry {
    /// The record's sequence within the event's stream.
    pub sequence: i64,
    /// `held`, `booked`, `expired`, `released`, `payment_failed`, `refunded`, or `withheld` and
    /// `returned` (an organizer hold, with no reservation).
    pub kind: String,
    #[schema(value_type = Option<String>, format = Uuid)]
    pub reservation_id: Option<Uuid>,
    pub at: DateTime<Utc>,
}

/// A seat and everything that happened to it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SeatHistory {
    #[schema(value_type = String, format = Uuid)]
    pub event_id: Uuid,
    pub seat: String,
    pub section: String,
    pub tier: String,
    pub price: i64,
    /// `available`, `held`, `booked` or `withheld`.
    pub state: String,
    pub history: Vec<SeatHistoryEntry>,
}

/// Reconciliation figures of one event, straight from the tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct EventAudit {
    #[schema(value_type = String, format = Uuid)]
    pub event_id: Uuid,
    /// Sum of all bookings' amounts.
    pub bookings: i64,
    /// Sum of refunds of cancelled bookings.
    pub cancelled: i64,
    /// Sum of the `event_revenue` entries: must equal `bookings - cancelled`.
    pub revenue: i64,
    /// Sum of the `refunds_payable` entries: must equal the sum of all refunds.
    pub refunds_payable: i64,
    pub refunds: i64,
    /// Sum of every entry: must be 0.
    pub balance: i64,
    /// Transactions whose lines do not sum to zero: must be 0.
    pub unbalanced_transactions: i64,
    /// Bookings without exactly one payment: must be 0.
    pub bookings_without_one_payment: i64,
}

/// Ledger reads, shared by every implementation.
#[async_trait]
pub trait LedgerReads {
    /// At most `limit` of the customer's bookings, newest first, from just after `after` (from
    /// the newest without it), cancelled ones included; and how many of all their bookings
    /// stand and how many were cancelled. Both are read as of one state of the ledger, so the
    /// page and the counts agree.
    async fn customer_bookings_and_counts(
        &self,
        customer: &CustomerId,
        after: Option<BookingCursor>,
        limit: usize,
    ) -> Result<(Vec<CustomerBooking>, (i64, i64)), LedgerError>;
    async fn event_sales(&self, event: EventId) -> Result<Option<EventSales>, LedgerError>;
    async fn seat_history(&self, event: EventId, seat: &SeatId) -> Result<Option<SeatHistory>, LedgerError>;
    async fn audit(&self) -> Result<Vec<EventAudit>, LedgerError>;
}
