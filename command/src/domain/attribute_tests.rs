//! Seat attributes in best-available and organizer holds, decided on the pure domain: given /
//! when / then, and property tests against a brute-force oracle.

use chrono::Duration;
use frontrow_schema::*;
use proptest::prelude::*;

use super::test_support::{self, *};
use super::*;
use crate::writer::snapshot::tests::through_a_snapshot;

/// Section `A`: row 1 of 10 seats has no attributes; row 2 of 10 has wheelchair spaces 1 and
/// 10 with companions 2 and 9, aisle seats 1 and 10, restricted view 5; row 3 likewise with a
/// wheelchair space at 6 (companion 5).
fn map() -> SeatMap {
    serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "STD", "name": "Standard", "price": 4000}],
        "sections": [{"code": "A", "name": "Floor", "rows": [
            {"name": "1", "seats": 10, "tier": "STD", "aisle": [1, 10]},
            {"name": "2", "seats": 10, "tier": "STD", "wheelchair": [1, 10], "companion": [2, 9],
             "aisle": [1, 10], "restricted_view": [5]},
            {"name": "3", "seats": 10, "tier": "STD", "wheelchair": [6], "companion": [5]}
        ]}]
    }))
    .unwrap()
}

fn info(seat_map: SeatMap) -> EventScheduled {
    EventScheduled {
        title: "Open Air".into(),
        venue: "Park".into(),
        city: "Utrecht".into(),
        max_seats_per_order: 6,
        max_seats_per_customer: Some(1000),
        // These tests set seats up one by one, leaving singles on purpose; the no-orphan rule
        // has tests of its own (orphan_tests.rs).
        allow_orphan_seats: true,
        ..test_support::info(event_id(), seat_map)
    }
}

/// The event driven as a writer drives it: decide, then apply what was decided.
struct Sim {
    state: Option<EventState>,
}

impl Sim {
    fn new(seat_map: SeatMap) -> Self {
        Self::scheduled(info(seat_map))
    }

    /// An event with the no-orphan rule on.
    fn no_orphans(seat_map: SeatMap) -> Self {
        Self::scheduled(EventScheduled {
            allow_orphan_seats: false,
            ..info(seat_map)
        })
    }

    fn scheduled(info: EventScheduled) -> Self {
        let mut sim = Self { state: None };
        sim.exec(Command::Schedule(Box::new(info)), None).unwrap();
        sim
    }

    fn state(&self) -> &EventState {
        self.state.as_ref().unwrap()
    }

    fn exec(&mut self, command: Command, key: Option<&str>) -> Result<Vec<Event>, Rejection> {
        decide_and_apply(&mut self.state, event_id(), &command, at(1), key)
    }

    /// Fan `n` orders `selection` as reservation `n` and holds exactly the seats `expected`.
    #[track_caller]
    fn holds(&mut self, n: u64, selection: SeatSelection, expected: &[&str]) {
        assert_eq!(self.reserve(n, u128::from(n), selection).unwrap(), seats(expected));
    }

    fn reserve(&mut self, who: u64, id: u128, selection: SeatSelection) -> Result<Vec<SeatId>, Rejection> {
        let key = format!("k{id}");
        let events = self.exec(
            Command::Reserve {
                customer: fan(who),
                reservation_id: rid(id),
                selection,
                idempotency_key: key.clone(),
                admission: None,
            },
            Some(&key),
        )?;
        Ok(match events.as_slice() {
            [Event::SeatsReserved(e)] => e.seats.clone(),
            [] => vec![],
            other => panic!("unexpected events {other:?}"),
        })
    }

    fn withhold(&mut self, ids: &[&str], label: &str) -> Result<Vec<Event>, Rejection> {
        self.withhold_keyed(ids, label, None)
    }

    fn give_back(&mut self, ids: &[&str]) -> Result<Vec<Event>, Rejection> {
        self.give_back_keyed(ids, None)
    }

    /// A withhold sent with `key` as its `Idempotency-Key`, which the envelope carries too.
    fn withhold_keyed(&mut self, ids: &[&str], label: &str, key: Option<&str>) -> Result<Vec<Event>, Rejection> {
        self.exec(
            Command::Withhold {
                organizer: organizer(),
                seats: seats(ids),
                label: label.into(),
                idempotency_key: key.map(str::to_owned),
            },
            key,
        )
    }

