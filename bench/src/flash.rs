//! Scenario 3, the flash crowd: a waiting room opened before the onsale, fans arriving on an
//! open-loop ramp, every fan then holding its status stream (`GET …/queue/me/stream`, SSE) open
//! on the same connection, and the onsale letting them in.
//!
//! Each fan is one TCP connection of its own, opened at the fan's intended arrival time: a
//! `POST …/queue/join` with its own customer token, then on the same keep-alive connection the
//! status stream (`?after=` the join's position: the query side answers once it has applied
//! the join), read until the scenario ends. Arrivals ramp linearly in rate from 0 over
//! `ramp_s` (fan `i` of `n` is due at `ramp_s * sqrt(i / n)`), so the peak rate is twice the
//! mean. Join latency is measured from the intended arrival (coordinated omission corrected)
//! and includes the TCP connect. The client side is a hand-rolled HTTP/1.1 reader on a bare
//! `TcpStream` with a small buffer, so that the process's memory growth is mostly the server's.
//!
//! FrontRow runs in a child process of its own for the full run: the real `frontrow serve`
//! binary ([`crate::child`]), so that each connection costs one file descriptor on each side
//! and the server's memory is its own. Memory per connection is the child's `VmRSS` (from
//! `/proc/<pid>/status`) two seconds after every stream is held (the server's allocator
//! returns the pages the joins freed after a second) minus before the first join, over the
//! streams held; the figure the moment the last stream opened is reported beside it. The smoke
//! run keeps FrontRow in this process (no binary to find): there each connection costs two
//! descriptors here and the memory figure is the whole process's, an upper bound that includes
//! the (small) client side. Either way the harness raises the soft `RLIMIT_NOFILE` to the hard
//! limit before FrontRow starts (a child inherits it), clamps the crowd to what the limits
//! allow, and says so.
//!
//! After the onsale the writer draws the lottery and admits fans in queue order up to
//! `max_shoppers`; a few admitted fans then reserve two seats and pay, which spends their
//! admissions and lets the next fans in. Checks: every join got a distinct ticket (and the
//! one the log recorded), joining again answers the same ticket (spot check), the admissions
//! in the log follow the queue order (`lottery_order` of the recorded seed over the pre-queue,
//! then later joins first come first served), and the admissions the fans saw over their
//! streams are the logged ones, a prefix of the queue order, seen in queue order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use frontrow_http::auth::Auth;
use frontrow_journal::{Journal, Position};
use frontrow_schema::{Event, EventId, QueueEvent, decode, lottery_order};
use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::child::{ChildFrontRow, load_average, proc_cpu_s, proc_status_kib};
use crate::frontrow::{FrontRow, ORGANIZER_KEY};
use crate::http1::Conn;
use crate::load::{Mode, Stats};
use crate::run::{Config, Results, client};
use crate::scenarios::post_event;
use crate::workload::tokens;

/// The flash crowd's size and pace.
#[derive(Debug, Clone, Serialize)]
pub struct FlashConfig {
    /// Fans wanted (clamped to what the file-descriptor limit allows).
    pub fans: usize,
    /// The arrivals ramp over this many seconds.
    pub ramp_s: f64,
    /// The onsale is this many seconds after the event is created.
    pub onsale_after_s: f64,
    /// The waiting room's `max_shoppers`.
    pub max_shoppers: u32,
    /// Admitted fans who then reserve two seats and pay.
    pub buyers: usize,
    /// The `frontrow` binary to run as the server, in a child process of its own; `None` runs
    /// FrontRow in this process (both ends of every connection then count against this
    /// process's descriptor limit, and its memory is mixed with the harness's).
    pub frontrow_bin: Option<PathBuf>,
}

impl FlashConfig {
    pub fn smoke() -> Self {
        Self {
            fans: 200,
            ramp_s: 0.5,
            onsale_after_s: 4.0,
            max_shoppers: 20,
            buyers: 4,
            frontrow_bin: None,
        }
    }

    pub fn full() -> Self {
        Self {
            fans: 10_000,
            ramp_s: 1.0,
            onsale_after_s: 25.0,
            max_shoppers: 500,
            buyers: 25,
            frontrow_bin: None,
        }
    }
}

