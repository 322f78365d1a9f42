//! The search projector: keeps the index current by following the journal.
//!
//! One task per journal partition. Each applies the facts it reads to the events of its
//! partition in memory (schedule, seat map, and each seat's state, so seats-left stays exact
//! however holds, bookings and releases interleave), then writes one document per event they
//! changed, with the partition's next offset, as one [`Batch`], at most once per interval (the
//! `projector_interval_ms` setting, shared with the ledger projector): a burst of ten thousand
//! reservations on one event costs a document write or two, not ten thousand. Because the
//! position is stored with the documents, a crash never skips or repeats a write: on start the
//! task reads its stored position, replays the records before it into memory only (to know each
//! seat's state), and continues writing from there.
//!
//! [`rebuild`] projects the whole journal into a fresh version and swaps the alias to it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use frontrow_journal::{Follower, Journal, Offset, StoredRecord};
use frontrow_schema::partition::partition_of;
use frontrow_schema::seatmap::SeatLayout;
use frontrow_schema::{Envelope, Event, EventId, EventScheduled, SeatId, SeatMap, SeatStatus, decode};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, error, info, warn};

use crate::index::{Batch, EventDoc, Listing, Positions, SearchIndex};

/// Records read and written per batch.
pub const BATCH: usize = 1024;
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// One event as the projector tracks it.
struct Tracked {
    info: EventScheduled,
    layout: SeatLayout,
    seats: Vec<SeatStatus>,
    left: u32,
}

impl Tracked {
    fn new(info: &EventScheduled) -> Self {
        let mut t = Self {
            info: info.clone(),
            layout: SeatLayout::new(info.seat_map.clone()),
            seats: Vec::new(),
            left: 0,
        };
        t.reset();
        t
    }

    fn reset(&mut self) {
        self.seats = vec![SeatStatus::Available; self.layout.len()];
        self.left = self.seats.len() as u32;
    }

    fn set(&mut self, seats: &[SeatId], to: SeatStatus) {
        for seat in seats {
            let Some(i) = self.layout.index_of(seat) else { continue };
            let from = std::mem::replace(&mut self.seats[i as usize], to);
            match (from == SeatStatus::Available, to == SeatStatus::Available) {
                (true, false) => self.left -= 1,
                (false, true) => self.left += 1,
                _ => {}
            }
        }
    }

    fn doc(&self) -> EventDoc {
        let i = &self.info;
        let (price_min, price_max) = price_range(self.layout.map());
        EventDoc {
            listing: Listing {
                event_id: i.event_id,
                title: i.title.clone(),
                artist: i.artist.clone(),
                aliases: i.aliases.clone(),
                venue: i.venue.clone(),
                city: i.city.clone(),
                tags: i.tags.clone(),
                starts_at: i.starts_at,
                onsale_at: i.onsale_at,
            },
            price_min,
            price_max,
            currency: i.currency.to_string(),
            seats_total: self.seats.len() as u32,
            seats_left: self.left,
            sold_out: self.left == 0,
        }
    }
}

/// The cheapest and dearest tier a row or a standing zone of the map uses.
fn price_range(map: &SeatMap) -> (i64, i64) {
    let rows = map.sections.iter().flat_map(|s| &s.rows).map(|r| &r.tier);
    let zones = map.sections.iter().filter_map(|s| s.standing.as_ref()).map(|z| &z.tier);
    let used: BTreeSet<_> = rows.chain(zones).collect();
    let prices = map.tiers.iter().filter(|t| used.contains(&t.code)).map(|t| t.price);
    let (min, max) = prices.fold((i64::MAX, i64::MIN), |(lo, hi), p| (lo.min(p), hi.max(p)));
    if min > max { (0, 0) } else { (min, max) }
}

/// The events of one partition, in memory.
pub struct PartitionState {
    partition: u32,
    partitions: u32,
    events: HashMap<EventId, Tracked>,
}

impl PartitionState {
    pub fn new(partition: u32, partitions: u32) -> Self {
        Self {
            partition,
            partitions,
            events: HashMap::new(),
        }
    }

