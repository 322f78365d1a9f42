//! The seating rules against brute force, on random venues: rows of 1 to 30 seats, some held,
//! some withheld, with wheelchair spaces, companion seats and aisle seats anywhere the map's
//! rules allow, an optional standing zone, and the no-orphan rule on or off.
//!
//! Each oracle here is written from the rules' words, not from the code: "a seat is left alone"
//! is computed on the seats before and after, "some other choice avoids it" by trying every
//! choice. Order sizes are 1 to 6.

use chrono::Duration;
use frontrow_schema::seatmap::{Row, RowName, SeatAttributes, Section, Standing};
use frontrow_schema::*;
use proptest::prelude::*;

use super::test_support::{self, *};
use super::*;

const MAX_ORDER: u8 = 6;

/// What a seat is before the test's orders: free, held by an earlier order, or withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seat {
    Free,
    Held,
    Withheld,
}

/// One row: its seats' states and attributes.
#[derive(Debug, Clone)]
struct RowCase {
    seats: Vec<Seat>,
    attributes: SeatAttributes,
}

/// A venue: section `A` with its rows, front to back, and maybe a standing zone `FLOOR`
/// (its places' states).
#[derive(Debug, Clone)]
struct Venue {
    rows: Vec<RowCase>,
    zone: Vec<Seat>,
    allow_orphan_seats: bool,
}

fn seat_state() -> impl Strategy<Value = Seat> {
    prop_oneof![6 => Just(Seat::Free), 3 => Just(Seat::Held), 1 => Just(Seat::Withheld)]
}

/// Random wheelchair spaces and companion seats, then those without a partner next to them
/// dropped until the row passes the map's rules; random aisle seats.
fn row_attributes(marks: &[u8], aisle: &[bool]) -> SeatAttributes {
    // 1: wheelchair space, 2: companion seat.
    let mut marks: Vec<u8> = marks.to_vec();
    loop {
        let partnered =
            |marks: &[u8], i: usize, other: u8| (i > 0 && marks[i - 1] == other) || marks.get(i + 1) == Some(&other);
        let lonely: Vec<usize> = (0..marks.len())
            .filter(|&i| match marks[i] {
                1 => !partnered(&marks, i, 2),
                2 => !partnered(&marks, i, 1),
                _ => false,
            })
            .collect();
        if lonely.is_empty() {
            break;
        }
        for i in lonely {
            marks[i] = 0;
        }
    }
    let numbers = |f: &dyn Fn(usize) -> bool| (0..marks.len()).filter(|&i| f(i)).map(|i| i as u16 + 1).collect();
    SeatAttributes {
        wheelchair: numbers(&|i| marks[i] == 1),
        companion: numbers(&|i| marks[i] == 2),
        restricted_view: vec![],
        aisle: numbers(&|i| aisle[i]),
    }
}

fn row_case() -> impl Strategy<Value = RowCase> {
    (1usize..=30).prop_flat_map(|n| {
        (
            proptest::collection::vec(seat_state(), n),
            proptest::collection::vec(prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)], n),
            proptest::collection::vec(proptest::bool::weighted(0.15), n),
        )
            .prop_map(|(seats, marks, aisle)| RowCase {
                seats,
                attributes: row_attributes(&marks, &aisle),
            })
    })
}

fn venue() -> impl Strategy<Value = Venue> {
    (
        proptest::collection::vec(row_case(), 1..=4),
        prop_oneof![1 => Just(vec![]), 1 => proptest::collection::vec(seat_state(), 1..=8)],
        any::<bool>(),
    )
        .prop_map(|(rows, zone, allow_orphan_seats)| Venue {
            rows,
            zone,
            allow_orphan_seats,
        })
}

impl Venue {
    fn seat_map(&self) -> SeatMap {
        let tier = |code: &str, price| PriceTier {
            code: TierCode::parse(code).unwrap(),
            name: code.into(),
            price,
        };
        let mut sections = vec![Section {
            code: section("A"),
            name: "Floor".into(),
            rows: self
                .rows
                .iter()
                .enumerate()
                .map(|(r, row)| Row {
                    name: RowName::parse(&(r + 1).to_string()).unwrap(),
                    seats: row.seats.len() as u16,
                    tier: TierCode::parse("STD").unwrap(),
                    attributes: row.attributes.clone().into(),
                })
                .collect(),
            standing: None,
        }];
        if !self.zone.is_empty() {
            sections.push(Section {
                code: section("FLOOR"),
                name: "Standing".into(),
                rows: vec![],
                standing: Some(Standing {
                    capacity: self.zone.len() as u32,
                    tier: TierCode::parse("GA").unwrap(),
                }),
            });
        }
        SeatMap {
            tiers: vec![tier("STD", 4000), tier("GA", 2000)],
            sections,
        }
    }

