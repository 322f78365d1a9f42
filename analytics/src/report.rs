//! A whole analytics run: replay, fold, and write the report for machines and for people.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use chrono::{DateTime, Utc};
use frontrow_journal::Journal;
use serde::{Deserialize, Serialize};

use crate::figures::{EventReport, Figures};
use crate::replay::{Coverage, Progress, ReplayOptions, end_offsets, replay_partition};

/// The report of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub generated_at: DateTime<Utc>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub coverage: Coverage,
    /// Seconds the replay took, and records read per second.
    pub replay_seconds: f64,
    pub records_per_second: f64,
    pub events: Vec<EventReport>,
    /// What the report cannot say yet.
    pub notes: Vec<String>,
}

/// What a `null` queue means.
pub const QUEUE_NOTE: &str = "queue figures are null for an event that had no waiting room";

/// Replays `journal` as `options` say and folds the figures; `progress` is told how far it got
/// (about ten times a second). Partitions are replayed side by side, each into its own
/// [`Figures`]: an event lives in one partition, so the per-partition results only need to be
/// put together.
pub async fn analyse(
    journal: Arc<dyn Journal>,
    options: &ReplayOptions,
    mut progress: impl FnMut(Progress),
) -> anyhow::Result<Report> {
    let started = std::time::Instant::now();
    let ends = end_offsets(journal.as_ref(), options)
        .await
        .context("reading the journal's end offsets")?;
    let offsets = Arc::new(AtomicU64::new(0));
    let records = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for &(partition, end) in &ends {
        let (journal, options) = (journal.clone(), options.clone());
        let (offsets, records) = (offsets.clone(), records.clone());
        tasks.spawn(async move {
            let mut figures = Figures::new(options.clone());
            let coverage = replay_partition(
                journal.as_ref(),
                partition,
                end,
                &options,
                |at, env| figures.observe(at, env),
                |o, r| {
                    offsets.fetch_add(o, Ordering::Relaxed);
                    records.fetch_add(r, Ordering::Relaxed);
                },
            )
            .await;
            coverage.map(|c| (c, figures.finish()))
        });
    }
    let total = ends.iter().map(|(_, end)| end).sum();
    let snapshot = || Progress {
        records: records.load(Ordering::Relaxed),
        offsets_done: offsets.load(Ordering::Relaxed),
        offsets_total: total,
    };
    let mut coverage = Coverage {
        end_offsets: ends.clone(),
        ..Coverage::default()
    };
    let mut events = Vec::new();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
    loop {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                let (part, reports) = joined
                    .context("a partition replay failed")?
                    .context("reading the journal")?;
                coverage.records_read += part.records_read;
                coverage.records_decoded += part.records_decoded;
                coverage.undecodable += part.undecodable;
                events.extend(reports);
            }
            _ = tick.tick() => progress(snapshot()),
        }
    }
    progress(Progress {
        offsets_done: total,
        ..snapshot()
    });
    events.sort_by_key(|e| e.event_id);
    let elapsed = started.elapsed().as_secs_f64();
    Ok(Report {
        generated_at: Utc::now(),
        from: options.from,
        to: options.to,
        records_per_second: coverage.records_read as f64 / elapsed.max(1e-9),
        replay_seconds: elapsed,
        coverage,
        events,
        notes: vec![QUEUE_NOTE.to_owned()],
    })
}

/// The per-second CSV: one line per event and second with activity.
pub fn per_second_csv(report: &Report) -> String {
    let mut out = String::from(
        "event_id,second,reservations,seats_reserved,bookings,seats_booked,expired,released,payment_failed,refunded,seats_sold_total\n",
    );
    for event in &report.events {
        for s in &event.per_second {
            let counts = s.counts.as_array().map(|n| n.to_string()).join(",");
            out.push_str(&format!(
                "{},{},{counts},{}\n",
                event.event_id,
                s.second.format("%Y-%m-%dT%H:%M:%SZ"),
                s.seats_sold_total
            ));
        }
    }
    out
}

/// Writes `report.json`, `per_second.csv` and `report.html` into `dir`; returns their paths.
pub fn write(report: &Report, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = [
        ("report.json", serde_json::to_vec_pretty(report)?),
        ("per_second.csv", per_second_csv(report).into_bytes()),
        ("report.html", crate::html::render(report).into_bytes()),
    ];
    let mut paths = Vec::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        let mut file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        file.write_all(&bytes)
            .with_context(|| format!("writing {}", path.display()))?;
        paths.push(path);
    }
    Ok(paths)
}
