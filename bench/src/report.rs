//! The run's report: a JSON file (machine, commit, every measurement, every check, the ratios
//! and the targets, met or not) and a short Markdown table beside it. Targets are
//! reported, never asserted: speed on a shared two-core machine is a figure, not a test.

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

use crate::run::{Config, Results};

/// One of the targets and whether this run met it.
#[derive(Debug, Clone, Serialize)]
pub struct Goal {
    pub goal: &'static str,
    /// The measured value (a ratio, milliseconds or a count); `None` when not measured.
    pub value: Option<f64>,
    pub threshold: f64,
    /// `met`, `not met` or `not measured`.
    pub verdict: &'static str,
}

fn goal(goal: &'static str, value: Option<f64>, threshold: f64, at_least: bool) -> Goal {
    let verdict = match value {
        None => "not measured",
        Some(v) if (at_least && v >= threshold) || (!at_least && v <= threshold) => "met",
        Some(_) => "not met",
    };
    Goal {
        goal,
        value,
        threshold,
        verdict,
    }
}

/// The ratios the issue asks for and its targets.
pub fn goals(results: &Results) -> (Value, Vec<Goal>) {
    let thr = |s: &str, t: &str, p: &str| results.find(s, t, p).map(|m| m.throughput);
    let sold = |t: &str| {
        results
            .find("1-hot-onsale", t, "reserve explicit (max)")
            .map(|m| m.ok_per_s)
    };
    let first = thr("0-ceiling", "hello", crate::run::CEILING_FIRST);
    let last = thr("0-ceiling", "hello", crate::run::CEILING_LAST);
    let hello = match (first, last) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (a, b) => a.or(b),
    };
    let health = thr("0-ceiling", "frontrow", crate::run::CEILING_HEALTH);
    let fr = thr("1-hot-onsale", "frontrow", "reserve explicit (max)");
    let pg = thr("1-hot-onsale", "naive-pg", "reserve explicit (max)");
    let lock = thr("1-hot-onsale", "redis-lock", "reserve explicit (max)");
    let full = thr("2-availability", "frontrow", "map full (200)");
    let not_modified = thr("2-availability", "frontrow", "map If-None-Match (304)");
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?).filter(|r| r.is_finite());
    let wrk = wrk_ceiling(results);
    let reqwest_hello = thr("0-ceiling", "hello", crate::run::CEILING_REQWEST);
    let half_p99 = results
        .find("1-hot-onsale", "frontrow", "reserve explicit (half max)")
        .map(|s| s.p99_ms);
    let oversold: usize = results.checks.iter().map(|(_, c)| c.seats_sold_twice).sum();
    let ratios = json!({
        "hello_ceiling_mean": hello,
        "health_ceiling": health,
        "health_vs_hello": ratio(health, hello),
        "reserve_vs_health": ratio(fr, health),
        "map_304_vs_health": ratio(not_modified, health),
        "map_full_vs_health": ratio(full, health),
        "reserve_vs_hello": ratio(fr, hello),
        "reserve_vs_naive_pg": ratio(fr, pg),
        "reserve_vs_redis_lock": ratio(fr, lock),
        "successful_reservations_vs_naive_pg": ratio(sold("frontrow"), sold("naive-pg")),
        "successful_reservations_vs_redis_lock": ratio(sold("frontrow"), sold("redis-lock")),
        "naive_pg_vs_hello": ratio(pg, hello),
        "redis_lock_vs_hello": ratio(lock, hello),
        "map_304_vs_hello": ratio(not_modified, hello),
        "map_full_vs_hello": ratio(full, hello),
        "wrk_hello_ceiling_mean": wrk,
        "harness_vs_wrk_hello": ratio(hello, wrk),
        "reqwest_hello_ceiling": reqwest_hello,
        "reqwest_vs_wrk_hello": ratio(reqwest_hello, wrk),
    });
    let mut goals = vec![
        goal(
            "reserve throughput >= 0.30 x the same process's /health",
            ratio(fr, health),
            0.30,
            true,
        ),
        goal("reserve throughput >= 5 x naive PostgreSQL", ratio(fr, pg), 5.0, true),
        goal("reserve throughput >= 5 x Redis lock", ratio(fr, lock), 5.0, true),
        goal(
            "reserve p99 <= 10 ms at half the maximum rate (ms)",
            half_p99,
            10.0,
            false,
        ),
        goal(
            "map reads (304) >= 0.9 x the same process's /health",
            ratio(not_modified, health),
            0.9,
            true,
        ),
        goal(
            "map reads (full, uncompressed) >= 0.6 x the same process's /health",
            ratio(full, health),
            0.6,
            true,
        ),
        goal(
            "zero oversold seats (seats sold twice)",
            // No race checked (e.g. `--scenarios 3`): not measured rather than met.
            (!results.checks.is_empty()).then_some(oversold as f64),
            0.0,
            false,
        ),
    ];
    goals.extend(later_goals(results));
    goals.push(goal(
        "harness client >= 0.8 x wrk on hello-world",
        ratio(hello, wrk),
        0.8,
        true,
    ));
    (ratios, goals)
}

