//! General admission: reserving counts of places from a standing zone, decided on the pure
//! domain (given / when / then), and a property test of the zone's invariants.

use frontrow_schema::testsuite::{self, seated, standing};
use frontrow_schema::*;
use proptest::prelude::*;

use super::test_support::{self, seats as ids, section as code, *};
use super::*;

/// Price of a seat of section `A` and of a place of the `FLOOR` zone.
const SEAT: i64 = 5000;
const PLACE: i64 = 2000;
const CAPACITY: u32 = 6;
const MAX_PER_ORDER: u8 = 4;

/// Section `A`: one row of 4 seats; `FLOOR`: a standing zone of [`CAPACITY`] places.
fn info(max_seats_per_customer: Option<u16>) -> EventScheduled {
    let seat_map = testsuite::seat_map(
        &[("SEAT", "Seated", SEAT), ("GA", "Standing", PLACE)],
        vec![
            seated("A", "Seats", &[("1", 4, "SEAT")]),
            standing("FLOOR", "Floor", CAPACITY, "GA"),
        ],
    );
    EventScheduled {
        title: "Club Night".into(),
        starts_at: at(240),
        max_seats_per_order: MAX_PER_ORDER,
        max_seats_per_customer,
        ..test_support::info(event_id(), seat_map)
    }
}

fn given(limit: Option<u16>, events: impl IntoIterator<Item = Event>) -> Option<EventState> {
    let mut state = None;
    apply(&mut state, &Event::EventScheduled(info(limit)), None);
    for event in events {
        apply(&mut state, &event, None);
    }
    state
}

fn reserve(who: &str, id: u128, selection: SeatSelection) -> Command {
    Command::Reserve {
        customer: customer(who),
        reservation_id: rid(id),
        selection,
        idempotency_key: format!("key-{id}"),
        admission: None,
    }
}

fn zone(count: u8) -> SeatSelection {
    SeatSelection::Zone {
        zone: code("FLOOR"),
        count,
    }
}

fn reserved(id: u128, who: &str, places: &[&str], amount: i64) -> Event {
    Event::SeatsReserved(SeatsReserved {
        reservation_id: rid(id),
        customer: customer(who),
        seats: ids(places),
        hold_until: at(10),
        amount: eur(amount),
        admission_ticket: None,
    })
}

fn decide_at(state: &Option<EventState>, command: &Command) -> Result<Vec<Event>, Rejection> {
    decide(state.as_ref(), event_id(), command, at(0))
}

/// `who` orders as many places of the zone as `places` lists, as reservation `id`, and holds
/// exactly those at the zone's price.
#[track_caller]
fn takes_places(state: &Option<EventState>, who: &str, id: u128, places: &[&str]) {
    let count = places.len() as u8;
    let events = decide_at(state, &reserve(who, id, zone(count))).unwrap();
    assert_eq!(events, [reserved(id, who, places, i64::from(count) * PLACE)]);
}

#[test]
fn a_zone_reservation_takes_the_lowest_numbered_free_places_at_the_zones_price() {
    let state = given(None, []);
    takes_places(&state, "ann", 1, &["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3"]);
}

#[test]
fn released_places_are_taken_again_and_any_free_places_will_do() {
    // Places 1-2 held by ann, 3-5 by bob; ann lets hers go: the zone has 1, 2 and 6 free, not
    // adjacent, and an order of three takes exactly those.
    let mut state = given(
        None,
        [
            reserved(1, "ann", &["FLOOR-GA-1", "FLOOR-GA-2"], 2 * PLACE),
            reserved(2, "bob", &["FLOOR-GA-3", "FLOOR-GA-4", "FLOOR-GA-5"], 3 * PLACE),
        ],
    );
    let release = Command::Release {
        customer: customer("ann"),
        reservation_id: rid(1),
    };
    for event in decide_at(&state, &release).unwrap() {
        apply(&mut state, &event, None);
    }
    assert_eq!(state.as_ref().unwrap().counts.available, 4 + 3);
    takes_places(&state, "cat", 3, &["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-6"]);
}

