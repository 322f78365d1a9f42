//! Reading the log for analytics: every partition (or one event's), in order, read-only.
//!
//! A replay notes each partition's end offset when it starts and reads no further, so it can run
//! against a live system: what is appended meanwhile belongs to the next run. With a time range,
//! it stops each partition at its first record stamped after `to` (a partition's single writer
//! stamps records in order), and records before `from` still shape the state (the seat map, the
//! holds in flight) but are not counted. Only the records keyed by the chosen event are decoded.

use chrono::{DateTime, Utc};
use frontrow_journal::{Journal, JournalError, Offset, Position, Scan, StoredRecord};
use frontrow_schema::partition::partition_of;
use frontrow_schema::{Envelope, EventId, decode};
use tracing::warn;

/// What to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Only this event (only its partition is read); every event when `None`.
    pub event: Option<EventId>,
    /// Count only facts stamped at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Read no fact stamped after this time.
    pub to: Option<DateTime<Utc>>,
    /// Records per journal read (default 5000).
    pub batch: usize,
}

impl ReplayOptions {
    /// Whether a fact stamped `time` is counted (it is always applied).
    pub fn counts(&self, time: DateTime<Utc>) -> bool {
        self.from.is_none_or(|from| time >= from)
    }
}

/// How far a replay got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Records read so far (all keys), and the offsets covered of the total to cover.
    pub records: u64,
    pub offsets_done: u64,
    pub offsets_total: u64,
}

/// What a finished replay read.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Coverage {
    /// Records read (every key) and records decoded (the chosen event's).
    pub records_read: u64,
    pub records_decoded: u64,
    /// Records that could not be decoded and were skipped.
    pub undecodable: u64,
    /// Per partition read: the end offset noted at the start (the replay read everything before it).
    pub end_offsets: Vec<(u32, Offset)>,
}

/// Replays the journal, handing every decoded envelope of the chosen event(s) to `sink` in log
/// order, one partition after the other, and reporting progress after each read.
pub async fn replay(
    journal: &dyn Journal,
    options: &ReplayOptions,
    mut sink: impl FnMut(Position, &Envelope),
    mut progress: impl FnMut(Progress),
) -> Result<Coverage, JournalError> {
    let ends = end_offsets(journal, options).await?;
    let mut coverage = Coverage {
        end_offsets: ends.clone(),
        ..Coverage::default()
    };
    let mut state = Progress {
        offsets_total: ends.iter().map(|(_, end)| end).sum(),
        ..Progress::default()
    };
    for (partition, end) in ends {
        let part = replay_partition(journal, partition, end, options, &mut sink, |offsets, records| {
            state.offsets_done += offsets;
            state.records += records;
            progress(state);
        })
        .await?;
        coverage.records_read += part.records_read;
        coverage.records_decoded += part.records_decoded;
        coverage.undecodable += part.undecodable;
    }
    state.offsets_done = state.offsets_total;
    progress(state);
    Ok(coverage)
}

/// The partitions a replay reads (the event's, or all) and the end offset of each, noted now.
pub async fn end_offsets(journal: &dyn Journal, options: &ReplayOptions) -> Result<Vec<(u32, Offset)>, JournalError> {
    let partitions: Vec<u32> = match &options.event {
        Some(event) => vec![partition_of(event, journal.partitions())],
        None => (0..journal.partitions()).collect(),
    };
    let mut ends = Vec::with_capacity(partitions.len());
    for partition in partitions {
        ends.push((partition, journal.end_offset(partition).await?));
    }
    Ok(ends)
}

/// Replays one partition up to `end` (exclusive); `step` is told, after each read, how many
/// offsets and records it covered. The returned coverage has no end offsets.
pub async fn replay_partition(
    journal: &dyn Journal,
    partition: u32,
    end: Offset,
    options: &ReplayOptions,
    mut sink: impl FnMut(Position, &Envelope),
    mut step: impl FnMut(u64, u64),
) -> Result<Coverage, JournalError> {
    let key = options.event.map(|e| e.to_string().into_bytes());
    let batch = if options.batch == 0 { 5000 } else { options.batch };
    let mut coverage = Coverage::default();
    // The scan ends where visible records end for now (an open Kafka transaction): what is not
    // visible was not durable when the replay started either.
    let mut scan = Scan::new(journal, partition, 0, end, batch);
    let mut from = scan.position();
    let mut read = scan.next_batch().await?;
    loop {
        let Some(records) = read else {
            // Offsets passed over without records (Kafka's markers) still count as covered.
            step(scan.position().min(end).saturating_sub(from), 0);
            break;
        };
        let covered = scan.position().min(end).saturating_sub(from);
        from = scan.position();
        let before = coverage.records_read;
        // The next batch is read (on the journal's blocking thread) while this one is decoded.
        let decode = async {
            decode_batch(
                &records,
                partition,
                end,
                key.as_deref(),
                options,
                &mut coverage,
                &mut sink,
            )
        };
        let (next, done) = tokio::join!(scan.next_batch(), decode);
        step(covered, coverage.records_read - before);
        if done {
            break;
        }
        read = next?;
    }
    Ok(coverage)
}

/// Hands `records` of `partition` to `sink` (those of the chosen event, decoded), counting them
/// in `coverage`; true when the partition's replay is done (its end offset or the time range's
/// end reached).
fn decode_batch(
    records: &[StoredRecord],
    partition: u32,
    end: Offset,
    key: Option<&[u8]>,
    options: &ReplayOptions,
    coverage: &mut Coverage,
    sink: &mut impl FnMut(Position, &Envelope),
) -> bool {
    for record in records {
        if record.offset >= end {
            return true;
        }
        coverage.records_read += 1;
        if key.is_some_and(|k| k != record.key) {
            continue;
        }
        let envelope = match decode(&record.value) {
            Ok(envelope) => envelope,
            Err(e) => {
                coverage.undecodable += 1;
                warn!(partition, offset = record.offset, error = %e, "undecodable record skipped");
                continue;
            }
        };
        if options.event.is_some_and(|e| e != envelope.event_id) {
            continue;
        }
        if options.to.is_some_and(|to| envelope.time > to) {
            return true;
        }
        coverage.records_decoded += 1;
        sink(
            Position {
                partition,
                offset: record.offset,
            },
            &envelope,
        );
    }
    false
}
