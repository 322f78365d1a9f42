//! The projector: follows the journal and keeps a ledger up to date, exactly once.
//!
//! For each partition it reads from the position stored in the ledger, decodes a batch of
//! records, folds them with [`projection::project`] and has the ledger write the rows and the
//! new position in one transaction. If the ledger refuses a batch because it does not start at
//! the stored position (another writer, a promoted rebuild), the projector reloads the
//! position and carries on from there; it never skips a record it could not decode.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use frontrow_journal::{Batch as JournalBatch, Journal, JournalError};
use frontrow_schema::{Currency, Envelope, EventId, OrganizerId, SeatId, SeatMap, decode};
use tokio::sync::{Semaphore, watch};
use tracing::{debug, info, warn};

use crate::LedgerError;
use crate::ledger::{Batch, Ledger};
use crate::projection::{self, EventMeta, Known};

/// Why projecting stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProjectorError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A record that is not a readable envelope: the projector stops rather than skip it.
    #[error("record {partition}:{offset} cannot be decoded: {reason}")]
    Undecodable {
        partition: u32,
        offset: u64,
        reason: String,
    },
    /// The journal returned records out of order or outside the range it reported.
    #[error("journal returned offset {got} where at least {expected} was expected in partition {partition}")]
    Gap { partition: u32, expected: u64, got: u64 },
}

/// Projects journal records into one ledger. Holds a cache of event seat maps.
pub struct Projector {
    journal: Arc<dyn Journal>,
    ledger: Arc<dyn Ledger>,
    batch: usize,
    /// Most rows one ledger batch builds before it commits (see [`chunks`]).
    rows_per_batch: usize,
    /// Rows being built or written at once, shared by the projectors of all partitions of one
    /// [`run`]: a ledger takes one write at a time (SQLite) or a few (PostgreSQL), so batches
    /// built beyond that only wait in memory (eight partitions each building a batch of seat
    /// rows for a new event cost a node building 10 million seats about 100 MB more at its peak).
    rows_in_flight: Arc<Semaphore>,
    /// While following: how long after a batch that found the end of the journal the next one
    /// may start (see [`Projector::pacing`]).
    pace: Duration,
    events: HashMap<EventId, Arc<EventMeta>>,
}

impl Projector {
    pub fn new(journal: Arc<dyn Journal>, ledger: Arc<dyn Ledger>, batch: usize) -> Self {
        Self {
            journal,
            ledger,
            batch: batch.max(1),
            rows_per_batch: ROWS_PER_BATCH,
            rows_in_flight: Arc::new(Semaphore::new(ROWS_IN_FLIGHT)),
            pace: Duration::ZERO,
            events: HashMap::new(),
        }
    }

    /// While following, starts a batch at most once per `every` as long as each batch reads up
    /// to the end of the journal: an onsale appends hundreds of times a second, and a ledger
    /// transaction per append rewrites the same index pages each time (the SQLite ledger of a
    /// `serve` node took a quarter of its CPU during wrk's reserves). The first record after a
    /// quiet spell is written at once, and a projector that is behind (a read that stops short
    /// of the end) does not wait. Reads from the ledger may be this much more behind the
    /// journal under load.
    pub fn pacing(mut self, every: Duration) -> Self {
        self.pace = every;
        self
    }

    /// Shares one budget of rows in flight with other projectors of the same ledger.
    fn sharing_rows(mut self, rows_in_flight: &Arc<Semaphore>) -> Self {
        self.rows_in_flight = rows_in_flight.clone();
        self
    }

    /// Cuts reads into ledger batches of at most `rows` rows (default `ROWS_PER_BATCH`, 20,000).
    pub fn with_rows_per_batch(mut self, rows: usize) -> Self {
        self.rows_per_batch = rows.max(1);
        self
    }

    pub fn ledger(&self) -> &Arc<dyn Ledger> {
        &self.ledger
    }

