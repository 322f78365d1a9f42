//! Given / when / then tests of every rule in `decide`, and property tests of the invariants.
//!
//! The given/when/then tests build a state by applying past events (`given`), decide one
//! command at one instant (`when`) and compare the outcome exactly (`then`): the events, or the
//! rejection. The property tests run random command sequences through `decide` + `apply` and
//! check after every step what must hold whatever the customers and the payment provider do.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use frontrow_schema::testsuite::{self, seated};
use frontrow_schema::*;
use proptest::prelude::*;

use super::test_support::{self, *};
use super::*;

// ---------------------------------------------------------------------------------------------
// Fixtures: one event on a 2 sections x 3 rows x 5 seats map, row 1 GOLD, rows 2-3 STD.
// ---------------------------------------------------------------------------------------------

const GOLD: i64 = 5000;
const STD: i64 = 3000;
const HOLD_MINUTES: i64 = 10;
const MAX_PER_ORDER: u8 = 4;
/// The event starts this many minutes after the onsale.
const STARTS_AFTER: i64 = 240;

fn seat_map() -> SeatMap {
    let rows = [("1", 5, "GOLD"), ("2", 5, "STD"), ("3", 5, "STD")];
    testsuite::seat_map(
        &[("GOLD", "Gold", GOLD), ("STD", "Standard", STD)],
        vec![seated("A", "Floor", &rows), seated("B", "Balcony", &rows)],
    )
}

const SEAT_COUNT: usize = 30;

fn event_info() -> EventScheduled {
    EventScheduled {
        starts_at: at(STARTS_AFTER),
        hold_minutes: HoldMinutes::new(HOLD_MINUTES as u8).unwrap(),
        max_seats_per_order: MAX_PER_ORDER,
        // These rules were written before the no-orphan-seat rule, on rows of five: their
        // event turns it off. `orphan_tests.rs` proves the rule.
        allow_orphan_seats: true,
        ..test_support::info(event_id(), seat_map())
    }
}

/// What the fixture's seats cost; the test's own oracle for `SeatsReserved::amount`.
fn price(seats: &[SeatId]) -> Money {
    eur(seats
        .iter()
        .map(|s| if s.row.as_str() == "1" { GOLD } else { STD })
        .sum())
}

// Past events, for `given`.

fn scheduled() -> Event {
    Event::EventScheduled(event_info())
}

/// `who` holds `ids` as reservation `id`, reserved at minute `minute`.
fn reserved(id: u128, who: &str, ids: &[&str], minute: i64) -> Event {
    let seats = seats(ids);
    Event::SeatsReserved(SeatsReserved {
        reservation_id: rid(id),
        customer: customer(who),
        amount: price(&seats),
        seats,
        hold_until: at(minute + HOLD_MINUTES),
        admission_ticket: None,
    })
}

fn payment(provider_event_id: &str, amount: Money) -> Payment {
    Payment {
        provider_event_id: provider_event_id.into(),
        payment_intent: format!("pi_{provider_event_id}"),
        amount,
    }
}

fn booked(id: u128, who: &str, ids: &[&str], paid: Payment, late: bool) -> Event {
    Event::SeatsBooked(SeatsBooked {
        reservation_id: rid(id),
        customer: customer(who),
        seats: seats(ids),
        payment: paid,
        late,
    })
}

fn released(id: u128, ids: &[&str], reason: ReleaseReason) -> Event {
    Event::SeatsReleased(SeatsReleased {
        reservation_id: rid(id),
        seats: seats(ids),
        reason,
    })
}

fn refunded(id: u128, who: &str, paid: Payment, reason: RefundReason) -> Event {
    Event::PaymentRefunded(PaymentRefunded {
        reservation_id: rid(id),
        customer: customer(who),
        payment: paid,
        reason,
    })
}

fn payment_failed_event(id: u128, provider_event_id: &str) -> Event {
    Event::PaymentFailed(PaymentFailed {
        reservation_id: rid(id),
        provider_event_id: provider_event_id.into(),
        payment_intent: format!("pi_{provider_event_id}"),
        message: Some("card declined".into()),
    })
}

// Commands, for `when`.

fn reserve(who: &str, id: u128, ids: &[&str], key: &str) -> Command {
    Command::Reserve {
        customer: customer(who),
        reservation_id: rid(id),
        selection: SeatSelection::Explicit(seats(ids)),
        idempotency_key: key.into(),
        admission: None,
    }
}

fn best(who: &str, id: u128, section: &str, count: u8, key: &str) -> Command {
    Command::Reserve {
        customer: customer(who),
        reservation_id: rid(id),
        selection: SeatSelection::BestAvailable {
            section: SectionCode::parse(section).unwrap(),
            count,
        },
        idempotency_key: key.into(),
        admission: None,
    }
}

fn release(who: &str, id: u128) -> Command {
    Command::Release {
        customer: customer(who),
        reservation_id: rid(id),
    }
}

fn cancel(who: &str, id: u128) -> Command {
    Command::Cancel {
        customer: customer(who),
        reservation_id: rid(id),
    }
}

fn expire(id: u128) -> Command {
    Command::Expire {
        reservation_id: rid(id),
    }
}

fn pay(id: u128, paid: Payment) -> Command {
    Command::PaymentSucceeded {
        reservation_id: rid(id),
        payment: paid,
    }
}

fn fail(id: u128, provider_event_id: &str) -> Command {
    Command::PaymentFailed {
        reservation_id: rid(id),
        provider_event_id: provider_event_id.into(),
        payment_intent: format!("pi_{provider_event_id}"),
        message: Some("card declined".into()),
    }
}

fn change_map(seat_map: SeatMap) -> Command {
    Command::ChangeSeatMap {
        organizer: organizer(),
        seat_map,
    }
}

// ---------------------------------------------------------------------------------------------
// Given / when / then.
// ---------------------------------------------------------------------------------------------

/// The past: a state built only by applying events, as the writer does on replay.
struct Given {
    state: Option<EventState>,
}

impl Given {
    fn new(events: impl IntoIterator<Item = Event>) -> Self {
        let mut state = None;
        for event in events {
            apply(&mut state, &event, None);
        }
        Self { state }
    }

    /// The standard event, scheduled and nothing else.
    fn scheduled() -> Self {
        Self::new([scheduled()])
    }

    /// One more event, applied with the `Idempotency-Key` its command carried.
    fn and_keyed(mut self, event: Event, key: &str) -> Self {
        apply(&mut self.state, &event, Some(key));
        self
    }

    /// When: the organizer schedules `info`, an hour before the fixture's onsale.
    fn schedule(self, info: EventScheduled) -> Then {
        self.when(Command::Schedule(Box::new(info)), at(-60))
    }

    fn when(self, command: Command, now: DateTime<Utc>) -> Then {
        let result = decide(self.state.as_ref(), event_id(), &command, now);
        Then {
            state: self.state,
            result,
        }
    }
}

/// The outcome of one decision, to compare exactly.
struct Then {
    state: Option<EventState>,
    result: Result<Vec<Event>, Rejection>,
}

impl Then {
    /// Checks the events and returns the state with them applied, for further checks.
    #[track_caller]
    fn then_events(self, expected: impl IntoIterator<Item = Event>) -> Option<EventState> {
        let expected: Vec<Event> = expected.into_iter().collect();
        let events = match self.result {
            Ok(events) => events,
            Err(rejection) => panic!("expected {expected:#?}, got rejection {rejection:?}"),
        };
        assert_eq!(events, expected);
        let mut state = self.state;
        for event in &events {
            apply(&mut state, event, None);
        }
        state
    }

