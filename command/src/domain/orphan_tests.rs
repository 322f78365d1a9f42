//! The no-orphan-seat rule and the sold-out decision, on the pure domain.
//!
//! Given a seat map drawn as a picture (one string per row of section `A`: `.` free, `x`
//! taken), when one command is decided, then its events or its rejection. Property tests run
//! random mixes of 1 to 6 seat orders and check the rule's promise and [`sellable`] against
//! brute force.

use chrono::{DateTime, Duration, Utc};
use frontrow_schema::*;
use proptest::prelude::*;

use super::test_support::{self, seats as seat_ids, *};
use super::*;

/// One section `A` with rows `1..` of these lengths.
fn info(rows: &[u16], max_per_order: u8, allow_orphan_seats: bool) -> EventScheduled {
    EventScheduled {
        title: "Every Seat".into(),
        artist: "The Pairs".into(),
        city: "Ghent".into(),
        max_seats_per_order: max_per_order,
        allow_orphan_seats,
        ..test_support::info(event_id(), floor(rows))
    }
}

/// One event's sale, decided and applied the way the writer does it, a new fan per order.
struct Sale {
    state: Option<EventState>,
    orders: u128,
}

impl Sale {
    fn new(info: EventScheduled) -> Self {
        let mut state = None;
        decide_and_apply(
            &mut state,
            event_id(),
            &Command::Schedule(Box::new(info)),
            onsale(),
            None,
        )
        .unwrap();
        Self { state, orders: 0 }
    }

    /// Given: a map drawn row by row (`.` free, `x` taken by an earlier hold).
    fn given(rows: &[&str], max_per_order: u8, allow_orphan_seats: bool) -> Self {
        let lengths: Vec<u16> = rows.iter().map(|r| r.len() as u16).collect();
        let mut sale = Self::new(info(&lengths, max_per_order, allow_orphan_seats));
        for (r, row) in rows.iter().enumerate() {
            let taken: Vec<SeatId> = row
                .char_indices()
                .filter(|&(_, c)| c == 'x')
                .map(|(i, _)| format!("A-{}-{}", r + 1, i + 1).parse().unwrap())
                .collect();
            if taken.is_empty() {
                continue;
            }
            sale.orders += 1;
            let held = Event::SeatsReserved(SeatsReserved {
                reservation_id: rid(sale.orders),
                customer: fan(sale.orders),
                seats: taken,
                hold_until: onsale() + Duration::minutes(10),
                amount: eur(0),
                admission_ticket: None,
            });
            apply(&mut sale.state, &held, None);
        }
        sale
    }

    fn state(&self) -> &EventState {
        self.state.as_ref().unwrap()
    }

    fn exec(&mut self, command: Command) -> Result<Vec<Event>, Rejection> {
        self.exec_at(command, onsale())
    }

    fn exec_at(&mut self, command: Command, now: DateTime<Utc>) -> Result<Vec<Event>, Rejection> {
        decide_and_apply(&mut self.state, event_id(), &command, now, None)
    }

    fn reserve_command(&mut self, selection: SeatSelection) -> Command {
        self.orders += 1;
        Command::Reserve {
            customer: fan(self.orders),
            reservation_id: rid(self.orders),
            selection,
            idempotency_key: format!("k{}", self.orders),
            admission: None,
        }
    }

    /// When: a fan holds the best `count` seats of section `A`; then: the seats held.
    fn best(&mut self, count: u8) -> Result<Vec<SeatId>, Rejection> {
        let command = self.reserve_command(SeatSelection::BestAvailable {
            section: SectionCode::parse("A").unwrap(),
            count,
        });
        self.held(command)
    }

    /// When: a fan holds exactly these seats.
    fn pick(&mut self, seats: &[&str]) -> Result<Vec<SeatId>, Rejection> {
        let command = self.reserve_command(SeatSelection::Explicit(seat_ids(seats)));
        self.held(command)
    }