    /// Projects what one journal read returned (records at offsets from `from` on, and where
    /// the next read continues) as one batch, and returns that next offset.
    pub async fn apply(
        &mut self,
        partition: u32,
        from: u64,
        read: &JournalBatch,
        crash_before_commit: bool,
    ) -> Result<u64, ProjectorError> {
        let mut envelopes = Vec::with_capacity(read.records.len());
        let mut expected = from;
        for r in &read.records {
            if r.offset < expected || r.offset >= read.next {
                return Err(ProjectorError::Gap {
                    partition,
                    expected,
                    got: r.offset,
                });
            }
            expected = r.offset + 1;
            envelopes.push(decode(&r.value).map_err(|e| ProjectorError::Undecodable {
                partition,
                offset: r.offset,
                reason: e.to_string(),
            })?);
        }
        let to = read.next.max(from);
        // A read becomes one ledger batch, or several when its records make many rows (an
        // event scheduled writes a row per seat): each commits its own range of offsets, so
        // the rows held in memory at once stay bounded however large the events are.
        let mut start = 0;
        for (end, rows) in chunks(&envelopes, self.rows_per_batch) {
            let (chunk_from, chunk_to) = (
                if start == 0 { from } else { read.records[start].offset },
                if end == envelopes.len() {
                    to
                } else {
                    read.records[end].offset
                },
            );
            // An injected crash abandons the first batch: nothing of the read commits.
            let crash = crash_before_commit && start == 0;
            let permits = rows.clamp(1, ROWS_IN_FLIGHT) as u32;
            let budget = self.rows_in_flight.clone();
            let _building = budget.acquire_many(permits).await.expect("never closed");
            let result = self
                .write(partition, chunk_from, chunk_to, &envelopes[start..end], crash)
                .await;
            if let Err(e) = result {
                // What the cache learnt from a batch that did not commit may be ahead of the ledger.
                self.events.clear();
                return Err(e);
            }
            start = end;
        }
        Ok(to)
    }

    async fn write(
        &mut self,
        partition: u32,
        from: u64,
        to: u64,
        envelopes: &[Envelope],
        crash_before_commit: bool,
    ) -> Result<(), ProjectorError> {
        let mut known = Known {
            events: std::mem::take(&mut self.events),
            ..Known::default()
        };
        let (events, reservations) = projection::needs(envelopes, &known);
        if !events.is_empty() || !reservations.is_empty() {
            let lookup = self.ledger.lookup(&events, &reservations).await;
            let lookup = match lookup {
                Ok(l) => l,
                Err(e) => {
                    self.events = known.events;
                    return Err(e.into());
                }
            };
            for (id, organizer, currency, map) in lookup.events {
                let parsed = (
                    OrganizerId::parse(&organizer),
                    Currency::parse(&currency),
                    serde_json::from_str::<SeatMap>(&map),
                );
                let (Ok(organizer), Ok(currency), Ok(map)) = parsed else {
                    return Err(LedgerError::Corrupt(format!("event {id} in the ledger")).into());
                };
                known
                    .events
                    .insert(id, Arc::new(EventMeta::new(organizer, currency, map)));
            }
            for (id, seats) in lookup.reservations {
                let seats: Result<Vec<SeatId>, _> = seats.split(',').map(str::parse).collect();
                let seats = seats.map_err(|_| LedgerError::Corrupt(format!("seats of reservation {id}")))?;
                known.reservation_seats.insert(id, seats);
            }
        }
        let projected = projection::project(envelopes, &known);
        if projected.orphans > 0 {
            warn!(
                partition,
                from,
                orphans = projected.orphans,
                "records about unknown events or seats skipped"
            );
        }
        let batch = Batch {
            partition,
            from,
            to,
            ops: projected.ops,
            crash_before_commit,
        };
        let written = self.ledger.write(&batch).await;
        self.events = known.events;
        written?;
        self.events.extend(projected.events);
        debug!(partition, from, to, "ledger batch committed");
        Ok(())
    }

    /// Projects every partition up to the journal's end as it is now. Returns how many
    /// records were applied.
    pub async fn catch_up(&mut self) -> Result<u64, ProjectorError> {
        let mut applied = 0;
        for partition in 0..self.journal.partitions() {
            applied += self.catch_up_partition(partition).await?;
        }
        Ok(applied)
    }

