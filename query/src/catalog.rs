//! The events and their live availability, kept in memory by following the journal.
//!
//! A [`Catalog`] runs one task per journal partition. Each task follows its partition from the
//! first record, decodes every envelope and applies it to the [`LiveEvent`]s of that partition,
//! then publishes how far it got. Readers take a shared lock on one partition's events for the
//! time it takes to copy a count or clone the cached availability [`Bytes`], so the hot read
//! path never serialises a map twice for the same version and never waits on I/O.
//!
//! Every applied record makes the partition's position (the next offset to apply) visible
//! through a `watch` channel, which is what read-your-writes waits on: a command answers with
//! the position it wrote, and [`Catalog::wait_for`] returns once that position is applied here.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use frontrow_http::page::Cursor;
use frontrow_journal::{Follower, Journal, Offset, Position, Scan, StoredRecord};
use frontrow_schema::partition::partition_of;
use frontrow_schema::{Envelope, Event, EventId, EventScheduled, SeatId, decode};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

use crate::live::LiveEvent;
use crate::views::{AvailabilityMap, EventDetails, EventSummary, SeatCounts, SeatStatus};

/// How many records a follower reads and applies under one write lock.
const BATCH: usize = 512;
/// The longest pause between retries of a failing journal read.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Every event the journal has scheduled, with the live status of its seats.
pub struct Catalog {
    partitions: Vec<Partition>,
    /// The followed journal, read again for time travel and to replay seat changes a
    /// reconnecting SSE client missed.
    journal: Arc<dyn Journal>,
    /// Set when the node shuts down: open SSE streams end so a graceful stop does not wait
    /// for clients that never hang up.
    closing: watch::Sender<bool>,
}

/// How many applied batches of seat changes a live SSE subscriber may fall behind before it is
/// dropped (it reconnects with `Last-Event-ID` and catches up from the journal).
pub const DELTA_BACKLOG: usize = 256;

/// One record's change to an event's seats, as pushed to SSE subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatDelta {
    /// The record's position: the SSE event id.
    pub position: Position,
    pub event_id: EventId,
    pub change: SeatChange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeatChange {
    /// These seats now have this status.
    Seats { seats: Vec<SeatId>, status: SeatStatus },
    /// The seat map was replaced: every seat is available again under the new map.
    Reset,
}

/// The seat changes among some envelopes.
pub fn seat_deltas<'a>(envelopes: impl IntoIterator<Item = &'a (Position, Envelope)>) -> Vec<SeatDelta> {
    envelopes
        .into_iter()
        .filter_map(|(at, env)| {
            let seats = |seats: &[SeatId], status| SeatChange::Seats {
                seats: seats.to_vec(),
                status,
            };
            let change = match &env.event {
                Event::SeatsReserved(e) => seats(&e.seats, SeatStatus::Held),
                Event::SeatsBooked(e) => seats(&e.seats, SeatStatus::Booked),
                Event::SeatsReleased(e) => seats(&e.seats, SeatStatus::Available),
                Event::SeatsWithheld(e) => seats(&e.seats, SeatStatus::Withheld),
                Event::SeatsReturned(e) => seats(&e.seats, SeatStatus::Available),
                Event::SeatMapChanged(_) => SeatChange::Reset,
                _ => return None,
            };
            Some(SeatDelta {
                position: *at,
                event_id: env.event_id,
                change,
            })
        })
        .collect()
}

/// Which events a list shows: those in a city (its whole name, in any case) starting within
/// `from..=to`; each absent bound admits all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// The city, lowercased once here so that no event's needs to be copied.
    city: Option<String>,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
}

impl EventFilter {
    pub fn new(city: Option<&str>, from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Self {
        Self {
            city: city.map(|c| c.chars().flat_map(char::to_lowercase).collect()),
            from,
            to,
        }
    }

    fn admits(&self, event: &EventScheduled) -> bool {
        let in_city = |city: &str| event.city.chars().flat_map(char::to_lowercase).eq(city.chars());
        self.city.as_deref().is_none_or(in_city)
            && self.from.is_none_or(|from| event.starts_at >= from)
            && self.to.is_none_or(|to| event.starts_at <= to)
    }
}

/// A page of a list of events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPage {
    pub events: Vec<EventSummary>,
    /// How many events the filter admits, on every page.
    pub total: usize,
    /// Where the next page starts; `None` on the last.
    pub next: Option<Cursor>,
}

