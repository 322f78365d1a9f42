//! Scenario 6, the fan web app in headless Chromium (the [`frontrow_browser`] harness the
//! browser tests use), on FrontRow's embedded defaults with the sample arena (20,008 seats):
//!
//! - **navigation to a drawn map**: `goto(/e/{id})` a few times; each load's figure is the
//!   page's own `performance.mark('map-drawn')` (`startTime`, milliseconds since the
//!   navigation started, i.e. since `performance.timeOrigin`), read after `frontrowMap.ready`.
//! - **delta-to-pixel latency**: while the page is open, single-seat reservations arrive
//!   through the API at a fixed rate (1,000/s, open loop); each `201` is one record and so one
//!   `seat` delta on the stream. For each acknowledged reservation (position `P:O`, the
//!   harness's wall clock when the answer was in), the latency is the time until the first
//!   `delta-painted-N` mark whose delta position is at or after it.
//!
//! Clocks: a mark's wall time is `performance.timeOrigin + mark.startTime` (the browser's
//! epoch milliseconds); the harness's is `SystemTime::now()`. Both come from this machine's
//! clock, and the offset between them is measured anyway: the harness reads
//! `timeOrigin + performance.now()` through WebDriver several times, takes the sample with the
//! shortest round trip, and assumes the page read its clock in the middle of it; the offset is
//! subtracted and the half round trip reported as the alignment's uncertainty.
//!
//! Reported, never asserted. Without `chromedriver` the scenario is listed as unavailable.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use frontrow_browser::{Browser, Driver, Viewport};
use frontrow_journal::Position;
use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::frontrow::FrontRow;
use crate::load::drive;
use crate::run::{Config, Results, Unavailable, client};
use crate::scenarios::create_event;
use crate::workload::{Kind, Race, RaceLog, arena_rows, tokens};

/// The scenario's name in the report.
pub const SCENARIO: &str = "6-web";

fn epoch_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64() * 1000.0
}

/// Milliseconds to add to a browser wall time to get the harness's, and the uncertainty.
async fn clock_offset(b: &Browser) -> anyhow::Result<(f64, f64)> {
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..20 {
        let before = epoch_ms(SystemTime::now());
        let page = b
            .js("return performance.timeOrigin + performance.now();", vec![])
            .await?;
        let after = epoch_ms(SystemTime::now());
        let page = page.as_f64().context("the page's clock is not a number")?;
        let half = (after - before) / 2.0;
        if best.is_none_or(|(_, h)| half < h) {
            best = Some((before + half - page, half));
        }
    }
    best.context("no clock sample")
}

/// p50/p99/max of millisecond figures (recorded in microseconds).
fn summary(values_ms: &[f64]) -> Value {
    let mut h = Histogram::<u64>::new(3).expect("a histogram with 3 significant digits");
    for v in values_ms {
        h.record((v.max(0.0) * 1000.0) as u64)
            .expect("an auto-resizing histogram records anything");
    }
    let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
    json!({
        "count": values_ms.len(),
        "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": h.max() as f64 / 1000.0,
        // Unclamped: a delta can be painted before the harness has read the 201 that caused it.
        "min_ms": values_ms.iter().copied().reduce(f64::min),
        "painted_before_ack": values_ms.iter().filter(|v| **v < 0.0).count(),
    })
}

/// Loads the event page `loads` times; the `map-drawn` mark of each.
async fn navigation(b: &Browser, url: &str, loads: usize) -> anyhow::Result<Vec<f64>> {
    let mut drawn = Vec::with_capacity(loads);
    for _ in 0..loads {
        b.goto(url).await?;
        b.wait_until(
            "bench-map-drawn",
            Duration::from_secs(30),
            "the map is drawn (frontrowMap.ready)",
            || async {
                let v = b
                    .js(
                        "return window.frontrowMap ? window.frontrowMap.ready.then(() => \
                         performance.getEntriesByName('map-drawn').map(m => m.startTime)[0] ?? null) : null;",
                        vec![],
                    )
                    .await?;
                Ok(v.as_f64())
            },
        )
        .await
        .map(|ms| drawn.push(ms))?;
    }
    Ok(drawn)
}

/// One `delta-painted-N` mark: `N`, its browser wall time (ms), the delta's position if the
/// page gave it (`detail.position`).
struct Painted {
    n: u64,
    at_ms: f64,
    position: Option<Position>,
}

async fn painted_marks(b: &Browser) -> anyhow::Result<Vec<Painted>> {
    let marks = b
        .js(
            "return performance.getEntriesByType('mark').filter(m => m.name.startsWith('delta-painted-'))\
             .map(m => [m.name.slice(14), performance.timeOrigin + m.startTime, (m.detail && m.detail.position) || null]);",
            vec![],
        )
        .await?;
    let mut marks: Vec<Painted> = marks
        .as_array()
        .context("marks are not a list")?
        .iter()
        .filter_map(|m| {
            Some(Painted {
                n: m[0].as_str()?.parse().ok()?,
                at_ms: m[1].as_f64()?,
                position: m[2].as_str().and_then(|p| p.parse().ok()),
            })
        })
        .collect();
    marks.sort_by_key(|m| m.n);
    Ok(marks)
}

