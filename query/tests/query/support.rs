//! A real `SqliteJournal` in a temporary directory, and builders for the facts tests append.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeZone, Utc};
use frontrow_journal::{Journal, Position, Record, SqliteJournal};
use frontrow_query::Catalog;
use frontrow_schema::partition::partition_of;
use frontrow_schema::*;
use tempfile::TempDir;

pub const PARTITIONS: u32 = 4;

/// How long a test waits for the catalog to reach a position.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A journal on disk that numbers each event's facts like the write side does.
pub struct TestLog {
    _dir: TempDir,
    pub journal: Arc<SqliteJournal>,
    sequences: Mutex<HashMap<EventId, u64>>,
}

impl TestLog {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let journal = SqliteJournal::open(&dir.path().join("journal.db"), PARTITIONS).unwrap();
        Self {
            _dir: dir,
            journal: Arc::new(journal),
            sequences: Mutex::default(),
        }
    }

    /// Starts a catalog following this log.
    pub async fn catalog(&self) -> Arc<Catalog> {
        let journal: Arc<dyn Journal> = self.journal.clone();
        Catalog::start(journal).await.unwrap().0
    }

    /// Appends one fact about `event_id` to the event's partition, as the write side would.
    pub async fn append(&self, event_id: EventId, event: Event) -> Position {
        let sequence = {
            let mut sequences = self.sequences.lock().unwrap();
            let next = sequences.entry(event_id).or_insert(0);
            *next += 1;
            *next
        };
        let envelope = Envelope::new(event_id, sequence, Utc::now(), event);
        let partition = partition_of(&event_id, PARTITIONS);
        self.append_raw(partition, envelope.key(), encode(&envelope)).await
    }

    pub async fn append_raw(&self, partition: u32, key: Vec<u8>, value: Vec<u8>) -> Position {
        let offsets = self
            .journal
            .append(partition, vec![Record { key, value }])
            .await
            .unwrap();
        Position {
            partition,
            offset: offsets[0],
        }
    }

    /// Where the next fact about `event_id` will be written.
    pub async fn next_position(&self, event_id: &EventId) -> Position {
        let partition = partition_of(event_id, PARTITIONS);
        Position {
            partition,
            offset: self.journal.end_offset(partition).await.unwrap(),
        }
    }
}

/// A catalog following a log with one scheduled event, caught up.
pub async fn one_event(map: SeatMap) -> (TestLog, Arc<Catalog>, EventId) {
    let log = TestLog::new();
    let event = EventId::new();
    let pos = log.append(event, scheduled(event, "Night", at(1), map)).await;
    let catalog = log.catalog().await;
    assert!(catalog.wait_for(pos, WAIT).await);
    (log, catalog, event)
}

pub fn at(day: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, day, 20, 0, 0).unwrap()
}

fn eur() -> Currency {
    Currency::parse("EUR").unwrap()
}

/// Two sections: `A` (row 1: 4 GOLD seats, row 2: 3 STD seats) and `B` (row 1: 2 STD seats),
/// from `small_map.json`, which the crate's unit tests read too.
pub fn small_map() -> SeatMap {
    serde_json::from_str(include_str!("small_map.json")).unwrap()
}

/// `sections` sections `S1..` of `rows` rows `R1..` of `seats` seats each.
pub fn stadium(sections: u32, rows: u32, seats: u16) -> SeatMap {
    let sections: Vec<_> = (1..=sections)
        .map(|s| {
            let rows: Vec<_> = (1..=rows)
                .map(|r| serde_json::json!({"name": format!("R{r}"), "seats": seats, "tier": "STD"}))
                .collect();
            serde_json::json!({"code": format!("S{s}"), "name": format!("Section {s}"), "rows": rows})
        })
        .collect();
    let map: SeatMap = serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "STD", "name": "Standard", "price": 4500}],
        "sections": sections,
    }))
    .unwrap();
    map.validate().unwrap();
    map
}

pub fn scheduled(event_id: EventId, title: &str, starts_at: DateTime<Utc>, seat_map: SeatMap) -> Event {
    Event::EventScheduled(EventScheduled {
        event_id,
        organizer: OrganizerId::parse("acme").unwrap(),
        title: title.into(),
        artist: "The Band".into(),
        venue: "Arena".into(),
        city: "Lyon".into(),
        tags: vec![],
        aliases: vec![],
        starts_at,
        onsale_at: Utc.with_ymd_and_hms(2026, 3, 1, 10, 0, 0).unwrap(),
        hold_minutes: HoldMinutes::DEFAULT,
        max_seats_per_order: 6,
        max_seats_per_customer: None,
        allow_orphan_seats: false,
        currency: eur(),
        seat_map: seat_map.into(),
    })
}

pub fn seats(ids: &[&str]) -> Vec<SeatId> {
    ids.iter().map(|s| s.parse().unwrap()).collect()
}

pub fn reserved(reservation: ReservationId, ids: &[&str]) -> Event {
    Event::SeatsReserved(SeatsReserved {
        reservation_id: reservation,
        customer: CustomerId::parse("alice").unwrap(),
        seats: seats(ids),
        hold_until: Utc.with_ymd_and_hms(2026, 3, 1, 10, 10, 0).unwrap(),
        amount: Money {
            amount: 4500 * ids.len() as i64,
            currency: eur(),
        },
        admission_ticket: None,
    })
}

pub fn booked(reservation: ReservationId, ids: &[&str]) -> Event {
    Event::SeatsBooked(SeatsBooked {
        reservation_id: reservation,
        customer: CustomerId::parse("alice").unwrap(),
        seats: seats(ids),
        payment: Payment {
            provider_event_id: format!("evt_{reservation}"),
            payment_intent: format!("pi_{reservation}"),
            amount: Money {
                amount: 4500 * ids.len() as i64,
                currency: eur(),
            },
        },
        late: false,
    })
}

pub fn released(reservation: ReservationId, ids: &[&str], reason: ReleaseReason) -> Event {
    Event::SeatsReleased(SeatsReleased {
        reservation_id: reservation,
        seats: seats(ids),
        reason,
    })
}

pub fn payment_failed(reservation: ReservationId) -> Event {
    Event::PaymentFailed(PaymentFailed {
        reservation_id: reservation,
        provider_event_id: format!("evt_fail_{reservation}"),
        payment_intent: format!("pi_{reservation}"),
        message: Some("card declined".into()),
    })
}
