//! The embedded journal: one SQLite file in WAL mode.
//!
//! Every append is one transaction committed with `synchronous = FULL`, so the WAL is fsynced
//! before `append` returns: an acknowledged batch survives a process or machine crash. Appends
//! are serialised through one write connection (SQLite has one writer anyway); reads use their
//! own connection, which WAL lets run beside the writer.
//!
//! The WAL is checkpointed into the file by a thread of the journal's own, on a connection of
//! its own (`PASSIVE`: it never waits for the writer or a reader), at the WAL size where SQLite's
//! automatic checkpoint would run (see [`CHECKPOINT_EVERY`]) but not, as that one does, inside
//! the commit that crosses it: that commit, an append some request waits for, would also copy the
//! WAL's pages into the file and fsync it.
//!
//! Snapshots live in a second SQLite file beside the journal (`<journal file>.snapshots`), with
//! a write connection of their own: a snapshot is megabytes, and written into the journal's file
//! it would hold the one append connection for the whole write and pass through the journal's
//! WAL and its checkpoints, stalling every partition's appends. The latest of each partition
//! sits in `journal_snapshots` (one row per partition, so a writer's restore reads one row
//! however long the history), and every snapshot saved with [`Journal::save_snapshot_at`] is
//! also kept in `journal_snapshot_history`, keyed by `(partition, last)`, for time travel. The
//! history keeps the newest [`DEFAULT_SNAPSHOT_HISTORY`] snapshots per partition (see
//! [`SqliteJournal::keep_snapshots`]). Losing the snapshot file costs a longer replay, nothing
//! else.
//!
//! The records of the last appends stay in memory after their commit (see [`crate::tail`]), so
//! the node's own followers read what was just written without going back to SQLite.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags, params};
use tokio::sync::watch;

use crate::tail::{DEFAULT_TAIL_BYTES, Tail};
use crate::{
    Backend, Batch, Journal, JournalError, Offset, Record, Snapshot, SnapshotBound, SnapshotMark, StoredRecord,
    run_blocking,
};

/// How many snapshots per partition the history keeps unless told otherwise.
pub const DEFAULT_SNAPSHOT_HISTORY: usize = 48;

/// How much of the journal file [`SqliteJournal::map_reads`] maps: more than any journal of this
/// machine class (1 TiB of address space, not of memory).
pub const MAPPED_BYTES: u64 = 1 << 40;

pub struct SqliteJournal {
    inner: Arc<Inner>,
}

struct Inner {
    path: String,
    /// Dropped with the journal: the checkpoint thread then stops.
    _checkpoints: std::sync::mpsc::Sender<()>,
    /// The WAL's size in pages after the last append.
    wal_pages: Arc<AtomicU64>,
    partitions: u32,
    writer: Mutex<Writer>,
    reader: Mutex<Connection>,
    /// The last appends' records, for reads of what was just written.
    tail: Mutex<Tail>,
    /// The snapshot file's connection (writes and reads: snapshots are rare and large).
    snapshots: Mutex<Connection>,
    ends: Vec<watch::Sender<Offset>>,
    /// Snapshots kept per partition in the history; older ones are deleted on save.
    keep_snapshots: AtomicUsize,
}

struct Writer {
    conn: Connection,
    /// Next offset per partition, only advanced after a commit.
    next: Vec<Offset>,
}

fn storage(e: impl std::fmt::Display) -> JournalError {
    JournalError::Storage(e.to_string())
}

/// Opens (creating if needed) the SQLite file at `path` in WAL mode with `synchronous` (`FULL`:
/// every commit is fsynced) and a 5 s busy timeout, and runs `schema` on it.
fn open_wal(path: impl AsRef<Path>, synchronous: &str, schema: &str) -> Result<Connection, JournalError> {
    let conn = Connection::open(path).map_err(storage)?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = {synchronous};
         PRAGMA busy_timeout = 5000;
         {schema}"
    ))
    .map_err(storage)?;
    Ok(conn)
}

/// Where each partition's next record goes: one seek down the primary key per partition.
/// (`GROUP BY partition` over the table read the whole journal, 2.3 s for a 3.6 GB one
/// with every page cached, at every open.)
const PARTITION_END: &str = "SELECT MAX(offset) + 1 FROM journal WHERE partition = ?1";