    /// `Ok` with no events: the command was a retry of something already done.
    #[track_caller]
    fn then_nothing(self) {
        self.then_events([]);
    }

    #[track_caller]
    fn then_rejected(self, expected: Rejection) {
        match self.result {
            Ok(events) => panic!("expected rejection {expected:?}, got events {events:#?}"),
            Err(rejection) => assert_eq!(rejection, expected),
        }
    }
}

/// The state of one seat in a state returned by `then_events`.
/// A seat's state and the live reservation holding or owning it.
fn seat_state(state: &Option<EventState>, id: &str) -> (SeatState, Option<ReservationId>) {
    let state = state.as_ref().unwrap();
    let index = state.layout.index_of(&seat(id)).unwrap();
    (state.seats[index as usize], state.holder_of(index))
}

// ---------------------------------------------------------------------------------------------
// Scheduling.
// ---------------------------------------------------------------------------------------------

/// Given nothing, scheduling `info` records exactly it.
#[track_caller]
fn accepted(info: EventScheduled) {
    Given::new([])
        .schedule(info.clone())
        .then_events([Event::EventScheduled(info)]);
}

/// Given nothing, scheduling `info` is refused with `expected`.
#[track_caller]
fn refused(info: EventScheduled, expected: Rejection) {
    Given::new([]).schedule(info).then_rejected(expected);
}

/// Given nothing, scheduling `info` is refused as an invalid event, for this `reason`.
#[track_caller]
fn invalid(info: EventScheduled, reason: impl Into<String>) {
    refused(info, Rejection::InvalidEvent(reason.into()));
}

/// Scheduling `info` is refused for the length or blankness of its text `field`.
#[track_caller]
fn refused_for_text(info: EventScheduled, field: &str) {
    invalid(info, format!("{field} must be 1 to {MAX_TEXT} characters, not blank"));
}

#[test]
fn a_valid_event_is_scheduled() {
    let state = Given::new([]).schedule(event_info()).then_events([scheduled()]);
    assert_eq!(state.unwrap().counts, counts(SEAT_COUNT as u32, 0, 0, 0));
}

#[test]
fn a_blank_title_is_refused() {
    // Whitespace only counts as empty.
    let info = EventScheduled {
        title: "   ".into(),
        ..event_info()
    };
    refused_for_text(info, "title");
}

#[test]
fn overlong_text_is_refused() {
    let info = EventScheduled {
        city: "x".repeat(MAX_TEXT + 1),
        ..event_info()
    };
    refused_for_text(info, "city");
}

#[test]
fn the_text_limit_counts_what_is_stored_padding_included() {
    // 200 characters of title in 10,000 spaces: stored as sent, so too long.
    let padded = format!("{}{}{}", " ".repeat(5000), "t".repeat(MAX_TEXT), " ".repeat(5000));
    for (field, info) in [
        (
            "title",
            EventScheduled {
                title: padded.clone(),
                ..event_info()
            },
        ),
        (
            "venue",
            EventScheduled {
                venue: format!("{} ", "v".repeat(MAX_TEXT)),
                ..event_info()
            },
        ),
    ] {
        refused_for_text(info, field);
    }
    // Exactly the limit, as stored, is fine.
    let info = EventScheduled {
        artist: "a".repeat(MAX_TEXT),
        ..event_info()
    };
    accepted(info);
}

#[test]
fn a_providers_long_failure_message_is_kept_cut_to_its_limit() {
    let long = "declined ".repeat(1000);
    let command = Command::PaymentFailed {
        reservation_id: rid(1),
        provider_event_id: "evt_1".into(),
        payment_intent: "pi_evt_1".into(),
        message: Some(long.clone()),
    };
    Given::new(ann_holds()).when(command, at(1)).then_events([
        Event::PaymentFailed(PaymentFailed {
            reservation_id: rid(1),
            provider_event_id: "evt_1".into(),
            payment_intent: "pi_evt_1".into(),
            message: Some(long.chars().take(MAX_PROVIDER_MESSAGE).collect()),
        }),
        released(1, &["A-1-1", "A-1-2"], ReleaseReason::PaymentFailed),
    ]);
}

#[test]
fn an_event_must_start_after_its_onsale() {
    for starts_at in [at(0), at(-1)] {
        let info = EventScheduled {
            starts_at,
            ..event_info()
        };
        invalid(info, "starts_at must be after onsale_at");
    }
}

#[test]
fn max_seats_per_order_must_be_1_to_the_limit() {
    for max in [0, MAX_SEATS_PER_ORDER + 1] {
        let info = EventScheduled {
            max_seats_per_order: max,
            ..event_info()
        };
        invalid(info, format!("max_seats_per_order must be 1 to {MAX_SEATS_PER_ORDER}"));
    }
    // The limit itself is allowed.
    let info = EventScheduled {
        max_seats_per_order: MAX_SEATS_PER_ORDER,
        ..event_info()
    };
    accepted(info);
}

#[test]
fn an_invalid_seat_map_is_refused() {
    let mut info = event_info();
    Arc::make_mut(&mut info.seat_map).sections.clear();
    refused(info, Rejection::InvalidSeatMap(SeatMapError::NoSections));
}

#[test]
fn scheduling_the_same_event_again_is_a_retry() {
    Given::scheduled().schedule(event_info()).then_nothing();
}

#[test]
fn a_retried_schedule_ignores_a_seat_map_changed_since() {
    // The organizer may have changed the map after the first attempt; the retry is still the
    // same event.
    let mut smaller = seat_map();
    smaller.sections.pop();
    Given::new([
        scheduled(),
        Event::SeatMapChanged(SeatMapChanged {
            seat_map: smaller.into(),
        }),
    ])
    .schedule(event_info())
    .then_nothing();
}

#[test]
fn scheduling_different_details_under_an_existing_id_is_refused() {
    let info = EventScheduled {
        title: "Another Show".into(),
        ..event_info()
    };
    Given::scheduled()
        .schedule(info)
        .then_rejected(Rejection::EventExists(event_id()));
}

/// Fails today: `same_event` in decide.rs compares every organizer-given field except the seat
/// map *and* `hold_minutes`, `max_seats_per_order` and `currency`. The event id is derived from
/// the organizer's Idempotency-Key (api/events.rs), so a reused key with other sale terms is
/// answered "already created" while the stored event keeps the old terms; only the seat map
/// may legitimately differ on a retry.
#[test]
fn scheduling_other_sale_terms_under_an_existing_id_is_refused() {
    let other_terms = [
        EventScheduled {
            hold_minutes: HoldMinutes::new(15).unwrap(),
            ..event_info()
        },
        EventScheduled {
            max_seats_per_order: 2,
            ..event_info()
        },
        EventScheduled {
            currency: Currency::parse("USD").unwrap(),
            ..event_info()
        },
    ];
    for info in other_terms {
        Given::scheduled()
            .schedule(info)
            .then_rejected(Rejection::EventExists(event_id()));
    }
}

#[test]
fn commands_for_an_unknown_event_are_refused() {
    Given::new([])
        .when(reserve("ann", 1, &["A-1-1"], "k"), at(5))
        .then_rejected(Rejection::UnknownEvent(event_id()));
    Given::new([])
        .when(expire(1), at(5))
        .then_rejected(Rejection::UnknownEvent(event_id()));
    // A payment webhook names a reservation, not an event: that is what it does not know.
    Given::new([])
        .when(pay(1, payment("evt_1", eur(GOLD))), at(5))
        .then_rejected(Rejection::UnknownReservation(rid(1)));
    Given::new([])
        .when(fail(1, "evt_1"), at(5))
        .then_rejected(Rejection::UnknownReservation(rid(1)));
}