    /// The event with the venue's seats held and withheld as drawn.
    fn state(&self) -> EventState {
        let seat_map = self.seat_map();
        assert_eq!(seat_map.validate(), Ok(()));
        let info = EventScheduled {
            max_seats_per_order: MAX_ORDER,
            allow_orphan_seats: self.allow_orphan_seats,
            ..test_support::info(event_id(), seat_map)
        };
        let mut state = None;
        apply(&mut state, &Event::EventScheduled(info), None);
        let ids = |wanted: Seat| -> Vec<SeatId> {
            let mut ids = Vec::new();
            for (r, row) in self.rows.iter().enumerate() {
                for (o, s) in row.seats.iter().enumerate() {
                    if *s == wanted {
                        ids.push(format!("A-{}-{}", r + 1, o + 1).parse().unwrap());
                    }
                }
            }
            for (o, s) in self.zone.iter().enumerate() {
                if *s == wanted {
                    ids.push(format!("FLOOR-GA-{}", o + 1).parse().unwrap());
                }
            }
            ids
        };
        let held = ids(Seat::Held);
        if !held.is_empty() {
            let event = Event::SeatsReserved(SeatsReserved {
                reservation_id: rid(0xF00),
                customer: customer("earlier"),
                seats: held,
                hold_until: onsale() + Duration::minutes(10),
                amount: eur(0),
                admission_ticket: None,
            });
            apply(&mut state, &event, None);
        }
        let withheld = ids(Seat::Withheld);
        if !withheld.is_empty() {
            let event = Event::SeatsWithheld(SeatsWithheld {
                seats: withheld,
                label: "house seats".into(),
                request: None,
            });
            apply(&mut state, &event, None);
        }
        state.unwrap()
    }
}

// ---------------------------------------------------------------------------------------------
// The oracles: rows as free flags, the rules' words computed directly.
// ---------------------------------------------------------------------------------------------

/// Row `r` of section `A` as free flags.
fn free_row(state: &EventState, r: usize) -> Vec<bool> {
    let span = state.layout.section_rows(0)[r];
    (span.start..span.start + u32::from(span.seats))
        .map(|i| state.seats[i as usize] == SeatState::Available)
        .collect()
}

fn free_rows(state: &EventState) -> Vec<Vec<bool>> {
    (0..state.layout.section_rows(0).len())
        .map(|r| free_row(state, r))
        .collect()
}

fn alone(free: &[bool], o: usize) -> bool {
    free[o] && (o == 0 || !free[o - 1]) && (o + 1 == free.len() || !free[o + 1])
}

/// The seats (offsets) that `picked` leaves alone that were not alone before.
fn newly_alone(free: &[bool], picked: &[usize]) -> Vec<usize> {
    let mut after = free.to_vec();
    for &p in picked {
        assert!(after[p], "picked a taken seat");
        after[p] = false;
    }
    (0..free.len())
        .filter(|&o| alone(&after, o) && !alone(free, o))
        .collect()
}

/// Every block of `k` free adjacent seats of a row, as its first offset.
fn blocks(free: &[bool], k: usize) -> Vec<usize> {
    (0..free.len())
        .filter(|&s| s + k <= free.len() && free[s..s + k].iter().all(|&f| f))
        .collect()
}

fn clean_block(free: &[bool], k: usize, s: usize) -> bool {
    newly_alone(free, &(s..s + k).collect::<Vec<_>>()).is_empty()
}

/// Whether some `k` free seats of the row, adjacent or not, leave no seat alone: every choice
/// tried, the first that works ends the search.
fn clean_choice_exists(free: &[bool], k: usize) -> bool {
    fn go(free: &[bool], k: usize, from: usize, picked: &mut Vec<usize>) -> bool {
        if picked.len() == k {
            return newly_alone(free, picked).is_empty();
        }
        for o in from..free.len() {
            if free[o] {
                picked.push(o);
                if go(free, k, o + 1, picked) {
                    return true;
                }
                picked.pop();
            }
        }
        false
    }
    go(free, k, 0, &mut Vec::new())
}