fn partition_ends(conn: &Connection, partitions: u32) -> Result<Vec<Offset>, JournalError> {
    let mut stmt = conn.prepare(PARTITION_END).map_err(storage)?;
    (0..partitions)
        .map(|p| {
            let end: Option<i64> = stmt.query_row([p], |r| r.get(0)).map_err(storage)?;
            Ok(end.map_or(0, |end| end as Offset))
        })
        .collect()
}

/// How often the checkpoint thread looks at the WAL's size.
pub const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(50);
/// WAL pages at which the thread checkpoints: where SQLite's own automatic checkpoint would
/// have run (inside an append).
const CHECKPOINT_PAGES: u64 = 1000;
/// Longest fewer pages wait for their checkpoint.
const CHECKPOINT_AT_LEAST_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

thread_local! {
    /// The WAL's size in pages after the last commit on this thread ([`note_wal_pages`]).
    static WAL_PAGES: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

/// The write connection's WAL hook: SQLite calls it inside each commit, on the committing
/// thread, with the WAL's size; the append reads it from there once its commit returns.
fn note_wal_pages(_: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_PAGES.set(pages);
    Ok(())
}

/// Starts the thread that checkpoints the journal at `path` until the returned sender is
/// dropped: every [`CHECKPOINT_EVERY`] it checkpoints if `wal_pages` (what the last append's
/// commit left in the WAL) has reached [`CHECKPOINT_PAGES`], or if the WAL holds anything and
/// the last checkpoint is [`CHECKPOINT_AT_LEAST_EVERY`] old. Its connection is opened here, so
/// a journal that could not be checkpointed does not open.
fn start_checkpoints(path: &Path, wal_pages: Arc<AtomicU64>) -> Result<std::sync::mpsc::Sender<()>, JournalError> {
    use std::sync::mpsc::RecvTimeoutError;
    let conn = Connection::open(path).map_err(storage)?;
    conn.execute_batch("PRAGMA busy_timeout = 1000;").map_err(storage)?;
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("journal-checkpoint".into())
        .spawn(move || {
            let mut last = std::time::Instant::now();
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(CHECKPOINT_EVERY) {
                let pages = wal_pages.load(Ordering::Relaxed);
                if pages < CHECKPOINT_PAGES && (pages == 0 || last.elapsed() < CHECKPOINT_AT_LEAST_EVERY) {
                    continue;
                }
                last = std::time::Instant::now();
                // PASSIVE copies what no reader still needs and returns; the WAL restarts from
                // its beginning at the first append after a complete checkpoint (and that
                // append's count says so); what it left, the next look takes.
                match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    Ok(()) => {
                        let _ = wal_pages.compare_exchange(pages, 0, Ordering::Relaxed, Ordering::Relaxed);
                    }
                    Err(e) => tracing::warn!(error = %e, "journal checkpoint failed; trying again"),
                }
            }
        })
        .map_err(storage)?;
    Ok(stop)
}

