//! FrontRow's ledger projector: the journal folded into a relational ledger.
//!
//! The ledger is what organizers, accountants and support staff query: the event catalogue,
//! every seat with its current state and its history, reservations, bookings, payments, refunds
//! and double-entry money entries that reconcile to the bookings. It lives in SQLite in the
//! embedded deployment ([`SqliteLedger`]) and in PostgreSQL at scale ([`PgLedger`]); both sit
//! behind the [`Ledger`] trait and are written by the one projection logic in [`projection`].
//!
//! The [`projector`] reads each journal partition from the position stored in the ledger,
//! folds a batch of records into row changes ([`rows`]) and has the ledger write them together
//! with the new position in one transaction, so a crash never applies a record twice or skips
//! one. A batch that does not start where the stored position says is refused. [`rebuild`]
//! replays the whole log into a fresh generation beside the serving one and swaps it in.
//! [`api`] serves the ledger's reads over HTTP.

pub mod api;
mod dialect;
mod error;
mod ledger;
mod postgres;
pub mod projection;
pub mod projector;
mod reads;
pub mod rows;
mod sqlite;

pub use api::{LedgerApi, router};
pub use error::LedgerError;
pub use ledger::{
    Batch, BookingCursor, BookingStatus, CustomerBooking, CustomerBookings, EventAudit, EventSales, Ledger,
    LedgerReads, Lookup, Read, SalesLine, SeatHistory, SeatHistoryEntry, booking_cursor,
};
pub use postgres::PgLedger;
pub use projector::{Projector, ProjectorError, ProjectorHandle, RebuildReport, rebuild, run, spawn};
pub use sqlite::{LEDGER_THREAD, SqliteLedger};

/// Opens the serving ledger: PostgreSQL in `schema` when a database URL is configured,
/// otherwise the embedded SQLite ledger in `data_dir/ledger/`.
pub async fn open(
    database_url: Option<&str>,
    schema: &str,
    data_dir: &std::path::Path,
) -> Result<std::sync::Arc<dyn Ledger>, LedgerError> {
    Ok(match database_url {
        Some(url) => std::sync::Arc::new(PgLedger::connect(url, schema).await?),
        None => std::sync::Arc::new(SqliteLedger::open(&data_dir.join("ledger")).await?),
    })
}
