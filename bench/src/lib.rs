//! FrontRow's benchmark harness: FrontRow against the designs it replaces, in one run.
//!
//! A run starts each target in turn on loopback (an axum hello-world ceiling, FrontRow on its
//! embedded defaults, the naive PostgreSQL design and the Redis lock design), drives the
//! scenarios against it with the [`load`] generator (closed and open loop, HdrHistogram,
//! coordinated omission corrected), checks every race for oversold or lost seats, and writes a
//! JSON report with the ratios against the baselines plus a Markdown table ([`report`]).
//! `frontrow-bench smoke` is the seconds-long version the test suite runs; `frontrow-bench run`
//! is the full one.

pub mod baselines;
pub mod catalogue;
pub mod chaos;
pub mod child;
pub mod flash;
pub mod frontrow;
pub mod http1;
pub mod inside;
pub mod lean;
pub mod load;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod serve;
pub mod tools;
pub mod web;
pub mod workload;

pub use run::{Config, Results, run};

/// Runs `config` and writes its report; returns the results, the JSON path and the Markdown.
pub async fn run_and_report(config: &Config) -> anyhow::Result<(Results, std::path::PathBuf, String)> {
    let started = chrono::Utc::now();
    let results = run(config).await?;
    let (path, md) = report::write(config, &results, started)?;
    Ok((results, path, md))
}