/// For each acknowledgement (position, harness wall time in ms), the browser wall time its delta
/// was painted. With positions in the marks: the first mark at or after the position. Without:
/// the k-th new mark is the k-th acknowledged position in log order (the event has no other
/// writer, each reservation is one record and so one delta), used only when the counts agree.
fn paint_times(acks: &[(Position, f64)], marks: &[Painted], marks_before: u64) -> Vec<Option<f64>> {
    let new: Vec<&Painted> = marks.iter().filter(|m| m.n > marks_before).collect();
    if new.iter().all(|m| m.position.is_some()) {
        return acks
            .iter()
            .map(|(pos, _)| {
                new.iter()
                    .filter(|m| m.position.is_some_and(|p| p >= *pos))
                    .map(|m| m.at_ms)
                    .reduce(f64::min)
            })
            .collect();
    }
    if new.len() != acks.len() {
        return vec![None; acks.len()];
    }
    let mut order: Vec<usize> = (0..acks.len()).collect();
    order.sort_by_key(|&i| acks[i].0);
    let mut times = vec![None; acks.len()];
    for (k, i) in order.into_iter().enumerate() {
        times[i] = Some(new[k].at_ms);
    }
    times
}

/// Runs scenario 6; a machine without `chromedriver` gets it listed as unavailable.
pub(crate) async fn web(config: &Config, results: &mut Results) -> anyhow::Result<()> {
    println!("fan web app in headless Chromium");
    let driver = match Driver::start().await {
        Ok(d) => d,
        Err(e) => {
            println!("  {SCENARIO}: unavailable: {e:#}");
            results.unavailable.push(Unavailable {
                scenario: SCENARIO,
                reason: "no chromedriver: deploy/local/chromium.sh installs it",
            });
            return Ok(());
        }
    };
    let fr = FrontRow::start().await?;
    let base = format!("http://{}", fr.served.addr);
    let http = client(config.clients * 2);
    let event = create_event(&http, &base, "Web Onsale", "Nova Lights", "Utrecht").await?;
    let b = driver.session(Viewport::DESKTOP).await?;
    let url = format!("{base}/e/{event}");
    let drawn = navigation(&b, &url, config.web_loads).await?;
    println!("  {SCENARIO:<16} frontrow   navigation to map-drawn: {drawn:.1?} ms");
    b.screenshot("bench-web-map").await?;

    // Deltas: every reservation one seat, so every 201 is one record and one stream delta.
    let (offset, uncertainty) = clock_offset(&b).await?;
    let marks_before = painted_marks(&b).await?.last().map_or(0, |m| m.n);
    let picks: Arc<Vec<Vec<String>>> = Arc::new(arena_rows().into_iter().flatten().map(|s| vec![s]).collect());
    let race = Race {
        kind: Kind::Frontrow,
        client: http.clone(),
        base: base.clone(),
        event,
        tokens: Arc::new(tokens(&fr.auth, config.customers)),
        log: Arc::new(RaceLog::default()),
    };
    let (mode, bounds) = config.open(config.web_delta_rate);
    let stats = drive(mode, bounds, race.reserve_explicit(picks)).await;
    results.push(SCENARIO, "frontrow", "reserve 1 seat (stream load)", stats);
    let won = race.log.won.lock().expect("race log").clone();
    let last = won
        .iter()
        .filter_map(|w| w.position.as_deref()?.parse::<Position>().ok())
        .max()
        .context("no reservation was acknowledged")?;
    // Let the page catch up with the last acknowledged delta and paint it (bounded): a delta is
    // applied at once but its mark is set on the next frame, so wait for the mark, not the
    // page's position (reading the marks between the two left the last frame's unmatched).
    let caught_up = b
        .wait_until(
            "bench-deltas",
            Duration::from_secs(30),
            "the page painted the last delta",
            || async {
                let marks = painted_marks(&b).await?;
                let p = marks.iter().filter_map(|m| m.position).max();
                Ok(p.filter(|p| *p >= last))
            },
        )
        .await
        .is_ok();
    let marks = painted_marks(&b).await?;
    b.screenshot("bench-web-after-deltas").await?;
    let acks: Vec<(Position, f64)> = won
        .iter()
        .filter_map(|w| Some((w.position.as_deref()?.parse().ok()?, epoch_ms(w.acked_at))))
        .collect();
    let painted = paint_times(&acks, &marks, marks_before);
    let latencies: Vec<f64> = acks
        .iter()
        .zip(&painted)
        .filter_map(|((_, acked), painted)| Some(painted.as_ref()? + offset - acked))
        .collect();
    let unmatched = won.len() - latencies.len();
    let figures = json!({
        "event_seats": arena_rows().iter().map(Vec::len).sum::<usize>(),
        "navigation_to_map_drawn_ms": drawn,
        "navigation": summary(&drawn),
        "delta_rate_per_s": config.web_delta_rate,
        "acknowledged": won.len(),
        "delta_marks": marks.iter().filter(|m| m.n > marks_before).count(),
        "marks_with_position": marks.iter().filter(|m| m.position.is_some()).count(),
        "unmatched": unmatched,
        "page_caught_up": caught_up,
        "delta_to_pixel": summary(&latencies),
        "clock_offset_ms": offset,
        "clock_uncertainty_ms": uncertainty,
        "clock": "mark wall time = performance.timeOrigin + startTime (browser); ack = SystemTime::now() when the 201 was read (harness); offset from the WebDriver round trip with the shortest time",
        "matching": "a mark's detail.position when the page gives it, else the k-th new mark = the k-th acknowledged position (one record, one delta)",
    });
    println!(
        "  {SCENARIO:<16} frontrow   delta-to-pixel at {}/s: {} (clock offset {offset:.2} ms ± {uncertainty:.2})",
        config.web_delta_rate, figures["delta_to_pixel"]
    );
    results.web = Some(figures);
    b.close().await?;
    fr.stop().await?;
    drop(driver);
    Ok(())
}