/// The events of one journal partition and how far its follower got.
struct Partition {
    events: RwLock<HashMap<EventId, LiveEvent>>,
    /// The next offset to apply: every record before it is visible to readers.
    applied: watch::Sender<Offset>,
    /// The partition's end when the node started; reaching it means this partition caught up.
    end_at_start: Offset,
    /// Seat changes of each applied batch, for SSE subscribers (bounded: see [`DELTA_BACKLOG`]).
    deltas: broadcast::Sender<Arc<Vec<SeatDelta>>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let applied: Vec<Offset> = self.partitions.iter().map(|p| *p.applied.borrow()).collect();
        f.debug_struct("Catalog")
            .field("applied", &applied)
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// Starts following every partition of `journal` from its first record. Returns once each
    /// partition's current end has been recorded (see [`Catalog::is_caught_up`]), with the
    /// follower tasks, which run until the journal closes.
    pub async fn start(journal: Arc<dyn Journal>) -> anyhow::Result<(Arc<Self>, Vec<JoinHandle<()>>)> {
        let count = journal.partitions();
        let mut partitions = Vec::with_capacity(count as usize);
        let mut followers = Vec::with_capacity(count as usize);
        for partition in 0..count {
            let end_at_start = journal
                .end_offset(partition)
                .await
                .with_context(|| format!("reading the end of journal partition {partition}"))?;
            let follower = Follower::new(journal.clone(), "query", partition, 0, BATCH)
                .with_context(|| format!("following journal partition {partition}"))?;
            partitions.push(Partition {
                events: RwLock::new(HashMap::new()),
                applied: watch::Sender::new(0),
                end_at_start,
                deltas: broadcast::Sender::new(DELTA_BACKLOG),
            });
            followers.push(follower);
        }
        let catalog = Arc::new(Self {
            partitions,
            journal: journal.clone(),
            closing: watch::Sender::new(false),
        });
        let tasks = followers
            .into_iter()
            .map(|f| tokio::spawn(catalog.clone().follow(f)))
            .collect();
        info!(partitions = count, "query node following the journal");
        Ok((catalog, tasks))
    }

    async fn follow(self: Arc<Self>, mut follower: Follower) {
        let partition = follower.partition();
        let mut backoff = Duration::from_millis(50);
        loop {
            match follower.next_batch().await {
                Some(Ok(records)) => {
                    backoff = Duration::from_millis(50);
                    self.apply(partition, &records, follower.position());
                }
                Some(Err(e)) if e.is_transient() => {
                    warn!(partition, error = %e, retry_ms = backoff.as_millis() as u64, "journal read failed, retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Some(Err(e)) => {
                    error!(partition, error = %e, "journal read failed, follower stopped");
                    return;
                }
                None => {
                    info!(partition, "journal closed, follower stopped");
                    return;
                }
            }
        }
    }

    /// Applies one batch read from `partition` and makes everything before `next` visible.
    fn apply(&self, partition: u32, records: &[StoredRecord], next: Offset) {
        // Decode before taking the lock: readers only wait for the cheap part.
        let envelopes: Vec<(Position, Envelope)> = records
            .iter()
            .filter_map(|r| match decode(&r.value) {
                Ok(envelope) => Some((
                    Position {
                        partition,
                        offset: r.offset,
                    },
                    envelope,
                )),
                Err(e) => {
                    warn!(partition, offset = r.offset, error = %e, "undecodable record skipped");
                    None
                }
            })
            .collect();
        let part = &self.partitions[partition as usize];
        {
            let mut events = part.events.write().unwrap_or_else(PoisonError::into_inner);
            for (at, envelope) in &envelopes {
                self.apply_one(&mut events, *at, envelope);
            }
        }
        // Publish after the lock is released, so whoever wakes up sees the new state; the
        // position before the deltas, so an SSE client that reads the position after
        // subscribing gets every later batch through its subscription.
        part.applied.send_replace(next);
        if part.deltas.receiver_count() > 0 {
            let deltas = seat_deltas(&envelopes);
            if !deltas.is_empty() {
                // No subscriber left is fine: nobody is listening.
                let _ = part.deltas.send(Arc::new(deltas));
            }
        }
    }

    /// Ends every open SSE stream (graceful shutdown); new ones end at once.
    pub fn close_streams(&self) {
        self.closing.send_replace(true);
    }

    /// Resolves once [`Catalog::close_streams`] was called.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut closing = self.closing.subscribe();
        async move {
            let _ = closing.wait_for(|c| *c).await;
        }
    }