    /// Applies records in order; returns the events whose document changed.
    pub fn apply(&mut self, records: &[StoredRecord]) -> BTreeSet<EventId> {
        let mut changed = BTreeSet::new();
        for record in records {
            match decode(&record.value) {
                Ok(envelope) => {
                    if self.apply_one(record.offset, &envelope) {
                        changed.insert(envelope.event_id);
                    }
                }
                Err(e) => {
                    warn!(partition = self.partition, offset = record.offset, error = %e, "undecodable record skipped")
                }
            }
        }
        changed
    }

    fn apply_one(&mut self, offset: Offset, envelope: &Envelope) -> bool {
        let id = envelope.event_id;
        if partition_of(&id, self.partitions) != self.partition {
            warn!(partition = self.partition, offset, event_id = %id, "record of another partition skipped");
            return false;
        }
        if let Event::EventScheduled(info) = &envelope.event {
            if self.events.contains_key(&id) {
                warn!(partition = self.partition, offset, event_id = %id, "event scheduled twice, first kept");
                return false;
            }
            self.events.insert(id, Tracked::new(info));
            return true;
        }
        let Some(t) = self.events.get_mut(&id) else {
            debug!(partition = self.partition, offset, event_id = %id, "fact about an unscheduled event skipped");
            return false;
        };
        match &envelope.event {
            Event::SeatMapChanged(e) => {
                t.layout = SeatLayout::new(e.seat_map.clone());
                t.reset();
            }
            _ => {
                let Some((seats, to)) = envelope.event.seat_move() else {
                    return false;
                };
                t.set(seats, to);
            }
        }
        true
    }

    /// The current document of an event.
    pub fn doc(&self, event_id: &EventId) -> Option<EventDoc> {
        self.events.get(event_id).map(Tracked::doc)
    }
}

