//! The event log port shared by every side of FrontRow.
//!
//! A journal is a fixed number of partitions, each an append-only sequence of records at
//! strictly increasing offsets. Offsets need not be contiguous: Kafka spends offsets on
//! transaction markers, so readers continue from [`Batch::next`], never from `offset + 1`. The
//! write side appends a whole batch to one partition at once and is told the offsets only after
//! the batch is durable (group commit); the projectors and query nodes read partitions from an
//! offset and follow new appends through [`Journal::watch`].
//!
//! [`SqliteJournal`] is the embedded implementation; a Kafka implementation sits behind the same
//! trait. [`Scan`] reads a stretch of a partition up to an end. `conformance` (behind the
//! `testsuite` feature) is the one test suite every implementation must pass.

use async_trait::async_trait;
use tokio::sync::watch;

#[cfg(feature = "testsuite")]
pub mod conformance;
mod kafka;
mod lag;
mod metered;
mod sqlite;
mod tail;

pub use kafka::{
    DEFAULT_SNAPSHOT_HISTORY_RETENTION, DEFAULT_TOPIC, KafkaJournal, KafkaSettings, client_config, default_min_insync,
    default_replication, delete_log, writer_transactional_id,
};
pub use lag::LagMeter;
pub use metered::Metered;
pub use sqlite::{CHECKPOINT_EVERY, DEFAULT_SNAPSHOT_HISTORY, MAPPED_BYTES, SqliteJournal};
pub use tail::DEFAULT_TAIL_BYTES;

/// A position within one partition.
pub type Offset = u64;

/// Where a record sits in the journal: `partition:offset`. Command responses carry the position
/// of what they wrote, so a reader can wait until it has seen it (read your own writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub partition: u32,
    pub offset: Offset,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.partition, self.offset)
    }
}

/// The highest offset a journal can have: Kafka's and SQLite's offsets are `i64`. A parsed
/// position never goes beyond it, so `offset + 1` cannot overflow.
pub const MAX_OFFSET: Offset = i64::MAX as Offset;

impl std::str::FromStr for Position {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad =
            || format!("{s:?} is not a log position (PARTITION:OFFSET, e.g. 3:1207, offset at most {MAX_OFFSET})");
        let (p, o) = s.split_once(':').ok_or_else(bad)?;
        // Digits only: `u32::from_str` would also take a sign (`+3:+7`).
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(p) || !digits(o) {
            return Err(bad());
        }
        let offset: Offset = o.parse().map_err(|_| bad())?;
        if offset > MAX_OFFSET {
            return Err(bad());
        }
        Ok(Self {
            partition: p.parse().map_err(|_| bad())?,
            offset,
        })
    }
}

/// A record to append: the key (the event id) and the encoded envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// What one read returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    pub records: Vec<StoredRecord>,
    /// Where the next read continues: past the last record and past anything that is not a
    /// record (such as Kafka's transaction markers).
    pub next: Offset,
}

/// A record read back, with where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    pub partition: u32,
    pub offset: Offset,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// What a snapshot in a partition's history covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SnapshotMark {
    /// The offset of the last record the snapshot includes.
    pub last: Offset,
    /// The time stamped on that record, in Unix milliseconds rounded *up*, so that a snapshot
    /// found by `stamped <= T` never includes a record stamped after `T`. `None` when the writer
    /// did not know it; such a snapshot is only found by offset.
    pub stamped_ms: Option<i64>,
}

/// A snapshot as a partition's history keeps it: what it covers, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub mark: SnapshotMark,
    pub bytes: Vec<u8>,
}

/// Which snapshots of a partition's history a lookup may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotBound {
    /// Snapshots whose last record is at or before this offset.
    Offset(Offset),
    /// Snapshots whose last record was stamped at or before this time (Unix milliseconds).
    /// Writers stamp a partition's records in order, so the newest such snapshot is the longest.
    StampedMs(i64),
}

