//! The conformance cases driven through the projector by real records in a SQLite journal.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{TimeZone, Utc};
use frontrow_journal::{Journal, Record, SqliteJournal};
use frontrow_schema::partition::partition_of;
use frontrow_schema::*;
use tokio::sync::watch;

use super::{Harness, search};
use crate::index::*;
use crate::{fixture, projector};

/// A scratch SQLite journal, removed when dropped.
struct ScratchJournal {
    dir: PathBuf,
    journal: Arc<dyn Journal>,
}

impl ScratchJournal {
    fn new(name: &str, partitions: u32) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!("frontrow-search-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let journal = Arc::new(SqliteJournal::open(&dir.join("journal.db"), partitions).unwrap());
        Self { dir, journal }
    }

    /// Appends `events` of one event as one batch.
    async fn append(&self, event_id: EventId, events: Vec<Event>) {
        let partition = partition_of(&event_id, self.journal.partitions());
        let end = self.journal.end_offset(partition).await.unwrap();
        let records = events
            .into_iter()
            .enumerate()
            .map(|(i, event)| {
                let envelope = Envelope::new(event_id, end + i as u64 + 1, Utc::now(), event);
                Record {
                    key: envelope.key(),
                    value: encode(&envelope),
                }
            })
            .collect();
        self.journal.append(partition, records).await.unwrap();
    }
}

impl Drop for ScratchJournal {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn scheduled(event_id: EventId, artist: &str, city: &str, seats: u16) -> Event {
    let seat_map = serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "GOLD", "name": "Gold", "price": 9900}, {"code": "STD", "name": "Standard", "price": 4500}],
        "sections": [{"code": "A", "name": "Floor", "rows": [
            {"name": "1", "seats": seats, "tier": "GOLD"}, {"name": "2", "seats": 1, "tier": "STD"}]}]
    }))
    .unwrap();
    Event::EventScheduled(EventScheduled {
        title: format!("{artist} in {city}"),
        artist: artist.into(),
        venue: "Grand Hall".into(),
        city: city.into(),
        aliases: vec![format!("{artist} Ensemble 北极")],
        starts_at: Utc.with_ymd_and_hms(2027, 5, 1, 20, 0, 0).unwrap(),
        onsale_at: Utc.with_ymd_and_hms(2027, 2, 1, 10, 0, 0).unwrap(),
        ..fixture::scheduled(event_id, seat_map)
    })
}

fn seats(numbers: &[u16]) -> Vec<SeatId> {
    numbers
        .iter()
        .map(|n| {
            if *n == 0 {
                "A-2-1".parse().unwrap()
            } else {
                format!("A-1-{n}").parse().unwrap()
            }
        })
        .collect()
}

fn reserved(reservation_id: ReservationId, numbers: &[u16]) -> Event {
    let until = Utc.with_ymd_and_hms(2027, 2, 1, 10, 10, 0).unwrap();
    fixture::reserved(reservation_id, seats(numbers), until)
}

fn released(reservation_id: ReservationId, numbers: &[u16]) -> Event {
    Event::SeatsReleased(SeatsReleased {
        reservation_id,
        seats: seats(numbers),
        reason: ReleaseReason::Expired,
    })
}

fn booked(reservation_id: ReservationId, numbers: &[u16]) -> Event {
    Event::SeatsBooked(SeatsBooked {
        reservation_id,
        customer: CustomerId::parse("fan").unwrap(),
        seats: seats(numbers),
        payment: Payment {
            provider_event_id: format!("evt_{reservation_id}"),
            payment_intent: "pi_1".into(),
            amount: Money {
                amount: 0,
                currency: Currency::parse("EUR").unwrap(),
            },
        },
        late: false,
    })
}

/// Counts the documents written through it.
struct Counting {
    inner: Arc<dyn SearchIndex>,
    upserts: AtomicUsize,
}

#[async_trait]
impl SearchIndex for Counting {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    async fn ensure(&self) -> Result<String, SearchError> {
        self.inner.ensure().await
    }
    async fn live_version(&self) -> Result<Option<String>, SearchError> {
        self.inner.live_version().await
    }
    async fn create_version(&self) -> Result<String, SearchError> {
        self.inner.create_version().await
    }
    async fn swap_alias(&self, version: &str) -> Result<(), SearchError> {
        self.inner.swap_alias(version).await
    }
    async fn apply(&self, version: Option<&str>, batch: Batch) -> Result<(), SearchError> {
        self.upserts.fetch_add(batch.upserts.len(), Ordering::SeqCst);
        self.inner.apply(version, batch).await
    }
    async fn positions(&self, version: Option<&str>) -> Result<Positions, SearchError> {
        self.inner.positions(version).await
    }
    async fn get(&self, event_id: EventId) -> Result<Option<EventDoc>, SearchError> {
        self.inner.get(event_id).await
    }
    async fn search(&self, query: &SearchQuery) -> Result<SearchResults, SearchError> {
        self.inner.search(query).await
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes()
    }
    async fn destroy(&self) -> Result<(), SearchError> {
        self.inner.destroy().await
    }
}