/// The seats a reservation decided for `selection` holds, or the rejection.
fn hold(state: &EventState, selection: SeatSelection) -> Result<Vec<SeatId>, Rejection> {
    let command = Command::Reserve {
        customer: customer("probe"),
        reservation_id: rid(0xBEEF),
        selection,
        idempotency_key: "probe".into(),
        admission: None,
    };
    match &decide(Some(state), event_id(), &command, onsale())?[..] {
        [Event::SeatsReserved(e)] => Ok(e.seats.clone()),
        other => panic!("a hold records one SeatsReserved, not {other:?}"),
    }
}

/// Row index (0-based) and offsets of seats of section `A`, which must all be in one row.
fn row_and_offsets(seats: &[SeatId]) -> (usize, Vec<usize>) {
    let r = seats[0].row.as_str().parse::<usize>().unwrap() - 1;
    assert!(seats.iter().all(|s| s.section.as_str() == "A" && s.row == seats[0].row));
    (r, seats.iter().map(|s| usize::from(s.number) - 1).collect())
}

/// Whether a block is `k` free adjacent seats of one row.
fn is_block(rows: &[Vec<bool>], seats: &[SeatId], k: usize) -> bool {
    let (r, offsets) = row_and_offsets(seats);
    offsets.len() == k && offsets.windows(2).all(|w| w[1] == w[0] + 1) && offsets.iter().all(|&o| rows[r][o])
}

/// An accessible block: it holds a wheelchair space next to its companion seat.
fn holds_pair(attributes: &SeatAttributes, s: usize, k: usize) -> bool {
    let number = |o: usize| o as u16 + 1;
    (s..s + k - 1).any(|o| {
        let (a, b) = (number(o), number(o + 1));
        (attributes.wheelchair.contains(&a) && attributes.companion.contains(&b))
            || (attributes.companion.contains(&a) && attributes.wheelchair.contains(&b))
    })
}

fn touches_accessible(attributes: &SeatAttributes, s: usize, k: usize) -> bool {
    (s..s + k).any(|o| {
        let n = o as u16 + 1;
        attributes.wheelchair.contains(&n) || attributes.companion.contains(&n)
    })
}

fn touches_aisle(attributes: &SeatAttributes, s: usize, k: usize) -> bool {
    (s..s + k).any(|o| attributes.aisle.contains(&(o as u16 + 1)))
}

fn best(count: u8, accessible: bool, aisle: bool) -> SeatSelection {
    let section = section("A");
    if !accessible && !aisle {
        SeatSelection::BestAvailable { section, count }
    } else {
        SeatSelection::BestWith {
            section,
            count,
            needs: SeatNeeds { accessible, aisle },
        }
    }
}

/// `count` places of the venue's standing zone.
fn floor(count: u8) -> SeatSelection {
    SeatSelection::Zone {
        zone: section("FLOOR"),
        count,
    }
}

/// The refusal of `asked` places from the standing zone when `available` are left.
fn not_enough_places(asked: u8, available: u32) -> Rejection {
    Rejection::NotEnoughPlaces {
        zone: section("FLOOR"),
        asked,
        available,
    }
}

/// The largest order the event can sell, by brute force: the longest free run of a row, or the
/// free places of a zone, at most an order.
fn largest_order(state: &EventState, venue: &Venue) -> u8 {
    let longest_run = free_rows(state)
        .iter()
        .flat_map(|free| free.split(|f| !f).map(<[bool]>::len).collect::<Vec<_>>())
        .max()
        .unwrap_or(0);
    let zone_free = zone_free(state, venue);
    longest_run.max(zone_free).min(usize::from(MAX_ORDER)) as u8
}

fn zone_free(state: &EventState, venue: &Venue) -> usize {
    let seated: usize = venue.rows.iter().map(|r| r.seats.len()).sum();
    state.seats[seated..]
        .iter()
        .filter(|s| **s == SeatState::Available)
        .count()
}