impl SqliteJournal {
    /// Opens (creating if needed) the journal file at `path` with `partitions` partitions. An
    /// existing journal must have the same partition count, since it decides where events live.
    pub fn open(path: &Path, partitions: u32) -> Result<Self, JournalError> {
        if partitions == 0 {
            return Err(storage("a journal needs at least one partition"));
        }
        let conn = open_wal(
            path,
            "FULL",
            "CREATE TABLE IF NOT EXISTS journal_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS journal (
                 partition INTEGER NOT NULL,
                 offset    INTEGER NOT NULL,
                 key       BLOB NOT NULL,
                 value     BLOB NOT NULL,
                 PRIMARY KEY (partition, offset)
             ) WITHOUT ROWID;",
        )?;
        let found: Option<String> = conn
            .query_row("SELECT value FROM journal_meta WHERE key = 'partitions'", [], |r| {
                r.get(0)
            })
            .ok();
        match found {
            Some(found) => {
                let found: u32 = found.parse().map_err(storage)?;
                if found != partitions {
                    return Err(JournalError::PartitionCountMismatch {
                        path: path.display().to_string(),
                        found,
                        configured: partitions,
                    });
                }
            }
            None => {
                conn.execute(
                    "INSERT INTO journal_meta (key, value) VALUES ('partitions', ?1)",
                    params![partitions.to_string()],
                )
                .map_err(storage)?;
            }
        }
        let next = partition_ends(&conn, partitions)?;
        // The appends never checkpoint (the hook replaces SQLite's automatic checkpoint): the
        // checkpoint thread does.
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0;").map_err(storage)?;
        conn.wal_hook(Some(note_wal_pages));
        // A WAL left by a process that did not close the journal (a crash, a stop that skipped
        // the close) has its index rebuilt at open with none of its pages marked as copied, so
        // every read of those pages goes through the WAL until a checkpoint, and the next one
        // would wait for an append (`frontrow analytics` never appends): it counts as pages
        // waiting, and the thread's first look checkpoints it.
        let left = std::fs::metadata(format!("{}-wal", path.display())).map_or(0, |wal| wal.len());
        let wal_pages = Arc::new(AtomicU64::new(if left > 0 { CHECKPOINT_PAGES } else { 0 }));
        let checkpoints = start_checkpoints(path, wal_pages.clone())?;
        let reader =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(storage)?;
        reader.execute_batch("PRAGMA busy_timeout = 5000;").map_err(storage)?;
        let ends = next.iter().map(|&n| watch::Sender::new(n)).collect();
        let snapshots = open_wal(
            format!("{}.snapshots", path.display()),
            // A snapshot is a cache of what the journal already holds durably: one lost in a
            // crash only means a longer replay, so it needs no fsync per write.
            "NORMAL",
            "CREATE TABLE IF NOT EXISTS journal_snapshots (partition INTEGER PRIMARY KEY, bytes BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS journal_snapshot_history (
                 partition  INTEGER NOT NULL,
                 last       INTEGER NOT NULL,
                 stamped_ms INTEGER,
                 bytes      BLOB NOT NULL,
                 PRIMARY KEY (partition, last)
             );",
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                path: path.display().to_string(),
                _checkpoints: checkpoints,
                wal_pages,
                partitions,
                writer: Mutex::new(Writer { conn, next }),
                reader: Mutex::new(reader),
                tail: Mutex::new(Tail::new(partitions, DEFAULT_TAIL_BYTES)),
                snapshots: Mutex::new(snapshots),
                ends,
                keep_snapshots: AtomicUsize::new(DEFAULT_SNAPSHOT_HISTORY),
            }),
        })
    }

    /// Keeps the newest `keep` snapshots per partition in the history from the next save on
    /// (at least one). Time travel to an instant older than the oldest kept snapshot replays
    /// from the start of the partition.
    pub fn keep_snapshots(&self, keep: usize) {
        self.inner.keep_snapshots.store(keep.max(1), Ordering::Relaxed);
    }

    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Keeps the last appends' records in memory up to `bytes` (0: none) from the next append
    /// on, for reads of what was just written; [`DEFAULT_TAIL_BYTES`] unless told otherwise.
    pub fn keep_tail(&self, bytes: usize) {
        if let Ok(mut tail) = self.inner.tail.lock() {
            tail.set_budget(bytes);
        }
    }

    /// Has reads map the journal file into memory instead of copying each page out of the
    /// kernel's cache (a `pread` per page): 5-8% faster for a process that reads the whole log
    /// once, like `frontrow analytics`. The pages it reads then count in the process's resident
    /// memory (shared with the page cache) for as long as it runs, and a disk error while
    /// reading one ends the process with `SIGBUS` instead of an error, which is why a serving
    /// node does not. The map covers [`MAPPED_BYTES`] of the file, past SQLite's default
    /// compile-time cap of 2 GiB (raised in `.cargo/config.toml`).
    pub fn map_reads(&self) -> Result<(), JournalError> {
        let conn = self.inner.reader.lock().map_err(storage)?;
        conn.pragma_update(None, "mmap_size", MAPPED_BYTES as i64)
            .map_err(storage)
    }
}

impl Backend for Inner {
    fn partition_count(&self) -> u32 {
        self.partitions
    }
}

