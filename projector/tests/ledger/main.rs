//! The ledger conformance suite on SQLite and PostgreSQL, and the ledger's HTTP API.

mod conformance;
mod generate;
mod http;
mod postgres;
mod sqlite;
