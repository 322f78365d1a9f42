//! How fast the analytics replay reads a big log.
//!
//! Builds a log of `--records` facts (default 5,000,000) on the embedded journal or on a Kafka
//! topic of its own, then times `frontrow analytics`'s replay of all of it, one event's report,
//! a seat's history and a past seat map, and prints the rates. The log is made of valid
//! envelopes written straight to the journal (no writers): per event, seat pairs are held and
//! expire, are released or fail payment several times, and are finally booked, a few refunded.
//!
//! ```text
//! cargo run --release -p frontrow-analytics --example replay_rate -- sqlite /tmp/replay-bench
//! cargo run --release -p frontrow-analytics --example replay_rate -- kafka://127.0.0.1:9092/frontrow.analytics-bench
//! ```
//! `--records N` sets the size, `--keep` keeps the log (the SQLite directory or the Kafka topic)
//! instead of deleting it at the end.

mod common;

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use chrono::{Duration, TimeZone, Utc};
use common::{EventLog, bench_event, seat_map};
use frontrow_analytics::{At, ReplayOptions, TravelLimits, analyse, availability_at, seat_history};
use frontrow_journal::{Journal, KafkaJournal, KafkaSettings, Record, SqliteJournal};
use frontrow_schema::partition::partition_of;
use frontrow_schema::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The allocator the `frontrow` binary runs `frontrow analytics` with.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const PARTITIONS: u32 = 8;
/// Seats per event: 20 sections of 25 rows of 20 seats.
const SECTIONS: u32 = 20;
const BATCH: usize = 10_000;

/// Appends records per partition in batches.
struct Sink {
    journal: Arc<dyn Journal>,
    pending: Vec<Vec<Record>>,
    written: u64,
}

impl common::Sink for Sink {
    async fn push(&mut self, env: Envelope) -> anyhow::Result<()> {
        let partition = partition_of(&env.event_id, PARTITIONS) as usize;
        self.pending[partition].push(common::record(&env));
        if self.pending[partition].len() >= BATCH {
            self.flush(partition).await?;
        }
        Ok(())
    }
}

impl Sink {
    async fn flush(&mut self, partition: usize) -> anyhow::Result<()> {
        let records = std::mem::take(&mut self.pending[partition]);
        self.written += records.len() as u64;
        self.journal.append(partition as u32, records).await?;
        Ok(())
    }
}

/// How a hold ends without a sale: mostly it expires, often it is let go, sometimes its
/// payment fails.
fn unsold(rng: &mut StdRng) -> ReleaseReason {
    match rng.random_range(0..10) {
        0..6 => ReleaseReason::Expired,
        6..9 => ReleaseReason::Released,
        _ => ReleaseReason::PaymentFailed,
    }
}

