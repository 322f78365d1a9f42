//! The conformance suite on the embedded SQLite ledger.

use std::sync::Arc;

use async_trait::async_trait;
use frontrow_projector::{Ledger, SqliteLedger};

use crate::conformance::Harness;
use crate::ledger_conformance;

pub struct Sqlite(tempfile::TempDir);

#[async_trait]
impl Harness for Sqlite {
    async fn ledger(&self, name: &str) -> Arc<dyn Ledger> {
        Arc::new(SqliteLedger::open(&self.0.path().join(name)).await.unwrap())
    }
}

pub fn harness() -> Sqlite {
    Sqlite(tempfile::tempdir().unwrap())
}

ledger_conformance!(harness());

#[tokio::test]
async fn reopening_finds_the_promoted_generation() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = SqliteLedger::open(dir.path()).await.unwrap();
    assert_eq!(ledger.generation(), "ledger-1.db");
    let next = ledger.next_generation().await.unwrap();
    assert_eq!(next.generation(), "ledger-2.db");
    // Another handle (another process) on the same directory follows the switch.
    let other = SqliteLedger::open(dir.path()).await.unwrap();
    ledger.promote("ledger-2.db").await.unwrap();
    assert!(other.positions().await.unwrap().is_empty());
    assert_eq!(other.generation(), "ledger-2.db");
    assert!(!dir.path().join("ledger-1.db").exists());
    let reopened = SqliteLedger::open(dir.path()).await.unwrap();
    assert_eq!(reopened.generation(), "ledger-2.db");
    assert!(ledger.promote("../elsewhere.db").await.is_err());
}