    /// Subscribes to the seat changes of `partition`'s future batches.
    pub fn subscribe_deltas(&self, partition: u32) -> Option<broadcast::Receiver<Arc<Vec<SeatDelta>>>> {
        self.partitions.get(partition as usize).map(|p| p.deltas.subscribe())
    }

    /// Waits until `partition` applies anything new.
    pub fn watch_applied(&self, partition: u32) -> Option<watch::Receiver<Offset>> {
        self.partitions.get(partition as usize).map(|p| p.applied.subscribe())
    }

    /// Waits for waiting-room facts of `event_id` that can change a fan's status (for the
    /// status streams): first joins wake none.
    pub fn watch_queue(&self, event_id: &EventId) -> Option<watch::Receiver<u64>> {
        self.with_event(event_id, LiveEvent::watch_queue)
    }

    /// The seat changes of `event_id` recorded at offsets `from..to` of its partition, read
    /// back from the journal (at most `limit` records read; `None` if the range is longer).
    pub async fn seat_deltas_between(
        &self,
        event_id: &EventId,
        from: Offset,
        to: Offset,
        limit: usize,
    ) -> anyhow::Result<Option<Vec<SeatDelta>>> {
        // Offsets number records (and Kafka's transaction markers): a gap wider than `limit`
        // holds too many records to read back, and nothing is read to find that out.
        if to.saturating_sub(from) > limit as Offset {
            return Ok(None);
        }
        let partition = partition_of(event_id, self.partitions());
        let mut scan = Scan::new(self.journal.as_ref(), partition, from, to, BATCH);
        let mut read = 0;
        let mut deltas = Vec::new();
        while let Some(records) = scan.next_batch().await? {
            read += records.len();
            if read > limit {
                return Ok(None);
            }
            let envelopes: Vec<(Position, Envelope)> = records
                .iter()
                .filter(|r| r.offset < to)
                .filter_map(|r| {
                    let env = decode(&r.value).ok().filter(|e| &e.event_id == event_id)?;
                    Some((
                        Position {
                            partition,
                            offset: r.offset,
                        },
                        env,
                    ))
                })
                .collect();
            deltas.extend(seat_deltas(&envelopes));
        }
        Ok(Some(deltas))
    }

    fn apply_one(&self, events: &mut HashMap<EventId, LiveEvent>, at: Position, envelope: &Envelope) {
        let event_id = envelope.event_id;
        if partition_of(&event_id, self.partitions()) != at.partition {
            warn!(position = %at, %event_id, "record of an event that belongs to another partition skipped");
            return;
        }
        match (&envelope.event, events.entry(event_id)) {
            (Event::EventScheduled(scheduled), Entry::Vacant(slot)) => {
                slot.insert(LiveEvent::scheduled(scheduled, at));
            }
            (Event::EventScheduled(_), Entry::Occupied(_)) => {
                warn!(position = %at, %event_id, "event scheduled twice, first schedule kept");
            }
            (Event::Queue(fact), Entry::Occupied(mut slot)) => {
                slot.get_mut().apply_queue(fact, at, envelope.time);
            }
            (fact, Entry::Occupied(mut slot)) => {
                let applied = slot.get_mut().apply(fact, at);
                if applied.unknown_seats > 0 {
                    warn!(
                        position = %at, %event_id, kind = fact.type_name(), seats = applied.unknown_seats,
                        "seats not in the seat map skipped"
                    );
                }
            }
            (fact, Entry::Vacant(_)) => {
                debug!(position = %at, %event_id, kind = fact.type_name(), "fact about an unscheduled event skipped");
            }
        }
    }

    /// The journal this catalog follows.
    pub fn journal(&self) -> &Arc<dyn Journal> {
        &self.journal
    }

    /// How many partitions the followed journal has.
    pub fn partitions(&self) -> u32 {
        self.partitions.len() as u32
    }