/// A fresh index `name` counting its documents, a scratch journal of `partitions`, and the
/// projector's tasks following one into the other.
async fn counted_projection(
    h: &dyn Harness,
    name: &str,
    partitions: u32,
) -> (Arc<Counting>, ScratchJournal, Vec<tokio::task::JoinHandle<()>>) {
    let inner = h.open(name).await;
    inner.destroy().await.unwrap();
    let index = Arc::new(Counting {
        inner,
        upserts: AtomicUsize::new(0),
    });
    let scratch = ScratchJournal::new(name, partitions);
    let tasks = projector::start(index.clone(), scratch.journal.clone(), WRITE_EVERY)
        .await
        .unwrap();
    (index, scratch, tasks)
}

/// How often the projectors these cases start write at most.
const WRITE_EVERY: Duration = Duration::from_millis(500);

/// Polls `index` until the event's document satisfies `want` (or panics after 30 s).
async fn wait_for_doc(index: &dyn SearchIndex, event_id: EventId, want: impl Fn(&EventDoc) -> bool) -> EventDoc {
    let doc = || async { index.get(event_id).await.unwrap() };
    let message = format!("the projector indexes {event_id} as wanted");
    frontrow_schema::testsuite::wait_until(Duration::from_secs(30), &message, doc, |d| {
        d.clone().filter(|d| want(d))
    })
    .await
}

async fn available_ids(index: &dyn SearchIndex, text: &str) -> Vec<EventId> {
    let q = SearchQuery {
        available: true,
        ..SearchQuery::text(text)
    };
    let mut ids: Vec<EventId> = search(index, q)
        .await
        .hits
        .into_iter()
        .map(|h| h.doc.listing.event_id)
        .collect();
    ids.sort();
    ids
}

/// Holds and bookings reach seats-left and the `available` filter through the projector, one
/// document per event per batch, and a restarted projector carries on from its stored position.
pub async fn sell_outs_reach_the_available_filter(h: &dyn Harness) {
    let (index, scratch, tasks) = counted_projection(h, "sellout", 2).await;
    let (utrecht, lyon) = (fixture::event_id(800_001), fixture::event_id(800_002));
    scratch
        .append(utrecht, vec![scheduled(utrecht, "Nova Lights", "Utrecht", 4)])
        .await;
    scratch
        .append(lyon, vec![scheduled(lyon, "Nova Lights", "Lyon", 9)])
        .await;
    let doc = wait_for_doc(&*index, utrecht, |_| true).await;
    assert_eq!((doc.seats_total, doc.seats_left, doc.sold_out), (5, 5, false));
    assert_eq!(
        (doc.price_min, doc.price_max, doc.currency.as_str()),
        (4500, 9900, "EUR")
    );
    wait_for_doc(&*index, lyon, |_| true).await;
    let mut both = vec![utrecht, lyon];
    both.sort();
    assert_eq!(available_ids(&*index, "nova lights").await, both);

    // Five reservations in one append: one document write.
    let before = index.upserts.load(Ordering::SeqCst);
    let (r1, r2) = (ReservationId::new(), ReservationId::new());
    let holds = vec![
        reserved(r1, &[1]),
        reserved(r1, &[2]),
        reserved(r2, &[3]),
        reserved(r2, &[4]),
        reserved(r2, &[0]),
    ];
    scratch.append(utrecht, holds).await;
    let doc = wait_for_doc(&*index, utrecht, |d| d.sold_out).await;
    assert_eq!(doc.seats_left, 0);
    assert_eq!(
        index.upserts.load(Ordering::SeqCst) - before,
        1,
        "coalesced per event per batch"
    );
    assert_eq!(available_ids(&*index, "nova lights").await, vec![lyon]);
    assert_eq!(search(&*index, SearchQuery::text("nova lights")).await.total, 2);

    // A booking keeps the seats; an expired hold frees its seats.
    scratch
        .append(utrecht, vec![booked(r1, &[1, 2]), released(r2, &[3, 4])])
        .await;
    let doc = wait_for_doc(&*index, utrecht, |d| !d.sold_out).await;
    assert_eq!(doc.seats_left, 2);
    assert_eq!(available_ids(&*index, "nova lights").await, both);
    let p = partition_of(&utrecht, 2);
    let end = scratch.journal.end_offset(p).await.unwrap();
    let positions = || async { index.positions(None).await.unwrap() };
    let stored = |p_: &std::collections::BTreeMap<u32, u64>| (p_.get(&p) == Some(&end)).then_some(());
    frontrow_schema::testsuite::wait_until(
        Duration::from_secs(30),
        "the position is stored with the documents",
        positions,
        stored,
    )
    .await;
    for task in tasks {
        task.abort();
    }

    // Restarted, the projector knows each seat's state from the records before its position.
    scratch
        .append(utrecht, vec![reserved(ReservationId::new(), &[3])])
        .await;
    let tasks = projector::start(index.clone(), scratch.journal.clone(), WRITE_EVERY)
        .await
        .unwrap();
    let doc = wait_for_doc(&*index, utrecht, |d| d.seats_left == 1).await;
    assert!(!doc.sold_out);
    scratch
        .append(utrecht, vec![reserved(ReservationId::new(), &[4])])
        .await;
    wait_for_doc(&*index, utrecht, |d| d.sold_out).await;
    assert_eq!(available_ids(&*index, "nova lights").await, vec![lyon]);
    for task in tasks {
        task.abort();
    }
    index.destroy().await.unwrap();
}