/// One correctness check of the waiting room.
#[derive(Debug, Clone, Serialize)]
pub struct QueueCheck {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// How long after the last status stream opened the server's memory is read.
const SETTLE: Duration = Duration::from_secs(2);

/// File descriptors kept aside for everything but the crowd (journal, ledger, index, pools).
const FD_RESERVE: u64 = 1024;

/// Raises `RLIMIT_NOFILE` for what `fans` connections need (`per_fan` descriptors each in this
/// process): the soft limit to the hard one, or beyond it when privileged; returns the soft
/// limit in force and what was done.
fn raise_fd_limit(fans: usize, per_fan: u64) -> (u64, String) {
    let want = per_fan * fans as u64 + FD_RESERVE;
    let Ok((soft, hard)) = rlimit::Resource::NOFILE.get() else {
        return (1024, "could not read RLIMIT_NOFILE; assuming 1024".into());
    };
    let mut note = format!("RLIMIT_NOFILE was {soft} (hard {hard})");
    if soft >= want {
        return (soft, note);
    }
    if want > hard && rlimit::setrlimit(rlimit::Resource::NOFILE, want, want).is_ok() {
        note.push_str(&format!("; raised soft and hard to {want} (privileged)"));
        return (want, note);
    }
    let target = hard;
    if target <= soft {
        note.push_str(&format!(
            "; the soft limit is the hard limit (raising the hard limit to {want} was refused)"
        ));
        return (soft, note);
    }
    match rlimit::setrlimit(rlimit::Resource::NOFILE, target, hard) {
        Ok(()) => {
            note.push_str(&format!("; raised the soft limit to {target}"));
            (target, note)
        }
        Err(e) => {
            note.push_str(&format!("; raising it failed: {e}"));
            (soft, note)
        }
    }
}

/// This process's resident memory, KiB.
fn rss_kib() -> u64 {
    proc_status_kib(std::process::id(), "VmRSS:").unwrap_or(0)
}

/// The FrontRow the crowd arrives at.
enum Target {
    InProcess(FrontRow),
    Child(ChildFrontRow),
}

impl Target {
    fn addr(&self) -> SocketAddr {
        match self {
            Target::InProcess(fr) => fr.served.addr,
            Target::Child(c) => c.addr,
        }
    }

    fn auth(&self) -> &Auth {
        match self {
            Target::InProcess(fr) => &fr.auth,
            Target::Child(c) => &c.auth,
        }
    }

    /// The server's resident memory, KiB (in-process: the whole harness's).
    fn rss_kib(&self) -> u64 {
        match self {
            Target::InProcess(_) => rss_kib(),
            Target::Child(c) => c.rss_kib().unwrap_or(0),
        }
    }
}

/// What one fan got.
#[derive(Debug, Default, Clone)]
struct Seen {
    ticket: Option<u64>,
    /// The stream's version when it first said `admitted`, and the admission token.
    admitted: Option<(u64, String)>,
    statuses: u32,
}

struct Shared {
    histogram: Mutex<Histogram<u64>>,
    ok: AtomicU64,
    shed: AtomicU64,
    errors: AtomicU64,
    /// Answers by status (and transport errors), for the report.
    answers: Mutex<BTreeMap<String, u64>>,
    joins_done: AtomicUsize,
    last_join: Mutex<Option<Instant>>,
    streams_open: AtomicUsize,
    streams_peak: AtomicUsize,
    stream_failures: AtomicUsize,
    /// Status streams answered `503 position-not-visible` (the query side had not applied the
    /// join within the stream request's `wait_ms`) and asked for again.
    stream_retries: AtomicUsize,
    fans: Vec<Mutex<Seen>>,
}

impl Shared {
    fn answer(&self, what: String) {
        *self.answers.lock().expect("answers").entry(what).or_default() += 1;
    }
}

/// How a refused join is counted: its status and, from its problem+json body, its type, so
/// the report says why (`503 urn:frontrow:problem:overloaded`: the event's writer's mailbox
/// was full); the status alone when the body is not a problem.
fn refusal(status: u16, body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|p| p["type"].as_str().map(|t| format!("{status} {t}")))
        .unwrap_or_else(|| status.to_string())
}

struct Fan {
    i: usize,
    intended: Instant,
    addr: SocketAddr,
    event: String,
    token: String,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
}

