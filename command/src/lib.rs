//! FrontRow's write side.
//!
//! [`domain`] is the pure seat-map state machine. [`writer`] runs one task per journal
//! partition that decides commands in batches and appends their events in one durable write.
//! [`api`] is the HTTP edge: the organizer and customer command API and the payment webhook.
//! [`ownership`] shares the partitions among command nodes (a Kafka consumer group, announced
//! in an owner directory) and [`forward`] sends a request to its partition's owner.
//! [`payments`] verifies the provider's webhooks (and simulates the provider in demo mode);
//! [`views`] are the answers' shapes; [`clock`] is the time the writers decide with.
//! [`replay`] rebuilds every event's state from a journal, for the checks of tests and the
//! benchmark harness.

pub mod api;
pub mod clock;
pub mod domain;
pub mod forward;
pub mod ownership;
pub mod payments;
pub mod replay;
pub mod views;
pub mod writer;