/// The mean of wrk's hello-world ceilings in this run (first and last), if wrk ran.
pub fn wrk_ceiling(results: &Results) -> Option<f64> {
    let rates: Vec<f64> = results
        .tools
        .iter()
        .filter(|t| t.tool == "wrk" && t.target == "hello")
        .filter_map(|t| t.rate_per_s)
        .collect();
    (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64)
}

/// Each target's bottleneck, in words: FrontRow's half-max phase as the client and as the
/// server saw it ([`crate::inside`]); each database baseline's parts' rates per the standard
/// tools beside what the harness reached through the design.
pub fn bottlenecks(results: &Results) -> Vec<String> {
    let mut lines = Vec::new();
    let half_max = "reserve explicit (half max)";
    let stats = results.find("1-hot-onsale", "frontrow", half_max);
    let inside = results
        .find_extra("1-hot-onsale", "frontrow", half_max)
        .and_then(|e| e.get("inside"));
    if let (Some(stats), Some(inside)) = (stats, inside) {
        lines.push(format!(
            "frontrow: half max {:.0}/s open loop, p99 {:.1} ms at the client; {}",
            stats.throughput,
            stats.p99_ms,
            crate::inside::summary(inside)
        ));
    }
    let tool = |tool: &str, phase: &str| {
        results
            .tools
            .iter()
            .find(|t| t.tool == tool && t.phase.starts_with(phase))
    };
    let rate = |t: Option<&crate::tools::ToolFigure>| t.and_then(|t| t.rate_per_s);
    let reached = |target: &str| {
        results.find("1-hot-onsale", target, "reserve explicit (max)").map(|m| {
            let half = results
                .find("1-hot-onsale", target, half_max)
                .map(|h| {
                    let inside = results
                        .find_extra("1-hot-onsale", target, half_max)
                        .map(|e| &e["server_time_per_request"])
                        .filter(|p| p.is_object())
                        .map(|p| {
                            format!(
                                " (inside: pool wait + BEGIN {:.2} ms, transaction {:.2} ms)",
                                p["pool_wait_ms"].as_f64().unwrap_or(0.0),
                                p["transaction_ms"].as_f64().unwrap_or(0.0)
                            )
                        })
                        .unwrap_or_default();
                    format!(
                        "; half max {:.0}/s open loop, p99 {:.1} ms{inside}",
                        h.throughput, h.p99_ms
                    )
                })
                .unwrap_or_default();
            let inside = results
                .find_extra("1-hot-onsale", target, "reserve explicit (max)")
                .map(|e| &e["server_time_per_request"])
                .filter(|p| p.is_object())
                .map(|p| {
                    let ms = |k: &str| p[k].as_f64().unwrap_or(0.0);
                    format!(
                        "; inside the server per request: lock {:.2} ms, pool wait + BEGIN {:.2} ms, transaction {:.2} ms, unlock {:.2} ms",
                        ms("lock_ms"),
                        ms("pool_wait_ms"),
                        ms("transaction_ms"),
                        ms("unlock_ms")
                    )
                })
                .unwrap_or_default();
            format!(
                "harness reaches {:.0}/s ({:.0} 201s/s, the rest 409s), p50 {:.1} ms{half}{inside}",
                m.throughput, m.ok_per_s, m.p50_ms
            )
        })
    };
    if let Some(harness) = reached("naive-pg") {
        let commits: Vec<String> = results
            .tools
            .iter()
            .filter(|t| t.tool == "pgbench" && t.phase.starts_with("201"))
            .filter_map(|t| {
                let conns = t
                    .phase
                    .trim_start_matches("201: durable commit (")
                    .trim_end_matches(')');
                t.rate_per_s.map(|r| format!("{r:.0}/s with {conns}"))
            })
            .collect();
        let parts = match (commits.is_empty(), rate(tool("pgbench", "409"))) {
            (true, _) => "pgbench not available".to_owned(),
            (false, refusals) => format!(
                "PostgreSQL durable commit rate {} per pgbench (the same UPDATE), refusals (UPDATE of no row) {}",
                commits.join(", "),
                refusals.map(|r| format!("{r:.0}/s")).unwrap_or_else(|| "-".into())
            ),
        };
        lines.push(format!("naive-pg: {parts}; {harness}"));
    }
    if let Some(harness) = reached("redis-lock") {
        let set = tool("redis-benchmark", "SET");
        let parts = match (rate(set), rate(tool("redis-benchmark", "unlock"))) {
            (Some(set_rate), unlock) => format!(
                "Redis SET NX PX {set_rate:.0} commands/s ({}), unlock script {} calls/s per redis-benchmark; then the naive design's transaction (its commit rate above)",
                set.map(|t| t.note.as_str()).unwrap_or_default(),
                unlock.map(|r| format!("{r:.0}")).unwrap_or_else(|| "-".into())
            ),
            _ => "redis-benchmark not available".to_owned(),
        };
        lines.push(format!("redis-lock: {parts}; {harness}"));
    }
    lines
}

