//! How long a partition writer takes to restore 1,000,000 events, with and without a snapshot.
//!
//! ```sh
//! cargo run --release -p frontrow-command --example recovery                 # SQLite journal
//! ./deploy/local/up.sh kafka && cargo run --release -p frontrow-command --example recovery -- \
//!     kafka://127.0.0.1:9092 1000000                                           # Kafka
//! ```
//!
//! The log is generated through the real domain (`decide` + `apply`): fans reserve the best two
//! seats of a random section of a 20,000-seat arena and then pay (30 %) or let go (70 %); a
//! sold-out arena is followed by the next one. All of it lands in one partition.

use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, Utc};
use frontrow_command::clock::{Clock, SystemClock};
use frontrow_command::domain::{self, Command, EventState, SeatSelection};
use frontrow_command::writer::{Meta, WriterConfig, Writers, record};
use frontrow_journal::{Journal, KafkaJournal, KafkaSettings, Record, SqliteJournal};
use frontrow_schema::seatmap::RowName;
use frontrow_schema::*;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

fn arena() -> SeatMap {
    let tier = |code: &str, price| PriceTier {
        code: TierCode::parse(code).unwrap(),
        name: code.into(),
        price,
    };
    let sections = (0..20)
        .map(|s| Section {
            code: SectionCode::parse(&format!("S{s}")).unwrap(),
            name: format!("Section {s}"),
            rows: (1..=40)
                .map(|r| Row {
                    name: RowName::parse(&r.to_string()).unwrap(),
                    seats: 25,
                    tier: TierCode::parse("STD").unwrap(),
                    attributes: Default::default(),
                })
                .collect(),
            standing: None,
        })
        .collect();
    SeatMap {
        tiers: vec![tier("STD", 5900)],
        sections,
    }
}

/// Generates `total` events into partition 0 of `journal`, and returns the partition's state
/// as its writer holds it afterwards.
async fn generate(journal: &dyn Journal, total: usize) -> Vec<EventState> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let now = Utc::now();
    let mut records = Vec::with_capacity(5000);
    let mut written = 0;
    let mut state: Option<EventState> = None;
    let mut done = Vec::new();
    let mut event_id = EventId::new();
    let mut n = 0u64;
    // Consecutive reserves that found no two adjacent seats: the arena is as full as it gets.
    let mut misses = 0;
    let push =
        |state: &mut Option<EventState>, event_id: EventId, command: Command, records: &mut Vec<Record>| -> usize {
            let Ok(events) = domain::decide(state.as_ref(), event_id, &command, now) else {
                return 0;
            };
            record(state, event_id, &events, now, &Meta::default(), Uuid::now_v7, records);
            events.len()
        };
    while written + records.len() < total {
        if misses > 50 || state.as_ref().is_none_or(|s| s.counts.available < 2) {
            misses = 0;
            done.extend(state.take());
            event_id = EventId::new();
            let info = EventScheduled {
                organizer: OrganizerId::parse("bench").unwrap(),
                title: "Recovery".into(),
                artist: "The Replayers".into(),
                venue: "Arena".into(),
                city: "Delft".into(),
                // Seats are picked at random here, whatever they leave alone: the no-orphan rule is off.
                allow_orphan_seats: true,
                ..testsuite::sample_event(event_id, now - Duration::minutes(1), arena())
            };
            push(&mut state, event_id, Command::Schedule(Box::new(info)), &mut records);
        }
        n += 1;
        let customer = CustomerId::parse(&format!("fan{n}")).unwrap();
        let reservation_id = ReservationId::new();
        let section = SectionCode::parse(&format!("S{}", rng.random_range(0..20))).unwrap();
        let reserve = Command::Reserve {
            customer: customer.clone(),
            reservation_id,
            selection: SeatSelection::BestAvailable { section, count: 2 },
            idempotency_key: format!("k{n}"),
            admission: None,
        };
        if push(&mut state, event_id, reserve, &mut records) == 0 {
            misses += 1;
            continue;
        }
        misses = 0;
        let next = if rng.random_bool(0.3) {
            let amount = Money {
                amount: 11800,
                currency: Currency::parse("EUR").unwrap(),
            };
            Command::PaymentSucceeded {
                reservation_id,
                payment: Payment {
                    provider_event_id: format!("evt_{n}"),
                    payment_intent: format!("pi_{n}"),
                    amount,
                },
            }
        } else {
            Command::Release {
                customer,
                reservation_id,
            }
        };
        push(&mut state, event_id, next, &mut records);
        if records.len() >= 5000 {
            written += records.len();
            journal.append(0, std::mem::take(&mut records)).await.expect("append");
        }
    }
    if !records.is_empty() {
        written += records.len();
        journal.append(0, records).await.expect("append");
    }
    println!("generated {written} events");
    done.extend(state);
    done
}

async fn timed_start(journal: Arc<dyn Journal>, clock: Arc<dyn Clock>, snapshot_every: u64) -> (Writers, f64) {
    let started = Instant::now();
    let config = WriterConfig {
        snapshot_every,
        ..WriterConfig::default()
    };
    let writers = Writers::start(journal, clock, config).await.expect("restore");
    (writers, started.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let target = args.first().cloned().unwrap_or_else(|| "sqlite".into());
    let total: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let journal: Arc<dyn Journal> = match target.strip_prefix("kafka://") {
        Some(brokers) => {
            let topic = format!("frontrow.bench.recovery.{}", Uuid::new_v4().simple());
            Arc::new(
                KafkaJournal::connect(KafkaSettings {
                    topic,
                    ..KafkaSettings::new(brokers, 1)
                })
                .await
                .unwrap(),
            )
        }
        None => Arc::new(SqliteJournal::open(&dir.path().join("journal.db"), 1).unwrap()),
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let started = Instant::now();
    let states = generate(journal.as_ref(), total).await;
    println!("generation took {:.1}s", started.elapsed().as_secs_f64());
    // What a writer does on its own task when it snapshots (the rest is done beside it): the
    // longest appends wait behind a snapshot.
    let taking = Instant::now();
    let taken: Vec<_> = states.iter().map(EventState::snapshot).collect();
    println!(
        "taking a snapshot of the state on the writer's task: {:.1} ms ({} reservations)",
        taking.elapsed().as_secs_f64() * 1e3,
        taken.iter().map(|s| s.reservations.len()).sum::<usize>()
    );
    drop((taken, states));

    // Full replay; the graceful stop then stores a snapshot of everything.
    let (writers, full) = timed_start(journal.clone(), clock.clone(), u64::MAX).await;
    println!(
        "restore without a snapshot: {full:.2}s ({:.0} events/s)",
        total as f64 / full
    );
    let stopped = Instant::now();
    writers.shutdown().await;
    println!("snapshot stored at stop in {:.2}s", stopped.elapsed().as_secs_f64());
    let size = journal.load_snapshot(0).await.unwrap().map_or(0, |s| s.len());
    println!("snapshot size: {:.1} MB", size as f64 / 1e6);

    let (writers, snap) = timed_start(journal.clone(), clock, 0).await;
    println!("restore from the snapshot: {snap:.2}s");
    writers.shutdown().await;
}
