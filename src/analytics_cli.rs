//! `frontrow analytics`: the onsale report, a past seat map and a seat's history, from the log.
//!
//! It opens the configured journal as every other subcommand does, but to read the whole log
//! once ([`open_journal_to_replay`]: the embedded journal's reads through a memory map), and only
//! reads.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use chrono::{DateTime, Utc};
use frontrow_analytics::{At, Progress, ReplayOptions, TravelLimits};
use frontrow_schema::{EventId, SeatId};

use crate::app::open_journal_to_replay;
use crate::settings::Settings;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AnalyticsArgs {
    /// `sqlite` or `kafka://HOST:PORT[/TOPIC]` (overrides FRONTROW_JOURNAL).
    #[arg(long, global = true)]
    journal: Option<String>,
    /// Only this event (default: every event).
    #[arg(long)]
    event: Option<EventId>,
    /// Count only facts recorded at or after this RFC 3339 time.
    #[arg(long)]
    from: Option<DateTime<Utc>>,
    /// Read nothing recorded after this RFC 3339 time.
    #[arg(long)]
    to: Option<DateTime<Utc>>,
    /// Directory for report.json, per_second.csv and report.html (default: print the JSON).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Show the progress bar even when stderr is not a terminal.
    #[arg(long)]
    progress: bool,
    #[command(subcommand)]
    view: Option<View>,
}

#[derive(clap::Subcommand)]
enum View {
    /// Print an event's availability map as it was at an instant of the log.
    Map {
        #[arg(long)]
        event: EventId,
        /// An RFC 3339 time or a log position PARTITION:OFFSET.
        #[arg(long)]
        at: At,
    },
    /// Print every change of one seat, from the log.
    Seat {
        #[arg(long)]
        event: EventId,
        /// SECTION-ROW-NUMBER.
        #[arg(long)]
        seat: SeatId,
    },
}

/// Runs `frontrow analytics`.
pub async fn run(settings: &Settings, args: &AnalyticsArgs) -> anyhow::Result<()> {
    let mut settings = settings.clone();
    if let Some(journal) = &args.journal {
        settings.journal = journal.parse()?;
    }
    let journal = open_journal_to_replay(&settings).await?;
    match &args.view {
        Some(View::Map { event, at }) => {
            let map = frontrow_analytics::availability_at(journal.as_ref(), *event, *at, TravelLimits::default())
                .await?
                .with_context(|| format!("event {event} did not exist at {at}"))?;
            println!("{}", serde_json::to_string_pretty(&map)?);
        }
        Some(View::Seat { event, seat }) => {
            let history = frontrow_analytics::seat_history(journal.as_ref(), *event, seat)
                .await?
                .with_context(|| format!("event {event} has no seat {seat} in the log"))?;
            println!("{}", serde_json::to_string_pretty(&history)?);
        }
        None => {
            if let (Some(from), Some(to)) = (args.from, args.to) {
                anyhow::ensure!(from <= to, "--from {from} is after --to {to}");
            }
            let options = ReplayOptions {
                event: args.event,
                from: args.from,
                to: args.to,
                batch: 5000,
            };
            let show = args.progress || std::io::stderr().is_terminal();
            let mut bar = ProgressBar::new(show);
            let report = frontrow_analytics::analyse(journal.clone(), &options, |p| bar.update(p)).await?;
            bar.finish();
            match &args.out {
                Some(dir) => {
                    for path in frontrow_analytics::write(&report, dir)? {
                        println!("{}", path.display());
                    }
                    eprintln!(
                        "{} events, {} records in {:.2}s ({:.0} records/s)",
                        report.events.len(),
                        report.coverage.records_read,
                        report.replay_seconds,
                        report.records_per_second
                    );
                }
                None => println!("{}", serde_json::to_string_pretty(&report)?),
            }
        }
    }
    Ok(())
}

/// A one-line progress bar on stderr, redrawn at most ten times a second.
struct ProgressBar {
    show: bool,
    last: Option<std::time::Instant>,
    started: std::time::Instant,
}

impl ProgressBar {
    fn new(show: bool) -> Self {
        Self {
            show,
            last: None,
            started: std::time::Instant::now(),
        }
    }

    fn update(&mut self, p: Progress) {
        let done = p.offsets_done >= p.offsets_total;
        if !self.show || (!done && self.last.is_some_and(|t| t.elapsed().as_millis() < 100)) {
            return;
        }
        self.last = Some(std::time::Instant::now());
        let fraction = if p.offsets_total == 0 {
            1.0
        } else {
            p.offsets_done as f64 / p.offsets_total as f64
        };
        let filled = (fraction * 30.0).round() as usize;
        let rate = p.records as f64 / self.started.elapsed().as_secs_f64().max(1e-3);
        eprint!(
            "\r[{}{}] {:>5.1}% {} records {:.0}/s ",
            "#".repeat(filled),
            "-".repeat(30 - filled.min(30)),
            fraction * 100.0,
            p.records,
            rate
        );
    }

    fn finish(&mut self) {
        if self.show && self.last.is_some() {
            eprintln!();
        }
    }
}
