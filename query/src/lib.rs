//! FrontRow's query side: what fans read while an onsale runs.
//!
//! A query node follows every partition of the journal and keeps each event's availability in
//! memory ([`Catalog`]), updated from the event stream rather than by polling a database. The
//! read API ([`router`], documented by [`QueryApi`]) serves event details and a compact live
//! seat map per event with an `ETag` taken from the log, `304` revalidation and CDN-friendly
//! `Cache-Control`. Command responses carry the log position they wrote; a read may ask to wait
//! until this node has applied it (read your own writes).
//!
//! [`live`] is the pure per-event state, [`catalog`] the followers and the shared state,
//! [`views`] the JSON shapes, [`api`] the HTTP handlers, [`travel`] the map at an earlier
//! instant (`?at=`), replayed from the log, [`replays`] the few places such replays run in,
//! [`streams`] the caps on server-sent event streams, [`sse`] the live pushes (seat-map deltas and
//! each fan's place in the waiting room), and [`queue`] one event's waiting room as this node
//! follows it (places, people ahead, the pace of admissions).

pub mod api;
pub mod catalog;
pub mod live;
pub mod queue;
pub mod replays;
pub mod sse;
pub mod streams;
pub mod travel;
pub mod views;

pub use api::{QueryApi, router, router_with_streams};
pub use catalog::{Catalog, EventFilter, EventPage};
pub use views::{
    AvailabilityMap, EventDetails, EventList, EventSummary, Legend, RowAvailability, SeatCounts, SeatStatus,
    SectionAvailability, ZoneAvailability,
};