    /// Projects one partition up to the journal's end as it is now.
    pub async fn catch_up_partition(&mut self, partition: u32) -> Result<u64, ProjectorError> {
        let end = self.journal.end_offset(partition).await?;
        let mut next = self.stored(partition).await?;
        let mut applied = 0;
        while next < end {
            let want = self.batch.min((end - next) as usize);
            let read = self.journal.read(partition, next, want).await?;
            if read.records.is_empty() && read.next <= next {
                break;
            }
            match self.apply(partition, next, &read, false).await {
                Ok(to) => {
                    next = to;
                    applied += read.records.len() as u64;
                }
                Err(e) => next = moved(&e, partition, next).ok_or(e)?,
            }
        }
        Ok(applied)
    }

    /// Follows one partition until `stop` turns true (or the journal goes away). Transient
    /// failures are logged and retried; the position is always the ledger's.
    pub async fn follow(&mut self, partition: u32, mut stop: watch::Receiver<bool>) -> Result<(), ProjectorError> {
        let mut end = self.journal.watch(partition)?;
        let mut next = self.stored(partition).await?;
        let mut lag = frontrow_journal::LagMeter::new("ledger", partition);
        // When the next batch may start: `pace` after one that found the end began.
        let mut paced_until: Option<Instant> = None;
        loop {
            if *stop.borrow() {
                return Ok(());
            }
            let at_end = *end.borrow_and_update();
            lag.report(at_end, next);
            if at_end <= next {
                tokio::select! {
                    changed = end.changed() => if changed.is_err() { return Ok(()) },
                    _ = stop.changed() => {}
                }
                continue;
            }
            if let Some(until) = paced_until.take() {
                tokio::select! {
                    _ = tokio::time::sleep_until(until.into()) => {}
                    _ = stop.changed() => continue,
                }
            }
            let started = Instant::now();
            let step = async {
                let read = self.journal.read(partition, next, self.batch).await?;
                if read.records.is_empty() && read.next <= next {
                    // The end is ahead but nothing is readable yet: wait a little.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    return Ok((next, false));
                }
                // Whether this read took all there was when the loop looked: one that stopped
                // short (the batch's size, or a Kafka consumer's prefetch) is followed at once.
                let reached_end = read.next >= at_end;
                self.apply(partition, next, &read, false)
                    .await
                    .map(|to| (to, reached_end))
            };
            match step.await {
                Ok((to, reached_end)) => {
                    next = to;
                    paced_until = (reached_end && !self.pace.is_zero()).then(|| started + self.pace);
                }
                Err(e) if let Some(stored) = moved(&e, partition, next) => next = stored,
                Err(e @ (ProjectorError::Undecodable { .. } | ProjectorError::Gap { .. })) => {
                    warn!(partition, offset = next, error = %e, "projector stopped on a record it cannot apply");
                    return Err(e);
                }
                Err(e) => {
                    warn!(partition, offset = next, error = %e, "projector batch failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = stop.changed() => {}
                    }
                    next = match self.stored(partition).await {
                        Ok(n) => n,
                        Err(_) => next,
                    };
                }
            }
        }
    }

    async fn stored(&self, partition: u32) -> Result<u64, LedgerError> {
        Ok(self.ledger.positions().await?.get(&partition).copied().unwrap_or(0))
    }
}

/// The ledger's position when `error` refused a batch because that position moved: another
/// projector wrote first, a cancelled one's commit landed late (SQLite runs it on the
/// connection's own thread, after the next projector has read the positions), or a rebuilt
/// generation was promoted. The ledger's position is the truth, so the caller goes on from it.
fn moved(error: &ProjectorError, partition: u32, next: u64) -> Option<u64> {
    let ProjectorError::Ledger(LedgerError::OutOfOrder { stored, .. }) = error else {
        return None;
    };
    info!(
        partition,
        from = next,
        stored,
        "ledger position moved; resuming from it"
    );
    Some(*stored)
}