async fn open(target: &str) -> anyhow::Result<(Arc<dyn Journal>, Option<(String, String)>)> {
    if let Some(rest) = target.strip_prefix("kafka://") {
        let (brokers, topic) = rest.split_once('/').unwrap_or((rest, "frontrow.analytics-bench"));
        let journal = KafkaJournal::connect(KafkaSettings {
            topic: topic.to_owned(),
            ..KafkaSettings::new(brokers, PARTITIONS)
        })
        .await?;
        for p in 0..PARTITIONS {
            journal.claim(p).await?;
        }
        return Ok((Arc::new(journal), Some((brokers.to_owned(), topic.to_owned()))));
    }
    let dir = std::path::Path::new(target);
    std::fs::create_dir_all(dir)?;
    let journal = SqliteJournal::open(&dir.join("journal.db"), PARTITIONS)?;
    // As `frontrow analytics` opens it (`open_journal_to_replay`): reads through a memory map.
    journal.map_reads()?;
    Ok((Arc::new(journal), None))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let target = args
        .first()
        .context("usage: replay_rate sqlite DIR | kafka://BROKERS/TOPIC")?;
    let target = if target == "sqlite" {
        args.get(1).context("sqlite needs a directory")?.clone()
    } else {
        target.clone()
    };
    let records: u64 = match args.iter().position(|a| a == "--records") {
        Some(i) => args.get(i + 1).context("--records N")?.parse()?,
        None => 5_000_000,
    };
    let keep = args.iter().any(|a| a == "--keep");
    let opening = Instant::now();
    let (journal, kafka) = open(&target).await?;
    println!("journal opened in {:.3}s", opening.elapsed().as_secs_f64());
    let existing: u64 = {
        let mut total = 0;
        for p in 0..PARTITIONS {
            total += journal.end_offset(p).await?;
        }
        total
    };

    // Per event: 1 + seats/2 * 2 * (rounds + 1) records; 10,000 seats and 9 rounds make 100,001.
    let seats = u64::from(SECTIONS * common::ROWS) * u64::from(common::PER_ROW);
    let rounds = 9u32;
    let per_event = 1 + seats / 2 * 2 * u64::from(rounds + 1);
    let events = records.div_ceil(per_event);
    let mut first_event = None;
    if existing == 0 {
        let mut sink = Sink {
            journal: journal.clone(),
            pending: (0..PARTITIONS).map(|_| Vec::new()).collect(),
            written: 0,
        };
        let mut rng = StdRng::seed_from_u64(2027);
        let started = Instant::now();
        let start = Utc.with_ymd_and_hms(2027, 6, 1, 9, 0, 0).unwrap();
        for i in 0..events {
            let event = EventId::from_uuid(uuid::Uuid::from_u64_pair(2027, i + 1));
            first_event.get_or_insert(event);
            // Each seat pair goes through `rounds` holds that end without a sale, then a booking.
            let start = start + Duration::hours(i as i64);
            let info = bench_event(
                event,
                seat_map(SECTIONS),
                start + Duration::minutes(5),
                start + Duration::days(30),
            )?;
            EventLog::new(info, start, &mut rng, rounds, 0..3, unsold)
                .write_to(&mut sink)
                .await?;
            if i % 10 == 9 {
                eprintln!("written {} records", sink.written);
            }
        }
        for p in 0..PARTITIONS as usize {
            sink.flush(p).await?;
        }
        let secs = started.elapsed().as_secs_f64();
        eprintln!();
        println!(
            "built {} records ({} events of {} seats) in {:.1}s ({:.0} records/s)",
            sink.written,
            events,
            seats,
            secs,
            sink.written as f64 / secs
        );
    } else {
        first_event = Some(EventId::from_uuid(uuid::Uuid::from_u64_pair(2027, 1)));
        println!("reusing the {existing} records already there");
    }

    let started = Instant::now();
    let report = analyse(journal.clone(), &ReplayOptions::default(), |_| {}).await?;
    let secs = started.elapsed().as_secs_f64();
    let sold_out = report.events.iter().filter(|e| e.time_to_sell_out.is_some()).count();
    println!(
        "analytics replay of everything: {} records, {} events ({} sold out) in {:.1}s = {:.0} records/s",
        report.coverage.records_read,
        report.events.len(),
        sold_out,
        secs,
        report.coverage.records_read as f64 / secs
    );
    let event = first_event.context("no event")?;
    let started = Instant::now();
    let one = analyse(
        journal.clone(),
        &ReplayOptions {
            event: Some(event),
            ..ReplayOptions::default()
        },
        |_| {},
    )
    .await?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "one event's report: read {} records of its partition, decoded {}, in {:.1}s = {:.0} records/s",
        one.coverage.records_read,
        one.coverage.records_decoded,
        secs,
        one.coverage.records_read as f64 / secs
    );
    let started = Instant::now();
    let history = seat_history(journal.as_ref(), event, &"S1-R1-1".parse()?)
        .await?
        .context("seat")?;
    println!(
        "seat history from the log: {} changes in {:.1}s",
        history.history.len(),
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    // Just before the sell-out: the replay reads nearly all of the event's records.
    let late = one.events[0]
        .time_to_sell_out
        .as_ref()
        .map_or(Utc::now(), |s| s.sold_out_at - Duration::milliseconds(1));
    let map = availability_at(journal.as_ref(), event, At::Time(late), TravelLimits::default()).await?;
    println!(
        "map at {late} (time travel, replay from the partition's start): {:?} seats in {:.1}s",
        map.map(|m| m.seats),
        started.elapsed().as_secs_f64()
    );
    if !keep {
        match kafka {
            Some((brokers, topic)) => {
                frontrow_journal::delete_log(&brokers, &topic, &[]).await?;
                println!("deleted topic {topic} and its snapshot topics");
            }
            None => {
                drop(journal);
                std::fs::remove_dir_all(&target)?;
                println!("deleted {target}");
            }
        }
    }
    Ok(())
}
