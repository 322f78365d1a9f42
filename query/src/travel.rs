//! Time travel: an event's availability map as it was at an earlier instant of the log.
//!
//! The log is the truth, so the map at any instant is a replay of the event's partition up to
//! that instant, folded into the same pure [`LiveEvent`] the live catalog uses; the answer has
//! exactly the live endpoint's shape. An instant is a log position (`PARTITION:OFFSET`: every
//! record at or before it) or a time (the longest prefix of the partition whose records are
//! stamped at or before it; a partition's single writer stamps them in order, so the prefix is
//! a state the live map really went through).
//!
//! The replay starts from the nearest snapshot at or before the instant that the journal's
//! snapshot history still holds (the writers save one every `snapshot_every` records): the
//! event's seats are seeded from it ([`frontrow_schema::snapshot`] reads the writer's format)
//! and only the tail after it is replayed. A snapshot does not say which record last changed
//! the event (the map's `position`), so that record is found by reading back from the
//! snapshot, usually a short way. Without a usable snapshot the replay starts at the beginning
//! of the partition. Either way it reads only up to the partition's end as it was when the
//! request arrived, decodes only the records keyed by the event, and stops after
//! [`TravelLimits::max_records`] records read (back and forth) so one request cannot scan an
//! unbounded log (the caller gets [`TravelError::TooDeep`]).

use std::str::FromStr;

use chrono::{DateTime, Utc};
use frontrow_journal::{Journal, JournalError, Offset, Position, Scan, Snapshot, SnapshotBound};
use frontrow_schema::partition::partition_of;
use frontrow_schema::snapshot::read_event_seats;
use frontrow_schema::{Event, EventId, decode};
use tracing::warn;

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
    Ok(replay_to(journal, event_id, at, limits, ReplayFrom::NearestSnapshot)
        .await?
        .map(|e| e.availability()))
}

/// Where a replay of the event's partition begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayFrom {
    /// The nearest snapshot at or before the instant, when the journal has one.
    NearestSnapshot,
    /// The partition's very start, ignoring snapshots: the reference the snapshot path is
    /// checked against, and the baseline of the measurements.
    LogStart,
}

/// Where a replay starts.
struct Start {
    from: Offset,
    live: Option<LiveEvent>,
}

/// Replays the event's partition up to `at` into a [`LiveEvent`], beginning where `from` says.
pub async fn replay_to(
    journal: &dyn Journal,
    event_id: EventId,
    at: At,
    limits: TravelLimits,
    from: ReplayFrom,
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
    let mut read: u64 = 0;
    let start = if from == ReplayFrom::NearestSnapshot {
        from_snapshot(journal, partition, event_id, &key, at, stop, limits, &mut read).await?
    } else {
        None
    };
    let Start { from, mut live } = start.unwrap_or(Start { from: 0, live: None });
    // What is not visible yet (an open Kafka transaction) was not durable at the instant asked
    // for either: the scan ends there.
    let mut scan = Scan::new(journal, partition, from, stop, limits.batch.max(1));
    while let Some(records) = scan.next_batch().await? {
        for record in &records {
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
            let Some(envelope) = decode_own(&record.value, &record.key, &key, event_id) else {
                continue;
            };
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

/// The envelope of a record of `event_id`, or `None` for another event's (or an unreadable) one.
fn decode_own(value: &[u8], record_key: &[u8], key: &[u8], event_id: EventId) -> Option<frontrow_schema::Envelope> {
    if record_key != key {
        return None;
    }
    decode(value).ok().filter(|envelope| envelope.event_id == event_id)
}

/// Where to start from the nearest snapshot in the history at or before `at`, or `None` when
/// there is no usable one (the replay then starts at the beginning).
#[expect(clippy::too_many_arguments, reason = "one replay's context, passed down once")]
async fn from_snapshot(
    journal: &dyn Journal,
    partition: u32,
    event_id: EventId,
    key: &[u8],
    at: At,
    stop: Offset,
    limits: TravelLimits,
    read: &mut u64,
) -> Result<Option<Start>, TravelError> {
    let bound = match at {
        At::Position(_) if stop == 0 => return Ok(None),
        At::Position(_) => SnapshotBound::Offset(stop - 1),
        // Floored, against marks rounded up: the snapshot holds nothing stamped after `t`.
        At::Time(t) => SnapshotBound::StampedMs(t.timestamp_millis()),
    };
    let Some(Snapshot { mark, bytes }) = journal.snapshot_before(partition, bound).await? else {
        return Ok(None);
    };
    // A snapshot past the log's end belongs to another log (a recreated topic).
    if mark.last >= stop {
        return Ok(None);
    }
    let seats = match read_event_seats(&bytes, event_id) {
        Ok(seats) if seats.last == Some(mark.last) => seats,
        Ok(seats) => {
            warn!(partition, mark = mark.last, snapshot = ?seats.last, "snapshot does not match its mark; replaying from the start");
            return Ok(None);
        }
        Err(e) => {
            warn!(partition, error = %e, "snapshot unreadable; replaying from the start");
            return Ok(None);
        }
    };
    let from = mark.last + 1;
    let Some(event) = seats.event else {
        // Not scheduled by then: the tail may still schedule it.
        return Ok(Some(Start { from, live: None }));
    };
    let Some(changed) = last_change(journal, partition, event_id, key, mark.last, at, limits, read).await? else {
        warn!(partition, %event_id, "event in the snapshot but not in the log before it; replaying from the start");
        return Ok(None);
    };
    let position = Position {
        partition,
        offset: changed,
    };
    Ok(Some(Start {
        from,
        live: Some(LiveEvent::from_snapshot(&event, position)),
    }))
}

/// The offset of the last record at or before `last` that changed the event's seats (or
/// scheduled it): what a replay would report as the map's position. Reads back window by
/// window.
#[expect(clippy::too_many_arguments, reason = "one replay's context, passed down once")]
async fn last_change(
    journal: &dyn Journal,
    partition: u32,
    event_id: EventId,
    key: &[u8],
    last: Offset,
    at: At,
    limits: TravelLimits,
    read: &mut u64,
) -> Result<Option<Offset>, TravelError> {
    let window = limits.batch.max(1) as Offset;
    let mut high = last + 1;
    while high > 0 {
        let low = high.saturating_sub(window);
        let mut found = None;
        let mut scan = Scan::new(journal, partition, low, high, limits.batch.max(1));
        while let Some(records) = scan.next_batch().await? {
            for record in records.iter().take_while(|r| r.offset < high) {
                *read += 1;
                if *read > limits.max_records {
                    return Err(TravelError::TooDeep {
                        at,
                        limit: limits.max_records,
                    });
                }
                let Some(envelope) = decode_own(&record.value, &record.key, key, event_id) else {
                    continue;
                };
                if matches!(
                    envelope.event,
                    Event::EventScheduled(_)
                        | Event::SeatMapChanged(_)
                        | Event::SeatsReserved(_)
                        | Event::SeatsBooked(_)
                        | Event::SeatsReleased(_)
                        | Event::SeatsWithheld(_)
                        | Event::SeatsReturned(_)
                ) {
                    found = Some(record.offset);
                }
            }
        }
        if found.is_some() {
            return Ok(found);
        }
        high = low;
    }
    Ok(None)
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