/// Best-available of every kind and size on `state`, checked against the rules.
fn check_best_available(state: &EventState, venue: &Venue) -> Result<(), TestCaseError> {
    let rows = free_rows(state);
    let rule = !venue.allow_orphan_seats;
    for k in 1..=usize::from(MAX_ORDER) {
        let all: Vec<(usize, usize)> = (0..rows.len())
            .flat_map(|r| blocks(&rows[r], k).into_iter().map(move |s| (r, s)))
            .collect();
        let attrs = |r: usize| &venue.rows[r].attributes;
        let clean = |&(r, s): &(usize, usize)| clean_block(&rows[r], k, s);
        for (accessible, aisle) in [(false, false), (true, false), (false, true), (true, true)] {
            if accessible && k < 2 {
                continue;
            }
            let candidates: Vec<(usize, usize)> = all
                .iter()
                .copied()
                .filter(|&(r, s)| !accessible || holds_pair(attrs(r), s, k))
                .collect();
            let got = hold(state, best(k as u8, accessible, aisle));
            let what = format!("best {k} accessible={accessible} aisle={aisle} in {rows:?} of {venue:?}");
            match got {
                Ok(seats) => {
                    prop_assert!(is_block(&rows, &seats, k), "{:?} is no block: {}", seats, what);
                    let (r, offsets) = row_and_offsets(&seats);
                    let s = offsets[0];
                    prop_assert!(
                        candidates.contains(&(r, s)),
                        "{:?} is not what was asked: {}",
                        seats,
                        what
                    );
                    if rule && !clean(&(r, s)) {
                        prop_assert!(
                            !candidates.iter().any(clean),
                            "{:?} strands a seat, but a block that strands none exists: {}",
                            seats,
                            what
                        );
                    }
                    // Then, in this order: wheelchair spaces kept for the fans who ask for them,
                    // an aisle seat for the fans who do, the front row.
                    let preference = |&(r, s): &(usize, usize)| {
                        (
                            rule && !clean(&(r, s)),
                            !accessible && touches_accessible(attrs(r), s, k),
                            aisle && !touches_aisle(attrs(r), s, k),
                            r,
                        )
                    };
                    let best_possible = candidates.iter().map(preference).min();
                    prop_assert_eq!(
                        Some(preference(&(r, s))),
                        best_possible,
                        "{:?} is not among the best blocks: {}",
                        seats,
                        what
                    );
                }
                Err(Rejection::NoAdjacentSeats { .. }) if !accessible => {
                    prop_assert!(candidates.is_empty(), "refused though a block exists: {}", what)
                }
                Err(Rejection::NoAccessibleSeats { .. }) if accessible => {
                    prop_assert!(candidates.is_empty(), "refused though a block exists: {}", what)
                }
                Err(e) => prop_assert!(false, "{}: {}", what, e),
            }
        }
    }
    Ok(())
}

/// An explicit selection: seats of one or two rows, from bit masks over each row's free seats.
fn check_explicit(state: &EventState, venue: &Venue, picks: &[(usize, u32)]) -> Result<(), TestCaseError> {
    let rows = free_rows(state);
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    for &(r, mask) in picks {
        let r = r % rows.len();
        for (o, _) in rows[r]
            .iter()
            .enumerate()
            .filter(|&(o, f)| *f && mask >> (o % 32) & 1 == 1)
        {
            if chosen.len() < usize::from(MAX_ORDER) && !chosen.contains(&(r, o)) {
                chosen.push((r, o));
            }
        }
    }
    if chosen.is_empty() {
        return Ok(());
    }
    let ids: Vec<SeatId> = chosen
        .iter()
        .map(|&(r, o)| format!("A-{}-{}", r + 1, o + 1).parse().unwrap())
        .collect();
    let mut expected: Vec<SeatId> = Vec::new();
    let mut touched: Vec<usize> = chosen.iter().map(|&(r, _)| r).collect();
    touched.sort();
    touched.dedup();
    for &r in &touched {
        let mut picked: Vec<usize> = chosen.iter().filter(|&&(r2, _)| r2 == r).map(|&(_, o)| o).collect();
        picked.sort();
        let alone_now = newly_alone(&rows[r], &picked);
        let k = picked.len();
        let together = picked[k - 1] - picked[0] + 1 == k;
        let avoidable = if together {
            blocks(&rows[r], k).iter().any(|&s| clean_block(&rows[r], k, s))
        } else {
            clean_choice_exists(&rows[r], k)
        };
        if !venue.allow_orphan_seats && !alone_now.is_empty() && avoidable {
            expected.extend(
                alone_now
                    .iter()
                    .map(|o| format!("A-{}-{}", r + 1, o + 1).parse().unwrap()),
            );
        }
    }
    let got = hold(state, SeatSelection::Explicit(ids.clone()));
    let what = format!("{ids:?} in {rows:?} of {venue:?}");
    if expected.is_empty() {
        prop_assert_eq!(got, Ok(ids), "{}", what);
    } else {
        prop_assert_eq!(got, Err(Rejection::OrphanSeat(expected)), "{}", what);
    }
    Ok(())
}