/// Runs the projector on every partition of `journal` into `ledger` until `shutdown`
/// resolves; each partition finishes the batch it is writing before returning.
pub async fn run(
    journal: Arc<dyn Journal>,
    ledger: Arc<dyn Ledger>,
    batch: usize,
    pace: Duration,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ProjectorError> {
    let (stop_tx, stop) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let rows_in_flight = Arc::new(Semaphore::new(ROWS_IN_FLIGHT));
    for partition in 0..journal.partitions() {
        let mut projector = Projector::new(journal.clone(), ledger.clone(), batch)
            .sharing_rows(&rows_in_flight)
            .pacing(pace);
        let stop = stop.clone();
        tasks.spawn(async move { projector.follow(partition, stop).await });
    }
    info!(ledger = %ledger.describe(), partitions = journal.partitions(), "ledger projector started");
    shutdown.await;
    let _ = stop_tx.send(true);
    let mut result = Ok(());
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Err(e)) => result = Err(e),
            Err(e) => warn!(error = %e, "projector task ended abnormally"),
            Ok(Ok(())) => {}
        }
    }
    info!("ledger projector stopped");
    result
}

/// A projector running in the background; [`ProjectorHandle::stop`] ends it cleanly.
pub struct ProjectorHandle {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), ProjectorError>>,
}

impl ProjectorHandle {
    /// Asks every partition to finish the batch it is writing, and waits for them.
    pub async fn stop(mut self) -> Result<(), ProjectorError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.await {
            Ok(result) => result,
            Err(e) => {
                warn!(error = %e, "ledger projector task ended abnormally");
                Ok(())
            }
        }
    }
}

/// Starts [`run`] on a task of its own.
pub fn spawn(journal: Arc<dyn Journal>, ledger: Arc<dyn Ledger>, batch: usize, pace: Duration) -> ProjectorHandle {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(journal, ledger, batch, pace, async move {
        let _ = stopped.await;
    }));
    ProjectorHandle { stop: Some(stop), task }
}

/// What a rebuild did.
#[derive(Debug, Clone)]
pub struct RebuildReport {
    /// The promoted generation.
    pub generation: String,
    pub records: u64,
    pub elapsed: Duration,
    /// Stored positions of the new generation when it was promoted.
    pub positions: BTreeMap<u32, u64>,
}

