//! Scenario 7, the catalogue: many large events in one `frontrow serve` node, built through the
//! API, and what they cost in memory, on disk and in restart time.
//!
//! The real binary runs in a child process ([`crate::child`]) on its embedded defaults. The
//! harness creates `events` events with the 20,008-seat arena map (`POST /events`, a few at a
//! time), reading the child's `VmRSS` as it goes and until its projections (ledger, search
//! index, maps: `frontrow_follower_lag_records` on `/metrics`) have caught up; then it stops the child gracefully (SIGTERM:
//! writers leave snapshots) and reads the data directory's size, starts it again on the same data
//! and times the start to the first `200` of `/ready`; then the same after `kill -9`. After
//! each start it reads the child's memory at `/ready` and two seconds later, and checks that
//! `/ready` was honest: at the moment it first answered `200`, the catalogue listed every
//! event and the newest event's map was there in full (a node must not say ready while its
//! maps are still loading). Bytes per seat are the child's whole RSS (and its growth since
//! before the first event) over the seats created.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};

use crate::child::ChildFrontRow;
use crate::run::{Config, Results, Unavailable, client};
use crate::scenarios::post_event;

/// The catalogue's size.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogueConfig {
    /// Events of 20,008 seats each.
    pub events: usize,
    /// Creations in flight at once.
    pub concurrency: usize,
}

impl CatalogueConfig {
    pub fn smoke() -> Self {
        Self {
            events: 4,
            concurrency: 2,
        }
    }

    pub fn full() -> Self {
        Self {
            events: 500,
            concurrency: 4,
        }
    }
}

/// How long the projections may take to catch up with the catalogue.
const PROJECTED_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a restarted child may take to say `/ready` before the scenario gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Memory is read again this long after `/ready`.
const SETTLE: Duration = Duration::from_secs(2);

/// One start of the child on the catalogue's data.
#[derive(Debug, Clone, Serialize)]
struct Start {
    how: &'static str,
    /// From spawning the process to its first `200` on `/ready`.
    ready_s: f64,
    rss_at_ready_mib: f64,
    rss_settled_mib: f64,
    bytes_per_seat_settled: f64,
    /// At the first `200` of `/ready`: every event listed and the newest one's map complete.
    loaded_at_ready: bool,
    loaded_detail: String,
}

pub async fn catalogue(config: &Config, results: &mut Results) -> anyhow::Result<()> {
    let Some(binary) = config.flash.frontrow_bin.clone() else {
        results.unavailable.push(Unavailable {
            scenario: "7-catalogue",
            reason: "needs the frontrow binary in a child process (--frontrow-bin, or a full run)",
        });
        return Ok(());
    };
    let cat = &config.catalogue;
    println!("catalogue: {} events of 20,008 seats through the API", cat.events);
    let mut child = ChildFrontRow::start(&binary).await?;
    let http = client(cat.concurrency * 2);
    let rss_before = child.rss_kib().unwrap_or(0);
    let (ids, created_s, rss_peak) = create_all(&child, &http, cat).await?;
    let seats = (ids.len() * 20_008) as f64;
    let newest = ids.last().context("no event created")?.clone();
    let rss_created = child.rss_kib().unwrap_or(0);
    // The ledger and the search index follow the log: until they have caught up the
    // catalogue is not built, and stopping earlier would leave their work to the restart.
    let (projected_s, projecting_peak) = projected(&child, &http, PROJECTED_TIMEOUT).await?;
    let rss_projected = child.rss_kib().unwrap_or(0);
    let rss_peak = rss_peak.max(projecting_peak);
    let mib = |kib: u64| kib as f64 / 1024.0;
    let per_seat = |kib: u64| kib as f64 * 1024.0 / seats;
    let graceful = child.stop().await?;
    // Measured once the node has stopped: what its projectors were still writing is written.
    let disk = child.data_dir_bytes();
    println!(
        "  created in {created_s:.1} s; RSS {:.0} MiB ({:.1} B/seat), data {:.0} MiB ({:.1} B/seat)",
        mib(rss_created),
        per_seat(rss_created),
        disk as f64 / 1048576.0,
        disk as f64 / seats
    );
    let after_stop = restart(&mut child, &http, "after a graceful stop", ids.len(), &newest, seats).await?;
    child.kill().await?;
    let after_kill = restart(&mut child, &http, "after kill -9", ids.len(), &newest, seats).await?;
    child.stop().await?;
    results.catalogue = Some(json!({
        "events": ids.len(),
        "seats": seats,
        "create_s": created_s,
        "events_per_s": ids.len() as f64 / created_s,
        "rss_before_mib": mib(rss_before),
        "rss_peak_while_creating_mib": mib(rss_peak),
        "rss_created_mib": mib(rss_created),
        "projected_s": projected_s,
        "rss_projected_mib": mib(rss_projected),
        "bytes_per_seat_peak": per_seat(rss_peak),
        "bytes_per_seat_created": per_seat(rss_created),
        "growth_bytes_per_seat": per_seat(rss_created.saturating_sub(rss_before)),
        "data_dir_bytes": disk,
        "data_dir_bytes_per_seat": disk as f64 / seats,
        "stopped_gracefully": graceful,
        "starts": [after_stop, after_kill],
    }));
    Ok(())
}