impl Fan {
    async fn run(mut self) {
        let (outcome, conn) = self.join().await;
        let us = (self.intended.elapsed().as_micros() as u64).clamp(1, 300_000_000);
        let _ = self.shared.histogram.lock().expect("histogram").record(us);
        *self.shared.last_join.lock().expect("last join") = Some(Instant::now());
        self.shared.joins_done.fetch_add(1, Ordering::Relaxed);
        let counter = match &outcome {
            Ok(_) => &self.shared.ok,
            Err(status) if *status == 503 || *status == 429 => &self.shared.shed,
            Err(_) => &self.shared.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if let (Ok((ticket, position)), Some(conn)) = (outcome, conn) {
            self.shared.fans[self.i].lock().expect("fan").ticket = Some(ticket);
            if let Err(e) = self.stream(conn, &position).await {
                self.shared.stream_failures.fetch_add(1, Ordering::Relaxed);
                self.shared.answer(format!("stream: {e}"));
            }
        }
    }

    /// Connects and joins; the ticket and the join's log position, or the status (0: transport
    /// error).
    async fn join(&self) -> (Result<(u64, String), u16>, Option<Conn>) {
        let stream = match TcpStream::connect(self.addr).await {
            Ok(s) => s,
            Err(e) => {
                self.shared.answer(format!("connect: {}", e.kind()));
                return (Err(0), None);
            }
        };
        let _ = stream.set_nodelay(true);
        let mut conn = Conn {
            stream,
            buf: Vec::with_capacity(1024),
        };
        let request = format!(
            "POST /events/{}/queue/join HTTP/1.1\r\nhost: bench\r\nauthorization: Bearer {}\r\ncontent-length: 0\r\n\r\n",
            self.event, self.token
        );
        let answer = async {
            conn.send(&request).await?;
            let (status, length, _) = conn.head().await?;
            let body = conn.body(length.context("join answer without content-length")?).await?;
            anyhow::Ok((status, body))
        }
        .await;
        match answer {
            Ok((201, body)) => {
                self.shared.answer("201".into());
                let answer = serde_json::from_slice::<Value>(&body).unwrap_or_default();
                match (answer["ticket"].as_u64(), answer["position"].as_str()) {
                    (Some(ticket), Some(position)) => (Ok((ticket, position.to_owned())), Some(conn)),
                    _ => (Err(201), None),
                }
            }
            Ok((status, body)) => {
                self.shared.answer(refusal(status, &body));
                (Err(status), None)
            }
            Err(e) => {
                self.shared.answer(format!("join: {e}"));
                (Err(0), None)
            }
        }
    }

    /// Opens the status stream on the joined connection, after the join's `position` (so the
    /// query side answers once it has applied the join), and reads it until told to stop.
    async fn stream(&mut self, mut conn: Conn, position: &str) -> anyhow::Result<()> {
        let request = format!(
            "GET /events/{}/queue/me/stream?after={position}&wait_ms=10000 HTTP/1.1\r\nhost: bench\r\nauthorization: Bearer {}\r\naccept: text/event-stream\r\n\r\n",
            self.event, self.token
        );
        // Should the query side not have applied the join in time after all: `503
        // position-not-visible`, asked for again (and counted).
        let mut tries = 0;
        loop {
            conn.send(&request).await?;
            let (status, length, chunked) = conn.head().await?;
            if status == 200 {
                anyhow::ensure!(chunked, "the stream is not chunked");
                break;
            }
            conn.body(length.unwrap_or(0)).await?;
            tries += 1;
            anyhow::ensure!(status == 503 && tries < 200, "stream answered {status}");
            self.shared.stream_retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut counted = false;
        let mut text = String::new();
        let result = loop {
            // De-chunk whatever is buffered, then take the complete SSE frames.
            while let Some(eol) = conn.buf.windows(2).position(|w| w == b"\r\n") {
                let size_text = String::from_utf8_lossy(&conn.buf[..eol]).into_owned();
                let size_text = size_text.split(';').next().unwrap_or("").trim();
                let Ok(size) = usize::from_str_radix(size_text, 16) else {
                    return Err(anyhow::anyhow!("bad chunk size {size_text:?}"));
                };
                if conn.buf.len() < eol + 2 + size + 2 {
                    break;
                }
                if size == 0 {
                    return Ok(());
                }
                text.push_str(&String::from_utf8_lossy(&conn.buf[eol + 2..eol + 2 + size]));
                conn.buf.drain(..eol + 2 + size + 2);
            }
            while let Some(end) = text.find("\n\n") {
                let frame: String = text.drain(..end + 2).collect();
                let (mut event, mut data) = ("", String::new());
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = if v.trim() == "status" { "status" } else { "other" };
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if event != "status" {
                    continue;
                }
                let status: Value = serde_json::from_str(&data).context("status data")?;
                if !counted {
                    counted = true;
                    let open = self.shared.streams_open.fetch_add(1, Ordering::Relaxed) + 1;
                    self.shared.streams_peak.fetch_max(open, Ordering::Relaxed);
                }
                let mut seen = self.shared.fans[self.i].lock().expect("fan");
                seen.statuses += 1;
                if status["status"] == "admitted" && seen.admitted.is_none() {
                    let version: Position = status["version"]
                        .as_str()
                        .unwrap_or_default()
                        .parse()
                        .map_err(|e: String| anyhow::anyhow!(e))?;
                    let token = status["admission_token"].as_str().unwrap_or_default().to_owned();
                    seen.admitted = Some((version.offset, token));
                }
            }
            tokio::select! {
                read = conn.fill() => if let Err(e) = read { break Err(e) },
                _ = self.stop.changed() => break Ok(()),
            }
        };
        if counted {
            self.shared.streams_open.fetch_sub(1, Ordering::Relaxed);
        }
        result
    }
}

/// Waits until `done` holds or `limit` passes; true if it held.
async fn until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

fn admitted_count(shared: &Shared) -> usize {
    shared
        .fans
        .iter()
        .filter(|f| f.lock().expect("fan").admitted.is_some())
        .count()
}

/// Runs the flash crowd against a FrontRow of its own.
pub(crate) async fn flash_crowd(config: &Config, results: &mut Results) -> anyhow::Result<()> {
    let fc = &config.flash;
    let (fr, room) = start_target(fc).await?;
    let (crowd, onsale_instant) = open_waiting_room(&fr, fc, room.fans).await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let (mut tasks, arrival) = arrive(&crowd, fc, &fr, &room, stop_rx, onsale_instant).await;
    let rejoin = rejoin(&crowd, room.fans).await?;
    let onsale = onsale(&crowd, fc, arrival.ok, onsale_instant).await?;
    let held_at_end = crowd.shared.streams_open.load(Ordering::Relaxed);
    let _ = stop_tx.send(true);
    let closing = tokio::time::timeout(Duration::from_secs(30), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if closing.is_err() {
        tasks.abort_all();
    }
    let (checks, stopped_gracefully) = stop_and_check(fr, &crowd, rejoin).await?;
    for c in &checks {
        println!(
            "  check {}: {} ({})",
            c.name,
            if c.passed { "ok" } else { "FAILED" },
            c.detail
        );
    }
    let outcome = Outcome {
        room,
        arrival,
        onsale,
        held_at_end,
        stopped_gracefully,
    };
    let (stats, extra) = outcome.report(fc, &crowd.shared);
    results.push_extra(
        "3-flash-crowd",
        "frontrow",
        "queue join (ramp)",
        stats,
        Some(extra.clone()),
    );
    results.flash_crowd = Some(extra);
    results.queue_checks.extend(checks);
    Ok(())
}

/// How many fans the descriptors allow, and where the server runs.
struct Room {
    fans: usize,
    limit: u64,
    clamp_note: String,
    /// Descriptors a connection costs in this process: 1 with the server in a child, 2 in here.
    per_fan: u64,
    server_pid: u32,
}

/// Raises this process's descriptor limit, starts FrontRow (a child when the config names its
/// binary) and clamps the crowd to what both limits allow.
async fn start_target(fc: &FlashConfig) -> anyhow::Result<(Target, Room)> {
    let per_fan = if fc.frontrow_bin.is_some() { 1 } else { 2 };
    println!(
        "flash crowd (FrontRow, embedded defaults, {})",
        match &fc.frontrow_bin {
            Some(bin) => format!("child process {}", bin.display()),
            None => "in this process".into(),
        }
    );
    let (limit, fd_note) = raise_fd_limit(fc.fans, per_fan);
    let fr = match &fc.frontrow_bin {
        Some(bin) => Target::Child(ChildFrontRow::start(bin).await?),
        None => Target::InProcess(FrontRow::start().await?),
    };
    // A child's limit is what it inherited from this process; read it back all the same.
    let (limit, fd_note) = match &fr {
        Target::Child(c) => match c.fd_limit() {
            Some(child) => (
                limit.min(child),
                format!("{fd_note}; the server (pid {}) has {child}", c.pid),
            ),
            None => (limit, format!("{fd_note}; the server's limit is unknown")),
        },
        Target::InProcess(_) => (limit, fd_note),
    };
    let server_pid = match &fr {
        Target::Child(c) => c.pid,
        Target::InProcess(_) => std::process::id(),
    };
    let fans = fc.fans.min((limit.saturating_sub(FD_RESERVE) / per_fan) as usize);
    let clamp_note = if fans < fc.fans {
        format!(
            "{fd_note}: clamped the crowd from {} to {fans} fans ({per_fan} descriptor(s) per connection in this process)",
            fc.fans
        )
    } else {
        format!("{fd_note}: room for all {fans} fans")
    };
    println!("  {clamp_note}");
    anyhow::ensure!(fans > 0, "no file descriptors for the crowd");
    let room = Room {
        fans,
        limit,
        clamp_note,
        per_fan,
        server_pid,
    };
    Ok((fr, room))
}

/// The crowd's event, a client of its server, the fans' tokens and what the fans saw.
struct Crowd {
    http: reqwest::Client,
    base: String,
    event: String,
    tokens: Arc<Vec<String>>,
    shared: Arc<Shared>,
}

/// Creates the event, on sale `onsale_after_s` from now, and opens its waiting room; returns
/// the crowd and when the onsale is.
async fn open_waiting_room(fr: &Target, fc: &FlashConfig, fans: usize) -> anyhow::Result<(Crowd, Instant)> {
    let base = format!("http://{}", fr.addr());
    let http = client(64);
    let tokens = Arc::new(tokens(fr.auth(), fans));
    let onsale_at = chrono::Utc::now() + chrono::Duration::milliseconds((fc.onsale_after_s * 1000.0) as i64);
    let onsale_instant = Instant::now() + Duration::from_secs_f64(fc.onsale_after_s);
    let written = post_event(&http, &base, "Flash Crowd", "Nova Lights", "Amsterdam", onsale_at).await?;
    let event = written["event_id"].as_str().context("no event_id")?.to_owned();
    let res = http
        .put(format!("{base}/events/{event}/queue"))
        .header("x-api-key", ORGANIZER_KEY)
        .json(&json!({ "max_size": null, "max_shoppers": fc.max_shoppers, "admission_secs": 600 }))
        .send()
        .await?;
    anyhow::ensure!(res.status() == 200, "opening the queue: {}", res.text().await?);
    let shared = Arc::new(Shared {
        histogram: Mutex::new(Histogram::new_with_bounds(1, 300_000_000, 3).expect("valid histogram bounds")),
        ok: AtomicU64::new(0),
        shed: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        answers: Mutex::new(BTreeMap::new()),
        joins_done: AtomicUsize::new(0),
        last_join: Mutex::new(None),
        streams_open: AtomicUsize::new(0),
        streams_peak: AtomicUsize::new(0),
        stream_failures: AtomicUsize::new(0),
        stream_retries: AtomicUsize::new(0),
        fans: (0..fans).map(|_| Mutex::new(Seen::default())).collect(),
    });
    let crowd = Crowd {
        http,
        base,
        event,
        tokens,
        shared,
    };
    Ok((crowd, onsale_instant))
}

/// The ramp as measured: when it started and ended, the joins and streams, and the server's
/// memory and CPU around it.
struct Arrival {
    start: Instant,
    joined_at: Instant,
    ok: usize,
    held: usize,
    rss_before: u64,
    rss_at_once: u64,
    rss_held: u64,
    harness_rss_before: u64,
    harness_rss_held: u64,
    server_cpu_s: Option<f64>,
    harness_cpu_s: Option<f64>,
    load_before: Option<f64>,
    load_held: Option<f64>,
    ramp_wall_s: f64,
    joined_before_onsale: bool,
}

/// Sends the fans in on the ramp, each holding its status stream until `stop`; waits until
/// every fan has joined and every joined fan holds its stream, then until the server's
/// allocator has settled. Returns the fans' tasks, still running.
async fn arrive(
    crowd: &Crowd,
    fc: &FlashConfig,
    fr: &Target,
    room: &Room,
    stop: watch::Receiver<bool>,
    onsale_instant: Instant,
) -> (tokio::task::JoinSet<()>, Arrival) {
    let (shared, fans) = (&crowd.shared, room.fans);
    let rss_before = fr.rss_kib();
    let harness_rss_before = rss_kib();
    let server_cpu_before = proc_cpu_s(room.server_pid);
    let harness_cpu_before = proc_cpu_s(std::process::id());
    let load_before = load_average();
    let cpu_from = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let start = Instant::now() + Duration::from_millis(20);
    let ramp = Duration::from_secs_f64(fc.ramp_s);
    for (i, token) in crowd.tokens.iter().enumerate() {
        let intended = start + ramp.mul_f64((i as f64 / fans as f64).sqrt());
        tokio::time::sleep_until(intended.into()).await;
        let fan = Fan {
            i,
            intended,
            addr: fr.addr(),
            event: crowd.event.clone(),
            token: token.clone(),
            shared: shared.clone(),
            stop: stop.clone(),
        };
        tasks.spawn(fan.run());
    }
    let all_joined = until(Duration::from_secs(120), || {
        shared.joins_done.load(Ordering::Relaxed) == fans
    })
    .await;
    let joined_at = shared.last_join.lock().expect("last join").unwrap_or_else(Instant::now);
    let ok = shared.ok.load(Ordering::Relaxed) as usize;
    let all_held = until(Duration::from_secs(60), || {
        shared.streams_open.load(Ordering::Relaxed) + shared.stream_failures.load(Ordering::Relaxed) >= ok
    })
    .await;
    let held = shared.streams_open.load(Ordering::Relaxed);
    let rss_at_once = fr.rss_kib();
    let server_cpu_s = proc_cpu_s(room.server_pid).zip(server_cpu_before).map(|(a, b)| a - b);
    let harness_cpu_s = proc_cpu_s(std::process::id())
        .zip(harness_cpu_before)
        .map(|(a, b)| a - b);
    let load_held = load_average();
    let ramp_wall_s = cpu_from.elapsed().as_secs_f64();
    let joined_before_onsale = Instant::now() < onsale_instant;
    // What the streams hold, once the allocator has returned the pages the joins freed (the
    // server's jemalloc purges them after a second): the streams are still open.
    tokio::time::sleep(SETTLE).await;
    let rss_held = fr.rss_kib();
    let harness_rss_held = rss_kib();
    println!(
        "  {ok} of {fans} fans joined{}; {held} status streams held{}; RSS {} -> {} MiB",
        if all_joined { "" } else { " (timed out)" },
        if all_held {
            ""
        } else {
            " (timed out waiting for the rest)"
        },
        rss_before / 1024,
        rss_held / 1024
    );
    let arrival = Arrival {
        start,
        joined_at,
        ok,
        held,
        rss_before,
        rss_at_once,
        rss_held,
        harness_rss_before,
        harness_rss_held,
        server_cpu_s,
        harness_cpu_s,
        load_before,
        load_held,
        ramp_wall_s,
        joined_before_onsale,
    };
    (tasks, arrival)
}

/// Spot checks of joining again: up to ten fans, each must be answered its first ticket.
struct Rejoin {
    ok: usize,
    tried: usize,
    detail: Vec<String>,
}

/// Joining again answers the same ticket.
async fn rejoin(crowd: &Crowd, fans: usize) -> anyhow::Result<Rejoin> {
    let (base, event) = (&crowd.base, &crowd.event);
    let mut rejoin = Rejoin {
        ok: 0,
        tried: 0,
        detail: Vec::new(),
    };
    for i in (0..fans).step_by((fans / 10).max(1)).take(10) {
        rejoin.tried += 1;
        let first = crowd.shared.fans[i].lock().expect("fan").ticket;
        let res = crowd
            .http
            .post(format!("{base}/events/{event}/queue/join"))
            .bearer_auth(&crowd.tokens[i])
            .send()
            .await?;
        let status = res.status().as_u16();
        let again = res.json::<Value>().await.ok().and_then(|v| v["ticket"].as_u64());
        if status == 200 && first.is_some() && again == first {
            rejoin.ok += 1;
        } else {
            rejoin
                .detail
                .push(format!("fan{i}: first {first:?}, again {status} {again:?}"));
        }
    }
    Ok(rejoin)
}

/// The onsale as the fans saw it.
struct Onsale {
    first_wave: usize,
    first_wave_s: f64,
    bought: usize,
    buy_errors: Vec<String>,
}

/// The onsale: the lottery, then the first admissions up to `max_shoppers`; a few admitted
/// fans buy, which spends their admissions and lets the next fans in.
async fn onsale(crowd: &Crowd, fc: &FlashConfig, ok: usize, onsale_instant: Instant) -> anyhow::Result<Onsale> {
    let Crowd {
        http,
        base,
        event,
        tokens,
        shared,
    } = crowd;
    tokio::time::sleep_until(onsale_instant.into()).await;
    let first_wave = (fc.max_shoppers as usize).min(ok);
    let waited = Instant::now();
    let first_seen = until(Duration::from_secs(60), || admitted_count(shared) >= first_wave).await;
    let first_wave_s = waited.elapsed().as_secs_f64();
    let mut admitted: Vec<(u64, usize, String)> = shared
        .fans
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.lock().expect("fan").admitted.clone().map(|(v, t)| (v, i, t)))
        .collect();
    admitted.sort();
    let section = frontrow::sample::arena().sections[0].code.to_string();
    let mut bought = 0;
    let mut buy_errors = Vec::new();
    for (_, i, admission) in admitted.iter().take(fc.buyers) {
        let res = http
            .post(format!("{base}/events/{event}/reservations"))
            .bearer_auth(&tokens[*i])
            .header("frontrow-admission", admission)
            .header("idempotency-key", uuid::Uuid::new_v4().to_string())
            .json(&json!({ "best_available": { "section": section, "count": 2 } }))
            .send()
            .await?;
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        let Some(reservation) = body["reservation_id"].as_str().filter(|_| status == 201) else {
            buy_errors.push(format!("fan{i} reserve {status}: {body}"));
            continue;
        };
        let res = http
            .post(format!("{base}/demo/payments"))
            .bearer_auth(&tokens[*i])
            .json(&json!({ "event_id": event, "reservation_id": reservation }))
            .send()
            .await?;
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        if status == 200 && body["outcome"] == "booked" {
            bought += 1;
        } else {
            buy_errors.push(format!("fan{i} pay {status}: {body}"));
        }
    }
    let second_wave = (first_wave + bought).min(ok);
    let second_seen = until(Duration::from_secs(30), || admitted_count(shared) >= second_wave).await;
    // A moment more: anyone admitted beyond the expected waves shows up too.
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "  onsale: {} admitted within {first_wave_s:.2}s{}; {bought} bought and paid, then {} admitted{}",
        first_wave,
        if first_seen { "" } else { " (timed out)" },
        admitted_count(shared),
        if second_seen {
            ""
        } else {
            " (timed out waiting for the next fans)"
        }
    );
    Ok(Onsale {
        first_wave,
        first_wave_s,
        bought,
        buy_errors,
    })
}

/// Stops the server and checks the log: tickets, the lottery, the admissions. A child stops
/// first and its journal file is then read here. Returns the checks and whether the server
/// stopped gracefully.
async fn stop_and_check(fr: Target, crowd: &Crowd, rejoin: Rejoin) -> anyhow::Result<(Vec<QueueCheck>, bool)> {
    let check = |journal| {
        check_log(
            journal,
            &crowd.event,
            &crowd.shared,
            rejoin.ok,
            rejoin.tried,
            rejoin.detail,
        )
    };
    Ok(match fr {
        Target::InProcess(fr) => {
            let checks = check(fr.journal.as_ref()).await;
            fr.stop().await?;
            (checks?, true)
        }
        Target::Child(mut child) => {
            let graceful = child.stop().await?;
            println!(
                "  the server stopped{}",
                if graceful {
                    " gracefully"
                } else {
                    " (killed or failed: see its output above)"
                }
            );
            let journal = child.journal().await?;
            (check(journal.as_ref()).await?, graceful)
        }
    })
}

/// Everything the report says of one crowd.
struct Outcome {
    room: Room,
    arrival: Arrival,
    onsale: Onsale,
    held_at_end: usize,
    stopped_gracefully: bool,
}

impl Outcome {
    /// The joins' figures and the crowd's report (also printed).
    fn report(&self, fc: &FlashConfig, shared: &Shared) -> (Stats, Value) {
        let Outcome {
            room,
            arrival: a,
            onsale,
            ..
        } = self;
        let (fans, ok, held) = (room.fans, a.ok, a.held);
        let h = shared.histogram.lock().expect("histogram").clone();
        let elapsed = a.joined_at.saturating_duration_since(a.start).as_secs_f64().max(1e-9);
        let ms = |us: u64| us as f64 / 1000.0;
        let stats = Stats {
            mode: Mode::Open {
                rate: fans as f64 / fc.ramp_s,
                max_in_flight: fans,
            },
            requests: h.len(),
            ok: ok as u64,
            refused: 0,
            shed: shared.shed.load(Ordering::Relaxed),
            errors: shared.errors.load(Ordering::Relaxed),
            elapsed_s: elapsed,
            throughput: h.len() as f64 / elapsed,
            ok_per_s: ok as f64 / elapsed,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        };
        let peak = shared.streams_peak.load(Ordering::Relaxed);
        let delta_kib = a.rss_held.saturating_sub(a.rss_before);
        let per_connection_kib = delta_kib as f64 / held.max(1) as f64;
        let at_once_kib = a.rss_at_once.saturating_sub(a.rss_before) as f64 / held.max(1) as f64;
        let child = room.per_fan == 1;
        let extra = json!({
            "fans_wanted": fc.fans,
            "fans": fans,
            "fd_limit": room.limit,
            "fd_note": room.clamp_note,
            "ramp_s": fc.ramp_s,
            "arrivals": "rate ramping linearly from 0: fan i of n due at ramp_s * sqrt(i/n); one new TCP connection per fan",
            "all_joined_before_onsale": a.joined_before_onsale,
            "answers": shared.answers.lock().expect("answers").clone(),
            "sse_streams_held": held,
            "sse_streams_peak": peak,
            "sse_streams_at_end": self.held_at_end,
            "sse_stream_failures": shared.stream_failures.load(Ordering::Relaxed),
            "sse_stream_retries": shared.stream_retries.load(Ordering::Relaxed),
            "rss_before_mib": a.rss_before as f64 / 1024.0,
            "rss_held_mib": a.rss_held as f64 / 1024.0,
            "rss_per_connection_kib": per_connection_kib,
            "rss_measured": format!("{} s after the last stream opened, every stream still held", SETTLE.as_secs()),
            "rss_at_once_mib": a.rss_at_once as f64 / 1024.0,
            "rss_per_connection_at_once_kib": at_once_kib,
            "rss_source": if child {
                "VmRSS of the frontrow serve child process: the server's alone"
            } else {
                "VmRSS of this process (FrontRow in-process, plus the fans' client side and queue state): an upper bound for the server"
            },
            "server": if child { "child process" } else { "in-process" },
            "server_pid": room.server_pid,
            "server_stopped_gracefully": self.stopped_gracefully,
            "cpu_window_s": a.ramp_wall_s,
            "cpu_window": "from just before the first join until every status stream was held",
            "server_cpu_s": a.server_cpu_s,
            "server_cpu_ms_per_join": a.server_cpu_s.map(|s| s * 1000.0 / ok.max(1) as f64),
            "server_cpu_note": if child { "the frontrow child's user + system time (all threads)" } else { "this whole process's user + system time (server and client side)" },
            "harness_cpu_s": a.harness_cpu_s,
            "load_average_1m": [a.load_before, a.load_held],
            "harness_rss_before_mib": a.harness_rss_before as f64 / 1024.0,
            "harness_rss_held_mib": a.harness_rss_held as f64 / 1024.0,
            "max_shoppers": fc.max_shoppers,
            "first_wave": onsale.first_wave,
            "first_wave_seen_s": onsale.first_wave_s,
            "bought": onsale.bought,
            "buy_errors": onsale.buy_errors,
            "admitted_seen": admitted_count(shared),
        });
        println!(
            "  SSE: {held} held at once (peak {peak}); {:.1} KiB RSS per connection ({} MiB over {held}; {at_once_kib:.1} KiB the moment the last one opened); {} asked for again after 503 position-not-visible",
            per_connection_kib,
            delta_kib / 1024,
            shared.stream_retries.load(Ordering::Relaxed)
        );
        if let Some(cpu) = a.server_cpu_s {
            println!(
                "  server CPU {cpu:.2} s over {:.2} s of joins ({:.2} ms per join); harness CPU {:.2} s; load average {:?} -> {:?}",
                a.ramp_wall_s,
                cpu * 1000.0 / ok.max(1) as f64,
                a.harness_cpu_s.unwrap_or(0.0),
                a.load_before,
                a.load_held
            );
        }
        (stats, extra)
    }
}

/// Checks the joins and admissions against the event's log.
async fn check_log(
    journal: &dyn Journal,
    event: &str,
    shared: &Shared,
    rejoin_ok: usize,
    rejoin_tried: usize,
    rejoin_detail: Vec<String>,
) -> anyhow::Result<Vec<QueueCheck>> {
    let event_id: EventId = event.parse().context("event id")?;
    let partition = frontrow_schema::partition::partition_of(&event_id, journal.partitions());
    let mut joined: BTreeMap<String, (u64, bool)> = BTreeMap::new();
    let mut seed = None;
    let mut logged_admissions: Vec<u64> = Vec::new();
    let mut admitted_at: HashMap<u64, u64> = HashMap::new();
    let end = journal.end_offset(partition).await?;
    let mut scan = frontrow_journal::Scan::new(journal, partition, 0, end, 1000).retrying();
    let mut records = Vec::new();
    while let Some(batch) = scan.next_batch().await? {
        records.extend(batch);
    }
    for r in records {
        let env = decode(&r.value).context("decoding a journal record")?;
        if env.event_id != event_id {
            continue;
        }
        match env.event {
            Event::Queue(QueueEvent::Joined(j)) => {
                joined.insert(j.customer.to_string(), (j.ticket, j.pre_queue));
            }
            Event::Queue(QueueEvent::Shuffled(s)) => seed = Some(s.seed),
            Event::Queue(QueueEvent::Admitted(a)) => {
                logged_admissions.push(a.ticket);
                admitted_at.entry(a.ticket).or_insert(r.offset);
            }
            _ => {}
        }
    }
    let mut checks = Vec::new();

    // Every acknowledged join: a distinct ticket, the one the log recorded for that fan.
    let answered: Vec<(usize, u64)> = shared
        .fans
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.lock().expect("fan").ticket.map(|t| (i, t)))
        .collect();
    let distinct: BTreeSet<u64> = answered.iter().map(|(_, t)| *t).collect();
    let mismatched = answered
        .iter()
        .filter(|(i, t)| joined.get(&format!("fan{i}")).map(|j| j.0) != Some(*t))
        .count();
    checks.push(QueueCheck {
        name: "every join got a distinct ticket, the one logged",
        passed: !answered.is_empty() && distinct.len() == answered.len() && mismatched == 0,
        detail: format!(
            "{} joins answered, {} distinct tickets, {} logged joins, {mismatched} differ from the log",
            answered.len(),
            distinct.len(),
            joined.len()
        ),
    });
    checks.push(QueueCheck {
        name: "joining again answers the same ticket",
        passed: rejoin_tried > 0 && rejoin_ok == rejoin_tried,
        detail: format!(
            "{rejoin_ok} of {rejoin_tried} spot checks answered 200 with the first ticket{}",
            if rejoin_detail.is_empty() {
                String::new()
            } else {
                format!(": {}", rejoin_detail.join("; "))
            }
        ),
    });