    /// The provider reports reservation `id` paid in full.
    fn pay(&mut self, id: ReservationId) {
        let paid = paid_in_full(self.state(), id, id);
        self.exec(paid).unwrap();
    }

    fn held(&mut self, command: Command) -> Result<Vec<SeatId>, Rejection> {
        match &self.exec(command)?[..] {
            [Event::SeatsReserved(e)] => Ok(e.seats.clone()),
            other => panic!("a hold records one SeatsReserved, not {other:?}"),
        }
    }

    /// The map as [`Sale::given`] draws it.
    fn picture(&self) -> Vec<String> {
        free_rows(self.state())
            .iter()
            .map(|row| row.iter().map(|&free| if free { '.' } else { 'x' }).collect())
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Best-available
// ---------------------------------------------------------------------------------------------

/// The reproduction: 3 rows of 20, fans buying pairs with best-available. Before the
/// rule, pairs went from the centre outwards and left one seat at each row's end after 27 pairs.
#[test]
fn pairs_sell_a_three_by_twenty_venue_to_the_last_seat() {
    let mut sale = Sale::new(info(&[20, 20, 20], 6, false));
    for pair in 0..30 {
        let held = sale
            .best(2)
            .unwrap_or_else(|e| panic!("pair {pair}: {e}; map {:?}", sale.picture()));
        assert_eq!(held.len(), 2);
        for row in sale.picture() {
            assert!(
                row.split('x').all(|run| run.len() % 2 == 0),
                "pair {pair}: odd run in {row}"
            );
        }
    }
    assert_eq!(sale.state().counts.available, 0, "every seat sold");
    assert!(sellable(sale.state()).is_empty());
}

#[test]
fn the_first_pair_keeps_both_halves_of_the_row_even() {
    // The centre pair (10-11) would leave 9 and 9: a pair off the centre by one leaves 8 and 10.
    let mut sale = Sale::given(&["...................."], 6, false);
    assert_eq!(sale.best(2), Ok(seat_ids(&["A-1-9", "A-1-10"])));
    // The next pair goes beside it on the other side, and the row grows outwards evenly.
    assert_eq!(sale.best(2), Ok(seat_ids(&["A-1-11", "A-1-12"])));
    assert_eq!(sale.best(2), Ok(seat_ids(&["A-1-7", "A-1-8"])));
    assert_eq!(sale.picture(), ["......xxxxxx........"]);
}

#[test]
fn a_block_that_strands_nothing_is_taken_even_from_a_row_further_back() {
    // Row 1 has three free seats: any pair there leaves one alone. Row 2 is free.
    let mut sale = Sale::given(&["xxxxx...xx", ".........."], 6, false);
    assert_eq!(sale.best(2), Ok(seat_ids(&["A-2-5", "A-2-6"])));
    // A single or a trio fits row 1 without stranding anything, so it still goes there.
    assert_eq!(sale.best(3), Ok(seat_ids(&["A-1-6", "A-1-7", "A-1-8"])));
}

#[test]
fn a_block_strands_a_seat_only_when_no_block_of_the_section_avoids_it() {
    let mut sale = Sale::given(&["xxxxx...xx", "xxxxxxxxxx"], 6, false);
    let held = sale.best(2).unwrap();
    assert_eq!(held.len(), 2);
    assert_eq!(
        sale.picture()[0].matches('.').count(),
        1,
        "the last resort leaves one seat"
    );
}

#[test]
fn a_single_fills_a_stranded_seat_before_breaking_a_run() {
    // Seat 1 is alone already; a single anywhere else in the row would only shorten a run.
    let mut sale = Sale::given(&[".x......"], 6, false);
    assert_eq!(sale.best(1), Ok(seat_ids(&["A-1-1"])));
}

#[test]
fn with_the_rule_off_best_available_is_the_frontmost_row_then_the_centre() {
    let mut sale = Sale::given(&["xxxxx...xx", ".........."], 6, true);
    assert_eq!(sale.best(2), Ok(seat_ids(&["A-1-6", "A-1-7"])), "strands seat 8");
    let mut sale = Sale::given(&["...................."], 6, true);
    assert_eq!(sale.best(2), Ok(seat_ids(&["A-1-10", "A-1-11"])), "the exact centre");
}

// ---------------------------------------------------------------------------------------------
// Explicit selections
// ---------------------------------------------------------------------------------------------

#[test]
fn an_explicit_selection_that_strands_a_seat_is_refused_naming_it() {
    let mut sale = Sale::given(&["......", "......"], 6, false);
    assert_eq!(
        sale.pick(&["A-1-2", "A-1-3"]),
        Err(Rejection::OrphanSeat(seat_ids(&["A-1-1"])))
    );
    assert_eq!(
        sale.pick(&["A-1-1", "A-1-3"]),
        Err(Rejection::OrphanSeat(seat_ids(&["A-1-2"])))
    );
    assert_eq!(
        sale.pick(&["A-1-2", "A-1-5"]),
        Err(Rejection::OrphanSeat(seat_ids(&["A-1-1", "A-1-6"])))
    );
    // Rows are checked one by one: row 2's part is fine, row 1's strands seat 6.
    assert_eq!(
        sale.pick(&["A-2-1", "A-2-2", "A-1-5"]),
        Err(Rejection::OrphanSeat(seat_ids(&["A-1-6"])))
    );
    assert_eq!(sale.picture(), ["......", "......"], "refusals change nothing");
    assert_eq!(sale.pick(&["A-1-3", "A-1-4"]), Ok(seat_ids(&["A-1-3", "A-1-4"])));
}

#[test]
fn an_explicit_selection_that_cannot_avoid_stranding_is_accepted() {
    // Three free seats in the row: every pair of them leaves one alone.
    let mut sale = Sale::given(&["xx...x", "......"], 6, false);
    assert_eq!(sale.pick(&["A-1-3", "A-1-4"]), Ok(seat_ids(&["A-1-3", "A-1-4"])));
    // Two runs of three: every pair of adjacent seats leaves one alone, so a couple may sit
    // together; scattered seats are compared with scattered seats, and one from the end of
    // each run leaves nobody alone.
    let mut sale = Sale::given(&["...x..."], 6, false);
    assert_eq!(
        sale.pick(&["A-1-2", "A-1-6"]),
        Err(Rejection::OrphanSeat(seat_ids(&["A-1-1", "A-1-3", "A-1-5", "A-1-7"])))
    );
    assert_eq!(sale.pick(&["A-1-1", "A-1-2"]).map(|s| s.len()), Ok(2));
    // A run of three beside a run of two: the pair has a clean block.
    let mut sale = Sale::given(&["...x.."], 6, false);
    assert_eq!(
        sale.pick(&["A-1-1", "A-1-2"]),
        Err(Rejection::OrphanSeat(seat_ids(&["A-1-3"])))
    );
    assert_eq!(sale.pick(&["A-1-5", "A-1-6"]).map(|s| s.len()), Ok(2));
}

#[test]
fn a_seat_alone_already_neither_blocks_a_selection_nor_counts_against_it() {
    let mut sale = Sale::given(&[".x......"], 6, false);
    assert_eq!(
        sale.pick(&["A-1-3", "A-1-4"]).map(|s| s.len()),
        Ok(2),
        "seat 1 was alone before"
    );
    assert_eq!(
        sale.pick(&["A-1-1"]).map(|s| s.len()),
        Ok(1),
        "taking a lone seat is welcome"
    );
    assert_eq!(sale.pick(&["A-1-5", "A-1-6", "A-1-7", "A-1-8"]).map(|s| s.len()), Ok(4));
    assert_eq!(sale.picture(), ["xxxxxxxx"]);
}

/// A late payment is not a choice of seats: the fan chose them when the rule allowed it and has
/// paid, so their seats are booked whenever they are all still free, even if the row has
/// changed around them since. Refusing would refund a sale to keep a seat that may never sell.
#[test]
fn a_late_payment_books_its_free_seats_even_where_they_now_strand_one() {
    let mut sale = Sale::given(&["......."], 6, false);
    assert_eq!(sale.pick(&["A-1-3", "A-1-4"]).unwrap().len(), 2);
    let late = rid(sale.orders);
    let after_the_hold = onsale() + Duration::minutes(11);
    sale.exec_at(Command::Expire { reservation_id: late }, after_the_hold)
        .unwrap();
    assert_eq!(sale.picture(), ["......."]);
    // Another fan takes 6-7 meanwhile; 3-4 would now leave seat 5 alone, and a fan picking
    // them now would be refused.
    sale.pick(&["A-1-6", "A-1-7"]).unwrap();
    assert_eq!(
        sale.pick(&["A-1-3", "A-1-4"]),
        Err(Rejection::OrphanSeat(seat_ids(&["A-1-5"])))
    );
    let amount = sale.state().reservations[&late].amount;
    let events = sale
        .exec_at(
            Command::PaymentSucceeded {
                reservation_id: late,
                payment: Payment {
                    provider_event_id: "evt_late".into(),
                    payment_intent: "pi_late".into(),
                    amount,
                },
            },
            after_the_hold,
        )
        .unwrap();
    assert!(
        matches!(events.as_slice(), [Event::SeatsBooked(SeatsBooked { late: true, .. })]),
        "{events:?}"
    );
    assert_eq!(sale.picture(), ["..xx.xx"]);
}

#[test]
fn with_the_rule_off_an_explicit_selection_may_strand_a_seat() {
    let mut sale = Sale::given(&["......"], 6, true);
    assert_eq!(sale.pick(&["A-1-2", "A-1-3"]).map(|s| s.len()), Ok(2));
    assert_eq!(sale.picture(), [".xx..."]);
}

#[test]
fn scheduling_again_with_the_rule_changed_is_another_event() {
    let sale = Sale::new(info(&[10], 6, false));
    let again = Command::Schedule(Box::new(info(&[10], 6, false)));
    assert_eq!(decide(sale.state.as_ref(), event_id(), &again, onsale()), Ok(vec![]));
    let changed = Command::Schedule(Box::new(info(&[10], 6, true)));
    assert_eq!(
        decide(sale.state.as_ref(), event_id(), &changed, onsale()),
        Err(Rejection::EventExists(event_id()))
    );
}

// ---------------------------------------------------------------------------------------------
// What can still be sold, and the waiting room
// ---------------------------------------------------------------------------------------------

#[test]
fn sellable_sizes_follow_the_longest_free_run_up_to_an_order() {
    let sizes = |rows: &[&str]| sellable(Sale::given(rows, 6, true).state());
    assert_eq!(sizes(&["..........", ".........."]).largest(), 6);
    assert_eq!(sizes(&["...x.x....", "x.x.xxxxxx"]).largest(), 4);
    let singles = sizes(&["x.x.x.xxxx", "xxxxxxxxx."]);
    assert!(
        singles.contains(1) && !singles.contains(2),
        "only singles left is still sellable"
    );
    assert!(!singles.is_empty());
    let none = sizes(&["xxxxxxxxxx", "xxxxxxxxxx"]);
    assert!(none.is_empty() && !none.contains(1));
}

/// Given a waiting room (opened before the onsale) and `fans` who joined after the onsale, so
/// their tickets `1..=fans` are in line in that order.
fn queued(sale: &mut Sale, fans: u128, max_shoppers: u32) {
    let opened = QueueOpened {
        max_size: None,
        max_shoppers,
        admission_secs: 600,
    };
    apply(&mut sale.state, &Event::Queue(QueueEvent::Opened(opened)), None);
    for n in 1..=fans {
        sale.exec(Command::JoinQueue {
            customer: fan(1000 + n),
        })
        .unwrap();
    }
}

#[test]
fn admission_lets_in_one_fan_per_sellable_single() {
    // Three seats left, each alone (the organizer allowed it); orders of up to 4. A full order
    // per admitted fan would let one fan in; each of them can take only one seat.
    let mut sale = Sale::given(&["x.x.x.xx"], 4, true);
    queued(&mut sale, 10, 100);
    let events = sale.exec(Command::AdvanceQueue { seed: 1 }).unwrap();
    assert_eq!(admitted(&events), vec![1, 2, 3]);
}

/// The reproduction behind a waiting room: with pairs, every seat sells and everyone
/// still waiting is told "sold out" (before the rule, six stranded singles kept it open).
#[test]
fn a_waiting_room_selling_pairs_sells_out_and_tells_everyone_waiting() {
    let mut sale = Sale::new(info(&[20, 20, 20], 6, false));
    queued(&mut sale, 50, 10);
    let mut bought = 0;
    let mut sold_out = None;
    for _ in 0..100 {
        let events = sale.exec(Command::AdvanceQueue { seed: 7 }).unwrap();
        for e in &events {
            if let Event::Queue(QueueEvent::SoldOut(s)) = e {
                sold_out = Some(s.waiting);
            }
        }
        for ticket in admitted(&events) {
            let who = sale.state().queue.as_ref().unwrap().tickets[&ticket].customer.clone();
            sale.orders += 1;
            let id = rid(sale.orders);
            let held = sale.exec(Command::Reserve {
                customer: who,
                reservation_id: id,
                selection: SeatSelection::BestAvailable {
                    section: SectionCode::parse("A").unwrap(),
                    count: 2,
                },
                idempotency_key: format!("k{id}"),
                admission: Some(ticket),
            });
            assert!(held.is_ok(), "fan {ticket} admitted for nothing: {held:?}");
            sale.pay(id);
            bought += 1;
        }
        if sold_out.is_some() {
            break;
        }
    }
    assert_eq!(bought, 30);
    assert_eq!(sale.state().counts.booked, 60);
    assert_eq!(sold_out, Some(20), "said once, to the 20 fans still waiting");
    let queue = sale.state().queue.as_ref().unwrap();
    assert_eq!(
        queue
            .tickets
            .values()
            .filter(|t| t.status == TicketStatus::SoldOut)
            .count(),
        20
    );
}

#[test]
fn only_singles_left_is_not_sold_out_until_they_are_sold() {
    let mut sale = Sale::given(&["x.xxx.xx"], 4, true);
    queued(&mut sale, 5, 100);
    let events = sale.exec(Command::AdvanceQueue { seed: 1 }).unwrap();
    assert_eq!(admitted(&events), vec![1, 2], "two singles, two fans");
    for (ticket, seat) in [(1u64, "A-1-2"), (2, "A-1-6")] {
        sale.exec(Command::Reserve {
            customer: fan(1000 + u128::from(ticket)),
            reservation_id: rid(900 + u128::from(ticket)),
            selection: SeatSelection::Explicit(seat_ids(&[seat])),
            idempotency_key: format!("single{ticket}"),
            admission: Some(ticket),
        })
        .unwrap();
    }
    // The holds of the given map and of the two singles could still come back.
    assert!(sale.exec(Command::AdvanceQueue { seed: 2 }).unwrap().is_empty());
    let holds: Vec<ReservationId> = sale.state().reservations.keys().copied().collect();
    for id in holds {
        sale.pay(id);
    }
    assert_eq!(
        sale.exec(Command::AdvanceQueue { seed: 3 }).unwrap(),
        vec![Event::Queue(QueueEvent::SoldOut(QueueSoldOut { waiting: 3 }))]
    );
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// The free seats a selection leaves alone that were not: the test's own oracle.
fn newly_alone(free: &[bool], picked: &[usize]) -> Vec<usize> {
    let mut after = free.to_vec();
    for &p in picked {
        after[p] = false;
    }
    let alone = |f: &[bool], o: usize| f[o] && (o == 0 || !f[o - 1]) && (o + 1 == f.len() || !f[o + 1]);
    (0..free.len())
        .filter(|&o| alone(&after, o) && !alone(free, o))
        .collect()
}

/// The free flags of each row of section `A`.
fn free_rows(state: &EventState) -> Vec<Vec<bool>> {
    state
        .layout
        .section_rows(0)
        .iter()
        .map(|row| {
            (row.start..row.start + u32::from(row.seats))
                .map(|i| state.seats[i as usize] == SeatState::Available)
                .collect()
        })
        .collect()
}

/// Some block of `count` free adjacent seats in some row strands nothing.
fn clean_block_exists(rows: &[Vec<bool>], count: usize) -> bool {
    rows.iter().any(|free| {
        (0..=free.len().saturating_sub(count)).any(|s| {
            let block: Vec<usize> = (s..s + count).collect();
            s + count <= free.len() && block.iter().all(|&o| free[o]) && newly_alone(free, &block).is_empty()
        })
    })
}

/// Some `count` free seats of this row (adjacent or not) strand nothing: every subset, by brute
/// force (rows are at most 12 seats here).
fn clean_selection_exists(free: &[bool], count: usize) -> bool {
    (0u32..1 << free.len()).any(|mask| {
        let picked: Vec<usize> = (0..free.len()).filter(|&o| mask >> o & 1 == 1).collect();
        picked.len() == count && picked.iter().all(|&o| free[o]) && newly_alone(free, &picked).is_empty()
    })
}

/// One thing a customer does: best-available of a size, explicit seats (row, first seat,
/// size, spread out or adjacent), or let an earlier hold go.
#[derive(Debug, Clone)]
enum Step {
    Best(u8),
    Pick {
        row: usize,
        first: usize,
        size: usize,
        spread: bool,
    },
    Release(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1u8..=6).prop_map(Step::Best),
        3 => (0usize..3, 0usize..12, 1usize..=6, any::<bool>())
            .prop_map(|(row, first, size, spread)| Step::Pick { row, first, size, spread }),
        1 => (0usize..64).prop_map(Step::Release),
    ]
}

fn release(sale: &mut Sale, n: usize) {
    let mut live: Vec<ReservationId> = sale
        .state()
        .reservations
        .values()
        .filter(|r| r.status == ReservationStatus::Held)
        .map(|r| r.id)
        .collect();
    live.sort();
    if live.is_empty() {
        return;
    }
    let id = live[n % live.len()];
    let customer = sale.state().reservations[&id].customer.clone();
    sale.exec(Command::Release {
        customer,
        reservation_id: id,
    })
    .unwrap();
}

/// The seats of a `Pick` step: `size` free seats of the row from `first` on, next to each
/// other or every other one.
fn pick_seats(state: &EventState, row: usize, first: usize, size: usize, spread: bool) -> Vec<usize> {
    let free = &free_rows(state)[row];
    let stride = if spread { 2 } else { 1 };
    (first..free.len())
        .step_by(stride)
        .filter(|&o| free[o])
        .take(size)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// With the rule on, whatever mix of orders, picks and releases: best-available leaves a
    /// seat alone only when no block of its size avoids it; an explicit selection is refused
    /// exactly when it strands a seat another selection of its size in the row would not,
    /// naming exactly the seats it would strand; and a refusal changes nothing.
    #[test]
    fn no_seat_is_stranded_when_a_clean_choice_existed(
        lengths in proptest::collection::vec(1u16..=12, 3),
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let mut sale = Sale::new(info(&lengths, 6, false));
        for step in steps {
            let rows = free_rows(sale.state());
            match step {
                Step::Best(count) => match sale.best(count) {
                    Ok(held) => {
                        let r = held[0].row.as_str().parse::<usize>().unwrap() - 1;
                        let block: Vec<usize> = held.iter().map(|s| usize::from(s.number) - 1).collect();
                        if !newly_alone(&rows[r], &block).is_empty() {
                            prop_assert!(!clean_block_exists(&rows, held.len()), "{held:?} stranded a seat");
                        }
                    }
                    Err(Rejection::NoAdjacentSeats { .. }) => {
                        prop_assert!(!rows.iter().any(|f| f.windows(count.into()).any(|w| w.iter().all(|x| *x))));
                    }
                    Err(e) => prop_assert!(false, "best-available: {e}"),
                },
                Step::Pick { row, first, size, spread } => {
                    let picked = pick_seats(sale.state(), row, first, size, spread);
                    if picked.is_empty() {
                        continue;
                    }
                    let ids: Vec<String> = picked.iter().map(|o| format!("A-{}-{}", row + 1, o + 1)).collect();
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    let alone = newly_alone(&rows[row], &picked);
                    let together = picked[picked.len() - 1] - picked[0] + 1 == picked.len();
                    let avoidable = !alone.is_empty()
                        && if together {
                            clean_block_exists(&rows[row..=row], picked.len())
                        } else {
                            clean_selection_exists(&rows[row], picked.len())
                        };
                    let before = sale.picture();
                    match sale.pick(&ids) {
                        Ok(_) => prop_assert!(!avoidable, "{ids:?} in {before:?}"),
                        Err(Rejection::OrphanSeat(named)) => {
                            prop_assert!(avoidable, "{ids:?} refused in {before:?}");
                            let expected: Vec<SeatId> = alone
                                .iter()
                                .map(|o| format!("A-{}-{}", row + 1, o + 1).parse().unwrap())
                                .collect();
                            prop_assert_eq!(named, expected);
                            prop_assert_eq!(sale.picture(), before);
                        }
                        Err(e) => prop_assert!(false, "pick {ids:?}: {e}"),
                    }
                }
                Step::Release(n) => release(&mut sale, n),
            }
        }
    }

    /// Random orders of 1 to 6 seats until nothing is left: at every step an order size is
    /// sellable exactly when best-available finds its block, a fan whose size no longer fits
    /// takes the largest size still sellable, and so the venue sells to its last seat.
    #[test]
    fn a_venue_stays_sellable_to_its_last_seat(
        lengths in proptest::collection::vec(1u16..=30, 1..=4),
        sizes in proptest::collection::vec(1u8..=6, 1..200),
        allow_orphan_seats in any::<bool>(),
    ) {
        let mut sale = Sale::new(info(&lengths, 6, allow_orphan_seats));
        let total: u32 = lengths.iter().map(|&n| u32::from(n)).sum();
        let mut sizes = sizes.into_iter().cycle();
        for _ in 0..total {
            let sellable_now = sellable(sale.state());
            for size in 1..=6u8 {
                let probe = Command::Reserve {
                    customer: fan(u128::MAX),
                    reservation_id: rid(u128::MAX),
                    selection: SeatSelection::BestAvailable {
                        section: SectionCode::parse("A").unwrap(),
                        count: size,
                    },
                    idempotency_key: "probe".into(),
                    admission: None,
                };
                let fits = decide(sale.state.as_ref(), event_id(), &probe, onsale()).is_ok();
                prop_assert_eq!(fits, sellable_now.contains(size), "size {} in {:?}", size, sale.picture());
            }
            if sellable_now.is_empty() {
                break;
            }
            let wanted = sizes.next().unwrap();
            let size = if sellable_now.contains(wanted) { wanted } else { sellable_now.largest() };
            prop_assert!(sale.best(size).is_ok());
        }
        prop_assert_eq!(sale.state().counts.available, 0, "sold to the last seat: {:?}", sale.picture());
        prop_assert!(sellable(sale.state()).is_empty());
    }

    /// Fans buying only pairs sell rows of even length to the last seat, every pair adjacent.
    #[test]
    fn pairs_sell_even_rows_to_the_last_seat(halves in proptest::collection::vec(1u16..=20, 1..=4)) {
        let lengths: Vec<u16> = halves.iter().map(|h| h * 2).collect();
        let mut sale = Sale::new(info(&lengths, 6, false));
        let pairs: u16 = halves.iter().sum();
        for _ in 0..pairs {
            prop_assert!(sale.best(2).is_ok(), "{:?}", sale.picture());
        }
        prop_assert_eq!(sale.state().counts.available, 0);
    }
}