/// Creates the events, a few at a time, reading the child's memory as they go; returns their
/// ids in creation order, the seconds it took (until the newest is readable) and the peak RSS.
async fn create_all(
    child: &ChildFrontRow,
    http: &reqwest::Client,
    cat: &CatalogueConfig,
) -> anyhow::Result<(Vec<String>, f64, u64)> {
    let base = format!("http://{}", child.addr);
    let onsale = chrono::Utc::now() + chrono::Duration::days(1);
    let started = Instant::now();
    let mut peak = 0;
    let mut created = futures::stream::iter(0..cat.events)
        .map(|i| {
            let (http, base) = (http.clone(), base.clone());
            async move {
                let title = format!("Catalogue night {i}");
                post_event(&http, &base, &title, "The Catalogue", "Lyon", onsale).await
            }
        })
        .buffered(cat.concurrency);
    let mut ids = Vec::with_capacity(cat.events);
    while let Some(written) = created.next().await {
        let written = written?;
        ids.push(written["event_id"].as_str().context("no event_id")?.to_owned());
        peak = peak.max(child.rss_kib().unwrap_or(0));
    }
    let last = ids.last().context("no event created")?;
    // The maps follow the log: under load they may trail the creations by more than one wait.
    loop {
        let res = http
            .get(format!("{base}/events/{last}/availability?wait_ms=10000"))
            .send()
            .await?;
        if res.status() == 200 {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < PROJECTED_TIMEOUT,
            "the newest event is not readable: {}",
            res.status()
        );
    }
    peak = peak.max(child.rss_kib().unwrap_or(0));
    Ok((ids, started.elapsed().as_secs_f64(), peak))
}

/// Starts the child again and measures the start.
async fn restart(
    child: &mut ChildFrontRow,
    http: &reqwest::Client,
    how: &'static str,
    events: usize,
    newest: &str,
    seats: f64,
) -> anyhow::Result<Start> {
    let spawned = Instant::now();
    child.restart().await?;
    let base = format!("http://{}", child.addr);
    loop {
        let ready = http.get(format!("{base}/ready")).send().await;
        if ready.is_ok_and(|r| r.status() == 200) {
            break;
        }
        anyhow::ensure!(
            spawned.elapsed() < READY_TIMEOUT,
            "not ready within {READY_TIMEOUT:?} {how}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ready_s = spawned.elapsed().as_secs_f64();
    let rss_at_ready = child.rss_kib().unwrap_or(0);
    let (loaded_at_ready, loaded_detail) = loaded(http, &base, events, newest).await?;
    tokio::time::sleep(SETTLE).await;
    let rss_settled = child.rss_kib().unwrap_or(0);
    println!(
        "  ready {ready_s:.2} s {how}; RSS {:.0} MiB at ready, {:.0} MiB 2 s later; loaded: {loaded_detail}",
        rss_at_ready as f64 / 1024.0,
        rss_settled as f64 / 1024.0
    );
    Ok(Start {
        how,
        ready_s,
        rss_at_ready_mib: rss_at_ready as f64 / 1024.0,
        rss_settled_mib: rss_settled as f64 / 1024.0,
        bytes_per_seat_settled: rss_settled as f64 * 1024.0 / seats,
        loaded_at_ready,
        loaded_detail,
    })
}

/// Whether the node, just ready, lists every event and has the newest one's map in full.
async fn loaded(http: &reqwest::Client, base: &str, events: usize, newest: &str) -> anyhow::Result<(bool, String)> {
    let listed: Value = http.get(format!("{base}/events?limit=1")).send().await?.json().await?;
    let listed = listed["total"].as_u64().map_or(0, |n| n as usize);
    let map = http.get(format!("{base}/events/{newest}/availability")).send().await?;
    let status = map.status().as_u16();
    let available = if status == 200 {
        let map: Value = map.json().await?;
        map["seats"]["available"].as_u64()
    } else {
        None
    };
    let ok = listed == events && available == Some(20_008);
    Ok((
        ok,
        format!("{listed} of {events} events listed; newest map {status}, {available:?} seats available"),
    ))
}

/// Waits until every follower that reports its lag (the ledger projector, the search
/// projector, the query node's maps) is at the end of its partition, from `/metrics`; returns
/// the seconds waited and the child's peak RSS meanwhile (KiB).
async fn projected(child: &ChildFrontRow, http: &reqwest::Client, limit: Duration) -> anyhow::Result<(f64, u64)> {
    let started = Instant::now();
    let mut peak = 0;
    loop {
        peak = peak.max(child.rss_kib().unwrap_or(0));
        let metrics = crate::inside::scrape(http, &format!("http://{}", child.addr)).await?;
        let lags: Vec<f64> = metrics
            .lines()
            .filter(|l| l.starts_with("frontrow_follower_lag_records{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        if !lags.is_empty() && lags.iter().all(|&lag| lag == 0.0) {
            return Ok((started.elapsed().as_secs_f64(), peak));
        }
        anyhow::ensure!(
            started.elapsed() < limit,
            "the projections did not catch up within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
