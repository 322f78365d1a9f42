//! The standard tools, run in the same harness run as yardsticks for what the harness
//! measures: `wrk` against the hello-world server (the client's own ceiling), and the parts of
//! the database baselines on their own, `redis-benchmark` with the lock design's pipelined
//! `SET ... NX PX` and its compare-and-delete unlock, `pgbench` with the naive design's
//! transaction. A tool that is not installed is reported as not available and skipped.
//!
//! Each tool runs while nothing else of the harness does, on the same two cores as the server
//! it drives (as the harness's own load generator does).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use tokio::process::Command;

/// What one tool measured (or why it did not run).
#[derive(Debug, Clone, Serialize)]
pub struct ToolFigure {
    /// `wrk`, `redis-benchmark`, `pgbench`.
    pub tool: &'static str,
    /// What it drove: `hello`, `redis-lock`, `naive-pg`.
    pub target: &'static str,
    /// What was measured, e.g. `GET /hello (first)` or `SET NX PX pipeline`.
    pub phase: String,
    /// Whether the tool ran; `false`: `note` says why not.
    pub available: bool,
    /// Operations per second in the tool's own unit (`unit`).
    pub rate_per_s: Option<f64>,
    pub unit: &'static str,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The command line (secrets none: loopback services without passwords in the URL's place).
    pub command: String,
    pub note: String,
}

impl ToolFigure {
    pub fn missing(tool: &'static str, target: &'static str, phase: &str, unit: &'static str) -> Self {
        Self {
            tool,
            target,
            phase: phase.to_owned(),
            available: false,
            rate_per_s: None,
            unit,
            p50_ms: None,
            p99_ms: None,
            command: String::new(),
            note: format!("{tool} not available"),
        }
    }
}

