//! What can go wrong in a ledger.

/// A ledger failure. [`LedgerError::OutOfOrder`] is the projector's guard; the rest are storage.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The batch does not start where the last one written for its partition ended.
    #[error("batch for partition {partition} starts at offset {batch_from} but the ledger is at {stored}")]
    OutOfOrder {
        partition: u32,
        stored: u64,
        batch_from: u64,
    },
    /// The database refused or failed.
    #[error("ledger storage failed: {0}")]
    Storage(#[from] sqlx::Error),
    #[error("ledger migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A ledger name (schema, file) that cannot be used.
    #[error("invalid ledger configuration: {0}")]
    Config(String),
    /// A row read back does not have the shape the ledger writes.
    #[error("unexpected ledger data: {0}")]
    Corrupt(String),
    #[error("ledger file operation failed: {0}")]
    Io(#[from] std::io::Error),
    /// Test hook: the batch was written and then abandoned before its commit.
    #[error("batch abandoned before commit (injected crash)")]
    InjectedCrash,
}