/// The targets of scenarios 3, 5 and 7.
fn later_goals(results: &Results) -> Vec<Goal> {
    let number = |v: Option<&Value>, key: &str| v.and_then(|v| v[key].as_f64());
    let joins = results
        .find("3-flash-crowd", "frontrow", "queue join (ramp)")
        .map(|s| s.p99_ms);
    let flash = results.flash_crowd.as_ref();
    let cat = results.catalogue.as_ref();
    let start = |i: usize, key: &str| cat.and_then(|c| c["starts"][i][key].as_f64());
    let worst = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
    vec![
        goal("flash-crowd join p99 <= 100 ms (ms)", joins, 100.0, false),
        goal(
            "SSE status stream <= 32 KiB RSS each (KiB)",
            number(flash, "rss_per_connection_kib"),
            32.0,
            false,
        ),
        goal(
            "analytics replay >= 1,000,000 events/s (SQLite journal)",
            number(results.analytics.as_ref(), "events_per_s"),
            1_000_000.0,
            true,
        ),
        goal(
            "ledger rebuild >= 50,000 events/s (here: the embedded SQLite ledger)",
            number(results.rebuild.as_ref(), "records_per_s"),
            50_000.0,
            true,
        ),
        goal(
            "catalogue <= 32 B of RSS per seat, created (B)",
            number(cat, "bytes_per_seat_peak"),
            32.0,
            false,
        ),
        goal(
            "catalogue <= 32 B of RSS per seat after a restart (B)",
            worst(start(0, "bytes_per_seat_settled"), start(1, "bytes_per_seat_settled")),
            32.0,
            false,
        ),
        goal(
            "restart to /ready <= 2 s, graceful and kill -9 (s)",
            worst(start(0, "ready_s"), start(1, "ready_s")),
            2.0,
            false,
        ),
        goal(
            "catalogue data directory <= 200 B per seat (B)",
            number(cat, "data_dir_bytes_per_seat"),
            200.0,
            false,
        ),
    ]
}

/// What the harness can tell about this machine from /proc.
pub fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned());
    let cpus = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    let meminfo = read("/proc/meminfo");
    let mem_kb = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok());
    json!({
        "cpu_model": model,
        "cpus": cpus,
        "memory_mib": mem_kb.map(|kb| kb / 1024),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "load_average_at_end": read("/proc/loadavg").split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    })
}

/// The commit the harness (and the FrontRow it runs in-process) was built from, compiled in.
pub fn git_commit() -> Value {
    json!({ "commit": frontrow::BUILD_COMMIT })
}

