//! The seats in a partition snapshot, as a reader other than the writer sees them.
//!
//! A partition's writer (the command crate) stores snapshots of its whole state in the journal,
//! in a format it owns: JSON `{"version": 1, "last": .., "next": .., "events": [..]}` with one
//! entry per event (its `info`, the `EventScheduled` with the *current* seat map, and its
//! `reservations`, each with the flat seat indexes it holds or booked and its `status`). This
//! module reads only that much of it, so the query side can seed an event's seat map from a
//! snapshot without depending on the write side; every other field is ignored. A snapshot of
//! another version is refused ([`SnapshotError::Version`]) and the caller replays instead.
//!
//! The golden partition snapshot `command/tests/golden/partition_snapshot_v1.json` keeps this
//! reading in step with the writer's format: the writer's test writes and restores it, and
//! reads its seats back through this module.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{EventId, EventScheduled};

/// The partition snapshot version this module reads.
pub const PARTITION_SNAPSHOT_VERSION: u32 = 1;

/// What a partition snapshot says about seats.
#[derive(Debug, Clone, Deserialize)]
pub struct PartitionSeats {
    pub version: u32,
    /// The offset of the last record the snapshot includes.
    pub last: Option<u64>,
    pub events: Vec<EventSeats>,
}

/// One event of a partition snapshot.
#[derive(Debug, Clone, Deserialize)]
pub struct EventSeats {
    /// The schedule, with the seat map as it is after every `SeatMapChanged` so far.
    pub info: EventScheduled,
    pub reservations: Vec<ReservationSeats>,
    /// Seats the organizer withheld from the sale, by label. Absent when none are (and in
    /// snapshots written before organizer holds existed).
    #[serde(default)]
    pub withheld: Vec<WithheldSeats>,
}

/// Seats withheld under one label, as flat seat indexes in the current seat map's layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithheldSeats {
    pub label: String,
    pub seats: Vec<u32>,
}

/// One reservation's seats and where it stands.
#[derive(Debug, Clone, Deserialize)]
pub struct ReservationSeats {
    /// Flat seat indexes in the current seat map's layout.
    pub seats: Vec<u32>,
    pub status: ReservationStanding,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReservationStanding {
    Held,
    Booked,
    /// Its seats went back; why does not matter here.
    Released(serde::de::IgnoredAny),
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("partition snapshot version {0} is not {PARTITION_SNAPSHOT_VERSION}")]
    Version(u32),
    #[error("unreadable partition snapshot: {0}")]
    Unreadable(#[from] serde_json::Error),
}

/// Reads the seats of a partition snapshot.
pub fn read_partition_seats(bytes: &[u8]) -> Result<PartitionSeats, SnapshotError> {
    #[derive(Deserialize)]
    struct Version {
        version: u32,
    }
    let Version { version } = serde_json::from_slice(bytes)?;
    if version != PARTITION_SNAPSHOT_VERSION {
        return Err(SnapshotError::Version(version));
    }
    Ok(serde_json::from_slice(bytes)?)
}

/// What a partition snapshot says about one event's seats.
#[derive(Debug, Clone)]
pub struct OneEventSeats {
    /// The offset of the last record the snapshot includes.
    pub last: Option<u64>,
    /// The event's entry; `None` when it was not scheduled by then.
    pub event: Option<EventSeats>,
}

/// Reads one event's seats from a partition snapshot, decoding only that event's entry: the
/// others are skipped as raw JSON (a snapshot holds every reservation ever made in its
/// partition, so decoding all of it would dominate a time-travel request).
pub fn read_event_seats(bytes: &[u8], event_id: EventId) -> Result<OneEventSeats, SnapshotError> {
    #[derive(Deserialize)]
    struct Raw<'a> {
        version: u32,
        last: Option<u64>,
        #[serde(borrow)]
        events: Vec<&'a serde_json::value::RawValue>,
    }
    let raw: Raw<'_> = serde_json::from_slice(bytes)?;
    if raw.version != PARTITION_SNAPSHOT_VERSION {
        return Err(SnapshotError::Version(raw.version));
    }
    // An entry of this event contains its id as JSON writes it; the decode below checks it is
    // the entry's own.
    let id = serde_json::to_string(&event_id)?;
    for entry in raw.events {
        if !entry.get().contains(&id) {
            continue;
        }
        let seats: EventSeats = serde_json::from_str(entry.get())?;
        if seats.info.event_id == event_id {
            return Ok(OneEventSeats {
                last: raw.last,
                event: Some(seats),
            });
        }
    }
    Ok(OneEventSeats {
        last: raw.last,
        event: None,
    })
}

/// `time` in Unix milliseconds, rounded up: a snapshot stamped this way and found by
/// `stamped <= T (floored)` never includes a record stamped after `T`.
pub fn ceil_millis(time: DateTime<Utc>) -> i64 {
    let floor = time.timestamp_millis();
    if time.timestamp_subsec_nanos().is_multiple_of(1_000_000) {
        floor
    } else {
        floor + 1
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn times_round_up_to_milliseconds() {
        let t = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(ceil_millis(t), t.timestamp_millis());
        assert_eq!(
            ceil_millis(t + chrono::Duration::microseconds(1)),
            t.timestamp_millis() + 1
        );
        assert_eq!(
            ceil_millis(t + chrono::Duration::milliseconds(3)),
            t.timestamp_millis() + 3
        );
    }

    #[test]
    fn other_versions_and_garbage_are_refused() {
        assert!(matches!(
            read_partition_seats(br#"{"version": 2, "last": 3, "events": []}"#),
            Err(SnapshotError::Version(2))
        ));
        assert!(matches!(
            read_partition_seats(b"not json"),
            Err(SnapshotError::Unreadable(_))
        ));
        let empty = read_partition_seats(br#"{"version": 1, "last": 3, "next": 4, "events": []}"#).unwrap();
        assert_eq!(empty.last, Some(3));
    }
}
