//! The journal's most recent records, kept in memory after their commit.
//!
//! A serving node's own followers (its query maps, its ledger and search projections) read each
//! record just after the writer appended it. Reading it back from SQLite cost each of them a
//! trip to the blocking pool, a b-tree seek and a copy of the row; [`Tail`] keeps what the last
//! appends committed, up to a byte budget, and answers those reads from memory. Only committed
//! records enter it, each partition's records stay contiguous (the oldest are evicted first,
//! whichever partition they belong to), and a read it cannot answer whole goes to SQLite.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::{Batch, Offset, Record, StoredRecord};

/// How many bytes of records the tail keeps unless told otherwise: about a second of a hot
/// onsale's appends, small beside a node's seat maps.
pub const DEFAULT_TAIL_BYTES: usize = 8 << 20;

/// What a cached record costs beyond its key and value (its place in two queues, its `Arc`).
const RECORD_OVERHEAD: usize = 64;

pub(crate) struct Tail {
    /// Each partition's cached records, contiguous, oldest first.
    parts: Vec<VecDeque<Arc<StoredRecord>>>,
    /// The partition of every cached record, in the order they were appended: what to evict.
    order: VecDeque<u32>,
    bytes: usize,
    budget: usize,
}

fn size(record: &StoredRecord) -> usize {
    record.key.len() + record.value.len() + RECORD_OVERHEAD
}

impl Tail {
    pub(crate) fn new(partitions: u32, budget: usize) -> Self {
        Self {
            parts: (0..partitions).map(|_| VecDeque::new()).collect(),
            order: VecDeque::new(),
            bytes: 0,
            budget,
        }
    }

    /// Keeps `records`, just committed at offsets from `first` on in `partition`, and evicts the
    /// oldest records until the tail fits its budget again.
    pub(crate) fn push(&mut self, partition: u32, first: Offset, records: Vec<Record>) {
        let part = &mut self.parts[partition as usize];
        if part.back().is_some_and(|last| last.offset + 1 != first) {
            // Not contiguous with what is kept (cannot happen with one writer): start over.
            self.clear();
        }
        for (i, Record { key, value }) in records.into_iter().enumerate() {
            let record = StoredRecord {
                partition,
                offset: first + i as Offset,
                key,
                value,
            };
            self.bytes += size(&record);
            self.parts[partition as usize].push_back(Arc::new(record));
            self.order.push_back(partition);
        }
        while self.bytes > self.budget {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(record) = self.parts[oldest as usize].pop_front() {
                self.bytes -= size(&record);
            }
        }
    }

    /// Changes the budget, evicting at the next push.
    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
    }

    fn clear(&mut self) {
        self.parts.iter_mut().for_each(VecDeque::clear);
        self.order.clear();
        self.bytes = 0;
    }

    /// Up to `max` records of `partition` from offset `from` on, if the tail holds the whole
    /// answer: `from` is at or past its oldest record of the partition and at most its end,
    /// which is the partition's end (records enter the tail before their end is published). The
    /// records are shared here and copied by [`Cached::into_batch`], outside the caller's lock.
    pub(crate) fn read(&self, partition: u32, from: Offset, max: usize) -> Option<Cached> {
        let part = &self.parts[partition as usize];
        let oldest = part.front()?.offset;
        let end = part.back()?.offset + 1;
        if from < oldest || from > end {
            return None;
        }
        let skip = (from - oldest) as usize;
        Some(Cached {
            records: part.range(skip..).take(max).cloned().collect(),
            from,
        })
    }
}

/// Records read from the tail, not yet copied out.
pub(crate) struct Cached {
    records: Vec<Arc<StoredRecord>>,
    from: Offset,
}

impl Cached {
    pub(crate) fn into_batch(self) -> Batch {
        let next = self.records.last().map_or(self.from, |r| r.offset + 1);
        let records = self
            .records
            .into_iter()
            .map(|r| Arc::try_unwrap(r).unwrap_or_else(|shared| (*shared).clone()))
            .collect();
        Batch { records, next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(n: usize, len: usize) -> Vec<Record> {
        (0..n)
            .map(|i| Record {
                key: vec![i as u8],
                value: vec![i as u8; len],
            })
            .collect()
    }

    fn offsets(cached: Option<Cached>) -> Option<(Vec<Offset>, Offset)> {
        cached.map(|c| {
            let batch = c.into_batch();
            (batch.records.iter().map(|r| r.offset).collect(), batch.next)
        })
    }

    #[test]
    fn it_answers_only_reads_it_holds_whole() {
        let mut tail = Tail::new(2, 1 << 20);
        assert!(tail.read(0, 0, 10).is_none(), "nothing kept yet");
        tail.push(0, 5, records(3, 10));
        assert_eq!(offsets(tail.read(0, 5, 10)), Some((vec![5, 6, 7], 8)));
        assert_eq!(offsets(tail.read(0, 6, 1)), Some((vec![6], 7)));
        assert_eq!(offsets(tail.read(0, 8, 10)), Some((vec![], 8)), "at the end: empty");
        assert!(tail.read(0, 4, 10).is_none(), "older than the tail: SQLite's");
        assert!(tail.read(0, 9, 10).is_none(), "past the end: SQLite's");
        assert!(tail.read(1, 0, 10).is_none(), "another partition");
    }

    #[test]
    fn the_oldest_records_are_evicted_first_whatever_their_partition() {
        let per = 100 + 1 + RECORD_OVERHEAD;
        let mut tail = Tail::new(2, 5 * per);
        tail.push(0, 0, records(3, 100));
        tail.push(1, 0, records(2, 100));
        tail.push(0, 3, records(2, 100));
        assert_eq!(tail.bytes, 5 * per);
        assert_eq!(offsets(tail.read(0, 2, 10)), Some((vec![2, 3, 4], 5)));
        assert!(tail.read(0, 1, 10).is_none());
        assert_eq!(offsets(tail.read(1, 0, 10)), Some((vec![0, 1], 2)));
        let record = tail.read(0, 4, 1).unwrap().into_batch().records.remove(0);
        assert_eq!((record.partition, record.key, record.value), (0, vec![1], vec![1; 100]));
    }

    #[test]
    fn a_record_larger_than_the_budget_is_not_kept() {
        let mut tail = Tail::new(1, 1000);
        tail.push(0, 0, records(1, 10));
        tail.push(0, 1, records(1, 2000));
        assert_eq!(tail.bytes, 0);
        assert!(tail.read(0, 1, 10).is_none());
        tail.push(0, 2, records(1, 10));
        assert_eq!(offsets(tail.read(0, 2, 10)), Some((vec![2], 3)));
    }
}
