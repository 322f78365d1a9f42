//! FrontRow's write side.
//!
//! [`domain`] is the pure seat-map state machine. [`writer`] runs one task per journal
//! partition that decides commands in batches and appends their events in one durable write.
//! [`api`] is the HTTP edge: the organizer and customer command API and the payment webhook.

pub mod api;
pub mod clock;
pub mod domain;
pub mod forward;
pub mod ownership;
pub mod payments;
pub mod views;
pub mod writer;
