//! One harness run: start the targets one after another, drive every scenario against each,
//! check every race, and collect the figures for the report.
//!
//! Targets run one at a time (never two servers competing for the two cores), each on a
//! runtime of its own; the load generator runs on the harness's runtime.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::baselines::{self, Database};
use crate::catalogue::{CatalogueConfig, catalogue};
use crate::flash::{FlashConfig, QueueCheck, flash_crowd};
use crate::load::{Bounds, Job, Mode, Outcome, Stats, classify, drive};
use crate::scenarios::{databases, frontrow};
use crate::workload::{AnalyticsCheck, RaceCheck, arena_rows, seat_picks};

/// What a run does and how big it is.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// `smoke` or `full`.
    pub profile: &'static str,
    /// Closed-loop clients.
    pub clients: usize,
    /// Most reservation requests in a closed-loop race.
    pub reserve_requests: u64,
    /// Time limit of each closed-loop phase, seconds.
    pub phase_s: f64,
    /// Duration of each open-loop phase, seconds.
    pub open_s: f64,
    /// Rate of the background reservations while scenarios 2 and 4 run.
    pub background_rate: f64,
    /// Rate of the search requests (scenario 4).
    pub search_rate: f64,
    /// Customers (each request is one of them).
    pub customers: usize,
    /// PostgreSQL for the baselines (loopback only); `None` skips both database baselines.
    pub database_url: Option<String>,
    /// Redis for the lock baseline (loopback only); `None` skips it.
    pub redis_url: Option<String>,
    /// Connections in each database baseline's pool.
    pub pg_pool: u32,
    /// Scenario 3, the flash crowd.
    pub flash: FlashConfig,
    /// Scenario 7, the catalogue (in the child process scenario 3's `frontrow_bin` names).
    pub catalogue: CatalogueConfig,
    /// Scenario 6: page loads timed to `map-drawn`.
    pub web_loads: usize,
    /// Scenario 6: reservations (one seat each, so one stream delta each) per second while the
    /// page is open, for `open_s` seconds.
    pub web_delta_rate: f64,
    /// Scenario numbers to run (`0` the ceiling, `1`-`7`); empty: all.
    pub scenarios: Vec<String>,
    #[serde(skip)]
    pub out_dir: PathBuf,
}

impl Config {
    pub fn smoke() -> Self {
        Self {
            profile: "smoke",
            clients: 16,
            reserve_requests: 1000,
            phase_s: 1.5,
            open_s: 1.0,
            background_rate: 100.0,
            search_rate: 50.0,
            customers: 200,
            database_url: None,
            redis_url: None,
            pg_pool: 16,
            flash: FlashConfig::smoke(),
            catalogue: CatalogueConfig::smoke(),
            web_loads: 3,
            web_delta_rate: 1000.0,
            scenarios: Vec::new(),
            out_dir: PathBuf::from("target/bench"),
        }
    }

    pub fn full() -> Self {
        Self {
            profile: "full",
            clients: 64,
            reserve_requests: 40_000,
            phase_s: 15.0,
            open_s: 10.0,
            background_rate: 500.0,
            search_rate: 200.0,
            customers: 2000,
            database_url: None,
            redis_url: None,
            pg_pool: 16,
            flash: FlashConfig::full(),
            catalogue: CatalogueConfig::full(),
            web_loads: 10,
            web_delta_rate: 1000.0,
            scenarios: Vec::new(),
            out_dir: PathBuf::from("target/bench"),
        }
    }

    /// Whether scenario `n` (`"0"`..`"5"`) is to run.
    pub fn wants(&self, n: &str) -> bool {
        self.scenarios.is_empty() || self.scenarios.iter().any(|s| s == n)
    }

    pub(crate) fn closed(&self, requests: u64) -> (Mode, Bounds) {
        (
            Mode::Closed { clients: self.clients },
            Bounds {
                max_requests: requests,
                max_time: Duration::from_secs_f64(self.phase_s),
            },
        )
    }

    pub(crate) fn open(&self, rate: f64) -> (Mode, Bounds) {
        (
            Mode::Open {
                rate,
                max_in_flight: 4096,
            },
            Bounds {
                max_requests: (rate * self.open_s).ceil() as u64 + 1,
                max_time: Duration::from_secs_f64(self.open_s),
            },
        )
    }
}

/// One measured phase.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// `1-hot-onsale`, `2-availability`, ...
    pub scenario: &'static str,
    pub target: &'static str,
    pub phase: &'static str,
    #[serde(flatten)]
    pub stats: Stats,
    /// Anything else the phase counted (e.g. how many answers were `304`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// A scenario the harness knows but cannot run on this build.
#[derive(Debug, Clone, Serialize)]
pub struct Unavailable {
    pub scenario: &'static str,
    pub reason: &'static str,
}

