//! The seats in a partition snapshot, as a reader other than the writer sees them.
//!
//! A partition's writer (the command crate) stores snapshots of its whole state in the journal,
//! in a format it owns, with one entry per event: its schedule (the `EventScheduled` with the
//! *current* seat map), its reservations, each with the flat seat indexes it holds or booked and
//! its status, and the seats withheld from the sale. This module reads only that much, so the
//! query side can seed an event's seat map from a snapshot without depending on the write side.
//!
//! Two versions are read. Version 2 ([`binary`], what writers store) is a compact binary
//! encoding whose events are length-prefixed, so one event is found without decoding the
//! others. Version 1 was JSON `{"version": 1, "last": .., "next": .., "events": [..]}`; it is
//! still read, so a node restores from a snapshot an older build left. Any other version is
//! refused ([`SnapshotError::Version`]) and the caller replays instead.
//!
//! The golden partition snapshots `command/tests/golden/partition_snapshot_v{1,2}.*` keep this
//! reading in step with the writer's format: the writer's test writes the current one and
//! restores both, and reads their seats back through this module.

pub mod binary;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use self::binary::{Compact, Input, Malformed};
use crate::{EventId, EventScheduled, ReleaseReason};

/// The partition snapshot version writers store.
pub const PARTITION_SNAPSHOT_VERSION: u32 = 2;
/// The version of JSON snapshots.
pub const JSON_SNAPSHOT_VERSION: u32 = 1;

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

crate::compact_struct!(WithheldSeats { label, seats });

/// One reservation's seats and where it stands.
#[derive(Debug, Clone, Deserialize)]
pub struct ReservationSeats {
    /// Flat seat indexes in the current seat map's layout.
    pub seats: Vec<u32>,
    pub status: ReservationStatus,
}

/// Where one reservation is in its life cycle: the writer's (`frontrow_command::domain`) and a
/// snapshot's, so both read it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReservationStatus {
    /// Holding its seats until the hold's deadline.
    Held,
    /// Paid: its seats are sold.
    Booked,
    /// Its seats went back (or, for a late payment refund, never came).
    Released(ReleaseReason),
}

impl Compact for ReservationStatus {
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            Self::Held => out.push(binary::HELD),
            Self::Booked => out.push(binary::BOOKED),
            Self::Released(reason) => {
                out.push(binary::RELEASED);
                reason.put(out);
            }
        }
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        match input.byte()? {
            binary::HELD => Ok(Self::Held),
            binary::BOOKED => Ok(Self::Booked),
            binary::RELEASED => Ok(Self::Released(input.take()?)),
            b => Err(Malformed(format!("{b} is not a reservation status"))),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("partition snapshot version {0} is not one this build reads (1 or 2)")]
    Version(u32),
    #[error("unreadable partition snapshot: {0}")]
    Unreadable(#[from] serde_json::Error),
    #[error(transparent)]
    Malformed(#[from] Malformed),
}

/// The start of a version-2 snapshot; its events follow in `events`.
#[derive(Debug)]
pub struct BinaryHeader<'a> {
    /// The offset of the last record the snapshot includes.
    pub last: Option<u64>,
    /// Where reading continues after the snapshot.
    pub next: u64,
    /// How many events follow.
    pub count: usize,
    pub events: Input<'a>,
}

/// The header of a binary snapshot, or `None` when `bytes` are not one (a JSON snapshot).
pub fn binary_header(bytes: &[u8]) -> Result<Option<BinaryHeader<'_>>, SnapshotError> {
    let Some(rest) = bytes.strip_prefix(binary::MAGIC) else {
        return Ok(None);
    };
    let mut input = Input::new(rest);
    let version: u32 = input.take()?;
    if version != PARTITION_SNAPSHOT_VERSION {
        return Err(SnapshotError::Version(version));
    }
    Ok(Some(BinaryHeader {
        last: input.take()?,
        next: input.take()?,
        count: input.count()?,
        events: input,
    }))
}

/// Writes a version-2 header for `count` events; the events follow (see [`put_event`]).
pub fn put_binary_header(out: &mut Vec<u8>, last: Option<u64>, next: u64, count: usize) {
    out.extend_from_slice(binary::MAGIC);
    PARTITION_SNAPSHOT_VERSION.put(out);
    last.put(out);
    next.put(out);
    binary::put_varint(out, count as u64);
}

/// One reservation of an event entry, its writer's part still to read.
#[derive(Debug)]
pub struct EntryReservation<'a> {
    pub seats: Vec<u32>,
    pub status: ReservationStatus,
    pub writer: Input<'a>,
}

/// One event of a version-2 snapshot, the writer's parts still to read.
#[derive(Debug)]
pub struct EventEntry<'a> {
    pub info: EventScheduled,
    pub reservations: Vec<EntryReservation<'a>>,
    pub withheld: Vec<WithheldSeats>,
    pub writer: Input<'a>,
}

impl EventEntry<'_> {
    fn seats(self) -> EventSeats {
        EventSeats {
            info: self.info,
            reservations: self
                .reservations
                .into_iter()
                .map(|r| ReservationSeats {
                    seats: r.seats,
                    status: r.status,
                })
                .collect(),
            withheld: self.withheld,
        }
    }
}