#[test]
fn places_follow_the_seat_state_machine_hold_book_cancel() {
    let mut state = given(None, [reserved(1, "ann", &["FLOOR-GA-1", "FLOOR-GA-2"], 2 * PLACE)]);
    let paid = Payment {
        provider_event_id: "evt_1".into(),
        payment_intent: "pi_1".into(),
        amount: eur(2 * PLACE),
    };
    let pay = Command::PaymentSucceeded {
        reservation_id: rid(1),
        payment: paid,
    };
    for event in decide_at(&state, &pay).unwrap() {
        apply(&mut state, &event, None);
    }
    let s = state.as_ref().unwrap();
    assert_eq!(
        (s.seats[4], s.holder_of(4)),
        (SeatState::Booked, Some(rid(1))),
        "FLOOR-GA-1 is index 4"
    );
    assert_eq!((s.counts.available, s.counts.held, s.counts.booked), (8, 0, 2));
    let cancel = Command::Cancel {
        customer: customer("ann"),
        reservation_id: rid(1),
    };
    for event in decide_at(&state, &cancel).unwrap() {
        apply(&mut state, &event, None);
    }
    let s = state.as_ref().unwrap();
    assert_eq!((s.counts.available, s.counts.held, s.counts.booked), (10, 0, 0));
}

#[test]
fn a_retry_takes_nothing_more_and_a_reused_key_for_another_count_is_refused() {
    let mut state = given(None, []);
    let first = reserve("ann", 1, zone(2));
    for event in decide_at(&state, &first).unwrap() {
        apply(&mut state, &event, Some("key-1"));
    }
    assert_eq!(decide_at(&state, &first), Ok(vec![]));
    let again = |selection| Command::Reserve {
        customer: customer("ann"),
        reservation_id: rid(2),
        selection,
        idempotency_key: "key-1".into(),
        admission: None,
    };
    assert_eq!(decide_at(&state, &again(zone(3))), Err(Rejection::IdempotencyKeyReused));
    let seated = again(SeatSelection::BestAvailable {
        section: code("A"),
        count: 2,
    });
    assert_eq!(decide_at(&state, &seated), Err(Rejection::IdempotencyKeyReused));
}

#[test]
fn each_wrong_zone_request_is_refused_precisely() {
    let state = given(None, []);
    let cases = [
        (
            SeatSelection::Zone {
                zone: code("PIT"),
                count: 2,
            },
            Rejection::UnknownZone(code("PIT")),
        ),
        (
            SeatSelection::Zone {
                zone: code("A"),
                count: 2,
            },
            Rejection::NotAZone(code("A")),
        ),
        (
            SeatSelection::BestAvailable {
                section: code("FLOOR"),
                count: 2,
            },
            Rejection::StandingZone(code("FLOOR")),
        ),
        (
            SeatSelection::Explicit(ids(&["A-1-1", "FLOOR-GA-3"])),
            Rejection::StandingZone(code("FLOOR")),
        ),
        (
            zone(0),
            Rejection::BadSeatCount {
                asked: 0,
                max: MAX_PER_ORDER,
            },
        ),
        (
            zone(5),
            Rejection::BadSeatCount {
                asked: 5,
                max: MAX_PER_ORDER,
            },
        ),
    ];
    for (selection, expected) in cases {
        assert_eq!(
            decide_at(&state, &reserve("ann", 1, selection.clone())),
            Err(expected),
            "{selection:?}"
        );
    }
}

#[test]
fn a_full_zone_is_sold_out_and_a_nearly_full_one_says_how_many_are_left() {
    let four = ["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3", "FLOOR-GA-4"];
    let state = given(None, [reserved(1, "ann", &four, 4 * PLACE)]);
    assert_eq!(
        decide_at(&state, &reserve("bob", 2, zone(3))),
        Err(Rejection::NotEnoughPlaces {
            zone: code("FLOOR"),
            asked: 3,
            available: 2,
        })
    );
    // Every order size up to what is left still sells.
    for count in 1..=2 {
        assert!(decide_at(&state, &reserve("bob", 2, zone(count))).is_ok(), "{count}");
    }
    let state = given(
        None,
        [
            reserved(1, "ann", &four, 4 * PLACE),
            reserved(2, "bob", &["FLOOR-GA-5", "FLOOR-GA-6"], 2 * PLACE),
        ],
    );
    assert_eq!(
        decide_at(&state, &reserve("cat", 3, zone(1))),
        Err(Rejection::ZoneSoldOut(code("FLOOR")))
    );
    // The seated section still sells.
    assert!(decide_at(&state, &reserve("cat", 3, SeatSelection::Explicit(ids(&["A-1-1"])))).is_ok());
}