// ---------------------------------------------------------------------------------------------
// Changing the seat map.
// ---------------------------------------------------------------------------------------------

fn other_map() -> SeatMap {
    let mut map = seat_map();
    map.sections[1].rows.pop();
    map
}

#[test]
fn the_organizer_changes_the_seat_map_before_the_onsale() {
    let state = Given::scheduled()
        .when(change_map(other_map()), at(-1))
        .then_events([Event::SeatMapChanged(SeatMapChanged {
            seat_map: other_map().into(),
        })]);
    assert_eq!(state.unwrap().counts.available, 25);
}

#[test]
fn another_organizer_cannot_change_the_seat_map() {
    let command = Command::ChangeSeatMap {
        organizer: OrganizerId::parse("rival").unwrap(),
        seat_map: other_map(),
    };
    Given::scheduled()
        .when(command, at(-1))
        .then_rejected(Rejection::NotYourEvent);
}

#[test]
fn the_seat_map_is_frozen_from_the_onsale() {
    Given::scheduled()
        .when(change_map(other_map()), at(0))
        .then_rejected(Rejection::OnsaleStarted);
}

#[test]
fn the_seat_map_is_frozen_once_a_reservation_exists() {
    // Holds point at seat indexes of the current map, so it must never change under them, even
    // if the clock alone would still allow it.
    Given::new([scheduled(), reserved(1, "ann", &["A-1-1"], 0)])
        .when(change_map(other_map()), at(-1))
        .then_rejected(Rejection::OnsaleStarted);
}

#[test]
fn an_identical_seat_map_changes_nothing() {
    Given::scheduled().when(change_map(seat_map()), at(-1)).then_nothing();
}

#[test]
fn an_invalid_new_seat_map_is_refused() {
    let mut map = seat_map();
    map.sections[0].rows[0].seats = 0;
    let (section, row) = (map.sections[0].code.clone(), map.sections[0].rows[0].name.clone());
    Given::scheduled()
        .when(change_map(map), at(-1))
        .then_rejected(Rejection::InvalidSeatMap(SeatMapError::BadRowSize(section, row)));
}

// ---------------------------------------------------------------------------------------------
// Reserving explicit seats.
// ---------------------------------------------------------------------------------------------

#[test]
fn explicit_seats_are_held_at_their_price_for_the_hold_duration() {
    let state = Given::scheduled()
        .when(reserve("ann", 1, &["A-1-2", "A-2-3"], "k"), at(7))
        .then_events([Event::SeatsReserved(SeatsReserved {
            reservation_id: rid(1),
            customer: customer("ann"),
            seats: seats(&["A-1-2", "A-2-3"]),
            hold_until: at(7 + HOLD_MINUTES),
            amount: eur(GOLD + STD),
            admission_ticket: None,
        })]);
    assert_eq!(seat_state(&state, "A-1-2"), (SeatState::Held, Some(rid(1))));
    assert_eq!(state.unwrap().counts, counts(28, 2, 0, 0));
}

#[test]
fn nothing_can_be_reserved_before_the_onsale() {
    Given::scheduled()
        .when(reserve("ann", 1, &["A-1-1"], "k"), at(-1))
        .then_rejected(Rejection::NotOnSale(at(0)));
}

#[test]
fn nothing_can_be_reserved_once_the_event_started() {
    Given::scheduled()
        .when(reserve("ann", 1, &["A-1-1"], "k"), at(STARTS_AFTER))
        .then_rejected(Rejection::SalesClosed);
}

#[test]
fn an_order_has_1_to_max_seats() {
    Given::scheduled()
        .when(reserve("ann", 1, &[], "k"), at(5))
        .then_rejected(Rejection::BadSeatCount {
            asked: 0,
            max: MAX_PER_ORDER,
        });
    Given::scheduled()
        .when(
            reserve("ann", 1, &["A-1-1", "A-1-2", "A-1-3", "A-1-4", "A-1-5"], "k"),
            at(5),
        )
        .then_rejected(Rejection::BadSeatCount {
            asked: 5,
            max: MAX_PER_ORDER,
        });
    Given::scheduled()
        .when(best("ann", 1, "A", 5, "k"), at(5))
        .then_rejected(Rejection::BadSeatCount {
            asked: 5,
            max: MAX_PER_ORDER,
        });
    Given::scheduled()
        .when(best("ann", 1, "A", 0, "k"), at(5))
        .then_rejected(Rejection::BadSeatCount {
            asked: 0,
            max: MAX_PER_ORDER,
        });
}

#[test]
fn a_seat_listed_twice_is_refused() {
    Given::scheduled()
        .when(reserve("ann", 1, &["A-1-1", "A-1-2", "A-1-1"], "k"), at(5))
        .then_rejected(Rejection::DuplicateSeat(seat("A-1-1")));
}

#[test]
fn seats_that_do_not_exist_are_all_listed() {
    // A seat number past the row's end, and a section the venue does not have.
    Given::scheduled()
        .when(reserve("ann", 1, &["A-1-1", "A-1-6", "C-1-1"], "k"), at(5))
        .then_rejected(Rejection::UnknownSeats(seats(&["A-1-6", "C-1-1"])));
}

#[test]
fn taken_seats_are_listed_exactly() {
    // One seat held by someone, one sold; the free seats asked for alongside are not listed.
    let paid = payment("evt_1", price(&seats(&["A-1-3"])));
    Given::new([
        scheduled(),
        reserved(1, "bob", &["A-1-2"], 0),
        reserved(2, "cat", &["A-1-3"], 0),
        booked(2, "cat", &["A-1-3"], paid, false),
    ])
    .when(reserve("ann", 3, &["A-1-1", "A-1-2", "A-1-3", "A-1-4"], "k"), at(5))
    .then_rejected(Rejection::SeatsUnavailable(seats(&["A-1-2", "A-1-3"])));
}

#[test]
fn released_seats_can_be_reserved_again() {
    Given::new([
        scheduled(),
        reserved(1, "bob", &["A-1-2"], 0),
        released(1, &["A-1-2"], ReleaseReason::Released),
    ])
    .when(reserve("ann", 2, &["A-1-2"], "k"), at(5))
    .then_events([reserved(2, "ann", &["A-1-2"], 5)]);
}

// ---------------------------------------------------------------------------------------------
// Best available.
// ---------------------------------------------------------------------------------------------

/// With Bob holding `taken` (if any) as reservation 1, Ann asks at minute 5 for the best
/// `count` seats of `section` as the next reservation and holds exactly `expected`.
#[track_caller]
fn best_picks(taken: &[&str], section: &str, count: u8, expected: &[&str]) {
    let mut given = vec![scheduled()];
    if !taken.is_empty() {
        given.push(reserved(1, "bob", taken, 0));
    }
    let id = given.len() as u128;
    Given::new(given)
        .when(best("ann", id, section, count, "k"), at(5))
        .then_events([reserved(id, "ann", expected, 5)]);
}

#[test]
fn best_available_takes_the_centre_of_the_front_row() {
    best_picks(&[], "B", 3, &["B-1-2", "B-1-3", "B-1-4"]);
}

#[test]
fn best_available_breaks_a_centre_tie_to_the_left() {
    // Two seats in a row of five cannot be centred: 2-3 and 3-4 are equally close.
    best_picks(&[], "A", 2, &["A-1-2", "A-1-3"]);
}

#[test]
fn best_available_takes_the_most_central_free_run() {
    // A-1-2 is held: of the free pairs 3-4 and 4-5, 3-4 is closer to the centre.
    best_picks(&["A-1-2"], "A", 2, &["A-1-3", "A-1-4"]);
}

