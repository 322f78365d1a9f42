//! FrontRow: ticket booking for the onsales everyone wants at once.
//!
//! This crate is the `frontrow` binary's library: configuration ([`settings`]), assembling and
//! running one process ([`app`]) and the projections' share of its CPU ([`budget`]), the startup checks ([`guard`]), its Prometheus metrics
//! ([`metrics`]), its listening socket ([`net`]), the sample event ([`sample`]) and the `analytics` command
//! ([`analytics_cli`]). The sides themselves live in
//! their own crates: `frontrow-schema` (the contract), `frontrow-journal` (the log),
//! `frontrow-command` (write side), `frontrow-query` (read side), `frontrow-http` (HTTP edge).

pub mod analytics_cli;
pub mod app;
pub mod budget;
pub mod guard;
pub mod metrics;
pub mod net;
pub mod sample;
pub mod settings;
pub mod telemetry;

pub use app::App;

/// The git commit this binary was built from (`unknown` outside a checkout; uncommitted changes
/// are not detected).
pub const BUILD_COMMIT: &str = env!("FRONTROW_GIT_COMMIT");

/// `frontrow --version`: the package version and the commit.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("FRONTROW_GIT_COMMIT"), ")");
pub use settings::Settings;