impl SnapshotBound {
    /// Whether a snapshot with `mark` is within this bound.
    pub fn admits(&self, mark: &SnapshotMark) -> bool {
        match *self {
            SnapshotBound::Offset(o) => mark.last <= o,
            SnapshotBound::StampedMs(t) => mark.stamped_ms.is_some_and(|s| s <= t),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("partition {partition} does not exist (the journal has {partitions})")]
    NoSuchPartition { partition: u32, partitions: u32 },
    #[error("the journal at {path} has {found} partitions, not the {configured} configured")]
    PartitionCountMismatch { path: String, found: u32, configured: u32 },
    #[error("this writer was fenced: another writer owns partition {0} now")]
    Fenced(u32),
    #[error("journal storage failed: {0}")]
    Storage(String),
}

impl JournalError {
    /// Whether retrying later may succeed (as opposed to a configuration or logic error).
    pub fn is_transient(&self) -> bool {
        matches!(self, JournalError::Storage(_))
    }
}

/// A backend's state, shared with the blocking tasks that do its storage calls.
pub(crate) trait Backend: Send + Sync + 'static {
    /// How many partitions the journal has.
    fn partition_count(&self) -> u32;

    /// `partition` if the journal has it, else [`JournalError::NoSuchPartition`].
    fn check(&self, partition: u32) -> Result<(), JournalError> {
        let partitions = self.partition_count();
        if partition < partitions {
            Ok(())
        } else {
            Err(JournalError::NoSuchPartition { partition, partitions })
        }
    }
}

/// Runs blocking storage work on tokio's blocking pool; a task that panicked is a storage error.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, JournalError> + Send + 'static,
) -> Result<T, JournalError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| JournalError::Storage(e.to_string()))?
}

/// Checks that `backend` has `partition`, then runs blocking `work` on it (see [`blocking`]).
pub(crate) async fn run_blocking<B: Backend, T: Send + 'static>(
    backend: &std::sync::Arc<B>,
    partition: u32,
    work: impl FnOnce(&B) -> Result<T, JournalError> + Send + 'static,
) -> Result<T, JournalError> {
    backend.check(partition)?;
    let backend = backend.clone();
    blocking(move || work(&backend)).await
}

/// The event log.
#[async_trait]
pub trait Journal: Send + Sync + 'static {
    /// How many partitions the journal has; fixed for its lifetime, since events are routed by it.
    fn partitions(&self) -> u32;

    /// Makes this process the only writer of `partition`: any earlier writer is fenced, so its
    /// appends fail from now on. Call before restoring a partition's state, so nothing can be
    /// appended behind the restored state's back. A single-process journal has nothing to fence.
    async fn claim(&self, partition: u32) -> Result<(), JournalError> {
        let _ = partition;
        Ok(())
    }

    /// Appends `records` to `partition` as one atomic, durable batch and returns the offset of
    /// each record, in order. When this returns `Ok`, the records survive a crash of this
    /// process and of the machine.
    async fn append(&self, partition: u32, records: Vec<Record>) -> Result<Vec<Offset>, JournalError>;

    /// Reads up to `max` records of `partition` at offsets `>= from`, in order. At the end of
    /// the partition the batch is empty and `next` is `from` (or past skipped markers). A batch
    /// may also be empty for a moment before the end, while appended records become visible
    /// (Kafka's transaction markers): callers that need the records read again.
    async fn read(&self, partition: u32, from: Offset, max: usize) -> Result<Batch, JournalError>;

    /// The offset just past the last durable record of `partition`: a reader that starts at 0
    /// and continues until `next >= end_offset` has seen everything appended before this call.
    async fn end_offset(&self, partition: u32) -> Result<Offset, JournalError>;

    /// Stores the latest snapshot of `partition`'s state: opaque bytes from the partition's
    /// writer, replacing the previous one. A snapshot only shortens a restore; losing one costs
    /// a longer replay, never correctness.
    async fn save_snapshot(&self, partition: u32, snapshot: Vec<u8>) -> Result<(), JournalError> {
        let _ = (partition, snapshot);
        Ok(())
    }

    /// The latest snapshot stored for `partition`, if any.
    async fn load_snapshot(&self, partition: u32) -> Result<Option<Vec<u8>>, JournalError> {
        let _ = partition;
        Ok(None)
    }

    /// Whether an append can be followed by a record of the journal's own that no reader sees
    /// (Kafka's transaction commit marker, written just after the commit returns), so that
    /// [`end_offset`](Self::end_offset) may grow by one after an append with nothing appended.
    fn writes_commit_markers(&self) -> bool {
        false
    }

    /// Stores a snapshot as the latest (what [`load_snapshot`](Journal::load_snapshot) returns)
    /// and also keeps it in the partition's snapshot history under its mark, so that
    /// [`snapshot_before`](Journal::snapshot_before) can find it later. The history keeps a
    /// bounded number of snapshots (each journal says how). A journal without a history only
    /// stores the latest.
    async fn save_snapshot_at(&self, partition: u32, snapshot: Snapshot) -> Result<(), JournalError> {
        self.save_snapshot(partition, snapshot.bytes).await
    }

    /// The newest snapshot in `partition`'s history that is within `bound`, with its mark, or
    /// `None` when the history has none (or the journal keeps no history).
    async fn snapshot_before(&self, partition: u32, bound: SnapshotBound) -> Result<Option<Snapshot>, JournalError> {
        let _ = (partition, bound);
        Ok(None)
    }

    /// A receiver of `partition`'s end offset, updated after durable appends.
    fn watch(&self, partition: u32) -> Result<watch::Receiver<Offset>, JournalError>;
}

