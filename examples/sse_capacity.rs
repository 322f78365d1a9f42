//! How many SSE connections one query node holds, and what each costs in memory.
//!
//! Starts `frontrow serve` (the binary next to this example, embedded defaults, the sample
//! arena of 20,008 seats) in a fresh data directory on loopback, then opens `--connections`
//! seat-map streams (`GET /events/{sample}/seats/stream`) in steps, and after each step reads
//! the server's resident memory from `/proc/<pid>/status`. Every stream must deliver its
//! `snapshot` (the ~40 KB availability map) before it counts as held. The streams are held for
//! `--hold-secs` while seats move (a hold every 100 ms, so every stream gets deltas), then the
//! example counts how many are still open and stops everything. Bounded in count and time.
//!
//! ```text
//! cargo build --release --bin frontrow --example sse_capacity
//! ulimit -n 20000; target/release/examples/sse_capacity --connections 8000 --hold-secs 20
//! ```
//!
//! With `--resume` every stream starts with `Last-Event-ID` = the map's position, as a client
//! that fetched the map first (from a CDN) does, so no snapshot is sent per connection.
//!
//! This is the figure the benchmark harness will take over; it measures, it asserts nothing.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

struct Args {
    connections: usize,
    step: usize,
    hold_secs: u64,
    /// Open the streams with `Last-Event-ID` = the map's position, as a client that fetched
    /// the (CDN-cacheable) map first does: no snapshot per connection.
    resume: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        connections: 4000,
        step: 1000,
        hold_secs: 15,
        resume: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--resume" {
            a.resume = true;
            continue;
        }
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--connections" => a.connections = value.parse()?,
            "--step" => a.step = value.parse()?,
            "--hold-secs" => a.hold_secs = value.parse()?,
            _ => anyhow::bail!("unknown flag {flag} (--connections N --step N --hold-secs S [--resume])"),
        }
    }
    anyhow::ensure!(
        a.connections <= 50_000 && a.hold_secs <= 600,
        "bounded: at most 50000 connections, 600 s"
    );
    Ok(a)
}

/// The server's resident set size in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("no VmRSS")?;
    Ok(line.split_whitespace().nth(1).context("VmRSS value")?.parse()?)
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let exe = std::env::current_exe()?;
    let binary = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|profile| profile.join("frontrow"))
        .context("locating the frontrow binary")?;
    anyhow::ensure!(
        binary.exists(),
        "build it first: cargo build --bin frontrow ({})",
        binary.display()
    );
    let dir = tempfile::tempdir()?;
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    let base = format!("http://127.0.0.1:{port}");
    let server = Server(
        Command::new(&binary)
            .args([
                "--data-dir",
                dir.path().to_str().unwrap(),
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting frontrow serve")?,
    );
    let pid = server.0.id();
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
    let ready = Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{base}/ready")).send().await
            && r.status() == 200
        {
            break;
        }
        anyhow::ensure!(ready.elapsed() < Duration::from_secs(60), "server not ready in 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let event = frontrow::sample::SAMPLE_EVENT_ID;
    let url = format!("{base}/events/{event}/seats/stream");
    // Warm up once so the one-off costs (the cached map body, runtime buffers) are not counted.
    client.get(&url).send().await?.chunk().await?;
    let map: serde_json::Value = client
        .get(format!("{base}/events/{event}/availability"))
        .send()
        .await?
        .json()
        .await?;
    let resume_from = args
        .resume
        .then(|| map["position"].as_str().unwrap_or_default().to_owned());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base_rss = rss_kib(pid)?;
    println!("server pid {pid}, baseline RSS {base_rss} KiB");
    println!(
        "{:>12} {:>12} {:>14} {:>16}",
        "connections", "RSS KiB", "delta KiB", "KiB/connection"
    );

    let open = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    let started = Instant::now();
    let mut target = 0;
    while target < args.connections {
        target = (target + args.step).min(args.connections);
        while tasks.len() < target {
            let (client, url, open, failed) = (client.clone(), url.clone(), open.clone(), failed.clone());
            let resume_from = resume_from.clone();
            tasks.push(tokio::spawn(async move {
                let mut req = client.get(&url);
                if let Some(id) = &resume_from {
                    req = req.header("last-event-id", id.as_str());
                }
                let Ok(mut res) = req.send().await else {
                    failed.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                // Held once the server answered 200 and, without --resume, the snapshot arrived.
                let mut seen = 0usize;
                let mut counted = res.status() == 200 && resume_from.is_some();
                if counted {
                    open.fetch_add(1, Ordering::Relaxed);
                }
                while let Ok(Some(chunk)) = res.chunk().await {
                    seen += chunk.len();
                    if !counted && seen > 1000 {
                        counted = true;
                        open.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if counted {
                    open.fetch_sub(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        let wait = Instant::now();
        while open.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < target
            && wait.elapsed() < Duration::from_secs(60)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss = rss_kib(pid)?;
        let held = open.load(Ordering::Relaxed);
        let delta = rss.saturating_sub(base_rss);
        println!(
            "{held:>12} {rss:>12} {delta:>14} {:>16.1}",
            delta as f64 / held.max(1) as f64
        );
        if failed.load(Ordering::Relaxed) > 0 {
            println!(
                "{} connections failed; stopping the ramp",
                failed.load(Ordering::Relaxed)
            );
            break;
        }
    }
    let ramp = started.elapsed();
    // Hold them while seats move, so every stream carries deltas.
    let token = {
        let out = Command::new(&binary)
            .args([
                "--data-dir",
                dir.path().to_str().unwrap(),
                "token",
                "--customer",
                "capacity",
            ])
            .output()?;
        String::from_utf8(out.stdout)?.trim().to_owned()
    };
    let hold = Instant::now();
    let mut holds = 0;
    let rows = ["A", "B", "C", "D", "E", "F", "G", "H"];
    while hold.elapsed() < Duration::from_secs(args.hold_secs) {
        let seat = format!("101-{}-{}", rows[holds / 20 % rows.len()], holds % 20 + 1);
        let res = client
            .post(format!("{base}/events/{event}/reservations"))
            .bearer_auth(&token)
            .header("idempotency-key", format!("cap-{holds}"))
            .json(&serde_json::json!({ "seats": [seat] }))
            .send()
            .await?;
        if res.status().is_success() {
            holds += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rss = rss_kib(pid)?;
    let held = open.load(Ordering::Relaxed);
    println!(
        "after holding {} s with {holds} seat changes pushed: {held} connections open, RSS {rss} KiB \
         ({:.1} KiB/connection over baseline); ramp took {:.1} s",
        args.hold_secs,
        rss.saturating_sub(base_rss) as f64 / held.max(1) as f64,
        ramp.as_secs_f64()
    );
    for t in tasks {
        t.abort();
    }
    drop(server);
    Ok(())
}
