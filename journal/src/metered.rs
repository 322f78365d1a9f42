//! A journal that reports what it does to the process's metrics.
//!
//! [`Metered`] wraps any [`Journal`] and records, per partition, the latency of each append
//! (`frontrow_journal_append_seconds`), the bytes and records appended
//! (`frontrow_journal_append_bytes`, `frontrow_journal_appended_records_total`), failed appends
//! (`frontrow_journal_append_failures_total`) and snapshot writes. Everything else passes
//! straight through.

use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::{Batch, Journal, JournalError, Offset, Record, Snapshot, SnapshotBound};

/// `inner`, with metrics.
pub struct Metered<J: ?Sized> {
    inner: std::sync::Arc<J>,
    /// The partition label of each partition, made once.
    labels: Vec<String>,
}

impl<J: Journal + ?Sized> Metered<J> {
    pub fn new(inner: std::sync::Arc<J>) -> Self {
        let labels = (0..inner.partitions()).map(|p| p.to_string()).collect();
        Self { inner, labels }
    }

    fn label(&self, partition: u32) -> String {
        self.labels
            .get(partition as usize)
            .cloned()
            .unwrap_or_else(|| partition.to_string())
    }
}

#[async_trait]
impl<J: Journal + ?Sized> Journal for Metered<J> {
    fn partitions(&self) -> u32 {
        self.inner.partitions()
    }

    async fn claim(&self, partition: u32) -> Result<(), JournalError> {
        self.inner.claim(partition).await
    }

    async fn append(&self, partition: u32, records: Vec<Record>) -> Result<Vec<Offset>, JournalError> {
        let bytes: usize = records.iter().map(|r| r.key.len() + r.value.len()).sum();
        let count = records.len() as u64;
        let started = Instant::now();
        let result = self.inner.append(partition, records).await;
        let label = self.label(partition);
        match &result {
            Ok(_) => {
                metrics::histogram!("frontrow_journal_append_seconds", "partition" => label.clone())
                    .record(started.elapsed().as_secs_f64());
                metrics::histogram!("frontrow_journal_append_bytes", "partition" => label.clone()).record(bytes as f64);
                metrics::counter!("frontrow_journal_appended_records_total", "partition" => label).increment(count);
            }
            Err(_) => metrics::counter!("frontrow_journal_append_failures_total", "partition" => label).increment(1),
        }
        result
    }

    async fn read(&self, partition: u32, from: Offset, max: usize) -> Result<Batch, JournalError> {
        self.inner.read(partition, from, max).await
    }

    async fn end_offset(&self, partition: u32) -> Result<Offset, JournalError> {
        self.inner.end_offset(partition).await
    }

    async fn save_snapshot(&self, partition: u32, snapshot: Vec<u8>) -> Result<(), JournalError> {
        let bytes = snapshot.len();
        let result = self.inner.save_snapshot(partition, snapshot).await;
        self.count_snapshot(partition, bytes, result.is_ok());
        result
    }

    async fn load_snapshot(&self, partition: u32) -> Result<Option<Vec<u8>>, JournalError> {
        self.inner.load_snapshot(partition).await
    }

    fn writes_commit_markers(&self) -> bool {
        self.inner.writes_commit_markers()
    }

    async fn save_snapshot_at(&self, partition: u32, snapshot: Snapshot) -> Result<(), JournalError> {
        let bytes = snapshot.bytes.len();
        let result = self.inner.save_snapshot_at(partition, snapshot).await;
        self.count_snapshot(partition, bytes, result.is_ok());
        result
    }

    async fn snapshot_before(&self, partition: u32, bound: SnapshotBound) -> Result<Option<Snapshot>, JournalError> {
        self.inner.snapshot_before(partition, bound).await
    }

    fn watch(&self, partition: u32) -> Result<watch::Receiver<Offset>, JournalError> {
        self.inner.watch(partition)
    }
}

impl<J: Journal + ?Sized> Metered<J> {
    fn count_snapshot(&self, partition: u32, bytes: usize, saved: bool) {
        let outcome = if saved { "saved" } else { "failed" };
        metrics::counter!("frontrow_journal_snapshots_total", "partition" => self.label(partition), "outcome" => outcome)
            .increment(1);
        if saved {
            metrics::histogram!("frontrow_journal_snapshot_bytes").record(bytes as f64);
        }
    }
}