/// Sellable sizes agree with brute force and with what orders can actually take: a size is
/// sellable exactly when best-available of section `A` or the zone holds it.
fn check_sellable(state: &EventState, venue: &Venue) -> Result<(), TestCaseError> {
    let sizes = sellable(state);
    prop_assert_eq!(sizes.largest(), largest_order(state, venue), "{:?}", venue);
    prop_assert_eq!(sizes.is_empty(), state.counts.available == 0);
    for k in 1..=MAX_ORDER {
        let seated = hold(state, best(k, false, false)).is_ok();
        let zone = !venue.zone.is_empty() && hold(state, floor(k)).is_ok();
        prop_assert_eq!(sizes.contains(k), seated || zone, "size {} of {:?}", k, venue);
    }
    Ok(())
}

/// A waiting room opened on `state` with `fans` in line: the first round admits one fan per
/// largest sellable order the free seats hold (rounded up), and says "sold out" exactly when no
/// seat is free and no hold could come back.
fn check_waiting_room(state: &EventState, venue: &Venue, fans: u64) -> Result<(), TestCaseError> {
    let mut room = Some(state.clone());
    let opened = QueueOpened {
        max_size: None,
        max_shoppers: 1000,
        admission_secs: 600,
    };
    apply(&mut room, &Event::Queue(QueueEvent::Opened(opened)), None);
    for n in 0..fans {
        let join = Command::JoinQueue {
            customer: customer(&format!("queued{n}")),
        };
        decide_and_apply(&mut room, event_id(), &join, onsale(), None).unwrap();
    }
    let events = decide(room.as_ref(), event_id(), &Command::AdvanceQueue { seed: 1 }, onsale()).unwrap();
    let available = u64::from(state.counts.available);
    let largest = u64::from(largest_order(state, venue));
    let expected = if largest == 0 {
        0
    } else {
        available.div_ceil(largest).min(fans)
    };
    prop_assert_eq!(admitted(&events).len() as u64, expected, "admitted from {:?}", venue);
    let sold_out = events.iter().any(|e| matches!(e, Event::Queue(QueueEvent::SoldOut(_))));
    prop_assert_eq!(
        sold_out,
        state.counts.available == 0 && state.counts.held == 0,
        "sold out with {:?}",
        state.counts
    );
    Ok(())
}

/// One order of the sale: best-available (plain, accessible or on an aisle), a zone's places,
/// or explicit seats.
#[derive(Debug, Clone)]
enum Order {
    Best { count: u8, accessible: bool, aisle: bool },
    Zone(u8),
    Pick(Vec<(usize, u32)>),
}