    // The queue order: the pre-queue in lottery order, then later joins by ticket.
    let mut pre: Vec<u64> = joined.values().filter(|(_, p)| *p).map(|(t, _)| *t).collect();
    let mut later: Vec<u64> = joined.values().filter(|(_, p)| !*p).map(|(t, _)| *t).collect();
    later.sort_unstable();
    let order: Vec<u64> = match seed {
        Some(seed) => {
            lottery_order(seed, &mut pre);
            pre.iter().chain(&later).copied().collect()
        }
        None => Vec::new(),
    };
    let prefix_ok = !logged_admissions.is_empty()
        && logged_admissions.len() <= order.len()
        && logged_admissions[..] == order[..logged_admissions.len()];
    checks.push(QueueCheck {
        name: "the log admits in queue order (lottery of the recorded seed)",
        passed: seed.is_some() && prefix_ok,
        detail: format!(
            "seed {seed:?}, {} in the pre-queue, {} later, {} admissions logged",
            pre.len(),
            later.len(),
            logged_admissions.len()
        ),
    });

    // What the fans saw over their streams: the logged admissions, in queue order.
    let place: HashMap<u64, usize> = order.iter().enumerate().map(|(p, t)| (*t, p)).collect();
    let mut seen: Vec<(usize, u64)> = shared
        .fans
        .iter()
        .filter_map(|f| {
            let f = f.lock().expect("fan");
            Some((*place.get(&f.ticket?)?, f.admitted.as_ref()?.0))
        })
        .collect();
    seen.sort_unstable();
    let seen_set: BTreeSet<u64> = seen.iter().map(|(p, _)| order[*p]).collect();
    let logged_set: BTreeSet<u64> = logged_admissions.iter().copied().collect();
    let is_prefix = seen.iter().enumerate().all(|(k, (p, _))| k == *p);
    // A status is the waiting room at its version (a log position): when a fan saw itself
    // admitted, its own admission and everyone's ahead of it must already be in the log at
    // that version. (Versions need not grow along the queue: a stream may wake late.)
    let mut ahead = 0;
    let mut early = 0;
    for (p, version) in &seen {
        let own = admitted_at.get(&order[*p]).copied().unwrap_or(u64::MAX);
        ahead = ahead.max(own);
        if *version < ahead {
            early += 1;
        }
    }
    checks.push(QueueCheck {
        name: "the streams saw every admission, in queue order",
        passed: !seen.is_empty() && seen_set == logged_set && is_prefix && early == 0,
        detail: format!(
            "{} admissions seen over SSE, {} logged; a prefix of the queue: {is_prefix}; seen before a fan ahead was admitted: {early}",
            seen.len(),
            logged_set.len()
        ),
    });
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;
    use frontrow_http::Problem;

    use super::refusal;

    #[tokio::test]
    async fn a_refused_join_is_counted_by_its_status_and_problem_type() {
        let answer = Problem::overloaded("too many requests for this event right now").into_response();
        assert_eq!(answer.status(), 503);
        let body = axum::body::to_bytes(answer.into_body(), 64 * 1024).await.unwrap();
        assert_eq!(refusal(503, &body), "503 urn:frontrow:problem:overloaded");
        assert_eq!(refusal(502, b"<html>bad gateway</html>"), "502");
    }
}
