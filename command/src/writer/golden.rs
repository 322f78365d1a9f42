//! The partition snapshot format pinned by a golden file.
//!
//! `command/tests/golden/partition_snapshot_v1.json` is a version-1 snapshot of one event that
//! has every part a snapshot keeps: a waiting room with admitted and waiting fans, reservations
//! held, booked (with its payment) and released, seats withheld under a label by a keyed
//! request. The writer must write exactly that JSON for that state, read it back into the same
//! state, and the query side's reader (`frontrow_schema::snapshot`) must see the same seats in
//! it. A change to the format fails here; a new version gets a new golden file beside this one
//! (and the old file stays, read or explicitly refused). `FRONTROW_BLESS=1` rewrites the file
//! after a deliberate change.

use std::path::PathBuf;

use frontrow_schema::Event;
use frontrow_schema::snapshot::{ReservationStanding, read_event_seats, read_partition_seats};

use super::{PartitionSnapshot, SNAPSHOT_VERSION};
use crate::domain::test_support::*;
use crate::domain::*;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/partition_snapshot_v1.json")
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

fn golden_bytes(state: &EventState) -> Vec<u8> {
    let path = golden_path();
    if std::env::var_os("FRONTROW_BLESS").is_some() {
        let value = serde_json::to_value(partition_snapshot(state)).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap() + "\n").unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_writer_writes_the_golden_snapshot_and_restores_the_same_state_from_it() {
    let state = onsale_in_progress();
    let golden = golden_bytes(&state);
    let written: serde_json::Value = serde_json::from_slice(&partition_snapshot(&state).encode().unwrap()).unwrap();
    let pinned: serde_json::Value = serde_json::from_slice(&golden).unwrap();
    assert_eq!(written, pinned, "the writer no longer writes the v1 snapshot");

    let read = PartitionSnapshot::decode(&golden).unwrap();
    assert_eq!((read.version, read.last, read.next), (1, Some(41), 42));
    let [event] = <[_; 1]>::try_from(read.events).ok().unwrap();
    let restored = EventState::from_snapshot(event);
    assert_eq!(restored.info, state.info);
    assert_eq!(restored.seats, state.seats);
    assert_eq!(restored.counts, state.counts);
    assert_eq!(restored.counts, counts(6, 2, 2, 2));
    assert_eq!(restored.reservations, state.reservations);
    assert_eq!(restored.idempotency, state.idempotency);
    assert_eq!(restored.payments_seen, state.payments_seen);
    assert_eq!(restored.sequence, state.sequence);
    assert_eq!(restored.queue, state.queue);
    assert_eq!(restored.withheld, state.withheld);
    assert_eq!(restored.organizer_requests, state.organizer_requests);
}

/// How the query side sees a reservation of the writer's.
fn standing(status: &ReservationStatus) -> ReservationStanding {
    match status {
        ReservationStatus::Held => ReservationStanding::Held,
        ReservationStatus::Booked => ReservationStanding::Booked,
        ReservationStatus::Released(_) => ReservationStanding::Released(serde::de::IgnoredAny),
    }
}

fn name(standing: &ReservationStanding) -> &'static str {
    match standing {
        ReservationStanding::Held => "held",
        ReservationStanding::Booked => "booked",
        ReservationStanding::Released(_) => "released",
    }
}

#[test]
fn the_query_side_reads_the_same_seats_from_the_golden_snapshot() {
    let state = onsale_in_progress();
    let golden = golden_bytes(&state);
    let seats = read_partition_seats(&golden).unwrap();
    assert_eq!(seats.last, Some(41));
    let [event] = &seats.events[..] else {
        panic!("one event")
    };
    assert_eq!(event.info, state.info);
    let mut read: Vec<(Vec<u32>, &str)> = event
        .reservations
        .iter()
        .map(|r| (r.seats.clone(), name(&r.status)))
        .collect();
    let mut kept: Vec<(Vec<u32>, &str)> = state
        .reservations
        .values()
        .map(|r| (r.seats.clone(), name(&standing(&r.status))))
        .collect();
    read.sort();
    kept.sort();
    assert_eq!(read, kept);
    let mut standings: Vec<&str> = read.iter().map(|r| r.1).collect();
    standings.sort();
    assert_eq!(standings, ["booked", "held", "released"]);
    let withheld: Vec<(String, Vec<u32>)> = event
        .withheld
        .iter()
        .map(|w| (w.label.clone(), w.seats.clone()))
        .collect();
    assert_eq!(withheld, vec![("house seats".to_owned(), vec![10, 11])]);
    let one = read_event_seats(&golden, state.event_id()).unwrap();
    assert_eq!(one.event.map(|e| e.reservations.len()), Some(3));
}