impl RebuildReport {
    pub fn records_per_second(&self) -> f64 {
        self.records as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Catches `ledger` up on every partition, several partitions at once when the ledger takes
/// concurrent writers.
async fn replay(journal: &Arc<dyn Journal>, ledger: &Arc<dyn Ledger>, batch: usize) -> Result<u64, ProjectorError> {
    let lanes = ledger.concurrent_writers().max(1) as u32;
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..lanes {
        let mut projector = Projector::new(journal.clone(), ledger.clone(), batch);
        let partitions = journal.partitions();
        tasks.spawn(async move {
            let mut applied = 0;
            for partition in (lane..partitions).step_by(lanes as usize) {
                applied += projector.catch_up_partition(partition).await?;
            }
            Ok::<_, ProjectorError>(applied)
        });
    }
    let mut applied = 0;
    while let Some(joined) = tasks.join_next().await {
        applied += joined.map_err(|e| LedgerError::Config(format!("replay task failed: {e}")))??;
    }
    Ok(applied)
}

/// Replays the whole journal into a fresh generation of `serving` while `serving` keeps
/// answering (and its projector keeps writing), then promotes the new generation. A running
/// projector notices the switch at its next batch and continues from the new positions.
pub async fn rebuild(
    journal: Arc<dyn Journal>,
    serving: &dyn Ledger,
    batch: usize,
) -> Result<RebuildReport, ProjectorError> {
    let started = Instant::now();
    let next = serving.next_generation().await?;
    info!(generation = %next.generation(), "ledger rebuild started");
    next.defer_indexes().await?;
    let mut records = replay(&journal, &next, batch).await?;
    next.restore_indexes().await?;
    // The second pass takes what arrived during the long first one, so the live projector
    // has little left to do after the switch.
    records += replay(&journal, &next, batch).await?;
    let positions = next.positions().await?;
    let generation = next.generation();
    drop(next);
    serving.promote(&generation).await?;
    let report = RebuildReport {
        generation,
        records,
        elapsed: started.elapsed(),
        positions,
    };
    info!(
        records = report.records,
        seconds = report.elapsed.as_secs_f64(),
        per_second = report.records_per_second() as u64,
        "ledger rebuilt and promoted"
    );
    Ok(report)
}

/// Most ledger rows one batch builds in memory before it commits (a seat row is a few hundred
/// bytes while it is being built): about one large event's seats. A read of reservations makes
/// a row or two a record, so only schedules and new maps are cut this fine (20,000 instead of
/// 50,000 took a 10-million-seat catalogue's peak from 36.7 to 32.4-33.3 B/seat).
const ROWS_PER_BATCH: usize = 20_000;
/// Most rows the projectors of one ledger build or write at once: two full batches, so one can
/// be built while the other is written.
const ROWS_IN_FLIGHT: usize = 2 * ROWS_PER_BATCH;

/// Where a read's records are cut into batches of at most `limit` rows (a record that alone
/// makes more is a batch of its own): the end index of each batch and the rows it makes. A read
/// of no records is one empty batch (it still moves the position, e.g. past Kafka's
/// transaction markers).
fn chunks(envelopes: &[Envelope], limit: usize) -> Vec<(usize, usize)> {
    let mut chunks = Vec::new();
    let mut rows = 0;
    for (i, envelope) in envelopes.iter().enumerate() {
        let weight = projection::rows_made(envelope);
        if rows > 0 && rows + weight > limit {
            chunks.push((i, rows));
            rows = 0;
        }
        rows += weight;
    }
    chunks.push((envelopes.len(), rows));
    chunks
}

#[cfg(test)]
mod tests {
    use frontrow_schema::testsuite::{sample_event, seat_map, seated, standing};
    use frontrow_schema::{Event, EventId, PaymentFailed, ReservationId};

    use super::*;

    fn envelope(event: Event) -> Envelope {
        Envelope::new(EventId::new(), 1, chrono::Utc::now(), event)
    }

    /// An event of 2 rows of 10 seats and a standing zone of 30: 50 rows in the ledger.
    fn scheduled() -> Envelope {
        let map = seat_map(
            &[("T", "Tier", 1000)],
            vec![
                seated("A", "Stalls", &[("1", 10, "T"), ("2", 10, "T")]),
                standing("F", "Floor", 30, "T"),
            ],
        );
        envelope(Event::EventScheduled(sample_event(
            EventId::new(),
            chrono::Utc::now(),
            map,
        )))
    }

    fn small() -> Envelope {
        envelope(Event::PaymentFailed(PaymentFailed {
            reservation_id: ReservationId::new(),
            provider_event_id: "evt".into(),
            payment_intent: "pi".into(),
            message: None,
        }))
    }

    #[test]
    fn reads_are_cut_where_the_rows_would_pass_the_limit() {
        assert_eq!(projection::rows_made(&scheduled()), 50);
        assert_eq!(projection::rows_made(&small()), 1);
        let read = [small(), scheduled(), small(), scheduled(), scheduled(), small()];
        // 1 + 50 + 1 fit in 60; each later event starts a batch, and the last small record
        // joins the third event's.
        assert_eq!(chunks(&read, 60), vec![(3, 52), (4, 50), (6, 51)]);
        // An event larger than the limit is a batch of its own, never split or dropped.
        assert_eq!(
            chunks(&read, 10),
            vec![(1, 1), (2, 50), (3, 1), (4, 50), (5, 50), (6, 1)]
        );
        assert_eq!(chunks(&read, 1000), vec![(6, 153)]);
        assert_eq!(chunks(&[], 10), vec![(0, 0)], "an empty read is one empty batch");
    }
}