/// Everything one run measured and checked.
#[derive(Debug, Default, Serialize)]
pub struct Results {
    pub measurements: Vec<Measurement>,
    pub checks: Vec<(String, RaceCheck)>,
    pub rebuild: Option<Value>,
    pub ledger_equals_log: Option<bool>,
    /// Scenario 5's analytics replay of the journal (`frontrow analytics`' code): its rate.
    pub analytics: Option<Value>,
    /// Per FrontRow race: the replay's figures of its event against what the race observed.
    pub analytics_checks: Vec<(String, AnalyticsCheck)>,
    pub unavailable: Vec<Unavailable>,
    pub skipped_baselines: Vec<String>,
    /// Scenario 3's figures beyond the join latencies (SSE streams held, memory per stream).
    pub flash_crowd: Option<Value>,
    /// Scenario 3's checks: tickets, and admissions in queue order.
    pub queue_checks: Vec<QueueCheck>,
    /// Scenario 6's figures: navigation to a drawn map, delta-to-pixel latency.
    pub web: Option<Value>,
    /// Scenario 7's figures: memory and disk per seat, restart times.
    pub catalogue: Option<Value>,
    /// The standard tools run beside the harness: `wrk` on the ceiling, `redis-benchmark` and
    /// `pgbench` on the parts of the database baselines ([`crate::tools`]).
    pub tools: Vec<crate::tools::ToolFigure>,
}

impl Results {
    pub(crate) fn push(&mut self, scenario: &'static str, target: &'static str, phase: &'static str, stats: Stats) {
        self.push_extra(scenario, target, phase, stats, None);
    }

    pub(crate) fn push_extra(
        &mut self,
        scenario: &'static str,
        target: &'static str,
        phase: &'static str,
        stats: Stats,
        extra: Option<Value>,
    ) {
        println!(
            "  {scenario:<16} {target:<10} {phase:<26} {:>9.0}/s  p50 {:>7.2} ms  p99 {:>7.2} ms  errors {}  shed {}",
            stats.throughput, stats.p50_ms, stats.p99_ms, stats.errors, stats.shed
        );
        self.measurements.push(Measurement {
            scenario,
            target,
            phase,
            stats,
            extra,
        });
    }

    /// The phase's measurement, if it ran.
    fn measurement(&self, scenario: &str, target: &str, phase: &str) -> Option<&Measurement> {
        self.measurements
            .iter()
            .find(|m| m.scenario == scenario && m.target == target && m.phase == phase)
    }

    pub fn find(&self, scenario: &str, target: &str, phase: &str) -> Option<&Stats> {
        self.measurement(scenario, target, phase).map(|m| &m.stats)
    }

    /// What else a phase counted (its `extra`), if it ran and counted anything.
    pub fn find_extra(&self, scenario: &str, target: &str, phase: &str) -> Option<&Value> {
        self.measurement(scenario, target, phase).and_then(|m| m.extra.as_ref())
    }
}

/// The scenarios the harness lists, and the ones this build cannot run yet.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "1-hot-onsale",
        "clients race to reserve in one event, then pay through the simulated provider",
    ),
    (
        "2-availability",
        "availability map reads (full and 304) while reservations run",
    ),
    (
        "3-flash-crowd",
        "waiting-room joins ramping to 10,000 connections in one second",
    ),
    ("4-search", "GET /search at a fixed rate while reservations run"),
    ("5-replay", "projector rebuild rate and analytics replay rate"),
    (
        "6-web",
        "the fan web app in headless Chromium: navigation to a drawn 20,008-seat map, delta-to-pixel latency at 1,000 deltas/s",
    ),
    (
        "7-catalogue",
        "500 events of 20,008 seats (10 million) through the API: RSS and disk per seat, restart to /ready",
    ),
];

pub(crate) fn client(pool: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(pool)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client without TLS builds")
}

/// Runs everything `config` asks for.
pub async fn run(config: &Config) -> anyhow::Result<Results> {
    let mut results = Results::default();
    let rows = arena_rows();
    let capacity: usize = rows.iter().map(Vec::len).sum();
    let picks = Arc::new(seat_picks(&rows, config.reserve_requests as usize, 42));

    if config.wants("0") {
        ceiling(config, &mut results, CEILING_FIRST).await?;
    }
    if ["1", "2", "4", "5"].iter().any(|n| config.wants(n)) {
        frontrow(config, &mut results, capacity, picks.clone()).await?;
    }
    if config.wants("3") {
        flash_crowd(config, &mut results).await?;
    }
    if config.wants("6") {
        crate::web::web(config, &mut results).await?;
    }
    if config.wants("7") {
        catalogue(config, &mut results).await?;
    }

    match &config.database_url {
        _ if !config.wants("1") => {}
        Some(url) => {
            let db = Database::create(url, &format!("frontrow_bench_{}", std::process::id())).await?;
            let outcome = databases(config, &mut results, &db, capacity, &rows, picks.clone()).await;
            db.drop().await?;
            outcome?;
        }
        None => results
            .skipped_baselines
            .push("naive-pg and redis-lock: no --database-url".into()),
    }
    if config.wants("0") {
        ceiling(config, &mut results, CEILING_LAST).await?;
    }
    Ok(results)
}