/// The next event's id and its still unread entry.
pub fn take_event<'a>(events: &mut Input<'a>) -> Result<(EventId, Input<'a>), Malformed> {
    Ok((events.take()?, events.nested()?))
}

/// Reads an entry [`take_event`] found.
pub fn read_entry<'a>(mut entry: Input<'a>) -> Result<EventEntry<'a>, SnapshotError> {
    let info = serde_json::from_slice(entry.nested()?.bytes_left())?;
    let n = entry.count()?;
    let reservations = (0..n)
        .map(|_| {
            Ok(EntryReservation {
                seats: entry.take()?,
                status: entry.take()?,
                writer: entry.nested()?,
            })
        })
        .collect::<Result<_, Malformed>>()?;
    let withheld = entry.take()?;
    let writer = entry.nested()?;
    entry.finish("an event's entry")?;
    Ok(EventEntry {
        info,
        reservations,
        withheld,
        writer,
    })
}

/// Writes one event's entry in the layout [`read_entry`] reads: its schedule, each reservation's
/// seats, status and writer's part (written by the third item), the withheld seats and the
/// writer's part of the event.
pub fn put_event<'a, F: FnOnce(&mut Vec<u8>)>(
    out: &mut Vec<u8>,
    info: &EventScheduled,
    reservations: impl ExactSizeIterator<Item = (&'a [u32], ReservationStatus, F)>,
    withheld: &[WithheldSeats],
    writer: impl FnOnce(&mut Vec<u8>),
) -> serde_json::Result<()> {
    info.event_id.put(out);
    let mut json = Ok(());
    binary::put_nested(out, |out| {
        binary::put_nested(out, |out| json = serde_json::to_writer(&mut *out, info));
        binary::put_varint(out, reservations.len() as u64);
        for (seats, status, part) in reservations {
            binary::put_list(out, seats.iter());
            status.put(out);
            binary::put_nested(out, part);
        }
        binary::put_list(out, withheld.iter());
        binary::put_nested(out, writer);
    });
    json
}

/// Reads the seats of a partition snapshot.
pub fn read_partition_seats(bytes: &[u8]) -> Result<PartitionSeats, SnapshotError> {
    if let Some(mut header) = binary_header(bytes)? {
        let events = (0..header.count)
            .map(|_| Ok(read_entry(take_event(&mut header.events)?.1)?.seats()))
            .collect::<Result<_, SnapshotError>>()?;
        header.events.finish("the last event")?;
        return Ok(PartitionSeats {
            version: PARTITION_SNAPSHOT_VERSION,
            last: header.last,
            events,
        });
    }
    #[derive(Deserialize)]
    struct Version {
        version: u32,
    }
    let Version { version } = serde_json::from_slice(bytes)?;
    if version != JSON_SNAPSHOT_VERSION {
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
/// others are skipped (a snapshot holds every reservation ever made in its partition, so
/// decoding all of it would dominate a time-travel request).
pub fn read_event_seats(bytes: &[u8], event_id: EventId) -> Result<OneEventSeats, SnapshotError> {
    if let Some(mut header) = binary_header(bytes)? {
        for _ in 0..header.count {
            let (id, entry) = take_event(&mut header.events)?;
            if id == event_id {
                return Ok(OneEventSeats {
                    last: header.last,
                    event: Some(read_entry(entry)?.seats()),
                });
            }
        }
        return Ok(OneEventSeats {
            last: header.last,
            event: None,
        });
    }
    read_json_event_seats(bytes, event_id)
}

/// [`read_event_seats`] of a version-1 (JSON) snapshot: the other events are skipped as raw
/// JSON.
fn read_json_event_seats(bytes: &[u8], event_id: EventId) -> Result<OneEventSeats, SnapshotError> {
    #[derive(Deserialize)]
    struct Raw<'a> {
        version: u32,
        last: Option<u64>,
        #[serde(borrow)]
        events: Vec<&'a serde_json::value::RawValue>,
    }
    let raw: Raw<'_> = serde_json::from_slice(bytes)?;
    if raw.version != JSON_SNAPSHOT_VERSION {
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

        let mut binary = Vec::new();
        put_binary_header(&mut binary, Some(3), 4, 0);
        let empty = read_partition_seats(&binary).unwrap();
        assert_eq!((empty.version, empty.last, empty.events.len()), (2, Some(3), 0));
        let mut later = binary.clone();
        later[binary::MAGIC.len()] = 3;
        assert!(matches!(read_partition_seats(&later), Err(SnapshotError::Version(3))));
        // An event announced and not there, or bytes after the last one.
        let mut short = Vec::new();
        put_binary_header(&mut short, None, 0, 1);
        assert!(matches!(read_partition_seats(&short), Err(SnapshotError::Malformed(_))));
        binary.push(0);
        assert!(matches!(
            read_partition_seats(&binary),
            Err(SnapshotError::Malformed(_))
        ));
    }
}
