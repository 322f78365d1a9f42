//! The partition snapshot formats pinned by golden files.
//!
//! `command/tests/golden/partition_snapshot_v2.bin` is a version-2 (binary) snapshot of one
//! event that has every part a snapshot keeps: a waiting room with admitted and waiting fans,
//! reservations held, booked (with its payment) and released, seats withheld under a label by a
//! keyed request. The writer must write exactly those bytes for that state and read them back
//! into the same state, and the query side's reader (`frontrow_schema::snapshot`) must see the
//! same seats in them. `partition_snapshot_v1.json` is the same state as version 1 (JSON) wrote
//! it: both still read it into the same state. A change to the format fails here; a new version
//! gets a new golden file beside these (and the old files stay, read or explicitly refused).
//! `FRONTROW_BLESS=1` rewrites the current version's file after a deliberate change.

use std::path::PathBuf;

use frontrow_schema::Event;
use frontrow_schema::snapshot::{read_event_seats, read_partition_seats};

use super::SNAPSHOT_VERSION;
use super::snapshot::PartitionSnapshot;
use crate::domain::test_support::*;
use crate::domain::*;

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Runs `command` at `minutes` after the onsale the way the writer does.
fn run(state: &mut Option<EventState>, minutes: i64, command: Command, key: Option<&str>) -> Vec<Event> {
    decide_and_apply(state, event_id(), &command, at(minutes), key).unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

fn reserve(fan_no: u64, ticket: u64, id: u128, selection: SeatSelection) -> Command {
    Command::Reserve {
        customer: fan(fan_no),
        reservation_id: rid(id),
        selection,
        idempotency_key: format!("k{id}"),
        admission: Some(ticket),
    }
}

/// An event of two rows of 6 behind a waiting room for 2 shoppers, as it stands 5 minutes into
/// its onsale.
fn onsale_in_progress() -> EventState {
    let mut state = None;
    run(
        &mut state,
        -60,
        Command::Schedule(Box::new(info(event_id(), floor(&[6, 6])))),
        None,
    );
    let settings = QueueSettings {
        max_size: Some(100),
        max_shoppers: 2,
        admission_secs: 600,
    };
    run(
        &mut state,
        -60,
        Command::OpenQueue {
            organizer: organizer(),
            settings,
        },
        None,
    );
    for n in 1..=3 {
        run(&mut state, -30, Command::JoinQueue { customer: fan(n) }, None);
    }
    let withhold = Command::Withhold {
        organizer: organizer(),
        seats: seats(&["A-2-5", "A-2-6"]),
        label: "house seats".into(),
        idempotency_key: Some("w1".into()),
    };
    run(&mut state, -10, withhold, None);
    run(&mut state, 0, Command::AdvanceQueue { seed: 7 }, None);
    let queue = state.as_ref().unwrap().queue.as_ref().unwrap();
    let mut admitted: Vec<(u64, u64)> = (1..=3)
        .filter_map(|n| queue.ticket_of(&fan(n)).map(|(ticket, t)| (n, ticket, t)))
        .filter(|(_, _, t)| t.status != TicketStatus::Waiting)
        .map(|(n, ticket, _)| (n, ticket))
        .collect();
    assert_eq!(admitted.len(), 2, "two shoppers are let in");
    admitted.sort();
    let [(first, t1), (second, t2)] = admitted[..] else {
        unreachable!()
    };
    let explicit = SeatSelection::Explicit(seats(&["A-1-1", "A-1-2"]));
    run(&mut state, 1, reserve(first, t1, 1, explicit), Some("k1"));
    let paid = paid_in_full(state.as_ref().unwrap(), rid(1), 1);
    run(&mut state, 2, paid, None);
    let best = SeatSelection::BestAvailable {
        section: section("A"),
        count: 2,
    };
    run(&mut state, 3, reserve(second, t2, 3, best.clone()), Some("k3"));
    let release = Command::Release {
        customer: fan(second),
        reservation_id: rid(3),
    };
    run(&mut state, 4, release, None);
    run(&mut state, 5, reserve(second, t2, 2, best), Some("k2"));
    state.unwrap()
}

fn partition_snapshot(state: &EventState) -> PartitionSnapshot {
    PartitionSnapshot {
        version: SNAPSHOT_VERSION,
        last: Some(41),
        next: 42,
        events: vec![state.snapshot()],
    }
}

const V1: &str = "partition_snapshot_v1.json";
const V2: &str = "partition_snapshot_v2.bin";

fn golden_bytes(name: &str) -> Vec<u8> {
    let path = golden_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The golden bytes of the current version (rewritten first under `FRONTROW_BLESS`).
fn current_golden(state: &EventState) -> Vec<u8> {
    if std::env::var_os("FRONTROW_BLESS").is_some() {
        // Renamed into place: the other tests read the file meanwhile.
        let fresh = golden_path("partition_snapshot_v2.bin.new");
        std::fs::write(&fresh, partition_snapshot(state).encode().unwrap()).unwrap();
        std::fs::rename(&fresh, golden_path(V2)).unwrap();
    }
    golden_bytes(V2)
}

#[test]
fn the_writer_writes_the_golden_v2_snapshot() {
    let state = onsale_in_progress();
    let golden = current_golden(&state);
    assert_eq!(SNAPSHOT_VERSION, 2);
    assert_eq!(
        partition_snapshot(&state).encode().unwrap(),
        golden,
        "the writer no longer writes the v2 snapshot"
    );
    // The same state as version 1 wrote it (without the file's indentation) took 2,108 bytes;
    // most of these 770 are the schedule, which stays JSON.
    assert!(golden.len() < 800, "{} bytes", golden.len());
}

#[test]
fn both_golden_snapshots_restore_the_same_state() {
    let state = onsale_in_progress();
    for (name, version) in [(V1, 1), (V2, 2)] {
        let read = PartitionSnapshot::decode(&golden_bytes(name)).unwrap();
        assert_eq!((read.version, read.last, read.next), (version, Some(41), 42), "{name}");
        let [event] = <[_; 1]>::try_from(read.events).ok().unwrap();
        let restored = EventState::from_snapshot(event);
        assert_eq!(restored.info, state.info);
        assert_eq!(restored.seats, state.seats);
        assert_eq!(restored.counts, state.counts);
        assert_eq!(restored.counts, counts(6, 2, 2, 2));
        assert_eq!(restored.reservations, state.reservations, "{name}");
        assert_eq!(restored.idempotency, state.idempotency);
        assert_eq!(restored.payments_seen, state.payments_seen);
        assert_eq!(restored.sequence, state.sequence);
        assert_eq!(restored.queue, state.queue, "{name}");
        assert_eq!(restored.withheld, state.withheld);
        assert_eq!(restored.organizer_requests, state.organizer_requests);
    }
}

#[test]
fn a_damaged_snapshot_is_refused() {
    let golden = golden_bytes(V2);
    for cut in [7, golden.len() / 2, golden.len() - 1] {
        assert!(PartitionSnapshot::decode(&golden[..cut]).is_err(), "cut at {cut}");
    }
    let mut longer = golden.clone();
    longer.push(0);
    assert!(PartitionSnapshot::decode(&longer).is_err());
    // Any one byte changed is refused or read as some other valid state, never a panic.
    for i in 0..golden.len() {
        let mut changed = golden.clone();
        changed[i] ^= 0x5a;
        let _ = PartitionSnapshot::decode(&changed);
        let _ = read_partition_seats(&changed);
    }
}

fn name_of(standing: &ReservationStatus) -> &'static str {
    match standing {
        ReservationStatus::Held => "held",
        ReservationStatus::Booked => "booked",
        ReservationStatus::Released(_) => "released",
    }
}

#[test]
fn the_query_side_reads_the_same_seats_from_both_golden_snapshots() {
    let state = onsale_in_progress();
    for name in [V1, V2] {
        let golden = golden_bytes(name);
        let seats = read_partition_seats(&golden).unwrap();
        assert_eq!(seats.last, Some(41));
        let [event] = &seats.events[..] else {
            panic!("one event")
        };
        assert_eq!(event.info, state.info);
        let mut read: Vec<(Vec<u32>, ReservationStatus)> =
            event.reservations.iter().map(|r| (r.seats.clone(), r.status)).collect();
        let mut kept: Vec<(Vec<u32>, ReservationStatus)> = state
            .reservations
            .values()
            .map(|r| (r.seats.clone(), r.status))
            .collect();
        read.sort_by_key(|r| (r.0.clone(), name_of(&r.1)));
        kept.sort_by_key(|r| (r.0.clone(), name_of(&r.1)));
        assert_eq!(read, kept, "{name}");
        let mut standings: Vec<&str> = read.iter().map(|r| name_of(&r.1)).collect();
        standings.sort();
        assert_eq!(standings, ["booked", "held", "released"]);
        let withheld: Vec<(String, Vec<u32>)> = event
            .withheld
            .iter()
            .map(|w| (w.label.clone(), w.seats.clone()))
            .collect();
        assert_eq!(withheld, vec![("house seats".to_owned(), vec![10, 11])]);
        let one = read_event_seats(&golden, state.event_id()).unwrap();
        assert_eq!(one.event.map(|e| e.reservations.len()), Some(3), "{name}");
        let other = read_event_seats(&golden, frontrow_schema::EventId::new()).unwrap();
        assert!(other.event.is_none() && other.last == Some(41));
    }
}
