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