#[test]
fn best_available_skips_rows_without_a_long_enough_run() {
    // Row 1 has four free seats, but no three adjacent ones.
    best_picks(&["A-1-3"], "A", 3, &["A-2-2", "A-2-3", "A-2-4"]);
}

#[test]
fn best_available_in_an_unknown_section_is_refused() {
    Given::scheduled()
        .when(best("ann", 1, "C", 2, "k"), at(5))
        .then_rejected(Rejection::UnknownSection(SectionCode::parse("C").unwrap()));
}

#[test]
fn best_available_without_any_run_is_refused() {
    // Every row of B has its middle seat held: pairs remain, but no three together.
    Given::new([
        scheduled(),
        reserved(1, "bob", &["B-1-3"], 0),
        reserved(2, "bob", &["B-2-3"], 0),
        reserved(3, "bob", &["B-3-3"], 0),
    ])
    .when(best("ann", 4, "B", 3, "k"), at(5))
    .then_rejected(Rejection::NoAdjacentSeats {
        section: SectionCode::parse("B").unwrap(),
        count: 3,
    });
}

// ---------------------------------------------------------------------------------------------
// Idempotency-Key.
// ---------------------------------------------------------------------------------------------

/// Ann holds A-1-1 and A-1-2 under the key `k`.
fn ann_reserved_with_key() -> Given {
    Given::scheduled().and_keyed(reserved(1, "ann", &["A-1-1", "A-1-2"], 0), "k")
}

#[test]
fn a_retried_reservation_is_already_done() {
    // The retry carries a fresh reservation id and may list the seats in another order.
    ann_reserved_with_key()
        .when(reserve("ann", 2, &["A-1-2", "A-1-1"], "k"), at(1))
        .then_nothing();
}

#[test]
fn a_retry_is_answered_even_after_the_hold_ended() {
    // The rules for a new reservation (onsale window, free seats) do not apply to a retry.
    ann_reserved_with_key()
        .and_keyed(released(1, &["A-1-1", "A-1-2"], ReleaseReason::Expired), "k")
        .when(reserve("ann", 2, &["A-1-1", "A-1-2"], "k"), at(STARTS_AFTER))
        .then_nothing();
}

#[test]
fn a_key_reused_for_other_seats_is_refused() {
    ann_reserved_with_key()
        .when(reserve("ann", 2, &["A-1-1", "A-1-3"], "k"), at(1))
        .then_rejected(Rejection::IdempotencyKeyReused);
    ann_reserved_with_key()
        .when(reserve("ann", 2, &["A-1-1"], "k"), at(1))
        .then_rejected(Rejection::IdempotencyKeyReused);
}

#[test]
fn a_key_is_scoped_to_its_customer() {
    ann_reserved_with_key()
        .when(reserve("bob", 2, &["A-1-3"], "k"), at(1))
        .then_events([reserved(2, "bob", &["A-1-3"], 1)]);
}

#[test]
fn a_retried_best_available_is_already_done() {
    let given = || Given::scheduled().and_keyed(reserved(1, "ann", &["B-1-2", "B-1-3", "B-1-4"], 0), "k");
    given().when(best("ann", 2, "B", 3, "k"), at(1)).then_nothing();
    given()
        .when(best("ann", 2, "B", 2, "k"), at(1))
        .then_rejected(Rejection::IdempotencyKeyReused);
    given()
        .when(best("ann", 2, "A", 3, "k"), at(1))
        .then_rejected(Rejection::IdempotencyKeyReused);
}

// ---------------------------------------------------------------------------------------------
// Release.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_customer_releases_their_hold() {
    let state = Given::new([scheduled(), reserved(1, "ann", &["A-1-1", "A-1-2"], 0)])
        .when(release("ann", 1), at(3))
        .then_events([released(1, &["A-1-1", "A-1-2"], ReleaseReason::Released)]);
    assert_eq!(state.unwrap().counts.available, SEAT_COUNT as u32);
}

#[test]
fn someone_elses_hold_looks_unknown() {
    Given::new([scheduled(), reserved(1, "ann", &["A-1-1"], 0)])
        .when(release("bob", 1), at(3))
        .then_rejected(Rejection::UnknownReservation(rid(1)));
    Given::scheduled()
        .when(release("ann", 9), at(3))
        .then_rejected(Rejection::UnknownReservation(rid(9)));
}

#[test]
fn releasing_a_released_hold_is_already_done() {
    for reason in [
        ReleaseReason::Released,
        ReleaseReason::Expired,
        ReleaseReason::PaymentFailed,
    ] {
        Given::new([
            scheduled(),
            reserved(1, "ann", &["A-1-1"], 0),
            released(1, &["A-1-1"], reason),
        ])
        .when(release("ann", 1), at(3))
        .then_nothing();
    }
}

#[test]
fn a_booking_cannot_be_released() {
    Given::new([
        scheduled(),
        reserved(1, "ann", &["A-1-1"], 0),
        booked(1, "ann", &["A-1-1"], payment("evt_1", eur(GOLD)), false),
    ])
    .when(release("ann", 1), at(3))
    .then_rejected(Rejection::AlreadyBooked);
}

// ---------------------------------------------------------------------------------------------
// Cancel.
// ---------------------------------------------------------------------------------------------

fn ann_booked() -> Vec<Event> {
    vec![
        scheduled(),
        reserved(1, "ann", &["A-1-1", "A-2-1"], 0),
        booked(1, "ann", &["A-1-1", "A-2-1"], payment("evt_1", eur(GOLD + STD)), false),
    ]
}

#[test]
fn cancelling_a_booking_refunds_it_and_frees_its_seats() {
    let state = Given::new(ann_booked()).when(cancel("ann", 1), at(30)).then_events([
        refunded(
            1,
            "ann",
            payment("evt_1", eur(GOLD + STD)),
            RefundReason::BookingCancelled,
        ),
        released(1, &["A-1-1", "A-2-1"], ReleaseReason::Refunded),
    ]);
    assert_eq!(seat_state(&state, "A-1-1"), (SeatState::Available, None));
    assert_eq!(state.unwrap().counts.booked, 0);
}

#[test]
fn a_hold_cannot_be_cancelled() {
    Given::new([scheduled(), reserved(1, "ann", &["A-1-1"], 0)])
        .when(cancel("ann", 1), at(3))
        .then_rejected(Rejection::NotBooked("held"));
    Given::new([
        scheduled(),
        reserved(1, "ann", &["A-1-1"], 0),
        released(1, &["A-1-1"], ReleaseReason::Expired),
    ])
    .when(cancel("ann", 1), at(30))
    .then_rejected(Rejection::NotBooked("released"));
}

#[test]
fn cancelling_twice_is_already_done() {
    let mut events = ann_booked();
    events.push(refunded(
        1,
        "ann",
        payment("evt_1", eur(GOLD + STD)),
        RefundReason::BookingCancelled,
    ));
    events.push(released(1, &["A-1-1", "A-2-1"], ReleaseReason::Refunded));
    Given::new(events).when(cancel("ann", 1), at(31)).then_nothing();
}

#[test]
fn someone_elses_booking_cannot_be_cancelled() {
    Given::new(ann_booked())
        .when(cancel("bob", 1), at(30))
        .then_rejected(Rejection::UnknownReservation(rid(1)));
}

#[test]
fn a_booking_cannot_be_cancelled_once_the_event_started() {
    Given::new(ann_booked())
        .when(cancel("ann", 1), at(STARTS_AFTER))
        .then_rejected(Rejection::SalesClosed);
}