    fn give_back_keyed(&mut self, ids: &[&str], key: Option<&str>) -> Result<Vec<Event>, Rejection> {
        self.exec(
            Command::ReturnWithheld {
                organizer: organizer(),
                seats: seats(ids),
                idempotency_key: key.map(str::to_owned),
            },
            key,
        )
    }

    fn best(&mut self, who: u64, count: u8) -> Result<Vec<SeatId>, Rejection> {
        let selection = SeatSelection::BestAvailable {
            section: SectionCode::parse("A").unwrap(),
            count,
        };
        self.reserve(who, u128::from(who), selection)
    }

    fn seat(&self, id: &str) -> SeatState {
        let s = self.state();
        s.seats[s.layout.index_of(&seat(id)).unwrap() as usize]
    }
}

fn accessible(count: u8, aisle: bool) -> SeatSelection {
    SeatSelection::BestWith {
        section: SectionCode::parse("A").unwrap(),
        count,
        needs: SeatNeeds {
            accessible: true,
            aisle,
        },
    }
}

/// The refusal of an accessible order of `count` seats in section `A`.
fn no_accessible_seats(count: u8) -> Rejection {
    Rejection::NoAccessibleSeats {
        section: section("A"),
        count,
    }
}

fn aisle_only(count: u8) -> SeatSelection {
    SeatSelection::BestWith {
        section: SectionCode::parse("A").unwrap(),
        count,
        needs: SeatNeeds {
            accessible: false,
            aisle: true,
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Accessible and aisle best-available.
// ---------------------------------------------------------------------------------------------

#[test]
fn accessible_pair_is_a_wheelchair_space_and_its_companion_in_the_frontmost_row() {
    let mut sim = Sim::new(map());
    // Row 1 has no wheelchair space; row 2's two pairs are equally far from the centre: the
    // first found wins, as in plain best-available. Then row 2 has none left: row 3's
    // wheelchair space 6 with companion 5.
    holds_the_accessible_pairs_in_order(&mut sim, false);
    assert_eq!(sim.reserve(4, 4, accessible(2, false)), Err(no_accessible_seats(2)));
    // Plain seats are still there for everyone else.
    assert_eq!(sim.state().counts.available, 24);
}

#[test]
fn a_larger_accessible_block_holds_the_pair_and_stays_closest_to_the_centre() {
    let mut sim = Sim::new(map());
    // Four seats with row 3's pair (5, 6): blocks 3-6, 4-7, 5-8; 4-7 is centred.
    sim.reserve(9, 9, accessible(2, false)).unwrap();
    sim.reserve(8, 8, accessible(2, false)).unwrap();
    sim.holds(1, accessible(4, false), &["A-3-4", "A-3-5", "A-3-6", "A-3-7"]);
}

#[test]
fn an_accessible_block_needs_the_companion_inside_it() {
    let mut sim = Sim::new(map());
    // Companion seat A-3-5 is taken: A-3-6 alone is no accessible pair, and row 2 is used up.
    sim.reserve(1, 1, SeatSelection::Explicit(seats(&["A-3-5"]))).unwrap();
    sim.reserve(2, 2, SeatSelection::Explicit(seats(&["A-2-2", "A-2-9"])))
        .unwrap();
    assert_eq!(sim.reserve(3, 3, accessible(3, false)), Err(no_accessible_seats(3)));
    assert_eq!(sim.state().counts.held, 3, "the refusal changed nothing");
}

#[test]
fn an_accessible_order_has_at_least_two_seats() {
    let mut sim = Sim::new(map());
    assert_eq!(
        sim.reserve(1, 1, accessible(1, false)),
        Err(Rejection::AccessibleTooFew { asked: 1 })
    );
    assert_eq!(
        sim.reserve(1, 1, accessible(0, false)),
        Err(Rejection::BadSeatCount { asked: 0, max: 6 })
    );
}

#[test]
fn aisle_prefers_a_block_on_an_aisle_and_falls_back_to_any() {
    let mut sim = Sim::new(map());
    // Row 1's centre would be 4-6; on the aisle it is 1-3 (seat 1 is an aisle seat, and the
    // block at the other aisle, 8-10, is as far from the centre: the first wins).
    sim.holds(1, aisle_only(3), &["A-1-1", "A-1-2", "A-1-3"]);
    sim.holds(2, aisle_only(3), &["A-1-8", "A-1-9", "A-1-10"]);
    // Row 1 has no aisle left; row 2's aisle seats are wheelchair spaces, kept for accessible
    // orders, so the frontmost block without them: row 1's centre.
    sim.holds(3, aisle_only(3), &["A-1-4", "A-1-5", "A-1-6"]);
    sim.holds(4, aisle_only(3), &["A-2-4", "A-2-5", "A-2-6"]);
}

#[test]
fn an_aisle_block_comes_before_the_front_row() {
    // Row 2's aisle seats here have no other attribute.
    let mut seat_map = map();
    seat_map.sections[0].rows[1].attributes = SeatAttributes {
        aisle: vec![1, 10],
        ..SeatAttributes::default()
    }
    .into();
    let mut sim = Sim::new(seat_map);
    sim.reserve(1, 1, aisle_only(3)).unwrap();
    sim.reserve(2, 2, aisle_only(3)).unwrap();
    // Row 1 has no aisle left: row 2's aisle blocks come next, before row 1's centre.
    sim.holds(3, aisle_only(3), &["A-2-1", "A-2-2", "A-2-3"]);
    sim.holds(4, aisle_only(3), &["A-2-8", "A-2-9", "A-2-10"]);
    // No aisle seat free anywhere (row 3 has none): the frontmost block closest to the centre.
    sim.holds(6, aisle_only(3), &["A-1-4", "A-1-5", "A-1-6"]);
}

#[test]
fn accessible_on_the_aisle_prefers_the_pair_at_the_aisle() {
    let mut sim = Sim::new(map());
    // Row 3's pair (5, 6) is not on an aisle: with `aisle` row 2's pairs go first anyway, then
    // row 3's is taken since nothing on an aisle is left.
    holds_the_accessible_pairs_in_order(&mut sim, true);
}

/// Three accessible pairs (`aisle` or not) in a row, as reservations 1 to 3 of [`map`]: row 2's
/// spaces 1 and 10 with their companions, then row 3's space 6 with companion 5.
fn holds_the_accessible_pairs_in_order(sim: &mut Sim, aisle: bool) {
    sim.holds(1, accessible(2, aisle), &["A-2-1", "A-2-2"]);
    sim.holds(2, accessible(2, aisle), &["A-2-9", "A-2-10"]);
    sim.holds(3, accessible(2, aisle), &["A-3-5", "A-3-6"]);
}

#[test]
fn an_accessible_retry_with_its_key_holds_nothing_more() {
    let mut sim = Sim::new(map());
    let first = sim.reserve(1, 1, accessible(2, false)).unwrap();
    assert_eq!(first.len(), 2);
    // Same key (k1), a fresh reservation id as the edge sends: already done.
    let retry = sim.exec(
        Command::Reserve {
            customer: fan(1),
            reservation_id: rid(99),
            selection: accessible(2, false),
            idempotency_key: "k1".into(),
            admission: None,
        },
        Some("k1"),
    );
    assert_eq!(retry, Ok(vec![]));
    assert_eq!(sim.state().counts.held, 2);
}

#[test]
fn unknown_sections_are_refused_for_attribute_orders_too() {
    let mut sim = Sim::new(map());
    let selection = SeatSelection::BestWith {
        section: SectionCode::parse("ZZ").unwrap(),
        count: 2,
        needs: SeatNeeds {
            accessible: true,
            aisle: false,
        },
    };
    assert_eq!(
        sim.reserve(1, 1, selection),
        Err(Rejection::UnknownSection(SectionCode::parse("ZZ").unwrap()))
    );
}

/// Section `A` of one row of `seats` seats with the given wheelchair spaces and companion seats.
fn one_row(seats: u16, wheelchair: &[u16], companion: &[u16]) -> SeatMap {
    serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "STD", "name": "Standard", "price": 4000}],
        "sections": [{"code": "A", "name": "Floor", "rows": [
            {"name": "1", "seats": seats, "tier": "STD", "wheelchair": wheelchair, "companion": companion}
        ]}]
    }))
    .unwrap()
}

