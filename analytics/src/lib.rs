//! FrontRow's analytics: what happened in an onsale, read back from the event log.
//!
//! The log is the truth, so everything here is a read-only replay of it through the
//! [`Journal`](frontrow_journal::Journal) port, embedded or Kafka alike, and can run against a
//! live system. [`replay()`] reads the partitions (one event's or all, a time range or all of it),
//! [`figures`] folds the facts into per-event figures (per-second counts, time to sell out,
//! conversion and time to pay, revenue by section and tier, seats held but never bought),
//! [`report`] writes them as JSON and CSV for machines and [`html`] as one self-contained page
//! of SVG charts for people. [`history`] is one seat's history from the log, which [`api`]
//! serves over HTTP on the query role. The seat map at an
//! earlier instant is the query side's [`frontrow_query::travel`], which this crate re-exports.

pub mod api;
pub mod figures;
pub mod history;
pub mod html;
pub mod replay;
pub mod report;

pub use figures::{EventReport, Figures};
pub use frontrow_query::travel::{At, TravelError, TravelLimits, availability_at};
pub use history::{seat_history, seat_history_with_organizer};
pub use replay::{Coverage, Progress, ReplayOptions, replay};
pub use report::{Report, analyse, per_second_csv, write};