// ---------------------------------------------------------------------------------------------
// Expire.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_due_hold_expires() {
    // Due exactly at `hold_until`.
    Given::new([
        scheduled(),
        reserved(1, "ann", &["A-1-1", "A-1-2"], 0),
        reserved(2, "bob", &["A-1-3"], 0),
    ])
    .when(expire(1), at(HOLD_MINUTES))
    .then_events([released(1, &["A-1-1", "A-1-2"], ReleaseReason::Expired)]);
}

#[test]
fn a_hold_that_is_not_due_does_not_expire() {
    // The timer may fire early (clock skew between writers); the deadline in the log decides.
    Given::new([scheduled(), reserved(1, "ann", &["A-1-1"], 0)])
        .when(expire(1), at(HOLD_MINUTES - 1))
        .then_nothing();
}

#[test]
fn only_holds_expire() {
    Given::new(ann_booked()).when(expire(1), at(60)).then_nothing();
    Given::new([
        scheduled(),
        reserved(1, "ann", &["A-1-1"], 0),
        released(1, &["A-1-1"], ReleaseReason::Released),
    ])
    .when(expire(1), at(60))
    .then_nothing();
    Given::scheduled()
        .when(expire(9), at(60))
        .then_rejected(Rejection::UnknownReservation(rid(9)));
}

// ---------------------------------------------------------------------------------------------
// Payment succeeded.
// ---------------------------------------------------------------------------------------------

fn ann_holds() -> Vec<Event> {
    vec![scheduled(), reserved(1, "ann", &["A-1-1", "A-1-2"], 0)]
}

const ANN_AMOUNT: i64 = 2 * GOLD;

/// [`ann_holds`], paid in full with `evt_1`.
fn ann_paid() -> Vec<Event> {
    let paid = booked(1, "ann", &["A-1-1", "A-1-2"], payment("evt_1", eur(ANN_AMOUNT)), false);
    ann_holds().into_iter().chain([paid]).collect()
}

/// Ann's full payment (`evt_1`) arrives at `minute`, after `since` happened to her hold:
/// the outcome, and the payment.
fn ann_pays(since: impl IntoIterator<Item = Event>, minute: i64) -> (Then, Payment) {
    let paid = payment("evt_1", eur(ANN_AMOUNT));
    let then = Given::new(ann_holds().into_iter().chain(since)).when(pay(1, paid.clone()), at(minute));
    (then, paid)
}

#[test]
fn a_payment_books_a_hold() {
    let (then, paid) = ann_pays([], 3);
    let state = then.then_events([booked(1, "ann", &["A-1-1", "A-1-2"], paid, false)]);
    assert_eq!(seat_state(&state, "A-1-2"), (SeatState::Booked, Some(rid(1))));
    assert_eq!(state.unwrap().counts, counts(28, 0, 2, 0));
}

#[test]
fn a_payment_after_the_deadline_but_before_the_timer_books_late() {
    // The hold still owns its seats, so nobody else can have them.
    let paid = payment("evt_1", eur(ANN_AMOUNT));
    Given::new(ann_holds())
        .when(pay(1, paid.clone()), at(HOLD_MINUTES + 1))
        .then_events([booked(1, "ann", &["A-1-1", "A-1-2"], paid, true)]);
}

#[test]
fn a_webhook_delivered_twice_is_already_done() {
    let paid = payment("evt_1", eur(ANN_AMOUNT));
    let mut events = ann_holds();
    events.push(booked(1, "ann", &["A-1-1", "A-1-2"], paid.clone(), false));
    Given::new(events).when(pay(1, paid), at(4)).then_nothing();
}

#[test]
fn a_wrong_amount_is_refunded_and_the_hold_stays() {
    let paid = payment("evt_1", eur(ANN_AMOUNT - 1));
    let state = Given::new(ann_holds())
        .when(pay(1, paid.clone()), at(3))
        .then_events([refunded(1, "ann", paid, RefundReason::AmountMismatch)]);
    assert_eq!(seat_state(&state, "A-1-1"), (SeatState::Held, Some(rid(1))));
}

#[test]
fn a_second_payment_is_refunded() {
    let second = payment("evt_2", eur(ANN_AMOUNT));
    Given::new(ann_paid())
        .when(pay(1, second.clone()), at(4))
        .then_events([refunded(1, "ann", second, RefundReason::DuplicatePayment)]);
}

#[test]
fn a_payment_for_a_cancelled_booking_is_refunded() {
    let first = payment("evt_1", eur(GOLD + STD));
    let mut events = ann_booked();
    events.push(refunded(1, "ann", first, RefundReason::BookingCancelled));
    events.push(released(1, &["A-1-1", "A-2-1"], ReleaseReason::Refunded));
    let second = payment("evt_2", eur(GOLD + STD));
    Given::new(events)
        .when(pay(1, second.clone()), at(40))
        .then_events([refunded(1, "ann", second, RefundReason::DuplicatePayment)]);
}

#[test]
fn a_late_payment_books_the_seats_if_they_are_still_free() {
    let (then, paid) = ann_pays([released(1, &["A-1-1", "A-1-2"], ReleaseReason::Expired)], 20);
    let state = then.then_events([booked(1, "ann", &["A-1-1", "A-1-2"], paid, true)]);
    let state = state.unwrap();
    assert_eq!(state.reservations[&rid(1)].status, ReservationStatus::Booked);
    assert!(state.reservations[&rid(1)].late);
}

#[test]
fn a_payment_after_a_failed_attempt_books_the_seats_if_they_are_still_free() {
    let failed = [
        payment_failed_event(1, "evt_0"),
        released(1, &["A-1-1", "A-1-2"], ReleaseReason::PaymentFailed),
    ];
    let (then, paid) = ann_pays(failed, 5);
    then.then_events([booked(1, "ann", &["A-1-1", "A-1-2"], paid, true)]);
}

#[test]
fn a_late_payment_is_refunded_if_a_seat_was_taken() {
    // Bob took one of the two seats after Ann's hold expired.
    let expired = released(1, &["A-1-1", "A-1-2"], ReleaseReason::Expired);
    let (then, paid) = ann_pays([expired, reserved(2, "bob", &["A-1-2"], 15)], 20);
    let state = then.then_events([refunded(1, "ann", paid, RefundReason::SeatsTaken)]);
    assert_eq!(seat_state(&state, "A-1-2"), (SeatState::Held, Some(rid(2))));
}

#[test]
fn a_payment_for_seats_the_customer_released_is_refunded() {
    // Even though the seats are free: the customer gave them up on purpose.
    let (then, paid) = ann_pays([released(1, &["A-1-1", "A-1-2"], ReleaseReason::Released)], 5);
    then.then_events([refunded(1, "ann", paid, RefundReason::SeatsTaken)]);
}

#[test]
fn a_payment_for_an_unknown_reservation_is_refused() {
    Given::new(ann_holds())
        .when(pay(9, payment("evt_1", eur(GOLD))), at(5))
        .then_rejected(Rejection::UnknownReservation(rid(9)));
}

// ---------------------------------------------------------------------------------------------
// Payment failed.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_failed_payment_releases_the_hold() {
    Given::new(ann_holds()).when(fail(1, "evt_1"), at(3)).then_events([
        payment_failed_event(1, "evt_1"),
        released(1, &["A-1-1", "A-1-2"], ReleaseReason::PaymentFailed),
    ]);
}

#[test]
fn a_failed_payment_without_a_hold_is_only_recorded() {
    // A booking stays booked; an expired hold has nothing left to release.
    Given::new(ann_paid())
        .when(fail(1, "evt_2"), at(4))
        .then_events([payment_failed_event(1, "evt_2")]);

    let mut events = ann_holds();
    events.push(released(1, &["A-1-1", "A-1-2"], ReleaseReason::Expired));
    Given::new(events)
        .when(fail(1, "evt_2"), at(20))
        .then_events([payment_failed_event(1, "evt_2")]);
}

