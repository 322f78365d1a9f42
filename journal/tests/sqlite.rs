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
    use frontrow_journal::{SnapshotBound, SnapshotMark};

    let dir = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(&dir.path().join("j.db"), 2).unwrap();
    journal.keep_snapshots(3);
    for last in 0..10u64 {
        let mark = SnapshotMark {
            last: last * 10,
            stamped_ms: Some(last as i64),
        };
        journal
            .save_snapshot_at(0, mark, last.to_string().into_bytes())
            .await
            .unwrap();
    }
    journal
        .save_snapshot_at(
            1,
            SnapshotMark {
                last: 5,
                stamped_ms: None,
            },
            b"p1".to_vec(),
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
                .map(|(m, _)| m.last)
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
        journal.save_snapshot_at(0, mark, Vec::new()).await.unwrap();
    }
    assert_eq!(found(75).await, Some(70));
}