/// The ceiling is measured first and last: the machine is shared, and the mean of the two
/// brackets what the targets in between had.
pub const CEILING_FIRST: &str = "GET /hello (first)";
pub const CEILING_LAST: &str = "GET /hello (last)";

/// The hello-world ceiling of reqwest, the client FrontRow's phases still use (measured once,
/// in the first ceiling): their ratios to hello-world are fair against this one.
pub const CEILING_REQWEST: &str = "GET /hello (reqwest)";

/// FrontRow's `/health` in the process under test: see [`health_ceiling`].
pub const CEILING_HEALTH: &str = "GET /health (same process)";

/// Measures the hello-world ceiling as phase `phase`: the harness's lean client in the closed
/// loop, then `wrk` with as many connections on the same server (the yardstick for the client
/// itself: [`crate::report`] gives the harness/wrk ratio), and in the first ceiling reqwest too.
async fn ceiling(config: &Config, results: &mut Results, phase: &'static str) -> anyhow::Result<()> {
    println!("hello-world ceiling");
    let hello = baselines::hello().await?;
    let job = get_job(hello.addr, "/hello", |body| body == b"Hello, World!");
    let (mode, bounds) = config.closed(u64::MAX);
    results.push("0-ceiling", "hello", phase, drive(mode, bounds, job).await);
    wrk_phase(config, results, &hello.url("/hello"), "hello", phase).await;

    if phase == CEILING_FIRST {
        let http = client(config.clients * 2);
        let url = hello.url("/hello");
        let job: Job = Arc::new(move |_| {
            let (http, url) = (http.clone(), url.clone());
            Box::pin(async move {
                match http.get(&url).send().await {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        match r.bytes().await {
                            Ok(b) if b.as_ref() == b"Hello, World!" => classify(status, &[200], &[]),
                            _ => Outcome::Error,
                        }
                    }
                    Err(_) => Outcome::Error,
                }
            })
        });
        let (mode, bounds) = config.closed(u64::MAX);
        results.push("0-ceiling", "hello", CEILING_REQWEST, drive(mode, bounds, job).await);
    }
    hello.stop().await
}

/// FrontRow's own `GET /health`, measured in the process that then serves the reserves and the
/// maps: the ceiling the issue's throughput targets are ratios of ("the same-process `/health`
/// ceiling under wrk"). The lean client's rate is the ratios' denominator (the reserves and the
/// maps go through the same client); wrk's is reported beside it. The bare hello-world server
/// has no middleware at all, so the ratios to it are reported too, as the stricter yardstick.
pub(crate) async fn health_ceiling(config: &Config, results: &mut Results, addr: SocketAddr) {
    println!("FrontRow's /health ceiling (same process)");
    let job = get_job(addr, "/health", |body| body == br#"{"status":"ok"}"#);
    let (mode, bounds) = config.closed(u64::MAX);
    results.push("0-ceiling", "frontrow", CEILING_HEALTH, drive(mode, bounds, job).await);
    let url = format!("http://{addr}/health");
    wrk_phase(config, results, &url, "frontrow", CEILING_HEALTH).await;
}

/// A closed-loop job of `GET path` on the lean client: a `200` whose body passes `expected`.
fn get_job(addr: SocketAddr, path: &str, expected: fn(&[u8]) -> bool) -> Job {
    let lean = Arc::new(crate::http1::Client::new(addr));
    let request: Arc<[u8]> = lean.request("GET", path, &[], b"").into();
    Arc::new(move |_| {
        let (lean, request) = (lean.clone(), request.clone());
        Box::pin(async move {
            match lean.send(&request).await {
                Ok((status, body)) if expected(&body) => classify(status, &[200], &[]),
                _ => Outcome::Error,
            }
        })
    })
}

/// wrk on `url` with as many connections as the closed loop, as `phase` of `target`.
async fn wrk_phase(config: &Config, results: &mut Results, url: &str, target: &'static str, phase: &str) {
    let figure = crate::tools::wrk(url, target, config.clients, config.phase_s, phase).await;
    match figure.rate_per_s {
        Some(rate) => println!("  0-ceiling        wrk        {phase:<26} {rate:>9.0}/s"),
        None => println!("  0-ceiling        wrk        {phase:<26} {}", figure.note),
    }
    results.tools.push(figure);
}
