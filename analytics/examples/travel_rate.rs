//! How long a past seat map takes in the middle of a big partition, with and without snapshots.
//!
//! Builds one partition of `--records` facts (default 1,000,000) on the embedded journal: events
//! of 5,000 seats whose seat pairs are held and released a few times and finally booked, written
//! as valid envelopes straight to the journal. Every `--every` records (default 50,000, the
//! writers' default `snapshot_every`) the real partition writer is started and stopped
//! gracefully, which restores from its latest snapshot and stores a fresh one, so the snapshot
//! history holds the writer's own snapshots at that spacing. Then it times the map of the event
//! busiest at the middle of the partition, at the middle (as a position and as a time): replayed
//! from the start, and from the nearest snapshot. Both answers must be equal.
//!
//! ```text
//! cargo run --release -p frontrow-analytics --example travel_rate -- [--records N] [--every N] [--dir DIR]
//! ```

mod common;

use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, TimeZone, Utc};
use common::{EventLog, bench_event, seat_map};
use frontrow_analytics::{At, TravelLimits};
use frontrow_command::clock::ManualClock;
use frontrow_command::writer::{WriterConfig, Writers};
use frontrow_journal::{Journal, Position, Record, Snapshot, SnapshotBound, SqliteJournal};
use frontrow_query::travel::{ReplayFrom, replay_to};
use frontrow_schema::*;
use rand::SeedableRng;
use rand::rngs::StdRng;

const ROUNDS: u32 = 4;
const BATCH: usize = 10_000;

/// Appends records in batches and cycles the writer every `every` records.
struct Sink {
    journal: Arc<dyn Journal>,
    pending: Vec<Record>,
    written: u64,
    every: u64,
    since_cycle: u64,
    clock: Arc<ManualClock>,
    writer_seconds: f64,
}

impl common::Sink for Sink {
    async fn push(&mut self, env: Envelope) -> anyhow::Result<()> {
        self.pending.push(common::record(&env));
        if self.pending.len() >= BATCH {
            self.flush().await?;
        }
        Ok(())
    }
}