/// A burst of appends, one reservation each as an onsale's writer makes them, reaches the
/// index in a few writes rather than one per append, and the last write holds all of them.
pub async fn a_burst_of_appends_is_written_in_few_batches(h: &dyn Harness) {
    let (index, scratch, tasks) = counted_projection(h, "burst", 1).await;
    let event = fixture::event_id(800_003);
    let seats = 60;
    scratch
        .append(event, vec![scheduled(event, "Nova Lights", "Gent", seats - 1)])
        .await;
    wait_for_doc(&*index, event, |_| true).await;
    let before = index.upserts.load(Ordering::SeqCst);
    let started = std::time::Instant::now();
    for seat in 0..seats {
        scratch
            .append(event, vec![reserved(ReservationId::new(), &[seat])])
            .await;
        // Spread as a writer's appends are, each one the projector's to read by itself.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let appending = started.elapsed();
    let doc = wait_for_doc(&*index, event, |d| d.sold_out).await;
    assert_eq!(doc.seats_left, 0);
    let writes = index.upserts.load(Ordering::SeqCst) - before;
    // At most one write per `WRITE_EVERY` while the appends went on, and one after them.
    let bound = 2 + (appending.as_millis() / WRITE_EVERY.as_millis()) as usize;
    assert!(
        writes <= bound && writes < usize::from(seats),
        "{writes} writes for {seats} appends made in {appending:?}"
    );
    for task in tasks {
        task.abort();
    }
    index.destroy().await.unwrap();
}

/// `rebuild` projects the whole journal into a new version and swaps it in.
pub async fn rebuild_projects_the_journal_into_a_new_version(h: &dyn Harness) {
    let index = h.open("rebuild").await;
    index.destroy().await.unwrap();
    let scratch = ScratchJournal::new("rebuild", 3);
    let ids: Vec<EventId> = (0..12).map(|i| fixture::event_id(700_000 + i)).collect();
    for (i, id) in ids.iter().enumerate() {
        let city = ["Porto", "Kyoto", "Oslo"][i % 3];
        scratch.append(*id, vec![scheduled(*id, "Polar Bloom", city, 2)]).await;
    }
    scratch
        .append(ids[0], vec![reserved(ReservationId::new(), &[1, 2, 0])])
        .await;
    let first = projector::rebuild(index.clone(), scratch.journal.clone())
        .await
        .unwrap();
    assert_eq!(index.live_version().await.unwrap(), Some(first.version.clone()));
    let found = search(&*index, SearchQuery::text("polar blom")).await;
    assert_eq!(found.total, 12);
    assert_eq!(available_ids(&*index, "polar bloom").await.len(), 11);
    // The organizer's aliases travel from the journal to the index and are searched.
    let by_alias = search(&*index, SearchQuery::text("北极")).await;
    assert_eq!(by_alias.total, 12);
    assert_eq!(by_alias.hits[0].doc.listing.aliases, ["Polar Bloom Ensemble 北极"]);
    let mut ends = Positions::new();
    for p in 0..3 {
        let end = scratch.journal.end_offset(p).await.unwrap();
        if end > 0 {
            ends.insert(p, end);
        }
    }
    assert_eq!(index.positions(None).await.unwrap(), ends);

    let second = projector::rebuild(index.clone(), scratch.journal.clone())
        .await
        .unwrap();
    assert_ne!(second.version, first.version);
    assert_eq!(index.live_version().await.unwrap(), Some(second.version));
    assert_eq!(search(&*index, SearchQuery::text("polar")).await.total, 12);
    assert!(index.positions(Some(&first.version)).await.is_err());
    index.destroy().await.unwrap();
}
