//! The one test suite every [`Journal`] implementation passes.
//!
//! An implementation's tests provide a [`Harness`] that opens a journal by name (the same name
//! opens the same journal again, as after a restart) and invoke [`journal_conformance!`],
//! which generates one `#[tokio::test]` per case.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{Journal, JournalError, Record, Snapshot, SnapshotBound, SnapshotMark};

/// Opens journals for the suite.
#[async_trait]
pub trait Harness: Send + Sync {
    /// Opens the journal called `name` with `partitions` partitions, creating it if needed.
    /// Opening a name again must give the same, durable contents.
    async fn open(&self, name: &str, partitions: u32) -> Arc<dyn Journal>;
}

fn rec(key: &str, value: impl Into<Vec<u8>>) -> Record {
    Record {
        key: key.as_bytes().to_vec(),
        value: value.into(),
    }
}

/// Reads a whole partition from its start, following `next` across gaps.
pub async fn read_all(j: &dyn Journal, partition: u32) -> Vec<crate::StoredRecord> {
    let end = j.end_offset(partition).await.unwrap();
    let mut scan = crate::Scan::new(j, partition, 0, end, 1000).retrying();
    let mut all = Vec::new();
    while let Some(records) = scan.next_batch().await.unwrap() {
        all.extend(records);
    }
    all
}

/// Reads from `from`, retrying while the batch is empty: a journal may not show committed
/// records at once (Kafka's readers wait for the transaction's commit marker).
pub async fn read_some(j: &dyn Journal, partition: u32, from: crate::Offset, max: usize) -> crate::Batch {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let batch = j.read(partition, from, max).await.unwrap();
        if !batch.records.is_empty() || std::time::Instant::now() > deadline {
            return batch;
        }
    }
}

fn increasing(offsets: &[u64]) -> bool {
    offsets.windows(2).all(|w| w[0] < w[1])
}

/// Appends get strictly increasing offsets and read back in order, byte for byte.
pub async fn append_then_read(h: &dyn Harness) {
    let j = h.open("append_then_read", 2).await;
    assert_eq!(j.partitions(), 2);
    assert_eq!(j.end_offset(1).await.unwrap(), 0);
    let first = j
        .append(1, vec![rec("a", "one"), rec("b", vec![0u8, 255, 7])])
        .await
        .unwrap();
    let second = j.append(1, vec![rec("a", "three")]).await.unwrap();
    assert_eq!((first.len(), second.len()), (2, 1));
    let offsets: Vec<u64> = first.iter().chain(&second).copied().collect();
    assert!(increasing(&offsets), "{offsets:?}");
    let got = read_all(j.as_ref(), 1).await;
    let values: Vec<_> = got
        .iter()
        .map(|r| (r.partition, r.offset, r.key.clone(), r.value.clone()))
        .collect();
    assert_eq!(
        values,
        vec![
            (1, offsets[0], b"a".to_vec(), b"one".to_vec()),
            (1, offsets[1], b"b".to_vec(), vec![0, 255, 7]),
            (1, offsets[2], b"a".to_vec(), b"three".to_vec()),
        ]
    );
    assert!(j.end_offset(1).await.unwrap() > offsets[2]);
}

/// Partitions are independent sequences.
pub async fn partitions_are_independent(h: &dyn Harness) {
    let j = h.open("partitions_are_independent", 3).await;
    j.append(0, vec![rec("x", "p0")]).await.unwrap();
    j.append(2, vec![rec("y", "p2a"), rec("y", "p2b")]).await.unwrap();
    j.append(0, vec![rec("x", "p0b")]).await.unwrap();
    assert!(j.read(1, 0, 10).await.unwrap().records.is_empty());
    assert_eq!(j.end_offset(1).await.unwrap(), 0);
    let p0: Vec<_> = read_all(j.as_ref(), 0).await.into_iter().map(|r| r.value).collect();
    let p2: Vec<_> = read_all(j.as_ref(), 2).await.into_iter().map(|r| r.value).collect();
    assert_eq!(p0, vec![b"p0".to_vec(), b"p0b".to_vec()]);
    assert_eq!(p2, vec![b"p2a".to_vec(), b"p2b".to_vec()]);
}

/// Reads honour the start offset and the limit, and `next` continues where they stopped.
pub async fn read_from_offset_with_limit(h: &dyn Harness) {
    let j = h.open("read_from_offset_with_limit", 1).await;
    let batch: Vec<_> = (0..10).map(|i| rec("k", format!("v{i}"))).collect();
    let offsets = j.append(0, batch).await.unwrap();
    let got = read_some(j.as_ref(), 0, offsets[4], 3).await;
    assert_eq!(
        got.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        offsets[4..7].to_vec()
    );
    assert_eq!(got.records[0].value, b"v4");
    assert!(got.next > offsets[6] && got.next <= offsets[7]);
    let rest = read_some(j.as_ref(), 0, got.next, 100).await;
    assert_eq!(
        rest.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        offsets[7..].to_vec()
    );
    let end = j.end_offset(0).await.unwrap();
    assert!(end > offsets[9]);
    let past = j.read(0, end, 100).await.unwrap();
    assert!(past.records.is_empty());
    assert!(past.next >= end);
}