impl Sink {
    async fn flush(&mut self) -> anyhow::Result<()> {
        let records = std::mem::take(&mut self.pending);
        self.written += records.len() as u64;
        self.since_cycle += records.len() as u64;
        self.journal.append(0, records).await?;
        if self.since_cycle >= self.every {
            self.since_cycle = 0;
            // The real writer restores (latest snapshot + tail) and stores a fresh snapshot on a
            // graceful stop: the history gets the writer's own snapshot of this point.
            let started = Instant::now();
            let config = WriterConfig {
                snapshot_every: self.every,
                ..WriterConfig::default()
            };
            let writers = Writers::start(self.journal.clone(), self.clock.clone(), config).await?;
            writers.shutdown().await;
            self.writer_seconds += started.elapsed().as_secs_f64();
        }
        Ok(())
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let records: u64 = arg(&args, "--records").map_or(Ok(1_000_000), |s| s.parse())?;
    let every: u64 = arg(&args, "--every").map_or(Ok(50_000), |s| s.parse())?;
    let tmp = tempfile::tempdir()?;
    let dir = arg(&args, "--dir").map_or_else(|| tmp.path().to_owned(), Into::into);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("travel.db");
    let _ = std::fs::remove_file(&path);
    let journal = Arc::new(SqliteJournal::open(&path, 1)?);
    journal.keep_snapshots(usize::MAX);
    let journal: Arc<dyn Journal> = journal;
    let start = Utc.with_ymd_and_hms(2027, 3, 1, 10, 0, 0).unwrap();
    let mut sink = Sink {
        journal: journal.clone(),
        pending: Vec::new(),
        written: 0,
        every,
        since_cycle: 0,
        clock: Arc::new(ManualClock::new(start)),
        writer_seconds: 0.0,
    };
    let mut rng = StdRng::seed_from_u64(7);
    let built = Instant::now();
    let mut events = Vec::new();
    let mut now = start;
    while sink.written + (sink.pending.len() as u64) < records {
        let event = EventId::new();
        events.push((event, sink.written + sink.pending.len() as u64));
        // Each pair held and released `ROUNDS` times, then booked.
        let info = bench_event(event, seat_map(10), now, now + Duration::days(300))?;
        let log = EventLog::new(info, now, &mut rng, ROUNDS, 1..4, |_| ReleaseReason::Released);
        now = log.write_to(&mut sink).await? + Duration::seconds(1);
    }
    sink.flush().await?;
    let end = journal.end_offset(0).await?;
    println!(
        "built {end} records of {} events in {:.1}s ({:.1}s of it in {} writer restores+snapshots every {every})",
        events.len(),
        built.elapsed().as_secs_f64(),
        sink.writer_seconds,
        end / every
    );

    // The event being sold around the middle of the partition, and that instant as a time; a
    // little past the middle so the tail after the nearest snapshot is a typical 20,000 records
    // (events start every 25,001 records, so the middle itself would be an event's first).
    let middle = end / 2 + every * 2 / 5;
    let event = events
        .iter()
        .rev()
        .find(|(_, first)| *first <= middle)
        .map(|(e, _)| *e)
        .unwrap();
    let record = journal.read(0, middle, 1).await?.records.remove(0);
    let time = decode(&record.value)?.time;
    let Snapshot { mark, bytes } = journal
        .snapshot_before(0, SnapshotBound::Offset(middle))
        .await?
        .expect("a snapshot before the middle");
    println!(
        "middle: offset {middle}, {time}; nearest snapshot covers offset {} ({} MB), a tail of {} records",
        mark.last,
        bytes.len() / 1_000_000,
        middle - mark.last
    );
    let limits = TravelLimits {
        max_records: u64::MAX,
        ..TravelLimits::default()
    };
    for at in [
        At::Position(Position {
            partition: 0,
            offset: middle,
        }),
        At::Time(time),
    ] {
        let mut best = [f64::MAX; 2];
        let mut maps = [None, None];
        for _ in 0..3 {
            let started = Instant::now();
            maps[0] = replay_to(journal.as_ref(), event, at, limits, ReplayFrom::LogStart)
                .await?
                .map(|e| e.availability());
            best[0] = best[0].min(started.elapsed().as_secs_f64());
            let started = Instant::now();
            maps[1] = replay_to(journal.as_ref(), event, at, limits, ReplayFrom::NearestSnapshot)
                .await?
                .map(|e| e.availability());
            best[1] = best[1].min(started.elapsed().as_secs_f64());
        }
        anyhow::ensure!(maps[0] == maps[1], "the snapshot path answered differently at {at}");
        let seats = maps[0].as_ref().map(|m| m.seats);
        println!(
            "at {at}: from the start {:.3}s, from the nearest snapshot {:.3}s ({:.1}x); seats {seats:?}",
            best[0],
            best[1],
            best[0] / best[1]
        );
    }
    // Where the snapshot path spends its time: the lookup and the decode of the snapshot.
    let started = Instant::now();
    let Snapshot { bytes, .. } = journal
        .snapshot_before(0, SnapshotBound::Offset(middle))
        .await?
        .unwrap();
    let looked_up = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let one = frontrow_schema::snapshot::read_event_seats(&bytes, event)?;
    let decode_one = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let all = frontrow_schema::snapshot::read_partition_seats(&bytes)?;
    println!(
        "snapshot lookup {looked_up:.3}s; decode of the event's entry {decode_one:.3}s ({} reservations), of every entry {:.3}s ({} events, {} reservations)",
        one.event.map_or(0, |e| e.reservations.len()),
        started.elapsed().as_secs_f64(),
        all.events.len(),
        all.events.iter().map(|e| e.reservations.len()).sum::<usize>()
    );
    Ok(())
}