#[test]
fn plain_best_available_keeps_wheelchair_spaces_until_nothing_else_is_left() {
    // Seats 4 (wheelchair) and 5 (companion) are the row's centre.
    let mut sim = Sim::new(one_row(8, &[4], &[5]));
    // The centred pair would be 4-5: a fan who did not ask for an accessible block gets the
    // closest pair without them.
    assert_eq!(sim.best(1, 2).unwrap(), seats(&["A-1-2", "A-1-3"]));
    assert_eq!(sim.best(2, 2).unwrap(), seats(&["A-1-6", "A-1-7"]));
    // A fan who asks gets the wheelchair space with its companion seat.
    sim.holds(3, accessible(2, false), &["A-1-4", "A-1-5"]);
    sim.exec(
        Command::Release {
            customer: fan(3),
            reservation_id: rid(3),
        },
        None,
    )
    .unwrap();
    // Seats 1, 4-5 and 8 are free. A single would be seat 4, the closest to the centre, but it
    // goes to a plain seat.
    assert_eq!(sim.best(4, 1).unwrap(), seats(&["A-1-1"]));
    // No pair avoids the accessible seats any more: a plain pair takes them rather than being
    // refused.
    assert_eq!(sim.best(5, 2).unwrap(), seats(&["A-1-4", "A-1-5"]));
}