/// An empty batch writes nothing; an unknown partition is an error that writes nothing.
pub async fn empty_batches_and_bad_partitions(h: &dyn Harness) {
    let j = h.open("empty_batches_and_bad_partitions", 2).await;
    assert!(j.append(0, vec![]).await.unwrap().is_empty());
    assert!(matches!(
        j.append(2, vec![rec("k", "v")]).await,
        Err(JournalError::NoSuchPartition {
            partition: 2,
            partitions: 2
        })
    ));
    assert!(j.read(5, 0, 1).await.is_err());
    assert!(j.watch(9).is_err());
    assert_eq!(j.end_offset(0).await.unwrap(), 0);
    assert_eq!(j.end_offset(1).await.unwrap(), 0);
}

/// A watcher learns of appends; a follower returns every record once, in order.
pub async fn followers_see_new_appends(h: &dyn Harness) {
    let j = h.open("followers_see_new_appends", 1).await;
    let mut follower = crate::Follower::new(j.clone(), "conformance", 0, 0, 2).unwrap();
    let writer = {
        let j = j.clone();
        tokio::spawn(async move {
            let mut offsets = Vec::new();
            for i in 0..5 {
                offsets.extend(j.append(0, vec![rec("k", format!("{i}"))]).await.unwrap());
                tokio::task::yield_now().await;
            }
            offsets
        })
    };
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let batch = tokio::time::timeout(std::time::Duration::from_secs(30), follower.next_batch())
            .await
            .expect("follower saw the appends in time")
            .expect("journal alive")
            .unwrap();
        assert!(batch.len() <= 2, "the follower's batch limit holds");
        seen.extend(
            batch
                .into_iter()
                .map(|r| (r.offset, String::from_utf8(r.value).unwrap())),
        );
    }
    let offsets = writer.await.unwrap();
    let want: Vec<_> = offsets.iter().enumerate().map(|(i, o)| (*o, i.to_string())).collect();
    assert_eq!(seen, want);
    assert!(follower.position() > offsets[4]);
}

