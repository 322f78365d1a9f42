//! Time travel: an event's availability map as it was at an earlier instant of the log.
//!
//! The log is the truth, so the map at any instant is a replay of the event's partition up to
//! that instant, folded into the same pure [`LiveEvent`] the live catalog uses; the answer has
//! exactly the live endpoint's shape. An instant is a log position (`PARTITION:OFFSET`: every
//! record at or before it) or a time (the longest prefix of the partition whose records are
//! stamped at or before it; a partition's single writer stamps them in order, so the prefix is
//! a state the live map really went through).
//!
//! The writers keep only the *latest* snapshot of a partition, in the write side's own format,
//! so there is no snapshot "at or before" an arbitrary earlier instant to start from: the
//! replay always starts at the beginning of the partition and reads only up to the partition's
//! end as it was when the request arrived. It decodes only the records keyed by the event, and
//! stops after [`TravelLimits::max_records`] records so one request cannot scan an unbounded
//! log (the caller gets [`TravelError::TooDeep`]).

use std::str::FromStr;

use chrono::{DateTime, Utc};
use frontrow_journal::{Journal, JournalError, Offset, Position};
use frontrow_schema::partition::partition_of;
use frontrow_schema::{Event, EventId, decode};

use crate::live::LiveEvent;
use crate::views::AvailabilityMap;

/// An instant of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// Everything at or before this position.
    Position(Position),
    /// Everything stamped at or before this time.
    Time(DateTime<Utc>),
}

impl FromStr for At {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Ok(time) = DateTime::parse_from_rfc3339(s) {
            return Ok(At::Time(time.with_timezone(&Utc)));
        }
        // A log position may be written `p:o` (as `?after=`) or `P:O`.
        if let Ok(position) = s.trim_start_matches(['p', 'P']).parse::<Position>()
            && s.contains(':')
            && !s.contains('T')
        {
            return Ok(At::Position(position));
        }
        Err(format!(
            "{s:?} is neither an RFC 3339 time (2026-03-01T10:00:05Z) nor a log position (PARTITION:OFFSET, e.g. 3:1207)"
        ))
    }
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Position(p) => write!(f, "{p}"),
            At::Time(t) => write!(f, "{}", t.to_rfc3339()),
        }
    }
}

/// How much one time-travel request may read.
#[derive(Debug, Clone, Copy)]
pub struct TravelLimits {
    /// Most records of the partition read (not only decoded) for one answer.
    pub max_records: u64,
    /// Records per journal read.
    pub batch: usize,
}

impl Default for TravelLimits {
    fn default() -> Self {
        Self {
            max_records: 5_000_000,
            batch: 4096,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TravelError {
    /// The position is in another partition than the event's: it says nothing about the event.
    #[error("event {event_id} lives in partition {partition}; position {at} is in another partition")]
    WrongPartition {
        event_id: EventId,
        partition: u32,
        at: Position,
    },
    #[error("reaching {at} needs more than {limit} records of replay")]
    TooDeep { at: At, limit: u64 },
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// The event's availability map as it was at `at`, or `None` when the event was not scheduled
/// by then (or never was).
pub async fn availability_at(
    journal: &dyn Journal,
    event_id: EventId,
    at: At,
    limits: TravelLimits,
) -> Result<Option<AvailabilityMap>, TravelError> {
    Ok(replay_to(journal, event_id, at, limits)
        .await?
        .map(|e| e.availability()))
}

/// Replays the event's partition up to `at` into a [`LiveEvent`].
pub async fn replay_to(
    journal: &dyn Journal,
    event_id: EventId,
    at: At,
    limits: TravelLimits,
) -> Result<Option<LiveEvent>, TravelError> {
    let partition = partition_of(&event_id, journal.partitions());
    let end = journal.end_offset(partition).await?;
    let stop: Offset = match at {
        At::Position(p) if p.partition != partition => {
            return Err(TravelError::WrongPartition {
                event_id,
                partition,
                at: p,
            });
        }
        At::Position(p) => end.min(p.offset.saturating_add(1)),
        At::Time(_) => end,
    };
    let key = event_id.to_string().into_bytes();
    let mut live: Option<LiveEvent> = None;
    let mut from: Offset = 0;
    let mut read: u64 = 0;
    while from < stop {
        let batch = journal.read(partition, from, limits.batch.max(1)).await?;
        if batch.records.is_empty() && batch.next <= from {
            // The end is ahead but nothing is visible yet (an open Kafka transaction): what is
            // not visible was not durable at the instant asked for either.
            break;
        }
        from = from.max(batch.next);
        for record in &batch.records {
            if record.offset >= stop {
                return Ok(live);
            }
            read += 1;
            if read > limits.max_records {
                return Err(TravelError::TooDeep {
                    at,
                    limit: limits.max_records,
                });
            }
            if record.key != key {
                continue;
            }
            let Ok(envelope) = decode(&record.value) else {
                continue;
            };
            if envelope.event_id != event_id {
                continue;
            }
            if let At::Time(t) = at
                && envelope.time > t
            {
                return Ok(live);
            }
            let position = Position {
                partition,
                offset: record.offset,
            };
            match (&envelope.event, live.as_mut()) {
                (Event::EventScheduled(scheduled), None) => live = Some(LiveEvent::scheduled(scheduled, position)),
                (fact, Some(event)) => {
                    event.apply(fact, position);
                }
                (_, None) => {}
            }
        }
    }
    Ok(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_parse_as_times_or_positions() {
        assert_eq!(
            "3:1207".parse::<At>(),
            Ok(At::Position(Position {
                partition: 3,
                offset: 1207
            }))
        );
        assert_eq!(
            "p3:7".parse::<At>(),
            Ok(At::Position(Position {
                partition: 3,
                offset: 7
            }))
        );
        let t: At = "2026-03-01T10:00:05+01:00".parse().unwrap();
        assert_eq!(t, At::Time("2026-03-01T09:00:05Z".parse().unwrap()));
        for bad in ["", "yesterday", "3", "3:", ":4", "2026-03-01", "p:o"] {
            assert!(bad.parse::<At>().is_err(), "{bad} accepted");
        }
    }
}
