//! Every event's state in a journal, replayed through the domain's [`apply`](crate::domain::apply):
//! the truth that tests and the benchmark harness hold served maps, ledgers and answers to.

use std::collections::HashMap;

use frontrow_journal::{Journal, JournalError, Scan};
use frontrow_schema::{DecodeError, EventId, decode};

use crate::domain::{self, EventState};

/// Records read per batch.
const BATCH: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("record {partition}:{offset} cannot be decoded: {source}")]
    Undecodable {
        partition: u32,
        offset: u64,
        source: DecodeError,
    },
    /// One writer decides an event at a time, so its stream counts 1, 2, 3, … with no number
    /// twice: a repeat or a skip means two writers decided it from the same state.
    #[error(
        "event {event}: record {partition}:{offset} has sequence {found}, the replay expected {expected:?}: \
         two writers decided this event from the same state"
    )]
    Sequence {
        event: EventId,
        partition: u32,
        offset: u64,
        found: u64,
        expected: Option<u64>,
    },
}

/// Every event's state in `journal` up to each partition's end as it is when the replay
/// reaches it. Fails on a record it cannot decode and on an event whose sequence numbers repeat
/// or skip. Reads again where a committed record is not visible yet (Kafka shows a transaction's
/// records a moment after the end offset grew), so a journal whose end never becomes readable
/// keeps it waiting: callers bound it.
pub async fn replay(journal: &dyn Journal) -> Result<HashMap<EventId, EventState>, ReplayError> {
    let mut states: HashMap<EventId, Option<EventState>> = HashMap::new();
    for partition in 0..journal.partitions() {
        let end = journal.end_offset(partition).await?;
        let mut scan = Scan::new(journal, partition, 0, end, BATCH).retrying();
        while let Some(records) = scan.next_batch().await? {
            for r in records {
                let env = decode(&r.value).map_err(|source| ReplayError::Undecodable {
                    partition,
                    offset: r.offset,
                    source,
                })?;
                let state = states.entry(env.event_id).or_default();
                domain::apply(state, &env.event, env.idempotency_key.as_deref());
                let expected = state.as_ref().map(|s| s.sequence);
                if expected != Some(env.sequence) {
                    return Err(ReplayError::Sequence {
                        event: env.event_id,
                        partition,
                        offset: r.offset,
                        found: env.sequence,
                        expected,
                    });
                }
            }
        }
    }
    Ok(states.into_iter().filter_map(|(k, v)| Some((k, v?))).collect())
}