fn order() -> impl Strategy<Value = Order> {
    prop_oneof![
        4 => (1u8..=MAX_ORDER, proptest::bool::weighted(0.2), proptest::bool::weighted(0.2))
            .prop_map(|(count, accessible, aisle)| Order::Best { count, accessible, aisle }),
        1 => (1u8..=MAX_ORDER).prop_map(Order::Zone),
        2 => proptest::collection::vec((0usize..4, any::<u32>()), 1..=2).prop_map(Order::Pick),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// On any venue: best-available of every kind and size leaves a seat alone only when no
    /// block it could take avoids it, and keeps wheelchair spaces when it can; an explicit
    /// selection is refused exactly when it leaves a seat alone that another choice of as many
    /// seats in the row would not, naming exactly those seats; the sellable sizes are the brute
    /// force's and what orders actually take.
    #[test]
    fn every_choice_follows_the_rules(
        venue in venue(),
        picks in proptest::collection::vec(proptest::collection::vec((0usize..4, any::<u32>()), 1..=2), 1..=6),
    ) {
        let state = venue.state();
        check_best_available(&state, &venue)?;
        for pick in &picks {
            check_explicit(&state, &venue, pick)?;
        }
        check_sellable(&state, &venue)?;
        check_waiting_room(&state, &venue, 8)?;
    }

    /// Orders of every kind until nothing sells: after each, the rules hold on the new map; a fan
    /// whose order cannot be had takes the largest sellable order instead, so the venue sells
    /// to its last free seat, and only then says "sold out".
    #[test]
    fn a_random_sale_sells_every_free_seat_and_then_sells_out(
        venue in venue(),
        orders in proptest::collection::vec(order(), 1..40),
    ) {
        let mut state = Some(venue.state());
        let free_at_start = state.as_ref().unwrap().counts.available;
        let mut orders = orders.into_iter().cycle();
        for n in 0..=free_at_start {
            let s = state.as_ref().unwrap();
            check_sellable(s, &venue)?;
            let sizes = sellable(s);
            if sizes.is_empty() {
                break;
            }
            let selection = match orders.next().unwrap() {
                Order::Best { count, accessible, aisle } => best(count, accessible, aisle),
                Order::Zone(count) => floor(count),
                Order::Pick(picks) => {
                    let rows = free_rows(s);
                    let ids: Vec<SeatId> = picks
                        .iter()
                        .flat_map(|&(r, mask)| {
                            let r = r % rows.len();
                            (0..rows[r].len())
                                .filter(|&o| rows[r][o] && mask >> (o % 32) & 1 == 1)
                                .map(move |o| format!("A-{}-{}", r + 1, o + 1))
                                .collect::<Vec<_>>()
                        })
                        .take(usize::from(MAX_ORDER))
                        .map(|id| id.parse().unwrap())
                        .collect::<std::collections::BTreeSet<SeatId>>()
                        .into_iter()
                        .collect();
                    SeatSelection::Explicit(ids)
                }
            };
            let command = |selection| Command::Reserve {
                customer: fan(n),
                reservation_id: rid(u128::from(n) + 1),
                selection,
                idempotency_key: format!("k{n}"),
                admission: None,
            };
            if decide_and_apply(&mut state, event_id(), &command(selection), onsale(), None).is_err() {
                // The largest order still on sale, wherever it is.
                let largest = sizes.largest();
                let s = state.as_ref().unwrap();
                let fallback = if hold(s, best(largest, false, false)).is_ok() {
                    best(largest, false, false)
                } else {
                    floor(largest)
                };
                let done = decide_and_apply(&mut state, event_id(), &command(fallback), onsale(), None);
                prop_assert!(done.is_ok(), "the largest sellable order {} failed: {:?}", largest, done);
            }
            let s = state.as_ref().unwrap();
            check_best_available(s, &venue)?;
        }
        let s = state.as_ref().unwrap();
        prop_assert_eq!(s.counts.available, 0, "every free seat sold: {:?}", free_rows(s));
        prop_assert!(sellable(s).is_empty());
        check_waiting_room(s, &venue, 3)?;
        // Every hold paid: nothing can come back, so the event is sold out.
        let holds: Vec<ReservationId> = s
            .reservations
            .values()
            .filter(|r| r.status == ReservationStatus::Held)
            .map(|r| r.id)
            .collect();
        for id in holds {
            let paid = paid_in_full(state.as_ref().unwrap(), id, id);
            decide_and_apply(&mut state, event_id(), &paid, onsale(), None).unwrap();
        }
        let s = state.as_ref().unwrap();
        prop_assert_eq!(s.counts.held, 0);
        check_waiting_room(s, &venue, 3)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Cases found by the properties, and the edges of the rules.
// ---------------------------------------------------------------------------------------------

/// A venue drawn row by row (`.` free, `x` held, `w` withheld), the rule on unless `allow`.
fn drawn(rows: &[(&str, SeatAttributes)], zone: usize, allow: bool) -> Venue {
    let seat = |c| match c {
        '.' => Seat::Free,
        'x' => Seat::Held,
        'w' => Seat::Withheld,
        other => panic!("no seat {other}"),
    };
    Venue {
        rows: rows
            .iter()
            .map(|(picture, attributes)| RowCase {
                seats: picture.chars().map(seat).collect(),
                attributes: attributes.clone(),
            })
            .collect(),
        zone: vec![Seat::Free; zone],
        allow_orphan_seats: allow,
    }
}

fn plain() -> SeatAttributes {
    SeatAttributes::default()
}

fn aisle(seats: &[u16]) -> SeatAttributes {
    SeatAttributes {
        aisle: seats.to_vec(),
        ..SeatAttributes::default()
    }
}

fn wheelchair(wheelchair: &[u16], companion: &[u16]) -> SeatAttributes {
    SeatAttributes {
        wheelchair: wheelchair.to_vec(),
        companion: companion.to_vec(),
        ..SeatAttributes::default()
    }
}

fn ids(ids: &[&str]) -> Vec<SeatId> {
    test_support::seats(ids)
}

/// Found by `every_choice_follows_the_rules`: an aisle order took the middle seat of three
/// (its only aisle seat) and left seats 1 and 3 alone, though seat 1 alone strands nothing.
#[test]
fn an_aisle_order_never_strands_a_seat_for_its_aisle() {
    let state = drawn(&[("...", aisle(&[2]))], 0, false).state();
    assert_eq!(hold(&state, best(1, false, true)), Ok(ids(&["A-1-1"])));
    // The pair on the aisle (1-2) would leave seat 3 alone: the clean pair 5-6 wins.
    let state = drawn(&[("...x..", aisle(&[1]))], 0, false).state();
    assert_eq!(hold(&state, best(2, false, true)), Ok(ids(&["A-1-5", "A-1-6"])));
    // Among blocks that strand nothing, the aisle still comes first, before the front row.
    let state = drawn(&[("....", plain()), ("....", aisle(&[4]))], 0, false).state();
    assert_eq!(hold(&state, best(2, false, true)), Ok(ids(&["A-2-3", "A-2-4"])));
    // With the rule off the aisle seat is taken.
    let state = drawn(&[("...", aisle(&[2]))], 0, true).state();
    assert_eq!(hold(&state, best(1, false, true)), Ok(ids(&["A-1-2"])));
}

/// A plain pair in `. . . x W C`: both pairs of plain seats leave one alone, so the order takes
/// the wheelchair space and its companion seat, which strand nothing.
#[test]
fn a_plain_order_takes_a_wheelchair_space_rather_than_strand_a_seat() {
    let row = || wheelchair(&[5], &[6]);
    let state = drawn(&[("...x..", row())], 0, false).state();
    assert_eq!(hold(&state, best(2, false, false)), Ok(ids(&["A-1-5", "A-1-6"])));
    // A clean plain pair anywhere in the section still comes first.
    let state = drawn(&[("...x..", row()), ("xx..", plain())], 0, false).state();
    assert_eq!(hold(&state, best(2, false, false)), Ok(ids(&["A-2-3", "A-2-4"])));
    // With the rule off, wheelchair spaces are kept: the centred plain pair.
    let state = drawn(&[("...x..", row())], 0, true).state();
    assert_eq!(hold(&state, best(2, false, false)), Ok(ids(&["A-1-2", "A-1-3"])));
}

/// The README's picture of accessible best-available, under the rule (the default).
#[test]
fn plain_pairs_keep_the_wheelchair_space_for_the_accessible_pair() {
    let mut venue = drawn(&[("........", wheelchair(&[4], &[5]))], 0, false);
    let mut take = |selection, expected: &[&str]| {
        let state = venue.state();
        let seats = hold(&state, selection).unwrap();
        assert_eq!(seats, ids(expected));
        for s in seats {
            venue.rows[0].seats[usize::from(s.number) - 1] = Seat::Held;
        }
    };
    // 4-5 is the centre, 2-3 would leave seat 1 alone.
    take(best(2, false, false), &["A-1-1", "A-1-2"]);
    // 6-7 would leave seat 8 alone.
    take(best(2, false, false), &["A-1-7", "A-1-8"]);
    // The only accessible pair; it leaves 3 and 6 alone, but no accessible pair avoids it.
    take(best(2, true, false), &["A-1-4", "A-1-5"]);
}

#[test]
fn rows_of_one_two_and_three_seats() {
    // One seat: a single takes it, nothing larger fits.
    let state = drawn(&[(".", plain())], 0, false).state();
    assert_eq!(hold(&state, best(1, false, false)), Ok(ids(&["A-1-1"])));
    assert_eq!(
        hold(&state, best(2, false, false)),
        Err(Rejection::NoAdjacentSeats {
            section: section("A"),
            count: 2
        })
    );
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-1-1"]))),
        Ok(ids(&["A-1-1"]))
    );
    // Two seats: every single leaves the other alone, so either may be picked.
    let state = drawn(&[("..", plain())], 0, false).state();
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-1-2"]))),
        Ok(ids(&["A-1-2"]))
    );
    // ... but best-available takes a single from a row where it strands nothing, if any.
    let state = drawn(&[("..", plain()), ("...", plain())], 0, false).state();
    assert_eq!(hold(&state, best(1, false, false)), Ok(ids(&["A-2-1"])));
    // Three seats: the middle one leaves both ends alone, an end seat does not.
    let state = drawn(&[("...", plain())], 0, false).state();
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-1-2"]))),
        Err(Rejection::OrphanSeat(ids(&["A-1-1", "A-1-3"])))
    );
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-1-3"]))),
        Ok(ids(&["A-1-3"]))
    );
    assert_eq!(
        hold(&state, best(4, false, false)),
        Err(Rejection::NoAdjacentSeats {
            section: section("A"),
            count: 4
        })
    );
    assert_eq!(
        hold(&state, best(7, false, false)),
        Err(Rejection::BadSeatCount {
            asked: 7,
            max: MAX_ORDER
        })
    );
}