impl Inner {
    fn append(&self, partition: u32, records: Vec<Record>) -> Result<Vec<Offset>, JournalError> {
        let mut w = self.writer.lock().map_err(storage)?;
        let first = w.next[partition as usize];
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let tx = w.conn.transaction().map_err(storage)?;
        {
            let mut stmt = tx
                .prepare_cached("INSERT INTO journal (partition, offset, key, value) VALUES (?1, ?2, ?3, ?4)")
                .map_err(storage)?;
            for (i, record) in records.iter().enumerate() {
                let offset = first + i as Offset;
                stmt.execute(params![partition, offset as i64, record.key, record.value])
                    .map_err(storage)?;
            }
        }
        tx.commit().map_err(storage)?;
        self.wal_pages.store(WAL_PAGES.get().max(0) as u64, Ordering::Relaxed);
        let end = first + records.len() as Offset;
        w.next[partition as usize] = end;
        // Into the tail before the end is published, so a reader told of the end finds them.
        // The records are durable whatever becomes of the tail: a tail whose lock a panic
        // poisoned is passed by (its reads go to the file).
        if let Ok(mut tail) = self.tail.lock() {
            tail.push(partition, first, records);
        }
        // Publish while still holding the write lock so watchers see ends in order.
        self.ends[partition as usize].send_replace(end);
        Ok((first..end).collect())
    }

    fn read(&self, partition: u32, from: Offset, max: usize) -> Result<Batch, JournalError> {
        let conn = self.reader.lock().map_err(storage)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT offset, key, value FROM journal
                 WHERE partition = ?1 AND offset >= ?2 ORDER BY offset LIMIT ?3",
            )
            .map_err(storage)?;
        let rows = stmt
            .query_map(params![partition, from as i64, max as i64], |r| {
                Ok(StoredRecord {
                    partition,
                    offset: r.get::<_, i64>(0)? as Offset,
                    key: r.get(1)?,
                    value: r.get(2)?,
                })
            })
            .map_err(storage)?;
        let records: Vec<StoredRecord> = rows.collect::<Result<_, _>>().map_err(storage)?;
        let next = records.last().map_or(from, |r| r.offset + 1);
        Ok(Batch { records, next })
    }
}

impl Inner {
    fn save_snapshot(&self, partition: u32, bytes: Vec<u8>) -> Result<(), JournalError> {
        let conn = self.snapshots.lock().map_err(storage)?;
        conn.execute(
            "INSERT INTO journal_snapshots (partition, bytes) VALUES (?1, ?2)
                 ON CONFLICT (partition) DO UPDATE SET bytes = excluded.bytes",
            params![partition, bytes],
        )
        .map_err(storage)?;
        Ok(())
    }

    fn save_snapshot_at(&self, partition: u32, snapshot: Snapshot) -> Result<(), JournalError> {
        let Snapshot { mark, bytes } = snapshot;
        let keep = self.keep_snapshots.load(Ordering::Relaxed).max(1);
        let mut conn = self.snapshots.lock().map_err(storage)?;
        let tx = conn.transaction().map_err(storage)?;
        tx.execute(
            "INSERT INTO journal_snapshots (partition, bytes) VALUES (?1, ?2)
             ON CONFLICT (partition) DO UPDATE SET bytes = excluded.bytes",
            params![partition, bytes],
        )
        .map_err(storage)?;
        tx.execute(
            "INSERT OR REPLACE INTO journal_snapshot_history (partition, last, stamped_ms, bytes)
             VALUES (?1, ?2, ?3, ?4)",
            params![partition, mark.last as i64, mark.stamped_ms, bytes],
        )
        .map_err(storage)?;
        tx.execute(
            "DELETE FROM journal_snapshot_history WHERE partition = ?1 AND last < (
                 SELECT last FROM journal_snapshot_history WHERE partition = ?1
                 ORDER BY last DESC LIMIT 1 OFFSET ?2)",
            params![partition, (keep - 1).min(i64::MAX as usize) as i64],
        )
        .map_err(storage)?;
        tx.commit().map_err(storage)
    }

    fn snapshot_before(&self, partition: u32, bound: SnapshotBound) -> Result<Option<Snapshot>, JournalError> {
        let conn = self.snapshots.lock().map_err(storage)?;
        // The mark first, then only its snapshot: a query that returned the blob would carry
        // every candidate's blob through its sort.
        let (sql, limit) = match bound {
            SnapshotBound::Offset(o) => (
                "SELECT last, stamped_ms FROM journal_snapshot_history
                 WHERE partition = ?1 AND last <= ?2 ORDER BY last DESC LIMIT 1",
                o.min(i64::MAX as u64) as i64,
            ),
            SnapshotBound::StampedMs(t) => (
                "SELECT last, stamped_ms FROM journal_snapshot_history
                 WHERE partition = ?1 AND stamped_ms <= ?2 ORDER BY last DESC LIMIT 1",
                t,
            ),
        };
        let mark = {
            let mut stmt = conn.prepare_cached(sql).map_err(storage)?;
            let mut rows = stmt.query(params![partition, limit]).map_err(storage)?;
            let Some(row) = rows.next().map_err(storage)? else {
                return Ok(None);
            };
            SnapshotMark {
                last: row.get::<_, i64>(0).map_err(storage)? as Offset,
                stamped_ms: row.get(1).map_err(storage)?,
            }
        };
        let mut stmt = conn
            .prepare_cached("SELECT bytes FROM journal_snapshot_history WHERE partition = ?1 AND last = ?2")
            .map_err(storage)?;
        let mut rows = stmt.query(params![partition, mark.last as i64]).map_err(storage)?;
        match rows.next().map_err(storage)? {
            Some(row) => Ok(Some(Snapshot {
                mark,
                bytes: row.get(0).map_err(storage)?,
            })),
            // Deleted by a save in between: as if there were none.
            None => Ok(None),
        }
    }

    fn load_snapshot(&self, partition: u32) -> Result<Option<Vec<u8>>, JournalError> {
        let conn = self.snapshots.lock().map_err(storage)?;
        let mut stmt = conn
            .prepare_cached("SELECT bytes FROM journal_snapshots WHERE partition = ?1")
            .map_err(storage)?;
        let mut rows = stmt.query(params![partition]).map_err(storage)?;
        match rows.next().map_err(storage)? {
            Some(row) => Ok(Some(row.get(0).map_err(storage)?)),
            None => Ok(None),
        }
    }
}