#[test]
fn accessible_orders_follow_the_no_orphan_rule() {
    // Two accessible pairs: (1, 2) at the row's end and (5, 6) near its centre; seat 8 is taken,
    // so the pair 5-6 would leave seat 7 alone.
    let row = || one_row(9, &[2, 5], &[1, 6]);
    let mut sim = Sim::no_orphans(row());
    sim.withhold(&["A-1-8"], "sound desk").unwrap();
    sim.holds(1, accessible(2, false), &["A-1-1", "A-1-2"]);
    // Only 5-6 is left: it strands seat 7, but it is the only accessible pair, so it is taken.
    sim.holds(2, accessible(2, false), &["A-1-5", "A-1-6"]);

    // With the rule off the centred pair wins.
    let mut sim = Sim::new(row());
    sim.withhold(&["A-1-8"], "sound desk").unwrap();
    sim.holds(1, accessible(2, false), &["A-1-5", "A-1-6"]);
}

// ---------------------------------------------------------------------------------------------
// Organizer holds.
// ---------------------------------------------------------------------------------------------

#[test]
fn withheld_seats_are_not_sellable_until_returned() {
    let mut sim = Sim::new(map());
    assert_eq!(
        sim.withhold(&["A-1-5", "A-1-6"], "house seats").unwrap(),
        vec![Event::SeatsWithheld(SeatsWithheld {
            seats: seats(&["A-1-5", "A-1-6"]),
            label: "house seats".into(),
            request: None,
        })]
    );
    assert_eq!(sim.seat("A-1-5"), SeatState::Withheld);
    assert_eq!(sim.state().counts, counts(28, 0, 0, 2));
    assert_eq!(
        sim.reserve(1, 1, SeatSelection::Explicit(seats(&["A-1-6"]))),
        Err(Rejection::SeatsUnavailable(seats(&["A-1-6"])))
    );
    // Best-available goes around them: row 1's centred pair is 5-6, so 3-4 or 7-8 it is.
    let best = SeatSelection::BestAvailable {
        section: SectionCode::parse("A").unwrap(),
        count: 2,
    };
    assert_eq!(sim.reserve(1, 1, best).unwrap(), seats(&["A-1-3", "A-1-4"]));
    assert_eq!(
        sim.give_back(&["A-1-6"]).unwrap(),
        vec![Event::SeatsReturned(SeatsReturned {
            seats: seats(&["A-1-6"]),
            request: None,
        })]
    );
    assert_eq!(sim.seat("A-1-6"), SeatState::Available);
    assert_eq!(
        sim.reserve(2, 2, SeatSelection::Explicit(seats(&["A-1-6"])))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(sim.state().withheld.len(), 1);
}

#[test]
fn withholding_and_returning_again_changes_nothing() {
    let mut sim = Sim::new(map());
    sim.withhold(&["A-1-1", "A-1-2"], "camera").unwrap();
    assert_eq!(sim.withhold(&["A-1-1", "A-1-2"], "camera"), Ok(vec![]));
    // Seats already withheld under the same label are left; only the new one is recorded.
    assert_eq!(
        sim.withhold(&["A-1-2", "A-1-3"], "camera").unwrap(),
        vec![Event::SeatsWithheld(SeatsWithheld {
            seats: seats(&["A-1-3"]),
            label: "camera".into(),
            request: None,
        })]
    );
    sim.give_back(&["A-1-1", "A-1-2", "A-1-3"]).unwrap();
    assert_eq!(sim.give_back(&["A-1-1", "A-1-2", "A-1-3"]), Ok(vec![]));
    assert_eq!(sim.state().counts.available, 30);
}

#[test]
fn a_keyed_withhold_retried_after_a_return_changes_nothing() {
    let mut sim = Sim::new(map());
    let house = ["A-1-1", "A-1-2"];
    let written = sim.withhold_keyed(&house, "house seats", Some("w1")).unwrap();
    let [Event::SeatsWithheld(e)] = written.as_slice() else {
        panic!("{written:?}")
    };
    assert_eq!(e.seats, seats(&house));
    assert_eq!(e.request.as_ref().map(String::len), Some(64), "a SHA-256 digest");
    sim.give_back_keyed(&house, Some("r1")).unwrap();
    // The withhold's retry arrives late: it was done, so it does not withhold again; nor does
    // the return's retry change anything.
    assert_eq!(
        sim.withhold_keyed(&["A-1-2", "A-1-1"], "house seats", Some("w1")),
        Ok(vec![])
    );
    assert_eq!(sim.give_back_keyed(&house, Some("r1")), Ok(vec![]));
    assert_eq!(sim.seat("A-1-1"), SeatState::Available);
    assert_eq!(sim.state().counts.withheld, 0);
    // A new key is a new request.
    assert_eq!(sim.withhold_keyed(&house, "house seats", Some("w2")).unwrap().len(), 1);
    assert_eq!(sim.state().counts.withheld, 2);
}

#[test]
fn a_key_that_wrote_another_request_is_refused() {
    let mut sim = Sim::new(map());
    sim.withhold_keyed(&["A-1-1"], "house seats", Some("k")).unwrap();
    let before = sim.state().counts;
    for attempt in [
        sim.withhold_keyed(&["A-1-1", "A-1-2"], "house seats", Some("k")),
        sim.withhold_keyed(&["A-1-1"], "camera", Some("k")),
        sim.give_back_keyed(&["A-1-1"], Some("k")),
    ] {
        assert_eq!(attempt, Err(Rejection::IdempotencyKeyReused));
    }
    assert_eq!(sim.state().counts, before, "refusals change nothing");
}

#[test]
fn a_keyed_request_that_changes_no_seat_still_keeps_its_key() {
    let mut sim = Sim::new(map());
    sim.withhold(&["A-1-1"], "house seats").unwrap();
    // Already withheld under this label: no seat changes, but the key is written.
    assert_eq!(
        sim.withhold_keyed(&["A-1-1"], "house seats", Some("again")).unwrap(),
        vec![Event::SeatsWithheld(SeatsWithheld {
            seats: vec![],
            label: "house seats".into(),
            request: Some(sim.state().organizer_requests["again"].clone()),
        })]
    );
    sim.give_back(&["A-1-1"]).unwrap();
    assert_eq!(sim.withhold_keyed(&["A-1-1"], "house seats", Some("again")), Ok(vec![]));
    assert_eq!(sim.seat("A-1-1"), SeatState::Available);
    // Without a key a request that changes nothing writes nothing, as before.
    assert_eq!(sim.give_back(&["A-1-1"]), Ok(vec![]));
}

#[test]
fn a_snapshot_keeps_the_keys_of_organizer_requests() {
    let mut sim = Sim::new(map());
    sim.withhold_keyed(&["A-2-3"], "camera", Some("w1")).unwrap();
    sim.give_back_keyed(&["A-2-3"], Some("r1")).unwrap();
    let restored = through_a_snapshot(sim.state());
    assert_eq!(restored.organizer_requests, sim.state().organizer_requests);
    sim.state = Some(restored);
    assert_eq!(sim.withhold_keyed(&["A-2-3"], "camera", Some("w1")), Ok(vec![]));
    assert_eq!(sim.seat("A-2-3"), SeatState::Available);
    // A snapshot of version 1 (JSON) without keyed requests has no field for them.
    let mut plain = serde_json::to_value(Sim::new(map()).state().info.clone()).unwrap();
    plain = serde_json::json!({"info": plain, "schedule_key": null, "sequence": 1, "reservations": [], "payments_seen": []});
    let old: EventSnapshot = serde_json::from_value(plain).unwrap();
    assert!(old.organizer_requests.is_empty() && old.withheld.is_empty() && old.queue.is_none());
}

#[test]
fn withholding_a_held_booked_or_otherwise_withheld_seat_is_refused_by_name() {
    let mut sim = Sim::new(map());
    sim.reserve(1, 1, SeatSelection::Explicit(seats(&["A-1-1"]))).unwrap();
    sim.exec(
        Command::PaymentSucceeded {
            reservation_id: rid(1),
            payment: Payment {
                provider_event_id: "evt_1".into(),
                payment_intent: "pi_1".into(),
                amount: Money {
                    amount: 4000,
                    currency: Currency::parse("EUR").unwrap(),
                },
            },
        },
        None,
    )
    .unwrap();
    sim.reserve(2, 2, SeatSelection::Explicit(seats(&["A-1-2"]))).unwrap();
    sim.withhold(&["A-1-4"], "sound desk").unwrap();
    let before = sim.state().counts;
    assert_eq!(
        sim.withhold(&["A-1-1", "A-1-2", "A-1-3"], "house seats"),
        Err(Rejection::SeatsInSale(seats(&["A-1-1", "A-1-2"])))
    );
    assert_eq!(
        sim.withhold(&["A-1-3", "A-1-4"], "house seats"),
        Err(Rejection::WithheldOtherwise {
            label: "sound desk".into(),
            seats: seats(&["A-1-4"]),
        })
    );
    assert_eq!(sim.state().counts, before, "refusals change nothing");
    assert_eq!(sim.seat("A-1-3"), SeatState::Available);
}

#[test]
fn bad_hold_requests_are_refused() {
    let mut sim = Sim::new(map());
    let other = OrganizerId::parse("someone-else").unwrap();
    let cases = [
        (
            Command::Withhold {
                organizer: other.clone(),
                seats: seats(&["A-1-1"]),
                label: "x".into(),
                idempotency_key: None,
            },
            Rejection::NotYourEvent,
        ),
        (
            Command::ReturnWithheld {
                organizer: other,
                seats: seats(&["A-1-1"]),
                idempotency_key: None,
            },
            Rejection::NotYourEvent,
        ),
        (
            Command::Withhold {
                organizer: organizer(),
                seats: vec![],
                label: "x".into(),
                idempotency_key: None,
            },
            Rejection::BadWithholdSize { asked: 0 },
        ),
        (
            Command::Withhold {
                organizer: organizer(),
                seats: seats(&["A-1-1"]),
                label: "  ".into(),
                idempotency_key: None,
            },
            Rejection::BadLabel,
        ),
        (
            Command::Withhold {
                organizer: organizer(),
                seats: seats(&["A-1-1"]),
                label: "x".repeat(MAX_LABEL + 1),
                idempotency_key: None,
            },
            Rejection::BadLabel,
        ),
        (
            Command::Withhold {
                organizer: organizer(),
                seats: seats(&["A-1-1", "A-1-1"]),
                label: "x".into(),
                idempotency_key: None,
            },
            Rejection::DuplicateSeat(seat("A-1-1")),
        ),
        (
            Command::ReturnWithheld {
                organizer: organizer(),
                seats: seats(&["A-1-11", "A-9-1"]),
                idempotency_key: None,
            },
            Rejection::UnknownSeats(seats(&["A-1-11", "A-9-1"])),
        ),
        (
            Command::ReturnWithheld {
                organizer: organizer(),
                seats: vec![seat("A-1-1"); MAX_SEATS_PER_WITHHOLD + 1],
                idempotency_key: None,
            },
            Rejection::BadWithholdSize {
                asked: MAX_SEATS_PER_WITHHOLD + 1,
            },
        ),
    ];
    for (command, rejection) in cases {
        assert_eq!(sim.exec(command.clone(), None), Err(rejection), "{command:?}");
    }
    assert_eq!(sim.state().counts.available, 30);
}

#[test]
fn a_snapshot_keeps_the_withheld_seats_and_their_labels() {
    let mut sim = Sim::new(map());
    sim.withhold(&["A-1-1", "A-2-3"], "house seats").unwrap();
    sim.withhold(&["A-3-3"], "camera").unwrap();
    sim.reserve(1, 1, SeatSelection::Explicit(seats(&["A-1-2"]))).unwrap();
    let snapshot = sim.state().snapshot();
    let withheld: Vec<(&str, &[u32])> = snapshot
        .withheld
        .iter()
        .map(|w| (w.label.as_str(), w.seats.as_slice()))
        .collect();
    assert_eq!(withheld, [("camera", &[22][..]), ("house seats", &[0, 12][..])]);
    let restored = through_a_snapshot(sim.state());
    assert_eq!(restored.seats, sim.state().seats);
    assert_eq!(restored.counts, sim.state().counts);
    assert_eq!(restored.withheld, sim.state().withheld);
}

#[test]
fn returned_seats_let_the_waiting_room_admit_again() {
    let mut sim = Sim::new(map());
    let all: Vec<String> = (1..=3)
        .flat_map(|r| (1..=10).map(move |n| format!("A-{r}-{n}")))
        .collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    // Everything but one seat is withheld before the queue opens.
    sim.withhold(&all[1..], "production").unwrap();
    let open = Command::OpenQueue {
        organizer: organizer(),
        settings: QueueSettings {
            max_size: None,
            max_shoppers: 100,
            admission_secs: 600,
        },
    };
    let early = onsale() - Duration::minutes(5);
    for e in decide(sim.state.as_ref(), event_id(), &open, early).unwrap() {
        apply(&mut sim.state, &e, None);
    }
    for n in 1..=4 {
        let join = Command::JoinQueue { customer: fan(n) };
        for e in decide(sim.state.as_ref(), event_id(), &join, early).unwrap() {
            apply(&mut sim.state, &e, None);
        }
    }
    let admitted = |events: &[Event]| {
        events
            .iter()
            .filter(|e| matches!(e, Event::Queue(QueueEvent::Admitted(_))))
            .count()
    };
    let advanced = sim.exec(Command::AdvanceQueue { seed: 7 }, None).unwrap();
    // One free seat: one fan in (an order of up to 6 could take it); nobody is told sold out.
    assert_eq!(admitted(&advanced), 1);
    assert!(sim.exec(Command::AdvanceQueue { seed: 8 }, None).unwrap().is_empty());
    // 12 seats come back: 13 free, one fan shopping (6) -> two more (12, then 18 >= 13 stops).
    sim.give_back(&all[1..13]).unwrap();
    let advanced = sim.exec(Command::AdvanceQueue { seed: 9 }, None).unwrap();
    assert_eq!(admitted(&advanced), 2);
}

// ---------------------------------------------------------------------------------------------
// Properties.
// ---------------------------------------------------------------------------------------------

/// One row of `seats` seats with random attributes that pass validation, and random seat
/// states: `taken[i]` seat i+1 is not available.
fn row_case() -> impl Strategy<Value = (u16, Vec<u16>, Vec<bool>, Vec<bool>, u8)> {
    (4u16..=16).prop_flat_map(|seats| {
        (
            Just(seats),
            proptest::collection::vec(1..=seats, 0..4),
            proptest::collection::vec(any::<bool>(), usize::from(seats)),
            proptest::collection::vec(proptest::bool::weighted(0.2), usize::from(seats)),
            2u8..=6,
        )
    })
}

/// A valid row from wheelchair candidates: each gets the next seat (or the one before) as its
/// companion, skipping candidates that would collide.
fn attributes(seats: u16, candidates: &[u16], aisle_flags: &[bool]) -> SeatAttributes {
    let mut a = SeatAttributes::default();
    for &w in candidates {
        let c = if w < seats { w + 1 } else { w - 1 };
        let used = |n: u16| a.wheelchair.contains(&n) || a.companion.contains(&n);
        if used(w) || used(c) {
            continue;
        }
        a.wheelchair.push(w);
        a.companion.push(c);
    }
    a.aisle = (1..=seats).filter(|&n| aisle_flags[usize::from(n - 1)]).collect();
    a
}

/// [`map`] with its section `A` replaced by one row `1` of `seats` seats with `attributes`.
fn row_map(seats: u16, attributes: &SeatAttributes) -> SeatMap {
    let mut seat_map = map();
    seat_map.sections[0].rows = vec![Row {
        name: frontrow_schema::seatmap::RowName::parse("1").unwrap(),
        seats,
        tier: TierCode::parse("STD").unwrap(),
        attributes: attributes.clone().into(),
    }];
    seat_map
}

/// Withholds the seats of row `A-1` marked `taken` (seat `n` is `taken[n - 1]`), if any.
fn withhold_taken(sim: &mut Sim, taken: &[bool]) {
    let taken_ids: Vec<String> = (1..=taken.len())
        .filter(|&n| taken[n - 1])
        .map(|n| format!("A-1-{n}"))
        .collect();
    if !taken_ids.is_empty() {
        let ids: Vec<&str> = taken_ids.iter().map(String::as_str).collect();
        sim.withhold(&ids, "taken").unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Accessible best-available finds a block exactly when one exists (checked by brute force),
    /// and what it finds is `count` free adjacent seats holding a wheelchair space next to its
    /// companion seat.
    #[test]
    fn accessible_best_available_matches_a_brute_force_oracle(
        (seats_in_row, candidates, aisle_flags, taken, count) in row_case()
    ) {
        let attrs = attributes(seats_in_row, &candidates, &aisle_flags);
        let seat_map = row_map(seats_in_row, &attrs);
        prop_assert_eq!(seat_map.validate(), Ok(()));
        let mut sim = Sim::new(seat_map);
        withhold_taken(&mut sim, &taken);
        let free = |n: u16| !taken[usize::from(n - 1)];
        let is_pair = |a: u16, b: u16| {
            (attrs.wheelchair.contains(&a) && attrs.companion.contains(&b))
                || (attrs.companion.contains(&a) && attrs.wheelchair.contains(&b))
        };
        let good = |start: u16| {
            let end = start + u16::from(count) - 1;
            end <= seats_in_row
                && (start..=end).all(free)
                && (start..end).any(|n| is_pair(n, n + 1))
        };
        let exists = (1..=seats_in_row).any(good);
        match sim.reserve(1, 1, accessible(count, false)) {
            Ok(got) => {
                prop_assert!(exists);
                let first = got[0].number;
                prop_assert!(good(first), "{:?} is not a good block", got);
                prop_assert_eq!(got.len(), usize::from(count));
                prop_assert!(got.windows(2).all(|w| w[1].number == w[0].number + 1));
            }
            Err(Rejection::NoAccessibleSeats { .. }) => prop_assert!(!exists),
            Err(other) => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    /// Plain best-available takes a wheelchair space or a companion seat only when no block of
    /// its size without one is free (checked by brute force), and finds a block whenever one
    /// exists.
    #[test]
    fn plain_best_available_keeps_accessible_seats_when_it_can(
        (seats_in_row, candidates, aisle_flags, taken, count) in row_case()
    ) {
        let attrs = attributes(seats_in_row, &candidates, &aisle_flags);
        let seat_map = row_map(seats_in_row, &attrs);
        let mut sim = Sim::new(seat_map);
        withhold_taken(&mut sim, &taken);
        let free = |n: u16| !taken[usize::from(n - 1)];
        let accessible_seat = |n: u16| attrs.wheelchair.contains(&n) || attrs.companion.contains(&n);
        let block = |start: u16| start..start + u16::from(count);
        let fits = |start: u16| start + u16::from(count) - 1 <= seats_in_row && block(start).all(free);
        let exists = (1..=seats_in_row).any(fits);
        let plain_exists = (1..=seats_in_row).any(|s| fits(s) && !block(s).any(accessible_seat));
        match sim.best(1, count) {
            Ok(got) => {
                prop_assert!(fits(got[0].number), "{:?} is not free and adjacent", got);
                let takes_accessible = got.iter().any(|s| accessible_seat(s.number));
                prop_assert!(!takes_accessible || !plain_exists, "{:?} took accessible seats", got);
            }
            Err(Rejection::NoAdjacentSeats { .. }) => prop_assert!(!exists),
            Err(other) => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    /// Whatever the organizer and customers do, the four counts add up to the seats, the
    /// withheld count is the number of labelled seats, no withheld seat is in a live
    /// reservation, and a snapshot restores the same seats.
    #[test]
    fn holds_and_reservations_never_overlap(
        ops in proptest::collection::vec((0u8..4, 0u16..30, 1u16..4), 1..40)
    ) {
        let mut sim = Sim::new(map());
        let layout = sim.state().layout.clone();
        for (step, (op, first, len)) in ops.into_iter().enumerate() {
            let ids: Vec<String> = (first..(first + len).min(30)).map(|i| layout.seat_at(u32::from(i)).to_string()).collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let id = step as u128 + 1;
            let _ = match op {
                0 => sim.withhold(&ids, if first % 2 == 0 { "house" } else { "camera" }).map(drop),
                1 => sim.give_back(&ids).map(drop),
                2 => sim.reserve(1, id, SeatSelection::Explicit(seats(&ids))).map(drop),
                _ => sim.exec(Command::Release { customer: fan(1), reservation_id: rid(id - 1) }, None).map(drop),
            };
            let s = sim.state();
            let c = s.counts;
            prop_assert_eq!((c.available + c.held + c.booked + c.withheld) as usize, s.layout.len());
            prop_assert_eq!(c.withheld as usize, s.withheld.len());
            for &i in s.withheld.keys() {
                prop_assert_eq!(s.seats[i as usize], SeatState::Withheld);
            }
            for r in s.reservations.values().filter(|r| r.status == ReservationStatus::Held) {
                prop_assert!(r.seats.iter().all(|i| !s.withheld.contains_key(i)));
            }
            let restored = through_a_snapshot(s);
            prop_assert_eq!(&restored.seats, &s.seats);
            prop_assert_eq!(restored.counts, s.counts);
        }
    }
}