#[test]
fn the_per_customer_limit_counts_standing_places() {
    // At most 5 per customer: 4 places held, then 2 seats (or 2 more places) go over.
    let state = given(
        Some(5),
        [reserved(
            1,
            "ann",
            &["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3", "FLOOR-GA-4"],
            4 * PLACE,
        )],
    );
    let over = Rejection::CustomerLimit {
        limit: 5,
        have: 4,
        asked: 2,
    };
    let seats = SeatSelection::Explicit(ids(&["A-1-1", "A-1-2"]));
    assert_eq!(decide_at(&state, &reserve("ann", 2, seats)), Err(over.clone()));
    assert_eq!(decide_at(&state, &reserve("ann", 2, zone(2))), Err(over));
    assert!(
        decide_at(&state, &reserve("ann", 2, zone(1))).is_ok(),
        "one more is within 5"
    );
    // And seats count towards a later zone order.
    let state = given(
        Some(5),
        [reserved(1, "bob", &["A-1-1", "A-1-2", "A-1-3", "A-1-4"], 4 * SEAT)],
    );
    assert_eq!(
        decide_at(&state, &reserve("bob", 2, zone(2))),
        Err(Rejection::CustomerLimit {
            limit: 5,
            have: 4,
            asked: 2,
        })
    );
}

/// One step of the property test: a customer reserves `count` places, or a live reservation
/// (picked by `pick`) is released, paid or expires.
#[derive(Debug, Clone)]
enum Step {
    Reserve(u8),
    Release(usize),
    Pay(usize),
    Expire(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1..=MAX_PER_ORDER).prop_map(Step::Reserve),
        1 => any::<usize>().prop_map(Step::Release),
        1 => any::<usize>().prop_map(Step::Pay),
        1 => any::<usize>().prop_map(Step::Expire),
    ]
}

proptest! {
    /// Whatever fans do, no place is in two live reservations, the zone's free count is its
    /// capacity minus its live places, and a zone with `k` free places takes any order of
    /// `1..=min(k, max_seats_per_order)` and refuses a larger one.
    #[test]
    fn a_zone_never_double_sells_and_sells_to_the_last_place(steps in prop::collection::vec(step(), 1..40)) {
        let mut state = given(None, []);
        let mut made: Vec<ReservationId> = Vec::new();
        for (n, step) in steps.into_iter().enumerate() {
            let n = n as u128 + 1;
            let pick = |i: usize| (!made.is_empty()).then(|| made[i % made.len()]);
            let command = match step {
                Step::Reserve(count) => Some(reserve(&format!("fan{n}"), n, zone(count))),
                Step::Release(i) => pick(i).map(|id| {
                    let who = state.as_ref().unwrap().reservations[&id].customer.clone();
                    Command::Release { customer: who, reservation_id: id }
                }),
                Step::Pay(i) => pick(i).map(|id| {
                    let amount = state.as_ref().unwrap().reservations[&id].amount;
                    let payment = Payment { provider_event_id: format!("evt_{n}"), payment_intent: format!("pi_{n}"), amount };
                    Command::PaymentSucceeded { reservation_id: id, payment }
                }),
                Step::Expire(i) => pick(i).map(|id| Command::Expire { reservation_id: id }),
            };
            let Some(command) = command else { continue };
            let now = at(if matches!(command, Command::Expire { .. }) { 11 } else { 0 });
            let free_before = free_places(&state);
            let result = decide(state.as_ref(), event_id(), &command, now);
            if let Command::Reserve { selection: SeatSelection::Zone { count, .. }, .. } = &command {
                let fits = u32::from(*count) <= free_before;
                prop_assert_eq!(result.is_ok(), fits, "{} free, asked {}: {:?}", free_before, count, result);
            }
            if let Ok(events) = result {
                for event in &events {
                    apply(&mut state, event, None);
                    if let Event::SeatsReserved(e) = event {
                        made.push(e.reservation_id);
                    }
                }
            }
            let s = state.as_ref().unwrap();
            let live: Vec<u32> = s
                .reservations
                .values()
                .filter(|r| matches!(r.status, ReservationStatus::Held | ReservationStatus::Booked))
                .flat_map(|r| r.seats.iter().copied())
                .collect();
            let distinct: std::collections::HashSet<_> = live.iter().collect();
            prop_assert_eq!(distinct.len(), live.len(), "a place is in two live reservations");
            prop_assert_eq!(free_places(&state), CAPACITY - live.len() as u32);
        }
    }
}

/// Free places of the zone, counted from the seat states.
fn free_places(state: &Option<EventState>) -> u32 {
    let s = state.as_ref().unwrap();
    let span = s.layout.zone_span(1).unwrap();
    (span.start..span.start + u32::from(span.seats))
        .filter(|&i| s.seats[i as usize] == SeatState::Available)
        .count() as u32
}