/// Projects one partition into `version` (the live one when `None`): restores from the stored
/// position, then writes what it reads, at most once per `every` (zero: every batch). With
/// `until`, returns once the position reaches it; otherwise follows until the journal closes.
/// Returns the position reached.
pub async fn project_partition(
    index: Arc<dyn SearchIndex>,
    journal: Arc<dyn Journal>,
    partition: u32,
    version: Option<String>,
    until: Option<Offset>,
    every: Duration,
) -> anyhow::Result<Offset> {
    let mut state = PartitionState::new(partition, journal.partitions());
    let stored = index
        .positions(version.as_deref())
        .await
        .context("reading the stored search position")?
        .get(&partition)
        .copied()
        .unwrap_or(0);
    debug!(partition, stored, "search projector starting");
    if until.is_some_and(|end| stored >= end) {
        return Ok(stored);
    }
    // Records before the stored position are replayed into memory only (seat states are not in
    // the index); from there on what they change is written, at most once per `every`.
    let mut follower = Follower::new(journal, "search", partition, 0, BATCH)?;
    let mut pending = Pending::default();
    let mut backoff = Duration::from_millis(50);
    loop {
        let read = match pending.due(every) {
            // Changes wait to be written: read until they are due, then write them.
            Some(due) => tokio::time::timeout_at(due, follower.next_batch()).await.ok(),
            None => Some(follower.next_batch().await),
        };
        match read {
            None => {}
            Some(Some(Ok(records))) => {
                let split = records.partition_point(|r| r.offset < stored);
                state.apply(&records[..split]);
                if split < records.len() {
                    pending.changed.extend(state.apply(&records[split..]));
                    pending.records += records.len() - split;
                }
            }
            Some(Some(Err(e))) if e.is_transient() => {
                warn!(partition, error = %e, "journal read failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
            Some(Some(Err(e))) => return Err(e).context("reading the journal"),
            Some(None) => {
                // The journal closed: what was read is still written.
                pending
                    .write(&*index, version.as_deref(), &state, partition, follower.position())
                    .await;
                return Ok(follower.position());
            }
        }
        backoff = Duration::from_millis(50);
        let next = follower.position();
        if pending.due(every).is_some_and(|due| due <= Instant::now()) {
            pending
                .write(&*index, version.as_deref(), &state, partition, next)
                .await;
        }
        if until.is_some_and(|end| next >= end) {
            return Ok(next);
        }
    }
}

/// What a partition's projector has read but not yet written.
#[derive(Default)]
struct Pending {
    /// Events whose documents changed.
    changed: BTreeSet<EventId>,
    /// Records read past the stored position: even without a changed document, the position
    /// moves.
    records: usize,
    last_write: Option<Instant>,
}

impl Pending {
    /// When what is pending is to be written: `every` after the last write (at once for the
    /// first); `None` with nothing pending.
    fn due(&self, every: Duration) -> Option<Instant> {
        (self.records > 0).then(|| self.last_write.map_or_else(Instant::now, |at| at + every))
    }

    /// Writes the changed documents as they are now, with the partition's position `next`.
    async fn write(
        &mut self,
        index: &dyn SearchIndex,
        version: Option<&str>,
        state: &PartitionState,
        partition: u32,
        next: Offset,
    ) {
        if self.records == 0 {
            return;
        }
        let batch = Batch {
            upserts: self.changed.iter().filter_map(|id| state.doc(id)).collect(),
            deletes: Vec::new(),
            positions: Positions::from([(partition, next)]),
        };
        let documents = batch.upserts.len();
        write_with_retry(index, version, batch).await;
        debug!(
            partition,
            next,
            records = self.records,
            documents,
            "search batch written"
        );
        self.changed.clear();
        self.records = 0;
        self.last_write = Some(Instant::now());
    }
}

/// Writes a batch, retrying with backoff until the backend takes it: the next batch must not
/// be written before this one, or positions would skip.
async fn write_with_retry(index: &dyn SearchIndex, version: Option<&str>, batch: Batch) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match index.apply(version, batch.clone()).await {
            Ok(()) => return,
            Err(e) => {
                warn!(error = %e, retry_ms = backoff.as_millis() as u64, "search batch failed, retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Starts one projector task per partition writing to the live version (created if there is
/// none), each at most once per `every` while the journal grows. An onsale appends hundreds of
/// times a second; writing each append's changes was a commit of the index each time (ten or so
/// `fdatasync`s of new segment files and a reload of its reader). Seats-left in search may be
/// this much behind the seat map, which stays exact. The tasks run until the journal closes.
pub async fn start(
    index: Arc<dyn SearchIndex>,
    journal: Arc<dyn Journal>,
    every: Duration,
) -> anyhow::Result<Vec<JoinHandle<()>>> {
    let live = index.ensure().await.context("opening the search index")?;
    info!(backend = index.backend(), version = %live, "search projector following the journal");
    Ok((0..journal.partitions())
        .map(|partition| {
            let (index, journal) = (index.clone(), journal.clone());
            tokio::spawn(async move {
                match project_partition(index, journal, partition, None, None, every).await {
                    Ok(at) => info!(partition, at, "search projector stopped"),
                    Err(e) => error!(partition, error = format!("{e:#}"), "search projector failed"),
                }
            })
        })
        .collect())
}

/// What a rebuild produced.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    pub version: String,
    pub positions: Positions,
}

/// Projects the whole journal, as it is now, into a fresh version and swaps the alias to it;
/// the previous version is deleted. Projector tasks writing to the live version carry on into
/// the new one (they write the same documents from where they are).
pub async fn rebuild(index: Arc<dyn SearchIndex>, journal: Arc<dyn Journal>) -> anyhow::Result<Rebuilt> {
    let version = index
        .create_version()
        .await
        .context("creating a search index version")?;
    info!(%version, "search rebuild started");
    let mut positions = Positions::new();
    for partition in 0..journal.partitions() {
        let end = journal.end_offset(partition).await?;
        let at = project_partition(
            index.clone(),
            journal.clone(),
            partition,
            Some(version.clone()),
            Some(end),
            Duration::ZERO,
        )
        .await
        .with_context(|| format!("rebuilding from partition {partition}"))?;
        positions.insert(partition, at);
    }
    index.swap_alias(&version).await.context("swapping the search alias")?;
    info!(%version, "search rebuild swapped in");
    Ok(Rebuilt { version, positions })
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use frontrow_schema::*;

    use super::*;
    use crate::fixture;

    fn record(offset: Offset, event_id: EventId, event: Event) -> StoredRecord {
        let envelope = Envelope::new(event_id, offset + 1, Utc::now(), event);
        StoredRecord {
            partition: 0,
            offset,
            key: envelope.key(),
            value: encode(&envelope),
        }
    }

    fn map(rows: &[(u16, &str)]) -> SeatMap {
        let rows: Vec<_> = rows
            .iter()
            .enumerate()
            .map(|(i, (seats, tier))| serde_json::json!({"name": (i + 1).to_string(), "seats": seats, "tier": tier}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "tiers": [{"code": "VIP", "name": "VIP", "price": 25000}, {"code": "STD", "name": "Std", "price": 3000},
                      {"code": "UNUSED", "name": "Unused", "price": 1}],
            "sections": [{"code": "A", "name": "Floor", "rows": rows}]
        }))
        .unwrap()
    }

    fn scheduled(id: EventId, seat_map: SeatMap) -> Event {
        Event::EventScheduled(fixture::scheduled(id, seat_map))
    }

    fn hold(seats: &[&str]) -> Event {
        let seats = seats.iter().map(|s| s.parse().unwrap()).collect();
        fixture::reserved(ReservationId::new(), seats, until())
    }

    /// When the tests' holds end.
    fn until() -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2027, 3, 1, 10, 10, 0).unwrap()
    }

    #[test]
    fn standing_places_count_as_seats_left_and_their_tier_as_a_price() {
        let id = EventId::new();
        let mut state = PartitionState::new(0, 1);
        let mut seat_map = map(&[(2, "STD")]);
        seat_map.sections.push(
            serde_json::from_value(serde_json::json!(
                {"code": "FLOOR", "name": "Standing", "standing": {"capacity": 3, "tier": "VIP"}}
            ))
            .unwrap(),
        );
        state.apply(&[record(0, id, scheduled(id, seat_map))]);
        let doc = state.doc(&id).unwrap();
        assert_eq!((doc.seats_total, doc.seats_left), (5, 5));
        assert_eq!((doc.price_min, doc.price_max), (3000, 25000), "the zone's tier is used");
        state.apply(&[record(1, id, hold(&["A-1-1", "A-1-2"]))]);
        let doc = state.doc(&id).unwrap();
        assert_eq!((doc.seats_left, doc.sold_out), (3, false), "the floor still has places");
        state.apply(&[record(2, id, hold(&["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3"]))]);
        let doc = state.doc(&id).unwrap();
        assert_eq!((doc.seats_left, doc.sold_out), (0, true));
    }

    #[test]
    fn seat_map_changes_reset_seats_and_prices_follow_used_tiers() {
        let id = EventId::new();
        let mut state = PartitionState::new(0, 1);
        let scheduled = scheduled(id, map(&[(2, "VIP"), (3, "STD")]));
        let hold = hold(&["A-1-1", "A-1-1", "Z-9-9"]);
        let changed = state.apply(&[record(0, id, scheduled), record(1, id, hold)]);
        assert_eq!(
            changed.into_iter().collect::<Vec<_>>(),
            vec![id],
            "one document per event per batch"
        );
        let doc = state.doc(&id).unwrap();
        assert_eq!(
            (doc.seats_total, doc.seats_left),
            (5, 4),
            "a seat held twice or unknown counts once"
        );
        assert_eq!(
            (doc.price_min, doc.price_max),
            (3000, 25000),
            "unused tiers do not count"
        );

        let new_map = Event::SeatMapChanged(SeatMapChanged {
            seat_map: map(&[(1, "STD")]).into(),
        });
        state.apply(&[record(2, id, new_map)]);
        let doc = state.doc(&id).unwrap();
        assert_eq!((doc.seats_total, doc.seats_left, doc.sold_out), (1, 1, false));
        assert_eq!((doc.price_min, doc.price_max), (3000, 3000));

        let other = EventId::new();
        let stray = Event::SeatsReleased(SeatsReleased {
            reservation_id: ReservationId::new(),
            seats: vec![],
            reason: ReleaseReason::Released,
        });
        assert!(
            state.apply(&[record(3, other, stray)]).is_empty(),
            "facts of unknown events are skipped"
        );
    }
}
