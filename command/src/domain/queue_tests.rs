//! The waiting room's rules, decided on the pure domain: given / when / then, and a simulated
//! onsale of 100,000 fans for 5,000 seats.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use frontrow_schema::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use super::test_support::{self, *};
use super::*;
use crate::clock::{Clock, ManualClock};

const ADMISSION_SECS: u32 = 600;

/// An event of `rows` rows of `per_row` seats in section `A`, 4 seats per order at most.
fn info(rows: usize, per_row: u16) -> EventScheduled {
    EventScheduled {
        title: "Hot Onsale".into(),
        artist: "Everyone's Favourite".into(),
        venue: "Arena".into(),
        city: "Ghent".into(),
        ..test_support::info(event_id(), floor(&vec![per_row; rows]))
    }
}

/// The pure domain driven the way a writer drives it: decide, apply, record; and after every
/// round of commands, advance the queue. The clock is a [`ManualClock`] moved by hand.
struct Onsale {
    state: Option<EventState>,
    /// What was recorded, with the idempotency key of its envelope.
    log: Vec<(Event, Option<String>)>,
    clock: ManualClock,
    seed: u64,
}

impl Onsale {
    fn new(info: EventScheduled, max_size: Option<u32>, max_shoppers: u32) -> Self {
        let mut sim = Self {
            state: None,
            log: Vec::new(),
            clock: ManualClock::new(onsale() - Duration::hours(1)),
            seed: 0x5EED,
        };
        sim.exec(Command::Schedule(Box::new(info))).unwrap();
        sim.exec(Command::OpenQueue {
            organizer: organizer(),
            settings: QueueSettings {
                max_size,
                max_shoppers,
                admission_secs: ADMISSION_SECS,
            },
        })
        .unwrap();
        sim
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    fn state(&self) -> &EventState {
        self.state.as_ref().unwrap()
    }

    fn queue(&self) -> &QueueState {
        self.state().queue.as_ref().unwrap()
    }

    fn exec(&mut self, command: Command) -> Result<Vec<Event>, Rejection> {
        let key = match &command {
            Command::Reserve { idempotency_key, .. } => Some(idempotency_key.clone()),
            _ => None,
        };
        let now = self.now();
        let events = decide_and_apply(&mut self.state, event_id(), &command, now, key.as_deref())?;
        self.log.extend(events.iter().map(|e| (e.clone(), key.clone())));
        Ok(events)
    }

    fn advance(&mut self) -> Vec<Event> {
        self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        self.exec(Command::AdvanceQueue { seed: self.seed }).unwrap()
    }

    fn join(&mut self, n: u64) -> Result<u64, Rejection> {
        self.exec(Command::JoinQueue { customer: fan(n) })?;
        Ok(self.queue().ticket_of(&fan(n)).unwrap().0)
    }

    /// Fans `fans` join in this order.
    fn join_all(&mut self, fans: std::ops::RangeInclusive<u64>) {
        for n in fans {
            self.join(n).unwrap();
        }
    }

    fn reserve(&mut self, n: u64, ticket: Option<u64>, count: u8, id: u128) -> Result<Vec<Event>, Rejection> {
        self.exec(Command::Reserve {
            customer: fan(n),
            reservation_id: ReservationId::from_uuid(Uuid::from_u128(id)),
            selection: SeatSelection::BestAvailable {
                section: SectionCode::parse("A").unwrap(),
                count,
            },
            idempotency_key: format!("k{id}"),
            admission: ticket,
        })
    }

    fn pay(&mut self, id: u128) -> Vec<Event> {
        let paid = paid_in_full(self.state(), rid(id), id);
        self.exec(paid).unwrap()
    }

    /// Replaying the recorded log rebuilds the same waiting room, and so does its snapshot.
    fn check_replay(&self) {
        let mut replayed = None;
        for (e, key) in &self.log {
            apply(&mut replayed, e, key.as_deref());
        }
        let replayed = replayed.unwrap();
        assert_eq!(replayed.queue, self.state().queue);
        assert_eq!(replayed.reservations, self.state().reservations);
        let restored = crate::writer::snapshot::tests::through_a_snapshot(self.state());
        assert_eq!(restored.queue, self.state().queue);
        assert_eq!(restored.counts, self.state().counts);
    }
}

#[test]
fn joining_twice_gives_the_same_ticket_and_a_full_queue_refuses() {
    let mut sim = Onsale::new(info(1, 10), Some(2), 10);
    assert_eq!(sim.join(1), Ok(1));
    assert_eq!(sim.join(1), Ok(1), "a retried join is the same ticket");
    assert_eq!(sim.log.len(), 3, "and records nothing new");
    assert_eq!(sim.join(2), Ok(2));
    assert_eq!(sim.join(3), Err(Rejection::QueueFull { max_size: 2 }));
    // Leaving makes room; leaving twice records nothing more.
    sim.exec(Command::LeaveQueue { customer: fan(1) }).unwrap();
    assert_eq!(sim.exec(Command::LeaveQueue { customer: fan(1) }), Ok(vec![]));
    assert_eq!(sim.join(3), Ok(3));
    assert_eq!(sim.join(1), Err(Rejection::QueueFull { max_size: 2 }));
    sim.exec(Command::LeaveQueue { customer: fan(2) }).unwrap();
    assert_eq!(sim.join(1), Ok(4), "a fan who left joins again at the back");
    assert_eq!(
        sim.exec(Command::LeaveQueue { customer: fan(9) }),
        Err(Rejection::NotInQueue)
    );
}

#[test]
fn the_queue_can_only_be_opened_by_its_organizer_before_the_onsale() {
    let mut sim = Onsale::new(info(1, 10), None, 10);
    let settings = QueueSettings {
        max_size: None,
        max_shoppers: 10,
        admission_secs: ADMISSION_SECS,
    };
    let other = OrganizerId::parse("other").unwrap();
    let open = |organizer, settings| Command::OpenQueue { organizer, settings };
    assert_eq!(sim.exec(open(other, settings)), Err(Rejection::NotYourEvent));
    assert_eq!(
        sim.exec(open(organizer(), settings)),
        Ok(vec![]),
        "the same settings again"
    );
    let bad = QueueSettings {
        admission_secs: 5,
        ..settings
    };
    assert!(matches!(
        sim.exec(open(organizer(), bad)),
        Err(Rejection::InvalidQueue(_))
    ));
    sim.clock.advance(Duration::hours(2));
    let changed = QueueSettings {
        max_shoppers: 11,
        ..settings
    };
    assert_eq!(sim.exec(open(organizer(), changed)), Err(Rejection::OnsaleStarted));
}

#[test]
fn the_pre_queue_is_admitted_in_the_recorded_lottery_order_then_arrivals_in_order() {
    // 40 seats, 1 shopper at a time: every admission waits for the one before to finish.
    let mut sim = Onsale::new(info(1, 40), None, 1);
    sim.join_all(1..=30);
    assert!(sim.advance().is_empty(), "nothing happens before the onsale");
    sim.clock.advance(Duration::hours(1));
    for n in 31..=35 {
        // Arrivals after the onsale, before the writer drew the lottery: still behind it.
        assert_eq!(sim.join(n), Ok(n));
    }
    let first = sim.advance();
    let Event::Queue(QueueEvent::Shuffled(shuffle)) = &first[0] else {
        panic!("the onsale draws the lottery first: {first:?}")
    };
    assert_eq!(shuffle.pre_queue, 30);
    let mut expected: Vec<u64> = (1..=30).collect();
    lottery_order(shuffle.seed, &mut expected);
    expected.extend(31..=35);
    assert_ne!(
        expected[..30],
        (1..=30).collect::<Vec<_>>()[..],
        "the draw shuffled them"
    );
    let mut order = admitted(&first);
    // Each admitted fan buys one seat; the next is let in as the previous one's hold ends.
    while order.len() < expected.len() {
        let ticket = *order.last().unwrap();
        let who = ticket; // fan n holds ticket n here
        sim.reserve(who, Some(ticket), 1, u128::from(ticket)).unwrap();
        let mut events = sim.advance();
        assert!(
            admitted(&events).is_empty(),
            "the shopper holds seats: nobody else comes in"
        );
        sim.pay(u128::from(ticket));
        events.extend(sim.advance());
        order.extend(admitted(&events));
    }
    assert_eq!(order, expected, "admission order is queue order");
    sim.check_replay();
}

#[test]
fn admission_tokens_hold_one_reservation_and_are_spent_by_the_booking() {
    let mut sim = Onsale::new(info(2, 10), None, 5);
    sim.clock.advance(Duration::hours(1));
    sim.join(1).unwrap();
    sim.join(2).unwrap();
    assert_eq!(admitted(&sim.advance()), vec![1, 2]);
    assert_eq!(sim.reserve(1, None, 2, 10), Err(Rejection::AdmissionRequired));
    assert_eq!(
        sim.reserve(1, Some(2), 2, 10),
        Err(Rejection::AdmissionInvalid),
        "another fan's ticket"
    );
    assert_eq!(sim.reserve(1, Some(99), 2, 10), Err(Rejection::AdmissionInvalid));
    let held = sim.reserve(1, Some(1), 2, 10).unwrap();
    let Event::SeatsReserved(hold) = &held[0] else { panic!() };
    assert_eq!(hold.admission_ticket, Some(1));
    let rid10 = ReservationId::from_uuid(Uuid::from_u128(10));
    assert_eq!(
        sim.reserve(1, Some(1), 1, 11),
        Err(Rejection::AdmissionInUse(rid10)),
        "one live reservation per admission"
    );
    assert_eq!(
        sim.reserve(1, Some(1), 2, 10),
        Ok(vec![]),
        "a retry of the same reservation is fine"
    );
    let booked = sim.pay(10);
    assert!(matches!(
        &booked[..],
        [
            Event::SeatsBooked(_),
            Event::Queue(QueueEvent::Spent(AdmissionSpent { ticket: 1, .. }))
        ]
    ));
    assert_eq!(sim.reserve(1, Some(1), 1, 12), Err(Rejection::AdmissionSpent));
    // A released hold gives the admission back for another try, until it expires.
    sim.reserve(2, Some(2), 1, 20).unwrap();
    sim.exec(Command::Release {
        customer: fan(2),
        reservation_id: ReservationId::from_uuid(Uuid::from_u128(20)),
    })
    .unwrap();
    sim.clock.advance(Duration::seconds(i64::from(ADMISSION_SECS)));
    assert_eq!(sim.reserve(2, Some(2), 1, 21), Err(Rejection::AdmissionExpired));
    let lapsed = sim.advance();
    assert!(lapsed.contains(&Event::Queue(QueueEvent::Lapsed(AdmissionLapsed {
        customer: fan(2),
        ticket: 2
    }))));
    assert_eq!(sim.reserve(2, Some(2), 1, 21), Err(Rejection::AdmissionExpired));
    sim.check_replay();
}

#[test]
fn leaving_and_joining_again_does_not_give_a_fan_a_second_hold() {
    // A per-customer limit of two orders, so that only the one-hold rule is in the way.
    let mut sim = Onsale::new(
        EventScheduled {
            max_seats_per_customer: Some(8),
            allow_orphan_seats: false,
            ..info(2, 10)
        },
        None,
        5,
    );
    sim.clock.advance(Duration::hours(1));
    let first = sim.join(1).unwrap();
    assert_eq!(admitted(&sim.advance()), vec![first]);
    sim.reserve(1, Some(first), 2, 10).unwrap();
    sim.exec(Command::LeaveQueue { customer: fan(1) }).unwrap();
    let second = sim.join(1).unwrap();
    assert_ne!(first, second, "a new ticket");
    assert_eq!(admitted(&sim.advance()), vec![second]);
    let rid10 = ReservationId::from_uuid(Uuid::from_u128(10));
    assert_eq!(
        sim.reserve(1, Some(second), 2, 11),
        Err(Rejection::AdmissionInUse(rid10)),
        "the first hold is still live"
    );
    // Once the first hold is let go, the new admission may hold seats.
    sim.exec(Command::Release {
        customer: fan(1),
        reservation_id: rid10,
    })
    .unwrap();
    assert!(sim.reserve(1, Some(second), 2, 11).is_ok());
    sim.check_replay();
}

#[test]
fn a_lapsed_admission_frees_its_place_for_the_next_fan() {
    let mut sim = Onsale::new(info(1, 10), None, 1);
    sim.clock.advance(Duration::hours(1));
    sim.join_all(1..=3);
    assert_eq!(admitted(&sim.advance()), vec![1]);
    sim.clock.advance(Duration::seconds(i64::from(ADMISSION_SECS) - 1));
    assert!(sim.advance().is_empty(), "still fan 1's turn");
    sim.clock.advance(Duration::seconds(1));
    let events = sim.advance();
    assert!(matches!(
        &events[0],
        Event::Queue(QueueEvent::Lapsed(AdmissionLapsed { ticket: 1, .. }))
    ));
    assert_eq!(admitted(&events), vec![2]);
}

#[test]
fn when_nothing_is_left_everyone_waiting_is_told_and_returned_seats_go_to_the_waiting_list() {
    // 4 seats, orders of up to 4: one full order sells the event out.
    let mut sim = Onsale::new(info(1, 4), None, 10);
    sim.clock.advance(Duration::hours(1));
    sim.join_all(1..=5);
    assert_eq!(
        admitted(&sim.advance()),
        vec![1],
        "one fan could take every seat: one is let in"
    );
    sim.reserve(1, Some(1), 4, 1).unwrap();
    assert!(
        sim.advance().is_empty(),
        "a live hold could come back: not sold out yet"
    );
    sim.pay(1);
    let events = sim.advance();
    assert_eq!(
        events,
        vec![Event::Queue(QueueEvent::SoldOut(QueueSoldOut { waiting: 4 }))]
    );
    for n in 2..=5 {
        assert_eq!(sim.queue().ticket_of(&fan(n)).unwrap().1.status, TicketStatus::SoldOut);
    }
    assert_eq!(sim.join(6), Err(Rejection::SoldOut));
    assert_eq!(
        sim.exec(Command::JoinWaitlist { customer: fan(1) }).map(|e| e.len()),
        Ok(1)
    );
    sim.exec(Command::JoinWaitlist { customer: fan(2) }).unwrap();
    assert!(sim.advance().is_empty());
    // Fan 1 cancels: the seats come back and are offered to the waiting list in order.
    sim.exec(Command::Cancel {
        customer: fan(1),
        reservation_id: ReservationId::from_uuid(Uuid::from_u128(1)),
    })
    .unwrap();
    let offered = sim.advance();
    assert!(matches!(
        &offered[..],
        [Event::Queue(QueueEvent::WaitlistOffered(WaitlistOffered {
            ticket: 6,
            ..
        }))]
    ));
    assert_eq!(
        sim.reserve(1, Some(6), 2, 2).map(|e| e.len()),
        Ok(1),
        "the offer's ticket admits"
    );
    sim.check_replay();
}

/// 100,000 fans queue for 5,000 seats (20,000 of them before the onsale); 500 shop at once.
/// Admitted fans abandon (their admission lapses), let their hold expire, or buy 1 to 4
/// seats. Some fans leave the queue. At the end every seat is sold, fans were let in exactly
/// in queue order, and everyone still waiting was told "sold out".
#[test]
fn simulated_onsale_sells_every_seat_in_queue_order() {
    const FANS: u64 = 100_000;
    const PRE: u64 = 20_000;
    let mut rng = StdRng::seed_from_u64(7);
    let mut sim = Onsale::new(info(50, 100), None, 500);
    sim.join_all(1..=PRE);
    sim.clock.advance(Duration::hours(1));
    sim.join_all(PRE + 1..=FANS);
    // Fans who give up waiting, chosen now and leaving during the first minutes.
    let mut leavers: Vec<u64> = (0..1000).map(|_| rng.random_range(1..=FANS)).collect();
    leavers.sort_unstable();
    leavers.dedup();
    let mut left = HashSet::new();
    let mut order = Vec::new();
    let mut shuffle = None;
    let mut left_before_draw = HashSet::new();
    let mut to_pay = Vec::new();
    let mut next_id = 1u128;
    for step in 0..20_000 {
        if step < 10 {
            for &n in leavers.iter().skip(step * 100).take(100) {
                let t = sim.queue().ticket_of(&fan(n)).unwrap().1.status;
                if t == TicketStatus::Waiting {
                    sim.exec(Command::LeaveQueue { customer: fan(n) }).unwrap();
                    left.insert(n);
                }
            }
        }
        for id in to_pay.drain(..) {
            sim.pay(id);
        }
        let events = sim.advance();
        for e in &events {
            match e {
                Event::Queue(QueueEvent::Shuffled(s)) => {
                    shuffle = Some(s.clone());
                    left_before_draw = left.clone();
                }
                Event::Queue(QueueEvent::Admitted(a)) => {
                    order.push(a.ticket);
                    let n = a.ticket; // fan n holds ticket n: nobody rejoined
                    match rng.random_range(0..10) {
                        // Abandons: the admission lapses.
                        0..=2 => {}
                        // Holds seats and never pays: the hold expires.
                        3 => {
                            let count = rng.random_range(1..=4);
                            let _ = reserve_any(&mut sim, n, count, next_id);
                            next_id += 1;
                        }
                        _ => {
                            let count = rng.random_range(1..=4);
                            if reserve_any(&mut sim, n, count, next_id) {
                                to_pay.push(next_id);
                            }
                            next_id += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        // Expire due holds the way the writer's timer does.
        let now = sim.now();
        let due: Vec<ReservationId> = sim.state().due_holds(now).map(|r| r.id).collect();
        for reservation_id in due {
            sim.exec(Command::Expire { reservation_id }).unwrap();
        }
        if sim.queue().sold_out {
            break;
        }
        sim.clock.advance(Duration::seconds(20));
    }
    let state = sim.state();
    let queue = sim.queue();
    assert!(queue.sold_out, "the onsale ended sold out");
    assert_eq!(state.counts.booked, 5_000, "every seat sold");
    assert_eq!((state.counts.available, state.counts.held), (0, 0));
    // Admission order is queue order: the recorded lottery, then arrivals, minus leavers.
    let shuffle = shuffle.expect("the lottery was drawn");
    let mut expected: Vec<u64> = (1..=PRE).filter(|t| !left_before_draw.contains(t)).collect();
    assert!(!left_before_draw.is_empty(), "some fans left before the draw");
    assert_eq!(shuffle.pre_queue, expected.len() as u64);
    lottery_order(shuffle.seed, &mut expected);
    expected.extend(PRE + 1..=FANS);
    let queue_order: Vec<u64> = expected.into_iter().filter(|t| !left.contains(t)).collect();
    assert!(
        order.len() > 1_250,
        "more admissions than orders needed: {}",
        order.len()
    );
    assert_eq!(order[..], queue_order[..order.len()], "nobody admitted out of order");
    // Everyone who was neither let in nor left was told "sold out".
    let told: HashMap<_, _> = queue
        .tickets
        .iter()
        .filter(|(_, t)| t.status == TicketStatus::SoldOut)
        .map(|(n, _)| (*n, ()))
        .collect();
    assert_eq!(told.len() as u64, FANS - order.len() as u64 - left.len() as u64);
    assert!(queue.tickets.values().all(|t| t.status != TicketStatus::Waiting));
    let sold_out: Vec<_> = sim
        .log
        .iter()
        .filter_map(|(e, _)| match e {
            Event::Queue(QueueEvent::SoldOut(s)) => Some(s.waiting),
            _ => None,
        })
        .collect();
    assert_eq!(
        sold_out,
        vec![told.len() as u64],
        "said once, to everyone still waiting"
    );
    sim.check_replay();
}

/// Reserves `count` adjacent seats, or fewer when no run that long is left.
fn reserve_any(sim: &mut Onsale, n: u64, count: u8, id: u128) -> bool {
    for c in (1..=count).rev() {
        match sim.reserve(n, Some(n), c, id) {
            Ok(_) => return true,
            Err(Rejection::NoAdjacentSeats { .. }) => continue,
            Err(e) => panic!("fan {n}: {e}"),
        }
    }
    false
}
