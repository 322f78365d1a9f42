//! Measures how fast a ledger rebuild replays the log into PostgreSQL (or SQLite).
//!
//! ```sh
//! ./deploy/local/up.sh postgres
//! cargo run --release -p frontrow-projector --example rebuild_rate            # 1,000,000 records
//! cargo run --release -p frontrow-projector --example rebuild_rate -- 200000  # fewer
//! cargo run --release -p frontrow-projector --example rebuild_rate -- --sqlite # SQLite
//! ```
//!
//! It generates a realistic log with the real domain (`decide` + `apply`: 1,000 events, holds,
//! payments, late and failed payments, releases, expiries, cancellations) into an embedded
//! journal (kept in `target/rebuild-rate/<records>` and reused on later runs), then times
//! `rebuild`: replay into a fresh schema generation and promote it. The database is
//! `FRONTROW_DATABASE_URL` (default `postgres://frontrow:frontrow@127.0.0.1:5432/frontrow`);
//! `FRONTROW_REBUILD_BATCH` sets the records per batch (default 5000).
//!
//! `--sqlite` rebuilds into an embedded SQLite ledger instead (in a directory under
//! `target/rebuild-rate/`, deleted at the end), the ledger `frontrow serve` keeps on its embedded
//! defaults; its connections are this process's threads, so the process's CPU time (`time`)
//! is all of the ledger's work.

#[path = "../tests/ledger/generate.rs"]
#[expect(dead_code, reason = "shared with the tests, which use more of it")]
mod generate;

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use frontrow_journal::{Journal, SqliteJournal};
use frontrow_projector::{Ledger, PgLedger, SqliteLedger, rebuild};

/// The allocator the `frontrow` binary runs its rebuild with.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The rebuild's phases (indexes deferred, built, promoted) are logged at info.
    tracing_subscriber::fmt()
        .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "frontrow_projector=info".into()))
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sqlite = args.iter().any(|a| a == "--sqlite");
    let target: u64 = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let batch: usize = std::env::var("FRONTROW_REBUILD_BATCH")
        .ok()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(5000);
    let url = std::env::var("FRONTROW_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://frontrow:frontrow@127.0.0.1:5432/frontrow".to_owned());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/rebuild-rate")
        .join(target.to_string());
    std::fs::create_dir_all(&dir)?;
    let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::open(&dir.join("journal.db"), 8)?);
    let mut have = 0;
    for p in 0..journal.partitions() {
        have += journal.read(p, 0, usize::MAX >> 1).await?.records.len() as u64;
    }
    if have < target {
        anyhow::ensure!(have == 0, "{} holds a partial log; delete it", dir.display());
        let started = Instant::now();
        let mut g = generate::Generator::new(journal.clone(), 1000, 8, 20, 42).await;
        while g.records < target {
            let before = g.records;
            g.step(20_000).await;
            anyhow::ensure!(g.records > before, "the generator stopped making records");
        }
        have = g.records;
        println!("generated {have} records in {:.1}s", started.elapsed().as_secs_f64());
    }
    if sqlite {
        let ledger_dir = dir.join(format!("sqlite-ledger-{}", std::process::id()));
        let serving = SqliteLedger::open(&ledger_dir).await?;
        measure(journal, &serving, batch).await?;
        drop(serving);
        std::fs::remove_dir_all(&ledger_dir)?;
        return Ok(());
    }
    let schema = format!("bench_ledger_{}", std::process::id());
    let serving = PgLedger::connect(&url, &schema)
        .await
        .context("connecting to PostgreSQL")?;
    measure(journal, &serving, batch).await?;
    serving.drop_schema().await?;
    Ok(())
}

/// Rebuilds `serving` from `journal` and prints the rate and each table's rows.
async fn measure(journal: Arc<dyn Journal>, serving: &dyn Ledger, batch: usize) -> anyhow::Result<()> {
    let report = rebuild(journal, serving, batch).await?;
    println!(
        "rebuilt {} records into {} in {:.1}s: {:.0} records/s (batch {batch})",
        report.records,
        serving.describe(),
        report.elapsed.as_secs_f64(),
        report.records_per_second()
    );
    for table in frontrow_projector::rows::ALL_TABLES {
        let sql = format!("SELECT COUNT(*) FROM {}", table.name);
        let n = serving
            .query(&sql, vec![], &[frontrow_projector::rows::Ty::Int])
            .await?;
        println!("  {}: {} rows", table.name, n[0][0].as_int().unwrap_or(0));
    }
    Ok(())
}