#[test]
fn a_failure_webhook_delivered_twice_is_already_done() {
    let mut events = ann_holds();
    events.push(payment_failed_event(1, "evt_1"));
    events.push(released(1, &["A-1-1", "A-1-2"], ReleaseReason::PaymentFailed));
    Given::new(events).when(fail(1, "evt_1"), at(4)).then_nothing();
}

#[test]
fn a_failed_payment_for_an_unknown_reservation_is_refused() {
    Given::new(ann_holds())
        .when(fail(9, "evt_1"), at(3))
        .then_rejected(Rejection::UnknownReservation(rid(9)));
}

// ---------------------------------------------------------------------------------------------
// The per-customer seat limit (default: one order's worth, MAX_PER_ORDER = 4).
// ---------------------------------------------------------------------------------------------

/// The standard event with its own per-customer limit.
fn scheduled_with_limit(limit: u16) -> Event {
    Event::EventScheduled(EventScheduled {
        max_seats_per_customer: Some(limit),
        allow_orphan_seats: false,
        ..event_info()
    })
}

#[test]
fn a_second_order_over_the_customers_limit_is_refused() {
    // Ann holds 2 seats; 3 more would make 5, one over the default limit of 4.
    Given::new(ann_holds())
        .when(best("ann", 2, "B", 3, "k2"), at(1))
        .then_rejected(Rejection::CustomerLimit {
            limit: 4,
            have: 2,
            asked: 3,
        });
    // Up to the limit is fine, and other customers are not affected.
    Given::new(ann_holds())
        .when(reserve("ann", 2, &["B-1-1", "B-1-2"], "k2"), at(1))
        .then_events([reserved(2, "ann", &["B-1-1", "B-1-2"], 1)]);
    Given::new(ann_holds())
        .when(best("bob", 2, "B", 4, "k2"), at(1))
        .then_events([reserved(2, "bob", &["B-1-1", "B-1-2", "B-1-3", "B-1-4"], 1)]);
}

#[test]
fn booked_seats_count_towards_the_limit_and_ended_holds_do_not() {
    let paid = payment("evt_1", eur(ANN_AMOUNT));
    let mut events = ann_holds();
    events.push(booked(1, "ann", &["A-1-1", "A-1-2"], paid.clone(), false));
    Given::new(events.clone())
        .when(reserve("ann", 2, &["B-1-1", "B-1-2", "B-1-3"], "k2"), at(1))
        .then_rejected(Rejection::CustomerLimit {
            limit: 4,
            have: 2,
            asked: 3,
        });
    // A refunded booking gives the seats back to the limit too.
    events.push(refunded(1, "ann", paid, RefundReason::BookingCancelled));
    events.push(released(1, &["A-1-1", "A-1-2"], ReleaseReason::Refunded));
    Given::new(events)
        .when(best("ann", 2, "B", 4, "k2"), at(1))
        .then_events([reserved(2, "ann", &["B-1-1", "B-1-2", "B-1-3", "B-1-4"], 1)]);
    for reason in [
        ReleaseReason::Expired,
        ReleaseReason::Released,
        ReleaseReason::PaymentFailed,
    ] {
        let mut events = ann_holds();
        events.push(released(1, &["A-1-1", "A-1-2"], reason));
        Given::new(events)
            .when(best("ann", 2, "B", 4, "k2"), at(11))
            .then_events([reserved(2, "ann", &["B-1-1", "B-1-2", "B-1-3", "B-1-4"], 11)]);
    }
}

#[test]
fn a_retry_of_a_reservation_at_the_limit_answers_it_again() {
    Given::new([scheduled()])
        .and_keyed(reserved(1, "ann", &["A-1-1", "A-1-2", "A-1-3", "A-1-4"], 0), "k1")
        .when(reserve("ann", 9, &["A-1-1", "A-1-2", "A-1-3", "A-1-4"], "k1"), at(1))
        .then_nothing();
}

#[test]
fn the_organizer_may_allow_more_seats_per_customer_than_per_order() {
    let events = [
        scheduled_with_limit(8),
        reserved(1, "ann", &["A-1-1", "A-1-2", "A-1-3", "A-1-4"], 0),
        reserved(2, "ann", &["A-2-1", "A-2-2", "A-2-3"], 0),
    ];
    Given::new(events.clone())
        .when(best("ann", 3, "B", 1, "k3"), at(1))
        .then_events([reserved(3, "ann", &["B-1-3"], 1)]);
    Given::new(events)
        .when(best("ann", 3, "B", 2, "k3"), at(1))
        .then_rejected(Rejection::CustomerLimit {
            limit: 8,
            have: 7,
            asked: 2,
        });
}

#[test]
fn the_per_customer_limit_is_at_least_one_order_and_at_most_the_maximum() {
    for limit in [0, u16::from(MAX_PER_ORDER) - 1, MAX_SEATS_PER_CUSTOMER + 1, u16::MAX] {
        let info = EventScheduled {
            max_seats_per_customer: Some(limit),
            allow_orphan_seats: false,
            ..event_info()
        };
        invalid(
            info,
            format!("max_seats_per_customer must be max_seats_per_order ({MAX_PER_ORDER}) to {MAX_SEATS_PER_CUSTOMER}"),
        );
    }
    for limit in [u16::from(MAX_PER_ORDER), MAX_SEATS_PER_CUSTOMER] {
        let info = EventScheduled {
            max_seats_per_customer: Some(limit),
            allow_orphan_seats: false,
            ..event_info()
        };
        accepted(info);
    }
}

#[test]
fn a_late_payment_that_would_go_over_the_limit_is_refunded() {
    // Ann's first hold expired, she held 3 other seats since; paying the first late would
    // give her 5.
    let mut events = ann_holds();
    events.push(released(1, &["A-1-1", "A-1-2"], ReleaseReason::Expired));
    events.push(reserved(2, "ann", &["B-1-1", "B-1-2", "B-1-3"], 12));
    let paid = payment("evt_1", eur(ANN_AMOUNT));
    let state = Given::new(events)
        .when(pay(1, paid.clone()), at(13))
        .then_events([refunded(1, "ann", paid, RefundReason::CustomerLimit)]);
    assert_eq!(seat_state(&state, "A-1-1"), (SeatState::Available, None));
}

// ---------------------------------------------------------------------------------------------
// Properties: random command sequences keep the invariants.
// ---------------------------------------------------------------------------------------------