/// Writes `<out_dir>/bench-<profile>-<time>.json` and `.md`; returns the Markdown.
pub fn write(
    config: &Config,
    results: &Results,
    started: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<(PathBuf, String)> {
    let (ratios, goals) = goals(results);
    let notes = [
        "FrontRow runs in-process on its embedded defaults (SQLite journal fsynced per group commit, SQLite ledger, tantivy search) on a tokio runtime of its own with 2 worker threads; each baseline the same way; the load generator on a third runtime. Two cores are shared by all of them. The flash crowd (scenario 3) of a full run is the exception: its FrontRow is the real `frontrow serve` binary in a child process (the smoke run keeps it in-process).",
        "The database baselines run every connection with synchronous_commit = on (the local cluster's default is off), so their 201s are as durable as FrontRow's.",
        "Closed-loop phases: fixed clients, each waiting for its answer. Open-loop phases: fixed arrival rate; latency measured from the intended send time (coordinated omission corrected).",
        "Throughput counts every answer (201 and the 409s of seats already taken); ok_per_s counts the wanted answers only.",
        "Between FrontRow's phases the harness waits until the ledger projector has caught up with the journal (and 0.5 s more for the search projector), so no phase starts with a projection backlog from the previous one.",
        "The hello-world ceiling is measured first and last in the run; the ratios use the mean of the two.",
        "The reserve and map targets are ratios of the same process's GET /health (the issue's ceiling), measured on the lean client just after FrontRow starts, wrk beside it; the ratios to the bare hello-world server (no middleware: no request id, span, log line, metrics or rate limits) are reported too (ratios.*_vs_hello), as the stricter yardstick.",
        "Client: the ceiling and the database baselines' phases and FrontRow's explicit reserves (max, pay and half max) and map reads use the harness's lean HTTP/1.1 client (bench/src/http1.rs, one keep-alive connection per client); FrontRow's other phases (best-available, search, background reserves) still use reqwest. wrk runs against the same hello-world server with as many connections (ceilings.harness_vs_wrk).",
        "The database baselines' parts are measured alone in the same run: redis-benchmark with the lock's pipelined SET NX PX and the unlock script, pgbench with the naive transaction (see bottlenecks).",
        "Every design's half-max phase (FrontRow's since 2026-12-08) runs at half its max phase's rate over the first requests of the same sequence (the ones the half-max phase sends, mostly 201s), not half its whole rate, which is inflated by the cheap 409s once the max phase's event sold out; when the half-max phase sends more requests than the max phase answered, that is the max phase's whole rate.",
        "Targets are reported, not asserted.",
    ];
    let report = json!({
        "harness": "frontrow-bench",
        "profile": config.profile,
        "started_at": started,
        "finished_at": chrono::Utc::now(),
        "git": git_commit(),
        "machine": machine(),
        "config": config,
        "notes": notes,
        "scenarios": crate::run::SCENARIOS.iter().map(|(id, what)| json!({
            "id": id,
            "what": what,
            "available": !results.unavailable.iter().any(|u| u.scenario.starts_with(id)),
        })).collect::<Vec<_>>(),
        "results": results,
        "ratios": ratios,
        "ceilings": ceilings(results),
        "bottlenecks": bottlenecks(results),
        "targets": goals,
    });
    std::fs::create_dir_all(&config.out_dir).with_context(|| format!("creating {}", config.out_dir.display()))?;
    let stem = format!("bench-{}-{}", config.profile, started.format("%Y%m%dT%H%M%SZ"));
    let json_path = config.out_dir.join(format!("{stem}.json"));
    std::fs::write(&json_path, serde_json::to_vec_pretty(&report)?)?;
    let md = markdown(config, results, &ratios, &goals);
    std::fs::write(config.out_dir.join(format!("{stem}.md")), &md)?;
    Ok((json_path, md))
}

/// The hello-world ceilings side by side: the harness's client, reqwest and wrk.
fn ceilings(results: &Results) -> Value {
    let thr = |p: &str| results.find("0-ceiling", "hello", p).map(|m| m.throughput);
    let first = thr(crate::run::CEILING_FIRST);
    let last = thr(crate::run::CEILING_LAST);
    let harness = match (first, last) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (a, b) => a.or(b),
    };
    let wrk = wrk_ceiling(results);
    let wrk_note = results.tools.iter().find(|t| t.tool == "wrk").map(|t| t.note.clone());
    let health = results
        .find("0-ceiling", "frontrow", crate::run::CEILING_HEALTH)
        .map(|m| m.throughput);
    let wrk_health = results
        .tools
        .iter()
        .find(|t| t.tool == "wrk" && t.target == "frontrow")
        .and_then(|t| t.rate_per_s);
    json!({
        "harness": harness,
        "harness_client": "lean HTTP/1.1 keep-alive on bare tokio TcpStreams (bench/src/http1.rs), one connection per client",
        "reqwest": thr(crate::run::CEILING_REQWEST),
        "wrk": wrk,
        "wrk_note": wrk_note,
        "harness_vs_wrk": match (harness, wrk) { (Some(h), Some(w)) if w > 0.0 => Some(h / w), _ => None },
        "health_same_process": { "harness": health, "wrk": wrk_health },
    })
}

