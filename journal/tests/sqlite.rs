//! The journal conformance suite on the embedded SQLite journal.

use std::sync::Arc;

use async_trait::async_trait;
use frontrow_journal::conformance::Harness;
use frontrow_journal::{Journal, JournalError, SqliteJournal, journal_conformance};

struct Sqlite(tempfile::TempDir);

#[async_trait]
impl Harness for Sqlite {
    async fn open(&self, name: &str, partitions: u32) -> Arc<dyn Journal> {
        Arc::new(SqliteJournal::open(&self.0.path().join(format!("{name}.db")), partitions).unwrap())
    }
}

fn harness() -> Sqlite {
    Sqlite(tempfile::tempdir().unwrap())
}

journal_conformance!(harness());

/// The same suite with reads through a memory map of the file, as `frontrow analytics` reads.
mod mapped {
    use super::*;

    struct Mapped(tempfile::TempDir);

    #[async_trait]
    impl Harness for Mapped {
        async fn open(&self, name: &str, partitions: u32) -> Arc<dyn Journal> {
            let journal = SqliteJournal::open(&self.0.path().join(format!("{name}.db")), partitions).unwrap();
            journal.map_reads().unwrap();
            Arc::new(journal)
        }
    }

    journal_conformance!(Mapped(tempfile::tempdir().unwrap()));

    /// SQLite maps at most its compile-time cap, 2 GiB unless the build raises it
    /// (`.cargo/config.toml`): past the cap, a bigger journal would be read the slow way.
    #[test]
    fn the_build_lets_sqlite_map_more_than_its_default_two_gib() {
        let dir = tempfile::tempdir().unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("j.db")).unwrap();
        let asked = frontrow_journal::MAPPED_BYTES;
        let granted: i64 = conn
            .query_row(&format!("PRAGMA mmap_size = {asked}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(granted as u64, asked, "SQLite granted a map of {granted} bytes");
    }
}

#[test]
fn partition_count_cannot_change_under_existing_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.db");
    drop(SqliteJournal::open(&path, 4).unwrap());
    assert!(matches!(
        SqliteJournal::open(&path, 8),
        Err(JournalError::PartitionCountMismatch {
            found: 4,
            configured: 8,
            ..
        })
    ));
}

#[tokio::test]
async fn the_snapshot_history_keeps_only_the_newest_few_per_partition() {
    use frontrow_journal::{Snapshot, SnapshotBound, SnapshotMark};

    let dir = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(&dir.path().join("j.db"), 2).unwrap();
    journal.keep_snapshots(3);
    for last in 0..10u64 {
        let mark = SnapshotMark {
            last: last * 10,
            stamped_ms: Some(last as i64),
        };
        let bytes = last.to_string().into_bytes();
        journal.save_snapshot_at(0, Snapshot { mark, bytes }).await.unwrap();
    }
    journal
        .save_snapshot_at(
            1,
            Snapshot {
                mark: SnapshotMark {
                    last: 5,
                    stamped_ms: None,
                },
                bytes: b"p1".to_vec(),
            },
        )
        .await
        .unwrap();
    // Partition 0 keeps 70, 80 and 90; older instants find nothing (and replay from the start).
    let found = |offset| {
        let journal = &journal;
        async move {
            journal
                .snapshot_before(0, SnapshotBound::Offset(offset))
                .await
                .unwrap()
                .map(|s| s.mark.last)
        }
    };
    assert_eq!(found(1000).await, Some(90));
    assert_eq!(found(75).await, Some(70));
    assert_eq!(found(69).await, None);
    // The other partition's history is its own.
    assert!(
        journal
            .snapshot_before(1, SnapshotBound::Offset(5))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(journal.load_snapshot(0).await.unwrap(), Some(b"9".to_vec()));
    // "Keep everything" keeps everything.
    journal.keep_snapshots(usize::MAX);
    for last in 10..13u64 {
        let mark = SnapshotMark {
            last: last * 10,
            stamped_ms: None,
        };
        let bytes = Vec::new();
        journal.save_snapshot_at(0, Snapshot { mark, bytes }).await.unwrap();
    }
    assert_eq!(found(75).await, Some(70));
}

/// Snapshots go to a file of their own, so their megabytes never pass through the journal's
/// write connection or its WAL; they survive a reopen like the journal does.
#[tokio::test]
async fn snapshots_live_beside_the_journal_not_in_it() {
    use frontrow_journal::{Record, Snapshot, SnapshotBound, SnapshotMark};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.db");
    let big = vec![7u8; 4 << 20];
    {
        let journal = SqliteJournal::open(&path, 1).unwrap();
        let record = Record {
            key: b"k".to_vec(),
            value: b"v".to_vec(),
        };
        journal.append(0, vec![record]).await.unwrap();
        let mark = SnapshotMark {
            last: 0,
            stamped_ms: Some(1),
        };
        let bytes = big.clone();
        journal.save_snapshot_at(0, Snapshot { mark, bytes }).await.unwrap();
    }
    let journal_file = rusqlite::Connection::open(&path).unwrap();
    let tables: Vec<String> = journal_file
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(tables, vec!["journal", "journal_meta"]);
    let journal_bytes: i64 = journal_file
        .query_row(
            "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(journal_bytes < 1 << 20, "the journal file holds {journal_bytes} bytes");

    let journal = SqliteJournal::open(&path, 1).unwrap();
    assert_eq!(journal.load_snapshot(0).await.unwrap(), Some(big.clone()));
    let Snapshot { mark, bytes } = journal
        .snapshot_before(0, SnapshotBound::Offset(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((mark.last, bytes.len()), (0, big.len()));
    assert_eq!(journal.end_offset(0).await.unwrap(), 1);
}

/// The appends leave checkpointing to the journal's own thread, and that thread keeps the WAL
/// small: 24 MiB appended in 1 MiB group commits, a little over a checkpoint interval apart,
/// and the WAL never holds more than a few of them (without the thread it would hold them all,
/// as the appends never checkpoint). Every record reads back after all.
#[tokio::test]
async fn the_checkpoint_thread_keeps_the_wal_small_and_the_records_whole() {
    use frontrow_journal::Record;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.db");
    let wal = dir.path().join("j.db-wal");
    let journal = SqliteJournal::open(&path, 1).unwrap();
    let value = vec![7u8; 4096];
    let mut largest_wal = 0;
    for round in 0..24u8 {
        let records = (0..256)
            .map(|i| Record {
                key: vec![round, i as u8],
                value: value.clone(),
            })
            .collect();
        journal.append(0, records).await.unwrap();
        largest_wal = largest_wal.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
        tokio::time::sleep(frontrow_journal::CHECKPOINT_EVERY + std::time::Duration::from_millis(50)).await;
    }
    assert!(
        largest_wal < 8 << 20,
        "the WAL grew to {largest_wal} bytes over 24 MiB of appends"
    );
    let read = journal.read(0, 0, 10_000).await.unwrap();
    assert_eq!(read.records.len(), 24 * 256);
    assert!(read.records.iter().all(|r| r.value == value));
}