/// One random thing that happens to the event. Small ranges on purpose, so that customers,
/// keys, seats and provider event ids collide often.
#[derive(Debug, Clone)]
enum Step {
    /// Seat indexes; `SEAT_COUNT` stands for a seat the venue does not have.
    ReserveSeats {
        customer: u8,
        key: u8,
        seats: Vec<u32>,
    },
    /// Section 2 does not exist.
    ReserveBest {
        customer: u8,
        key: u8,
        section: u8,
        count: u8,
    },
    Release {
        reservation: u8,
        by_owner: bool,
        customer: u8,
    },
    Cancel {
        reservation: u8,
        by_owner: bool,
        customer: u8,
    },
    Expire {
        reservation: u8,
    },
    PaymentSucceeded {
        reservation: u8,
        exact_amount: bool,
        amount: i64,
        provider_event: u8,
    },
    PaymentFailed {
        reservation: u8,
        provider_event: u8,
    },
    Wait {
        minutes: u8,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let customer = 0u8..3;
    let key = 0u8..6;
    // Mostly one of the reservations made so far, sometimes an unknown one.
    let reservation = 0u8..=UNKNOWN_RESERVATION;
    prop_oneof![
        4 => (customer.clone(), key.clone(), prop::collection::vec(0..=SEAT_COUNT as u32, 0..=5))
            .prop_map(|(customer, key, seats)| Step::ReserveSeats { customer, key, seats }),
        3 => (customer.clone(), key, 0u8..3, 0u8..=5)
            .prop_map(|(customer, key, section, count)| Step::ReserveBest { customer, key, section, count }),
        2 => (reservation.clone(), any::<bool>(), customer.clone())
            .prop_map(|(reservation, by_owner, customer)| Step::Release { reservation, by_owner, customer }),
        2 => (reservation.clone(), any::<bool>(), customer)
            .prop_map(|(reservation, by_owner, customer)| Step::Cancel { reservation, by_owner, customer }),
        2 => reservation.clone().prop_map(|reservation| Step::Expire { reservation }),
        4 => (reservation.clone(), prop::bool::weighted(0.8), 0i64..25_000, 0u8..8).prop_map(
            |(reservation, exact_amount, amount, provider_event)| Step::PaymentSucceeded {
                reservation,
                exact_amount,
                amount,
                provider_event,
            }
        ),
        2 => (reservation, 0u8..8)
            .prop_map(|(reservation, provider_event)| Step::PaymentFailed { reservation, provider_event }),
        // Mostly short waits around the hold duration, now and then past the event's start.
        3 => prop_oneof![4 => 0u8..=15, 1 => 30u8..=120].prop_map(|minutes| Step::Wait { minutes }),
    ]
}

/// The `reservation` of a step that picks a reservation id nobody made.
const UNKNOWN_RESERVATION: u8 = 11;

/// A run of the state machine, remembering everything it needs to check the invariants.
struct Run {
    state: Option<EventState>,
    now: DateTime<Utc>,
    /// Every emitted event with the `Idempotency-Key` it was applied with, for the replay.
    log: Vec<(Event, Option<String>)>,
    /// Reservation ids in the order they were created.
    reservations: Vec<ReservationId>,
    next_id: u128,
}

impl Run {
    fn new() -> Self {
        let mut state = None;
        apply(&mut state, &scheduled(), None);
        // A few minutes before the onsale, so that early reservations are refused.
        Self {
            state,
            now: at(-3),
            log: vec![(scheduled(), None)],
            reservations: Vec::new(),
            next_id: 1,
        }
    }

    fn state(&self) -> &EventState {
        self.state.as_ref().expect("the event is scheduled")
    }

    /// A reservation made so far (counted from the newest), or one that never existed.
    fn pick(&self, n: u8) -> ReservationId {
        if self.reservations.is_empty() || n == UNKNOWN_RESERVATION {
            return rid(u128::MAX);
        }
        let n = usize::from(n) % self.reservations.len();
        self.reservations[self.reservations.len() - 1 - n]
    }

    fn owner(&self, id: ReservationId) -> CustomerId {
        self.state()
            .reservations
            .get(&id)
            .map_or_else(|| customer("c0"), |r| r.customer.clone())
    }

    /// Turns a step into a command, or `None` for a step that only moves the clock.
    fn command(&mut self, step: &Step) -> Option<(Command, Option<String>)> {
        let who = |n: u8| customer(&format!("c{n}"));
        let keyed = |n: u8| Some(format!("key{n}"));
        let command = match step {
            Step::Wait { minutes } => {
                self.now += Duration::minutes(i64::from(*minutes));
                return None;
            }
            Step::ReserveSeats { customer, key, seats } => {
                let layout = &self.state().layout;
                let ids = seats
                    .iter()
                    .map(|&i| {
                        if (i as usize) < SEAT_COUNT {
                            layout.seat_at(i)
                        } else {
                            seat("A-9-1")
                        }
                    })
                    .collect();
                self.next_id += 1;
                return Some((
                    Command::Reserve {
                        customer: who(*customer),
                        reservation_id: rid(self.next_id),
                        selection: SeatSelection::Explicit(ids),
                        idempotency_key: format!("key{key}"),
                        admission: None,
                    },
                    keyed(*key),
                ));
            }
            Step::ReserveBest {
                customer,
                key,
                section,
                count,
            } => {
                let section = SectionCode::parse(["A", "B", "C"][usize::from(*section)]).unwrap();
                self.next_id += 1;
                return Some((
                    Command::Reserve {
                        customer: who(*customer),
                        reservation_id: rid(self.next_id),
                        selection: SeatSelection::BestAvailable { section, count: *count },
                        idempotency_key: format!("key{key}"),
                        admission: None,
                    },
                    keyed(*key),
                ));
            }
            Step::Release {
                reservation,
                by_owner,
                customer,
            }
            | Step::Cancel {
                reservation,
                by_owner,
                customer,
            } => {
                let reservation_id = self.pick(*reservation);
                let customer = if *by_owner {
                    self.owner(reservation_id)
                } else {
                    who(*customer)
                };
                match step {
                    Step::Release { .. } => Command::Release {
                        customer,
                        reservation_id,
                    },
                    _ => Command::Cancel {
                        customer,
                        reservation_id,
                    },
                }
            }
            Step::Expire { reservation } => Command::Expire {
                reservation_id: self.pick(*reservation),
            },
            Step::PaymentSucceeded {
                reservation,
                exact_amount,
                amount,
                provider_event,
            } => {
                let id = self.pick(*reservation);
                let owed = self.state().reservations.get(&id).map_or(eur(0), |r| r.amount);
                let amount = if *exact_amount { owed } else { eur(*amount) };
                Command::PaymentSucceeded {
                    reservation_id: id,
                    payment: payment(&format!("evt_{provider_event}"), amount),
                }
            }
            Step::PaymentFailed {
                reservation,
                provider_event,
            } => Command::PaymentFailed {
                reservation_id: self.pick(*reservation),
                provider_event_id: format!("evt_{provider_event}"),
                payment_intent: format!("pi_{provider_event}"),
                message: None,
            },
        };
        Some((command, None))
    }