/// Reads one partition in order from a starting offset, waiting for new records at the end.
pub struct Follower {
    journal: std::sync::Arc<dyn Journal>,
    partition: u32,
    next: Offset,
    end: watch::Receiver<Offset>,
    batch: usize,
    /// The lag metrics, named by who reads.
    lag: LagMeter,
}

impl Follower {
    /// A follower of `partition` from `from`, reporting its lag as `reader` (`query`, `search`).
    pub fn new(
        journal: std::sync::Arc<dyn Journal>,
        reader: &'static str,
        partition: u32,
        from: Offset,
        batch: usize,
    ) -> Result<Self, JournalError> {
        let end = journal.watch(partition)?;
        Ok(Self {
            journal,
            partition,
            next: from,
            end,
            batch: batch.max(1),
            lag: LagMeter::new(reader, partition),
        })
    }

    /// How many durable records are past this follower's position.
    pub fn lag(&self) -> u64 {
        self.end.borrow().saturating_sub(self.next)
    }

    /// The offset of the next record this follower will return.
    pub fn position(&self) -> Offset {
        self.next
    }

    pub fn partition(&self) -> u32 {
        self.partition
    }

    /// The next records; waits while the partition has none after the position. Returns `None`
    /// when the journal is gone (its watch sender dropped).
    pub async fn next_batch(&mut self) -> Option<Result<Vec<StoredRecord>, JournalError>> {
        loop {
            let end = *self.end.borrow_and_update();
            self.lag.report(end, self.next);
            if end > self.next {
                match self.journal.read(self.partition, self.next, self.batch).await {
                    Ok(batch) => {
                        let moved = batch.next > self.next;
                        self.next = self.next.max(batch.next);
                        if !batch.records.is_empty() {
                            return Some(Ok(batch.records));
                        }
                        if !moved {
                            // The end is ahead but nothing is readable yet (an open transaction):
                            // wait for news rather than spin.
                            let _ =
                                tokio::time::timeout(std::time::Duration::from_millis(50), self.end.changed()).await;
                        }
                        continue;
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            if self.end.changed().await.is_err() {
                return None;
            }
        }
    }
}

/// Reads one partition from an offset up to an end offset, a batch at a time: the loop of every
/// reader that replays a stretch of the journal (a restore, a replay, time travel).
pub struct Scan<'a> {
    journal: &'a dyn Journal,
    partition: u32,
    next: Offset,
    end: Offset,
    batch: usize,
    /// Whether an empty batch that does not move is read again rather than ending the scan.
    retry_stalls: bool,
    /// Since when the reads have not moved, while they are retried.
    stalled_since: Option<std::time::Instant>,
    stall_limit: std::time::Duration,
}

/// How long a [`Scan::retrying`] reads again without moving before it fails: far longer than a
/// committed transaction takes to show (milliseconds), so that a partition that cannot be read
/// past an offset is an error its reader reports and retries, not a wait without end.
pub const STALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

impl<'a> Scan<'a> {
    /// A scan of `partition` from offset `from` until offset `end`, reading up to `batch`
    /// records at a time.
    pub fn new(journal: &'a dyn Journal, partition: u32, from: Offset, end: Offset, batch: usize) -> Self {
        Self {
            journal,
            partition,
            next: from,
            end,
            batch,
            retry_stalls: false,
            stalled_since: None,
            stall_limit: STALL_LIMIT,
        }
    }

    /// Reads again where a batch is empty and does not move, rather than ending the scan there:
    /// for readers that know every record before the end is committed (Kafka shows a committed
    /// transaction's records a moment after the end offset grew). Reads that do not move for
    /// [`STALL_LIMIT`] fail the scan.
    pub fn retrying(mut self) -> Self {
        self.retry_stalls = true;
        self
    }

    /// Where the next read starts.
    pub fn position(&self) -> Offset {
        self.next
    }

    /// The records of the next batch that has any, in order; the last batch may hold records at
    /// or past the end. `None` once the scan has reached the end, or, unless it is
    /// [`retrying`](Self::retrying), where the visible records end for now: an empty batch that
    /// does not move (an open Kafka transaction, whose records were not durable when the end was
    /// taken either).
    pub async fn next_batch(&mut self) -> Result<Option<Vec<StoredRecord>>, JournalError> {
        while self.next < self.end {
            let batch = self.journal.read(self.partition, self.next, self.batch).await?;
            let moved = batch.next > self.next;
            self.next = self.next.max(batch.next);
            if moved {
                self.stalled_since = None;
            }
            if !batch.records.is_empty() {
                return Ok(Some(batch.records));
            }
            if moved {
                continue;
            }
            if !self.retry_stalls {
                return Ok(None);
            }
            let since = *self.stalled_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > self.stall_limit {
                return Err(JournalError::Storage(format!(
                    "partition {} cannot be read past offset {} though it ends at {}",
                    self.partition, self.next, self.end
                )));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{Journal, JournalError, Position, Record, Scan, SqliteJournal};

    /// A retrying scan whose reads stop moving short of its end (a partition held back by a
    /// transaction that never ends) fails after its stall limit instead of reading forever.
    #[tokio::test]
    async fn a_retrying_scan_that_cannot_move_fails_after_its_stall_limit() {
        let dir = tempfile::tempdir().unwrap();
        let journal = SqliteJournal::open(&dir.path().join("log.db"), 1).unwrap();
        let record = Record {
            key: b"k".to_vec(),
            value: b"v".to_vec(),
        };
        journal.append(0, vec![record.clone(), record]).await.unwrap();
        // The end says 5; only offsets 0 and 1 exist.
        let mut scan = Scan::new(&journal, 0, 0, 5, 1).retrying();
        scan.stall_limit = std::time::Duration::from_millis(200);
        for offset in 0..2 {
            let batch = scan.next_batch().await.unwrap().expect("a record");
            assert_eq!(batch[0].offset, offset);
        }
        let began = std::time::Instant::now();
        let err = tokio::time::timeout(std::time::Duration::from_secs(10), scan.next_batch())
            .await
            .expect("the scan ends")
            .expect_err("a scan that cannot move fails");
        assert!(began.elapsed() >= scan.stall_limit);
        assert!(
            matches!(&err, JournalError::Storage(m) if m.contains("past offset 2") && m.contains("ends at 5")),
            "{err}"
        );
    }

    #[test]
    fn a_position_is_two_runs_of_digits() {
        assert_eq!(
            "3:1207".parse::<Position>(),
            Ok(Position {
                partition: 3,
                offset: 1207
            })
        );
        for bad in [
            "+3:1207",
            "3:+1207",
            "3:",
            ":7",
            "3:1207:1",
            " 3:7",
            "-1:0",
            "4294967296:0",
            "a:b",
        ] {
            assert!(bad.parse::<Position>().is_err(), "{bad:?} is not a position");
        }
    }
}