/// The tool's path if it is installed (`/usr/bin/<name>`, else on `PATH`).
pub fn find_tool(name: &str) -> Option<std::path::PathBuf> {
    let system = Path::new("/usr/bin").join(name);
    if system.is_file() {
        return Some(system);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

async fn output(mut cmd: Command, limit: Duration) -> anyhow::Result<String> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(limit, cmd.output())
        .await
        .context("the tool did not finish in time")??;
    anyhow::ensure!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn show(cmd: &Command) -> String {
    let std = cmd.as_std();
    std::iter::once(std.get_program())
        .chain(std.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A duration like wrk's `1.23ms`, `850.00us`, `1.02s` in milliseconds.
fn wrk_ms(text: &str) -> Option<f64> {
    let t = text.trim();
    let (number, scale) = if let Some(v) = t.strip_suffix("us") {
        (v, 0.001)
    } else if let Some(v) = t.strip_suffix("ms") {
        (v, 1.0)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1000.0)
    } else {
        (t, 1.0)
    };
    number.parse::<f64>().ok().map(|n| n * scale)
}

/// Parses wrk's output (with `--latency`): requests per second, p50 and p99.
pub fn parse_wrk(out: &str) -> (Option<f64>, Option<f64>, Option<f64>) {
    let mut rate = None;
    let (mut p50, mut p99) = (None, None);
    for line in out.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            rate = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("50%") {
            p50 = wrk_ms(v);
        } else if let Some(v) = line.strip_prefix("99%") {
            p99 = wrk_ms(v);
        }
    }
    (rate, p50, p99)
}

/// `wrk -t2 -c<connections> -d<secs> --latency <url>`: the ceiling of a C client on the same
/// request and the same number of keep-alive connections as the harness's closed loop.
pub async fn wrk(url: &str, target: &'static str, connections: usize, secs: f64, phase: &str) -> ToolFigure {
    let Some(bin) = find_tool("wrk") else {
        return ToolFigure::missing("wrk", target, phase, "requests");
    };
    let mut cmd = Command::new(bin);
    let secs = secs.ceil().max(1.0) as u64;
    cmd.args([
        "-t2".to_owned(),
        format!("-c{connections}"),
        format!("-d{secs}s"),
        "--latency".to_owned(),
        url.to_owned(),
    ]);
    let command = show(&cmd);
    let mut figure = ToolFigure {
        command,
        available: true,
        ..ToolFigure::missing("wrk", target, phase, "requests")
    };
    match output(cmd, Duration::from_secs(secs + 30)).await {
        Ok(out) => {
            let (rate, p50, p99) = parse_wrk(&out);
            figure.rate_per_s = rate;
            figure.p50_ms = p50;
            figure.p99_ms = p99;
            figure.note = if rate.is_some() {
                "2 threads, keep-alive, no pipelining".into()
            } else {
                format!("no Requests/sec in wrk's output: {}", out.trim())
            };
        }
        Err(e) => figure.note = format!("wrk failed: {e:#}"),
    }
    figure
}

/// Parses the data line of `redis-benchmark --csv`: rps, p50, p99.
pub fn parse_redis_benchmark(out: &str) -> (Option<f64>, Option<f64>, Option<f64>) {
    let Some(line) = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.starts_with("\"test\""))
    else {
        return (None, None, None);
    };
    // The test name may contain commas inside its quotes; the figures are the last seven.
    let fields: Vec<f64> = line
        .rsplit(',')
        .take(7)
        .filter_map(|f| f.trim().trim_matches('"').parse().ok())
        .collect();
    if fields.len() < 7 {
        return (None, None, None);
    }
    // Reversed: max, p99, p95, p50, min, avg, rps.
    (Some(fields[6]), Some(fields[3]), Some(fields[1]))
}

/// The lock design's Redis part alone: `SET lock:<random seat> <token> NX PX 5000`, `pipeline`
/// per round trip (the seats of one reservation), over `connections` connections; then the
/// compare-and-delete unlock script once per round trip. Rates are commands per second.
pub async fn redis_parts(redis_url: &str, connections: usize, pipeline: usize, unlock_script: &str) -> Vec<ToolFigure> {
    let phases = ["SET NX PX (pipelined, per command)", "unlock script (EVAL, per call)"];
    let Some(bin) = find_tool("redis-benchmark") else {
        return phases
            .iter()
            .map(|p| ToolFigure::missing("redis-benchmark", "redis-lock", p, "commands"))
            .collect();
    };
    let Ok(url) = url::Url::parse(redis_url) else {
        return Vec::new();
    };
    let host = url.host_str().unwrap_or("127.0.0.1").to_owned();
    let port = url.port().unwrap_or(6379).to_string();
    let common = |requests: u64, pipeline: usize| {
        let mut cmd = Command::new(&bin);
        cmd.args([
            "-h",
            &host,
            "-p",
            &port,
            "-c",
            &connections.to_string(),
            "-n",
            &requests.to_string(),
            "-P",
            &pipeline.to_string(),
            "-r",
            "20008",
            "--csv",
        ]);
        cmd
    };
    let mut set = common(300_000, pipeline);
    set.args(["SET", "lock:bench:__rand_int__", "token", "NX", "PX", "5000"]);
    let mut unlock = common(100_000, 1);
    unlock.args(["EVAL", unlock_script, "1", "lock:bench:__rand_int__", "token"]);
    let mut figures = Vec::new();
    for (phase, cmd) in phases.into_iter().zip([set, unlock]) {
        let mut figure = ToolFigure {
            command: show(&cmd),
            available: true,
            ..ToolFigure::missing("redis-benchmark", "redis-lock", phase, "commands")
        };
        match output(cmd, Duration::from_secs(120)).await {
            Ok(out) => {
                let (rate, p50, p99) = parse_redis_benchmark(&out);
                figure.rate_per_s = rate;
                figure.p50_ms = p50;
                figure.p99_ms = p99;
                figure.note = format!(
                    "{connections} connections, pipeline {}",
                    if phase.starts_with("SET") { pipeline } else { 1 }
                );
            }
            Err(e) => figure.note = format!("redis-benchmark failed: {e:#}"),
        }
        figures.push(figure);
    }
    figures
}

/// Parses pgbench's `tps = ...` line and its `latency average = ... ms`.
pub fn parse_pgbench(out: &str) -> (Option<f64>, Option<f64>) {
    let mut tps = None;
    let mut latency = None;
    for line in out.lines() {
        if let Some(v) = line.strip_prefix("tps = ") {
            tps = v.split_whitespace().next().and_then(|v| v.parse().ok());
        } else if let Some(v) = line.strip_prefix("latency average = ") {
            latency = v.split_whitespace().next().and_then(|v| v.parse().ok());
        }
    }
    (tps, latency)
}

/// One pgbench run of `script` on `schema`, durable commits, `clients` connections.
pub async fn pgbench(
    database_url: &str,
    schema: &str,
    clients: u32,
    secs: u64,
    phase: &str,
    script: &str,
    defines: &[(&str, String)],
) -> ToolFigure {
    let Some(bin) = find_tool("pgbench") else {
        return ToolFigure::missing("pgbench", "naive-pg", phase, "transactions");
    };
    let mut figure = ToolFigure {
        available: true,
        ..ToolFigure::missing("pgbench", "naive-pg", phase, "transactions")
    };
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            figure.note = format!("no temporary directory: {e}");
            return figure;
        }
    };
    let file = dir.path().join("reserve.sql");
    if let Err(e) = std::fs::write(&file, script) {
        figure.note = format!("writing the script: {e}");
        return figure;
    }
    let mut cmd = Command::new(bin);
    cmd.args([
        "-n".to_owned(),
        "-M".to_owned(),
        "prepared".to_owned(),
        "-c".to_owned(),
        clients.to_string(),
        "-j".to_owned(),
        "2".to_owned(),
        "-T".to_owned(),
        secs.to_string(),
        "-f".to_owned(),
        file.display().to_string(),
    ]);
    for (name, value) in defines {
        cmd.arg("-D").arg(format!("{name}={value}"));
    }
    cmd.arg(database_url);
    // The same session settings as the baseline's pool: its schema, durable commits.
    cmd.env("PGOPTIONS", format!("-c search_path={schema} -c synchronous_commit=on"));
    figure.command = show(&cmd);
    match output(cmd, Duration::from_secs(secs + 60)).await {
        Ok(out) => {
            let (tps, latency) = parse_pgbench(&out);
            figure.rate_per_s = tps;
            figure.p50_ms = None;
            figure.p99_ms = None;
            figure.note = format!(
                "{clients} connections, synchronous_commit = on; latency average {} ms",
                latency.map(|l| format!("{l:.2}")).unwrap_or_else(|| "-".into())
            );
        }
        Err(e) => figure.note = format!("pgbench failed: {e:#}"),
    }
    figure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_output_is_parsed() {
        let out = "Running 5s test @ http://127.0.0.1:1/hello\n  2 threads and 64 connections\n  Thread Stats   Avg      Stdev     Max   +/- Stdev\n    Latency   511.84us  300.00us  10.00ms   90.00%\n  Latency Distribution\n     50%  450.00us\n     75%  600.00us\n     90%  800.00us\n     99%    1.50ms\n  630000 requests in 5.00s, 80.00MB read\nRequests/sec: 126000.50\nTransfer/sec:     16.00MB\n";
        let (rate, p50, p99) = parse_wrk(out);
        assert_eq!(rate, Some(126000.5));
        assert!((p50.unwrap() - 0.45).abs() < 1e-9);
        assert!((p99.unwrap() - 1.5).abs() < 1e-9);
    }

    #[test]
    fn redis_benchmark_csv_is_parsed() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\"SET lock:bench:__rand_int__ token NX PX 5000\",\"75076.58\",\"1.874\",\"0.264\",\"1.207\",\"4.911\",\"8.567\",\"19.599\"\n";
        assert_eq!(parse_redis_benchmark(out), (Some(75076.58), Some(1.207), Some(8.567)));
    }

    #[test]
    fn pgbench_output_is_parsed() {
        let out = "number of transactions actually processed: 32000\nlatency average = 2.460 ms\ninitial connection time = 12.000 ms\ntps = 6502.123456 (without initial connection time)\n";
        assert_eq!(parse_pgbench(out), (Some(6502.123456), Some(2.46)));
    }
}