    /// Decides and applies one step, then checks every invariant.
    fn step(&mut self, step: &Step) {
        let Some((command, key)) = self.command(step) else {
            return;
        };
        let before = self.state().clone();
        // (e) `decide` never panics: a panic fails the property (and proptest shrinks it).
        let Ok(events) = decide_and_apply(&mut self.state, event_id(), &command, self.now, key.as_deref()) else {
            return; // A rejection records nothing.
        };
        for event in &events {
            if let Event::SeatsReserved(e) = event {
                self.reservations.push(e.reservation_id);
            }
            self.log.push((event.clone(), key.clone()));
        }
        let after = self.state();
        check_new_holds(&before, &events, self.now);
        check_holds_and_bookings(after);
        check_bookings_stay_booked(&before, after, &events);
        if let Command::Expire { reservation_id } = &command {
            check_expiry(&before, after, *reservation_id, &events, self.now);
        }
        check_counts(after);
        check_customer_limit(after);
        check_replay(after, &self.log);
    }
}

/// A new hold takes only free seats, at their price, for the hold duration.
fn check_new_holds(before: &EventState, events: &[Event], now: DateTime<Utc>) {
    for event in events {
        if let Event::SeatsReserved(e) = event {
            assert!(
                !before.reservations.contains_key(&e.reservation_id),
                "reservation id reused"
            );
            assert!(
                e.seats
                    .iter()
                    .all(|s| before.seats[before.layout.index_of(s).unwrap() as usize] == SeatState::Available)
            );
            assert_eq!(e.amount, price(&e.seats));
            assert_eq!(e.hold_until, now + Duration::minutes(HOLD_MINUTES));
            assert!((1..=usize::from(MAX_PER_ORDER)).contains(&e.seats.len()));
        }
    }
}

/// (a) Each held or booked seat belongs to exactly one live reservation whose status matches,
/// and each live reservation owns all its seats: so no seat is in two live holds.
fn check_holds_and_bookings(state: &EventState) {
    let mut owner: HashMap<u32, ReservationId> = HashMap::new();
    for r in state.reservations.values() {
        let expected = match r.status {
            ReservationStatus::Held => SeatState::Held,
            ReservationStatus::Booked => SeatState::Booked,
            ReservationStatus::Released(_) => continue,
        };
        for &i in &r.seats {
            assert_eq!(
                state.seats[i as usize], expected,
                "seat {i} of {:?} reservation {}",
                r.status, r.id
            );
            if let Some(other) = owner.insert(i, r.id) {
                panic!("seat {i} is in two live reservations: {other} and {}", r.id);
            }
        }
    }
    for (i, seat) in state.seats.iter().enumerate() {
        if !matches!(seat, SeatState::Held | SeatState::Booked) {
            continue;
        }
        assert!(
            owner.contains_key(&(i as u32)),
            "seat {i} is {seat:?} but no live reservation has it"
        );
        assert_eq!(state.holder_of(i as u32).as_ref(), owner.get(&(i as u32)));
    }
}

/// (b) A booked seat stays booked by the same reservation, unless a refund released it.
fn check_bookings_stay_booked(before: &EventState, after: &EventState, events: &[Event]) {
    let refunded: HashSet<u32> = events
        .iter()
        .filter_map(|e| match e {
            Event::SeatsReleased(e) if e.reason == ReleaseReason::Refunded => Some(&e.seats),
            _ => None,
        })
        .flatten()
        .map(|s| before.layout.index_of(s).unwrap())
        .collect();
    for (i, (was, now)) in before.seats.iter().zip(&after.seats).enumerate() {
        if let SeatState::Booked = was {
            let same = now == was && after.holder_of(i as u32) == before.holder_of(i as u32);
            let ok = same || (*now == SeatState::Available && refunded.contains(&(i as u32)));
            assert!(ok, "booked seat {i} went from {was:?} to {now:?} with {events:#?}");
        }
    }
}

/// (c) An expiry releases only that reservation's seats, and only if it was held and due.
fn check_expiry(before: &EventState, after: &EventState, id: ReservationId, events: &[Event], now: DateTime<Utc>) {
    let Some(r) = before.reservations.get(&id) else {
        panic!("an unknown reservation was expired: {events:#?}");
    };
    if events.is_empty() {
        assert!(
            r.status != ReservationStatus::Held || r.hold_until > now,
            "a due hold did not expire"
        );
        return;
    }
    assert_eq!(r.status, ReservationStatus::Held);
    assert!(r.hold_until <= now, "a hold expired before its deadline");
    assert_eq!(
        events,
        [Event::SeatsReleased(SeatsReleased {
            reservation_id: id,
            seats: before.seat_ids(&r.seats),
            reason: ReleaseReason::Expired,
        })]
    );
    for (i, (was, now)) in before.seats.iter().zip(&after.seats).enumerate() {
        if r.seats.contains(&(i as u32)) {
            assert_eq!((*was, *now), (SeatState::Held, SeatState::Available));
            assert_eq!(before.holder_of(i as u32), Some(id));
        } else {
            assert_eq!(was, now, "an expiry of {id} changed seat {i}");
        }
    }
}

/// (d) The counts add up to the number of seats and match a recount.
fn check_counts(state: &EventState) {
    let mut recount = Counts::default();
    for seat in &state.seats {
        match seat {
            SeatState::Available => recount.available += 1,
            SeatState::Held => recount.held += 1,
            SeatState::Booked => recount.booked += 1,
            SeatState::Withheld => recount.withheld += 1,
        }
    }
    assert_eq!(state.counts, recount);
    assert_eq!(
        state.counts.available + state.counts.held + state.counts.booked + state.counts.withheld,
        SEAT_COUNT as u32
    );
}

/// (g) No customer ever holds and owns more seats than the event's per-customer limit, and the
/// writer's tally of each customer's live reservations matches a recount.
fn check_customer_limit(state: &EventState) {
    let mut recount: HashMap<&CustomerId, Vec<ReservationId>> = HashMap::new();
    for r in state.reservations.values() {
        if matches!(r.status, ReservationStatus::Held | ReservationStatus::Booked) {
            recount.entry(&r.customer).or_default().push(r.id);
        }
    }
    let limit = usize::from(state.info.seats_per_customer());
    for (customer, ids) in &mut recount {
        let seats: usize = ids.iter().map(|id| state.reservations[id].seats.len()).sum();
        assert!(
            seats <= limit,
            "{customer} has {seats} seats, over the limit of {limit}"
        );
        assert_eq!(state.live_seats_of(customer), seats);
        let mut tallied: Vec<_> = state.live[*customer].ids().collect();
        tallied.sort();
        ids.sort();
        assert_eq!(&tallied, ids, "the live tally of {customer}");
    }
    assert_eq!(state.live.len(), recount.len(), "customers with live reservations");
}

/// (f) Replaying the log from scratch rebuilds the same state, as a writer does on restart.
fn check_replay(state: &EventState, log: &[(Event, Option<String>)]) {
    let mut replayed = None;
    for (event, key) in log {
        apply(&mut replayed, event, key.as_deref());
    }
    let replayed = replayed.expect("the log starts with EventScheduled");
    // A snapshot, stored and read back, restores the same state as the replay.
    let restored = crate::writer::snapshot::tests::through_a_snapshot(state);
    for (how, rebuilt) in [("replayed", &replayed), ("restored", &restored)] {
        assert_eq!(rebuilt.seats, state.seats, "{how}");
        assert_eq!(rebuilt.counts, state.counts, "{how}");
        assert_eq!(rebuilt.reservations, state.reservations, "{how}");
        assert_eq!(rebuilt.idempotency, state.idempotency, "{how}");
        assert_eq!(rebuilt.payments_seen, state.payments_seen, "{how}");
        assert_eq!(rebuilt.sequence, state.sequence, "{how}");
    }
    assert_eq!(restored.info, state.info);
    check_customer_limit(&replayed);
    check_customer_limit(&restored);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_command_sequences_keep_the_invariants(steps in prop::collection::vec(step(), 1..120)) {
        let mut run = Run::new();
        for step in &steps {
            run.step(step);
        }
    }
}

#[test]
fn an_old_event_whose_prices_do_not_add_up_in_an_amount_refuses_the_order() {
    // Recorded before prices were bounded: the log keeps what it has, the sum is checked.
    let mut info = event_info();
    Arc::make_mut(&mut info.seat_map).tiers[0].price = i64::MAX;
    Given::new([Event::EventScheduled(info)])
        .when(reserve("ann", 1, &["A-1-1", "A-1-2"], "k1"), at(1))
        .then_rejected(Rejection::AmountTooLarge);
}

#[test]
fn a_seat_is_one_byte_and_a_layout_keeps_no_per_seat_table() {
    // Ten million seats in one node: every byte of a seat's state is 10 MB there.
    assert_eq!(std::mem::size_of::<SeatState>(), 1);
    let state = EventState::scheduled(event_info(), None);
    let seats = state.layout.len();
    assert_eq!(state.seats.len(), seats);
    assert_eq!(state.seats.capacity(), seats, "no slack behind the seat states");
}