#[async_trait]
impl Journal for SqliteJournal {
    async fn save_snapshot(&self, partition: u32, snapshot: Vec<u8>) -> Result<(), JournalError> {
        run_blocking(&self.inner, partition, move |inner| {
            inner.save_snapshot(partition, snapshot)
        })
        .await
    }

    async fn load_snapshot(&self, partition: u32) -> Result<Option<Vec<u8>>, JournalError> {
        run_blocking(&self.inner, partition, move |inner| inner.load_snapshot(partition)).await
    }

    async fn save_snapshot_at(&self, partition: u32, snapshot: Snapshot) -> Result<(), JournalError> {
        run_blocking(&self.inner, partition, move |inner| {
            inner.save_snapshot_at(partition, snapshot)
        })
        .await
    }

    async fn snapshot_before(&self, partition: u32, bound: SnapshotBound) -> Result<Option<Snapshot>, JournalError> {
        run_blocking(&self.inner, partition, move |inner| {
            inner.snapshot_before(partition, bound)
        })
        .await
    }

    fn partitions(&self) -> u32 {
        self.inner.partitions
    }

    async fn append(&self, partition: u32, records: Vec<Record>) -> Result<Vec<Offset>, JournalError> {
        run_blocking(&self.inner, partition, move |inner| inner.append(partition, records)).await
    }

    async fn read(&self, partition: u32, from: Offset, max: usize) -> Result<Batch, JournalError> {
        self.inner.check(partition)?;
        let cached = self
            .inner
            .tail
            .lock()
            .ok()
            .and_then(|tail| tail.read(partition, from, max));
        if let Some(cached) = cached {
            return Ok(cached.into_batch());
        }
        run_blocking(&self.inner, partition, move |inner| inner.read(partition, from, max)).await
    }

    async fn end_offset(&self, partition: u32) -> Result<Offset, JournalError> {
        self.inner.check(partition)?;
        Ok(*self.inner.ends[partition as usize].borrow())
    }

    fn watch(&self, partition: u32) -> Result<watch::Receiver<Offset>, JournalError> {
        self.inner.check(partition)?;
        Ok(self.inner.ends[partition as usize].subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u8) -> Record {
        Record {
            key: vec![n],
            value: vec![n; 3],
        }
    }

    #[test]
    fn each_partition_end_is_found_by_one_seek_not_a_scan_of_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.db");
        let journal = SqliteJournal::open(&path, 3).unwrap();
        journal.inner.append(0, vec![record(1), record(2)]).unwrap();
        journal.inner.append(2, vec![record(3)]).unwrap();
        let conn = Connection::open(&path).unwrap();
        assert_eq!(partition_ends(&conn, 3).unwrap(), vec![2, 0, 1]);
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {PARTITION_END}"))
            .unwrap()
            .query_map([0], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter()
                .all(|step| step.starts_with("SEARCH journal USING PRIMARY KEY")),
            "{plan:?}"
        );
    }

