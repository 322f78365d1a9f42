//! `frontrow-bench`: `smoke` (seconds, small counts) or `run` (the full run, a few minutes).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use frontrow_bench::{Config, run_and_report};

#[derive(Parser)]
#[command(
    name = "frontrow-bench",
    about = "FrontRow against the designs it replaces, in one run"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(clap::Args)]
struct Common {
    /// PostgreSQL for the naive and lock baselines (loopback only). Without it both are skipped.
    #[arg(long, env = "FRONTROW_BENCH_DATABASE_URL")]
    database_url: Option<String>,
    /// Redis for the lock baseline (loopback only). Without it that baseline is skipped.
    #[arg(long, env = "FRONTROW_BENCH_REDIS_URL")]
    redis_url: Option<String>,
    /// Where the JSON and Markdown reports go.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Closed-loop clients (default: 16 smoke, 64 full).
    #[arg(long)]
    clients: Option<usize>,
    /// Connections in each database baseline's pool (the local cluster allows 100).
    #[arg(long)]
    pg_pool: Option<u32>,
    /// Seconds each closed-loop phase may last at most.
    #[arg(long)]
    phase_secs: Option<f64>,
    /// Only these scenarios, e.g. `--scenarios 3` or `--scenarios 0,1` (0 is the ceiling, 6 the
    /// web app in Chromium).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Fans in the flash crowd (scenario 3; default: 200 smoke, 10,000 full).
    #[arg(long)]
    fans: Option<usize>,
    /// Events of 20,008 seats in the catalogue (scenario 7; default: 4 smoke, 500 full).
    #[arg(long)]
    catalogue_events: Option<usize>,
    /// The `frontrow` binary the flash crowd runs as its server, in a child process (default
    /// for `run`: `frontrow` beside this executable; build it with `cargo build --release
    /// --bin frontrow`). `smoke` runs FrontRow in this process unless this is given.
    #[arg(long, conflicts_with = "in_process")]
    frontrow_bin: Option<PathBuf>,
    /// Run the flash crowd's FrontRow in this process (both ends of every connection then
    /// count against this process's descriptor limit).
    #[arg(long)]
    in_process: bool,
}

#[derive(clap::Args)]
struct Chaos {
    /// Seeds the fault schedule and the fans' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds of load (and faults).
    #[arg(long, default_value_t = 600)]
    duration: u64,
    /// Fans reserving and paying at once.
    #[arg(long, default_value_t = 8)]
    fans: usize,
    /// The `frontrow` binary the nodes run (default: beside this executable).
    #[arg(long)]
    frontrow_bin: Option<PathBuf>,
    /// PostgreSQL for the ledger (loopback only).
    #[arg(
        long,
        env = "FRONTROW_BENCH_DATABASE_URL",
        default_value = "postgres://frontrow:frontrow@127.0.0.1:5432/frontrow"
    )]
    database_url: String,
    /// The Kafka cluster (`deploy/local/up.sh kafka-cluster`).
    #[arg(long, default_value = frontrow_bench::chaos::CLUSTER_BROKERS)]
    brokers: String,
    /// Where the nodes' logs go (`<out>/chaos-<seed>/`).
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// The kinds of fault to inject, comma-separated: kill-command, kill-broker, pause-command.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "kill-command,kill-broker,pause-command"
    )]
    kinds: Vec<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// The chaos run: 3 command nodes behind HAProxy, a query node, a projector, 3 brokers,
    /// fans reserving and paying while a seeded schedule kills and pauses things.
    Chaos(Chaos),
    /// The full run (a few minutes).
    Run(Common),
    /// A few seconds with small counts: keeps the harness working.
    Smoke(Common),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FRONTROW_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,sqlx=error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let (mut config, common, full) = match Cli::parse().command {
        Cmd::Run(c) => (Config::full(), c, true),
        Cmd::Smoke(c) => (Config::smoke(), c, false),
        Cmd::Chaos(c) => return chaos(c).await,
    };
    config.database_url = common.database_url;
    config.redis_url = common.redis_url;
    config.out_dir = common.out;
    if let Some(c) = common.clients {
        config.clients = c;
    }
    if let Some(p) = common.pg_pool {
        config.pg_pool = p;
    }
    if let Some(s) = common.phase_secs {
        config.phase_s = s;
    }
    config.scenarios = common.scenarios;
    if let Some(f) = common.fans {
        config.flash.fans = f;
    }
    if let Some(n) = common.catalogue_events {
        config.catalogue.events = n.max(1);
    }
    config.flash.frontrow_bin = match common.frontrow_bin {
        Some(bin) => Some(bin),
        None if full && !common.in_process && (config.wants("3") || config.wants("7")) => {
            Some(frontrow_bench::child::default_binary()?)
        }
        None => None,
    };
    for url in config.database_url.iter().chain(&config.redis_url) {
        frontrow_bench::serve::require_loopback(url)?;
    }
    let (results, path, md) = run_and_report(&config).await?;
    println!("\n{md}");
    println!("report: {}", path.display());
    let failed: Vec<_> = results
        .checks
        .iter()
        .filter(|(_, c)| !c.passed)
        .map(|(n, _)| n)
        .chain(
            results
                .analytics_checks
                .iter()
                .filter(|(_, c)| !c.passed)
                .map(|(n, _)| n),
        )
        .collect();
    anyhow::ensure!(failed.is_empty(), "correctness checks failed: {failed:?}");
    let failed: Vec<_> = results
        .queue_checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name)
        .collect();
    anyhow::ensure!(failed.is_empty(), "waiting-room checks failed: {failed:?}");
    anyhow::ensure!(
        results.ledger_equals_log != Some(false),
        "the ledger does not equal the log"
    );
    Ok(())
}

async fn chaos(args: Chaos) -> anyhow::Result<()> {
    let config = frontrow_bench::chaos::ChaosConfig {
        seed: args.seed,
        duration: std::time::Duration::from_secs(args.duration),
        fans: args.fans.max(1),
        frontrow_bin: match args.frontrow_bin {
            Some(bin) => bin,
            None => frontrow_bench::child::default_binary()?,
        },
        database_url: args.database_url,
        brokers: args.brokers,
        deploy_dir: frontrow_bench::chaos::deploy_dir(),
        out_dir: args.out,
        kinds: args
            .kinds
            .iter()
            .map(|k| frontrow_bench::chaos::fault_kind(k).with_context(|| format!("no fault kind {k:?}")))
            .collect::<anyhow::Result<_>>()?,
    };
    let report = frontrow_bench::chaos::run(&config).await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    println!("{}", report.handover_summary());
    println!("{}", report.summary());
    anyhow::ensure!(report.passed(), "the chaos run found a loss or a disagreement");
    Ok(())
}