fn markdown(config: &Config, results: &Results, ratios: &Value, goals: &[Goal]) -> String {
    let mut md = format!("### FrontRow benchmark ({} run)\n\n", config.profile);
    md.push_str("| scenario | target | phase | answers/s | ok/s | p50 ms | p99 ms | p99.9 ms | shed | errors |\n");
    md.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for m in &results.measurements {
        let s = &m.stats;
        md.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {} |\n",
            m.scenario, m.target, m.phase, s.throughput, s.ok_per_s, s.p50_ms, s.p99_ms, s.p999_ms, s.shed, s.errors
        ));
    }
    if let Some(r) = &results.rebuild {
        md.push_str(&format!(
            "| 5-replay | frontrow | ledger rebuild (records/s) | {:.0} | | | | | | |\n",
            r["records_per_s"].as_f64().unwrap_or(0.0)
        ));
    }
    if let Some(a) = &results.analytics {
        md.push_str(&format!(
            "| 5-replay | frontrow | analytics replay (events/s) | {:.0} | | | | | | |\n",
            a["events_per_s"].as_f64().unwrap_or(0.0)
        ));
    }
    for u in &results.unavailable {
        md.push_str(&format!("| {} | | {} | | | | | | | |\n", u.scenario, u.reason));
    }
    md.push_str("\n| check | passed | reserved + booked + free = capacity | sold twice | mismatched |\n|---|---|---|---:|---:|\n");
    for (name, c) in &results.checks {
        md.push_str(&format!(
            "| {name} | {} | {} + {} + {} = {} | {} | {} |\n",
            if c.passed { "yes" } else { "NO" },
            c.reserved,
            c.booked,
            c.available,
            c.capacity,
            c.seats_sold_twice,
            c.seats_mismatched
        ));
    }
    if let Some(equal) = results.ledger_equals_log {
        md.push_str(&format!(
            "| frontrow: ledger equals a replay of the journal | {} | | | |\n",
            if equal { "yes" } else { "NO" }
        ));
    }
    for c in &results.queue_checks {
        md.push_str(&format!(
            "| frontrow: {} | {} | {} | | |\n",
            c.name,
            if c.passed { "yes" } else { "NO" },
            c.detail
        ));
    }
    if let Some(f) = &results.flash_crowd {
        md.push_str(&format!(
            "\nflash crowd: {} fans ({}); {} SSE streams held at once, {:.1} KiB RSS per connection ({})\n",
            f["fans"],
            f["fd_note"].as_str().unwrap_or(""),
            f["sse_streams_held"],
            f["rss_per_connection_kib"].as_f64().unwrap_or(0.0),
            f["rss_source"].as_str().unwrap_or("")
        ));
    }
    if let Some(c) = &results.catalogue {
        md.push_str(&format!(
            "\ncatalogue: {} events, {} seats in {:.1} s; RSS {:.0} MiB = {:.1} B/seat (peak {:.1}, growth {:.1}); data directory {:.1} B/seat\n",
            c["events"],
            c["seats"],
            c["create_s"].as_f64().unwrap_or(0.0),
            c["rss_created_mib"].as_f64().unwrap_or(0.0),
            c["bytes_per_seat_created"].as_f64().unwrap_or(0.0),
            c["bytes_per_seat_peak"].as_f64().unwrap_or(0.0),
            c["growth_bytes_per_seat"].as_f64().unwrap_or(0.0),
            c["data_dir_bytes_per_seat"].as_f64().unwrap_or(0.0),
        ));
        for s in c["starts"].as_array().into_iter().flatten() {
            md.push_str(&format!(
                "- {}: ready in {:.2} s, {:.1} B/seat 2 s later; loaded at ready: {} ({})\n",
                s["how"].as_str().unwrap_or(""),
                s["ready_s"].as_f64().unwrap_or(0.0),
                s["bytes_per_seat_settled"].as_f64().unwrap_or(0.0),
                s["loaded_at_ready"],
                s["loaded_detail"].as_str().unwrap_or(""),
            ));
        }
    }
    if let Some(w) = &results.web {
        md.push_str(&format!(
            "\nfan web app ({} seats): navigation to map-drawn p50 {} ms, max {} ms ({} loads); delta-to-pixel at {}/s: p50 {} ms, p99 {} ms, max {} ms ({} deltas, {} unmatched; clock offset {:.2} ms ± {:.2})\n",
            w["event_seats"],
            w["navigation"]["p50_ms"],
            w["navigation"]["max_ms"],
            w["navigation"]["count"],
            w["delta_rate_per_s"],
            w["delta_to_pixel"]["p50_ms"],
            w["delta_to_pixel"]["p99_ms"],
            w["delta_to_pixel"]["max_ms"],
            w["delta_to_pixel"]["count"],
            w["unmatched"],
            w["clock_offset_ms"].as_f64().unwrap_or(0.0),
            w["clock_uncertainty_ms"].as_f64().unwrap_or(0.0)
        ));
    }
    if !results.analytics_checks.is_empty() {
        md.push_str(
            "\n| analytics replay vs race | passed | reservations (log / 201s) | bookings (log / paid) | seats held (log / map) | seats booked (log / map) |\n|---|---|---:|---:|---:|---:|\n",
        );
        for (name, c) in &results.analytics_checks {
            md.push_str(&format!(
                "| {name} | {} | {} / {} | {} / {} | {} / {} | {} / {} |\n",
                if c.passed { "yes" } else { "NO" },
                c.reservations.analytics,
                c.reservations.observed,
                c.bookings.analytics,
                c.bookings.observed,
                c.seats_held_now.analytics,
                c.seats_held_now.observed,
                c.seats_booked_now.analytics,
                c.seats_booked_now.observed
            ));
        }
    }
    md.push_str("\n| target | measured | verdict |\n|---|---:|---|\n");
    for g in goals {
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            g.goal,
            g.value.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into()),
            g.verdict
        ));
    }
    let c = ceilings(results);
    if c["harness"].is_number() {
        let wrk = match c["wrk"].as_f64() {
            Some(w) => format!(
                "wrk {w:.0}/s; harness/wrk {:.2}",
                c["harness_vs_wrk"].as_f64().unwrap_or(0.0)
            ),
            None => c["wrk_note"].as_str().unwrap_or("wrk not available").to_owned(),
        };
        md.push_str(&format!(
            "\nhello-world ceilings: harness {:.0}/s; {wrk}; reqwest {}\n",
            c["harness"].as_f64().unwrap_or(0.0),
            c["reqwest"]
                .as_f64()
                .map(|r| format!("{r:.0}/s"))
                .unwrap_or_else(|| "-".into())
        ));
    }
    if !results.tools.is_empty() {
        md.push_str("\n| tool | target | phase | rate/s | unit | p50 ms | p99 ms | note |\n|---|---|---|---:|---|---:|---:|---|\n");
        let f = |v: Option<f64>, digits: usize| v.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "-".into());
        for t in &results.tools {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                t.tool,
                t.target,
                t.phase,
                f(t.rate_per_s, 0),
                t.unit,
                f(t.p50_ms, 2),
                f(t.p99_ms, 2),
                t.note
            ));
        }
    }
    for line in bottlenecks(results) {
        md.push_str(&format!("\n- {line}\n"));
    }
    md.push_str(&format!("\nratios: `{ratios}`\n"));
    for s in &results.skipped_baselines {
        md.push_str(&format!("\nskipped: {s}\n"));
    }
    md
}