    /// Reads `partition` from `from` to its end, `max` at a time, through the journal's API.
    async fn read_all(journal: &SqliteJournal, partition: u32, mut from: Offset, max: usize) -> Vec<StoredRecord> {
        let mut all = Vec::new();
        loop {
            let batch = journal.read(partition, from, max).await.unwrap();
            if batch.records.is_empty() {
                return all;
            }
            from = batch.next;
            all.extend(batch.records);
        }
    }

    #[tokio::test]
    async fn what_was_just_appended_is_read_from_memory_and_the_rest_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.db");
        let journal = SqliteJournal::open(&path, 2).unwrap();
        // Room for the last 4 records of 3 + 64 bytes each.
        journal.keep_tail(4 * (4 + 64));
        for n in 0..6u8 {
            journal.append(u32::from(n % 2), vec![record(n)]).await.unwrap();
        }
        let everything: Vec<StoredRecord> =
            [read_all(&journal, 0, 0, 1).await, read_all(&journal, 1, 0, 2).await].concat();
        assert_eq!(
            everything
                .iter()
                .map(|r| (r.partition, r.offset, r.key[0]))
                .collect::<Vec<_>>(),
            vec![(0, 0, 0), (0, 1, 2), (0, 2, 4), (1, 0, 1), (1, 1, 3), (1, 2, 5)]
        );
        // Behind the journal's back, the file loses its records: what the tail holds (the last
        // four appended, offsets 1 and 2 of each partition) is still read, the rest is not.
        Connection::open(&path)
            .unwrap()
            .execute("DELETE FROM journal", [])
            .unwrap();
        let from_memory = journal.read(0, 1, 10).await.unwrap();
        assert_eq!(from_memory.records, everything[1..3].to_vec());
        assert_eq!(from_memory.next, 3);
        assert_eq!(journal.read(1, 2, 10).await.unwrap().records, everything[5..].to_vec());
        assert!(
            journal.read(0, 0, 10).await.unwrap().records.is_empty(),
            "offset 0 was read from the file"
        );
        // Without a tail every read goes to the file.
        journal.keep_tail(0);
        journal.append(0, vec![record(6)]).await.unwrap();
        assert_eq!(journal.read(0, 3, 10).await.unwrap().records[0].key, vec![6]);
        Connection::open(&path)
            .unwrap()
            .execute("DELETE FROM journal", [])
            .unwrap();
        assert!(journal.read(0, 3, 10).await.unwrap().records.is_empty());
    }

    /// A journal whose WAL a crashed process left behind (its pages never copied into the
    /// file, no shared-memory index) gets them copied by its checkpoint thread soon after it
    /// opens, without waiting for an append.
    #[test]
    fn a_wal_left_behind_is_checkpointed_soon_after_the_journal_opens() {
        let dir = tempfile::tempdir().unwrap();
        let (crashed, copy) = (dir.path().join("crashed.db"), dir.path().join("copy.db"));
        drop(SqliteJournal::open(&crashed, 1).unwrap());
        // A connection that never checkpoints writes 2,000 records of 1 KiB into the WAL, and
        // the files are copied while it is open, as a crash would leave them.
        let conn = Connection::open(&crashed).unwrap();
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0;").unwrap();
        for offset in 0..2_000i64 {
            conn.execute(
                "INSERT INTO journal (partition, offset, key, value) VALUES (0, ?1, x'01', ?2)",
                params![offset, vec![7u8; 1024]],
            )
            .unwrap();
        }
        let file_len = |p: &Path| std::fs::metadata(p).unwrap().len();
        std::fs::copy(&crashed, &copy).unwrap();
        std::fs::copy(format!("{}-wal", crashed.display()), format!("{}-wal", copy.display())).unwrap();
        let before = file_len(&copy);
        assert!(before < 100_000, "the records were already in the file: {before} bytes");
        let journal = SqliteJournal::open(&copy, 1).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while file_len(&copy) < 2_000_000 {
            assert!(
                std::time::Instant::now() < deadline,
                "after 10 s the file still holds {} bytes: the WAL was not checkpointed",
                file_len(&copy)
            );
            std::thread::sleep(CHECKPOINT_EVERY);
        }
        drop((journal, conn));
    }
}