    /// The next offset of `partition` to apply (everything before it is visible), or `None`
    /// for a partition the journal does not have.
    pub fn applied(&self, partition: u32) -> Option<Offset> {
        self.partitions.get(partition as usize).map(|p| *p.applied.borrow())
    }

    /// Whether every partition has applied at least the records it had when the node started:
    /// the node answers with data as fresh as at its start (readiness).
    pub fn is_caught_up(&self) -> bool {
        self.partitions.iter().all(|p| *p.applied.borrow() >= p.end_at_start)
    }

    /// Whether the record at `position` has been applied here.
    pub fn is_visible(&self, position: Position) -> bool {
        self.applied(position.partition)
            .is_some_and(|next| next > position.offset)
    }

    /// Waits until the record at `position` has been applied here; `false` if it is not within
    /// `timeout` (or the partition does not exist).
    pub async fn wait_for(&self, position: Position, timeout: Duration) -> bool {
        let Some(part) = self.partitions.get(position.partition as usize) else {
            return false;
        };
        let mut applied = part.applied.subscribe();
        let visible = applied.wait_for(|&next| next > position.offset);
        matches!(tokio::time::timeout(timeout, visible).await, Ok(Ok(_)))
    }

    /// Reads one event under its partition's shared lock.
    pub(crate) fn with_event<T>(&self, event_id: &EventId, read: impl FnOnce(&LiveEvent) -> T) -> Option<T> {
        let part = &self.partitions[partition_of(event_id, self.partitions()) as usize];
        let events = part.events.read().unwrap_or_else(PoisonError::into_inner);
        events.get(event_id).map(read)
    }

    /// A page of the events `filter` admits, soonest first (then by id): at most `limit` of them
    /// after `after`, with how many it admits in all. The work is one pass over the events
    /// that copies nothing but their start and id, and a summary for each event on the page.
    pub fn list(&self, filter: &EventFilter, after: Option<Cursor>, limit: usize) -> EventPage {
        let mut total = 0;
        let mut keys: Vec<Cursor> = Vec::new();
        for part in &self.partitions {
            let events = part.events.read().unwrap_or_else(PoisonError::into_inner);
            for event in events.values().filter(|e| filter.admits(e.info())) {
                total += 1;
                let key = Cursor::new(event.info().starts_at, event.info().event_id.as_uuid());
                if after.is_none_or(|after| key > after) {
                    keys.push(key);
                }
            }
        }
        // The page's keys and one more (which says there is a next page), without sorting all.
        if keys.len() > limit + 1 {
            keys.select_nth_unstable(limit);
            keys.truncate(limit + 1);
        }
        keys.sort_unstable();
        let more = keys.len() > limit;
        keys.truncate(limit);
        let events: Vec<EventSummary> = keys
            .iter()
            .filter_map(|key| self.with_event(&EventId::from_uuid(key.id), LiveEvent::summary))
            .collect();
        EventPage {
            next: keys.last().filter(|_| more).copied(),
            events,
            total,
        }
    }

    pub fn details(&self, event_id: &EventId) -> Option<EventDetails> {
        self.with_event(event_id, LiveEvent::details)
    }

    pub fn counts(&self, event_id: &EventId) -> Option<SeatCounts> {
        self.with_event(event_id, LiveEvent::counts)
    }

    /// The position of the last record that changed the event: its version.
    pub fn version(&self, event_id: &EventId) -> Option<Position> {
        self.with_event(event_id, LiveEvent::position)
    }

    pub fn seat_status(&self, event_id: &EventId, seat: &SeatId) -> Option<SeatStatus> {
        self.with_event(event_id, |e| e.status(seat)).flatten()
    }

    pub fn availability(&self, event_id: &EventId) -> Option<AvailabilityMap> {
        self.with_event(event_id, LiveEvent::availability)
    }

    /// The event's version and its availability map as JSON, serialized once per version.
    pub fn availability_body(&self, event_id: &EventId) -> Option<(Position, Bytes)> {
        self.with_event(event_id, |e| (e.position(), e.availability_body()))
    }

    /// The same, gzip-compressed once per version.
    pub fn availability_gzip(&self, event_id: &EventId) -> Option<(Position, Bytes)> {
        self.with_event(event_id, |e| (e.position(), e.availability_gzip()))
    }
}