#[test]
fn withheld_seats_strand_like_taken_ones_and_a_lone_seat_is_free_to_take() {
    // Seat 1 is alone already (seat 2 is withheld); seats 3-7 lie between withheld seats.
    let state = drawn(&[(".w.....w", plain())], 0, false).state();
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-1-4", "A-1-5", "A-1-6"]))),
        Err(Rejection::OrphanSeat(ids(&["A-1-3", "A-1-7"])))
    );
    assert_eq!(
        hold(
            &state,
            SeatSelection::Explicit(ids(&["A-1-1", "A-1-3", "A-1-4", "A-1-5"]))
        ),
        Ok(ids(&["A-1-1", "A-1-3", "A-1-4", "A-1-5"]))
    );
}

#[test]
fn a_selection_over_two_rows_is_judged_row_by_row() {
    // Row 1 has three free seats: any pair strands one, so its part is accepted. Row 2's single
    // at seat 2 strands seat 1, and seat 4 would not.
    let state = drawn(&[("x...x", plain()), ("....", plain())], 0, false).state();
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-1-2", "A-1-3", "A-2-2"]))),
        Err(Rejection::OrphanSeat(ids(&["A-2-1"])))
    );
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-2-4", "A-1-2", "A-1-3"]))),
        Ok(ids(&["A-2-4", "A-1-2", "A-1-3"]))
    );
    assert_eq!(
        hold(&state, SeatSelection::Explicit(ids(&["A-1-2", "A-2-1", "A-1-2"]))),
        Err(Rejection::DuplicateSeat(ids(&["A-1-2"]).remove(0)))
    );
}

