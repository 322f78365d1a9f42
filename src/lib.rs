//! FrontRow: ticket booking for the onsales everyone wants at once.
//!
//! This crate is the `frontrow` binary's library: configuration ([`settings`]), assembling and
//! running one process ([`app`]), the startup checks ([`guard`]), the sample event ([`sample`]) and the `analytics` command
//! ([`analytics_cli`]). The sides themselves live in
//! their own crates: `frontrow-schema` (the contract), `frontrow-journal` (the log),
//! `frontrow-command` (write side), `frontrow-query` (read side), `frontrow-http` (HTTP edge).

pub mod analytics_cli;
pub mod app;
pub mod guard;
pub mod sample;
pub mod settings;

pub use app::App;
pub use settings::Settings;