/// Concurrent appenders to one partition each get their batch stored whole and in order.
pub async fn concurrent_appends_stay_atomic(h: &dyn Harness) {
    let j = h.open("concurrent_appends_stay_atomic", 1).await;
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let j = j.clone();
            tokio::spawn(async move {
                let mut all = Vec::new();
                for i in 0..5 {
                    let batch = (0..3).map(|k| rec("k", format!("{t}-{i}-{k}"))).collect();
                    all.push(j.append(0, batch).await.unwrap());
                }
                all
            })
        })
        .collect();
    let mut offsets = Vec::new();
    for t in tasks {
        for batch in t.await.unwrap() {
            assert!(increasing(&batch));
            offsets.extend(batch);
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    assert_eq!(offsets.len(), 120, "every record has its own offset");
    let all = read_all(j.as_ref(), 0).await;
    assert_eq!(all.iter().map(|r| r.offset).collect::<Vec<_>>(), offsets);
    // Each batch is atomic: its three records are adjacent and in order.
    for chunk in all.chunks(3) {
        let v: Vec<String> = chunk
            .iter()
            .map(|r| String::from_utf8(r.value.clone()).unwrap())
            .collect();
        let prefix = v[0].rsplit_once('-').unwrap().0.to_owned();
        assert_eq!(
            v,
            vec![format!("{prefix}-0"), format!("{prefix}-1"), format!("{prefix}-2")]
        );
    }
}

/// What was acknowledged is there after the journal is opened again.
pub async fn appends_survive_reopen(h: &dyn Harness) {
    let j = h.open("appends_survive_reopen", 2).await;
    let first = j.append(1, vec![rec("e", "kept-1"), rec("e", "kept-2")]).await.unwrap();
    drop(j);
    let j = h.open("appends_survive_reopen", 2).await;
    assert!(j.end_offset(1).await.unwrap() > first[1]);
    let got = read_all(j.as_ref(), 1).await;
    assert_eq!(
        got.iter().map(|r| r.value.clone()).collect::<Vec<_>>(),
        vec![b"kept-1".to_vec(), b"kept-2".to_vec()]
    );
    let after = j.append(1, vec![rec("e", "after")]).await.unwrap();
    assert!(after[0] > first[1]);
}

/// The latest snapshot of a partition replaces the previous one and survives a reopen.
pub async fn snapshots_replace_and_survive_reopen(h: &dyn Harness) {
    let j = h.open("snapshots_replace_and_survive_reopen", 2).await;
    assert_eq!(j.load_snapshot(0).await.unwrap(), None);
    j.save_snapshot(0, b"first".to_vec()).await.unwrap();
    j.save_snapshot(0, b"second".to_vec()).await.unwrap();
    j.save_snapshot(1, vec![7u8; 200_000]).await.unwrap();
    drop(j);
    let j = h.open("snapshots_replace_and_survive_reopen", 2).await;
    assert_eq!(j.load_snapshot(0).await.unwrap(), Some(b"second".to_vec()));
    assert_eq!(j.load_snapshot(1).await.unwrap(), Some(vec![7u8; 200_000]));
}

/// Snapshots saved with a mark are kept in the partition's history beside the latest: a lookup
/// by offset or by time finds the newest one within the bound, partitions do not mix, the
/// latest is still what `load_snapshot` returns, and all of it survives a reopen.
pub async fn snapshot_history_finds_the_newest_within_a_bound(h: &dyn Harness) {
    let name = "snapshot_history_finds_the_newest_within_a_bound";
    let j = h.open(name, 2).await;
    for p in 0..2 {
        assert_eq!(
            j.snapshot_before(p, SnapshotBound::Offset(u64::MAX)).await.unwrap(),
            None
        );
    }
    let marked = |last, stamped_ms, bytes: &[u8]| Snapshot {
        mark: SnapshotMark { last, stamped_ms },
        bytes: bytes.to_vec(),
    };
    // Partition 0: snapshots covering offsets 9, 19, 29 and 39, stamped at 1000, 2000, ... ms;
    // the one covering 29 was stamped by a writer that did not know the time.
    for (i, last) in [9u64, 19, 29, 39].into_iter().enumerate() {
        let stamped = (last != 29).then_some((i as i64 + 1) * 1000);
        let bytes = format!("p0@{last}").into_bytes();
        j.save_snapshot_at(0, marked(last, stamped, &bytes)).await.unwrap();
    }
    j.save_snapshot_at(1, marked(4, Some(500), b"p1@4")).await.unwrap();
    drop(j);
    let j = h.open(name, 2).await;
    assert_eq!(j.load_snapshot(0).await.unwrap(), Some(b"p0@39".to_vec()));
    assert_eq!(j.load_snapshot(1).await.unwrap(), Some(b"p1@4".to_vec()));
    let by_offset = [
        (0, None),
        (8, None),
        (9, Some(9)),
        (10, Some(9)),
        (28, Some(19)),
        (29, Some(29)),
        (38, Some(29)),
        (39, Some(39)),
        (u64::MAX, Some(39)),
    ];
    for (offset, want) in by_offset {
        let got = j.snapshot_before(0, SnapshotBound::Offset(offset)).await.unwrap();
        assert_eq!(
            got.as_ref().map(|s| s.mark.last),
            want,
            "newest snapshot covering at most offset {offset}"
        );
        if let Some(Snapshot { mark: m, bytes }) = got {
            assert_eq!(bytes, format!("p0@{}", m.last).into_bytes());
            assert_eq!(m.stamped_ms, (m.last != 29).then(|| (m.last as i64 + 1) / 10 * 1000));
        }
    }
    // By time: the unstamped snapshot is never an answer.
    for (t, want) in [
        (999, None),
        (1000, Some(9)),
        (2999, Some(19)),
        (3999, Some(19)),
        (4000, Some(39)),
    ] {
        let got = j.snapshot_before(0, SnapshotBound::StampedMs(t)).await.unwrap();
        assert_eq!(got.map(|s| s.mark.last), want, "newest snapshot stamped at most {t} ms");
    }
    let other = j.snapshot_before(1, SnapshotBound::Offset(100)).await.unwrap();
    assert_eq!(other, Some(marked(4, Some(500), b"p1@4")));
    assert_eq!(j.snapshot_before(1, SnapshotBound::Offset(3)).await.unwrap(), None);
    assert!(matches!(
        j.snapshot_before(2, SnapshotBound::Offset(0)).await,
        Err(JournalError::NoSuchPartition { .. })
    ));
}

/// Generates one test per conformance case for a harness expression; attributes given after it
/// (e.g. `journal_conformance!(harness(), #[ignore = "needs kafka"])`) go on every test.
#[macro_export]
macro_rules! journal_conformance {
    ($harness:expr $(, #[$attr:meta])* $(,)?) => {
        $crate::conformance_tests!([$(#[$attr])*] $harness; {$crate::conformance};
            append_then_read, partitions_are_independent, read_from_offset_with_limit,
            empty_batches_and_bad_partitions, followers_see_new_appends,
            concurrent_appends_stay_atomic, appends_survive_reopen,
            snapshots_replace_and_survive_reopen, snapshot_history_finds_the_newest_within_a_bound);
    };
}

/// Generates the tests of a conformance suite, for the suites' own macros (this crate's
/// [`journal_conformance!`], the search index's): one `#[tokio::test]` per case, with the
/// attributes in `[...]`, that calls `suite::case(&harness).await` on the harness expression,
/// as in `conformance_tests!([#[ignore = "needs kafka"]] harness(); {my_crate::conformance}; a, b)`.
#[macro_export]
macro_rules! conformance_tests {
    (@one [$($attr:tt)*] $harness:expr; {$($suite:tt)*}; $case:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $($attr)*
        async fn $case() {
            let harness = $harness;
            $($suite)*::$case(&harness).await;
        }
    };
    ($attrs:tt $harness:expr; $suite:tt; $($case:ident),* $(,)?) => {
        $( $crate::conformance_tests!(@one $attrs $harness; $suite; $case); )*
    };
}