#[test]
fn a_zone_of_one_place_sells_one_order_of_one() {
    let mut venue = drawn(&[("x", plain())], 1, false);
    let state = venue.state();
    assert_eq!(sellable(&state).largest(), 1);
    assert_eq!(hold(&state, floor(2)), Err(not_enough_places(2, 1)));
    assert_eq!(hold(&state, floor(1)), Ok(ids(&["FLOOR-GA-1"])));
    venue.zone[0] = Seat::Held;
    let state = venue.state();
    assert!(sellable(&state).is_empty());
    assert_eq!(hold(&state, floor(1)), Err(Rejection::ZoneSoldOut(section("FLOOR"))));
}

/// An organizer may keep places of a zone back (a guest list) by their ids: a fan's count skips
/// them, and they are not sellable until returned.
#[test]
fn withheld_places_of_a_zone_are_not_sold() {
    let mut venue = drawn(&[("x", plain())], 3, false);
    venue.zone[0] = Seat::Withheld;
    venue.zone[2] = Seat::Withheld;
    let state = venue.state();
    assert_eq!(sellable(&state).largest(), 1);
    assert_eq!(hold(&state, floor(1)), Ok(ids(&["FLOOR-GA-2"])));
    assert_eq!(hold(&state, floor(2)), Err(not_enough_places(2, 1)));
}

/// Sellable sizes look at every section and zone, and stop at the order limit.
#[test]
fn sellable_sizes_span_every_section_and_stop_at_the_order_limit() {
    use frontrow_schema::testsuite::{seat_map, seated, standing};
    let map = seat_map(
        &[("STD", "Standard", 4000), ("GA", "Standing", 2000)],
        vec![
            seated("A", "Front", &[("1", 3, "STD")]),
            seated("B", "Back", &[("1", 2, "STD"), ("2", 9, "STD")]),
            standing("FLOOR", "Floor", 2, "GA"),
        ],
    );
    let info = EventScheduled {
        max_seats_per_order: 4,
        ..test_support::info(event_id(), map)
    };
    let mut state = None;
    apply(&mut state, &Event::EventScheduled(info), None);
    let hold_all = |state: &mut Option<EventState>, n: u128, seats: &[&str]| {
        let event = Event::SeatsReserved(SeatsReserved {
            reservation_id: rid(n),
            customer: customer("earlier"),
            seats: ids(seats),
            hold_until: onsale() + Duration::minutes(10),
            amount: eur(0),
            admission_ticket: None,
        });
        apply(state, &event, None);
    };
    assert_eq!(
        sellable(state.as_ref().unwrap()).largest(),
        4,
        "row B-2 holds 9, orders stop at 4"
    );
    let row_b2: Vec<String> = (1..=9).map(|n| format!("B-2-{n}")).collect();
    hold_all(&mut state, 1, &row_b2.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(sellable(state.as_ref().unwrap()).largest(), 3, "row A-1");
    hold_all(&mut state, 2, &["A-1-2"]);
    assert_eq!(sellable(state.as_ref().unwrap()).largest(), 2, "row B-1, or the zone");
    hold_all(&mut state, 3, &["B-1-1", "FLOOR-GA-2"]);
    let s = state.as_ref().unwrap();
    assert_eq!(sellable(s).largest(), 1, "lone seats and one place");
    assert_eq!(s.counts.available, 4);
}
