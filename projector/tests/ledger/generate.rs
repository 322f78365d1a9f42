//! A realistic event log, made by the real domain: commands decided by `decide`, applied with
//! `apply`, wrapped in envelopes and appended to a journal, as the partition writers do.
//!
//! Fans hold seats (named or best available), pay on time or late, pay the wrong amount or
//! twice, have payments fail, let holds go, let them expire, and cancel bookings. The venue is
//! mixed: three seated sections and a standing zone (`FLOOR`) that fans reserve counts from.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use frontrow_command::domain::{self, Command, EventState, ReservationStatus, SeatSelection, SeatState};
use frontrow_command::writer::{Meta, record};
use frontrow_journal::{Journal, Record};
use frontrow_schema::partition::partition_of;
use frontrow_schema::testsuite;
use frontrow_schema::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

pub struct Generator {
    pub journal: Arc<dyn Journal>,
    pub states: HashMap<EventId, Option<EventState>>,
    events: Vec<EventId>,
    rng: StdRng,
    now: DateTime<Utc>,
    pending: HashMap<u32, Vec<Record>>,
    next_payment: u64,
    /// Payments still on their way: when they arrive, for which event and reservation.
    late: Vec<(DateTime<Utc>, EventId, ReservationId, Money)>,
    /// Records appended so far.
    pub records: u64,
}

fn map(rows: u16, seats: u16) -> SeatMap {
    let row = |name: &str, tier: &str| Row {
        name: frontrow_schema::seatmap::RowName::parse(name).unwrap(),
        seats,
        tier: TierCode::parse(tier).unwrap(),
        attributes: Default::default(),
    };
    let section = |code: &str, tier: &str| Section {
        code: SectionCode::parse(code).unwrap(),
        name: format!("Section {code}"),
        rows: (1..=rows).map(|r| row(&r.to_string(), tier)).collect(),
        standing: None,
    };
    SeatMap {
        tiers: vec![
            PriceTier {
                code: TierCode::parse("GOLD").unwrap(),
                name: "Gold".into(),
                price: 9900,
            },
            PriceTier {
                code: TierCode::parse("STD").unwrap(),
                name: "Standard".into(),
                price: 4500,
            },
            PriceTier {
                code: TierCode::parse("GA").unwrap(),
                name: "General admission".into(),
                price: 3000,
            },
        ],
        sections: vec![
            section("A", "GOLD"),
            section("B", "STD"),
            section("C", "STD"),
            Section {
                code: SectionCode::parse("FLOOR").unwrap(),
                name: "Standing floor".into(),
                rows: vec![],
                standing: Some(Standing {
                    capacity: 30,
                    tier: TierCode::parse("GA").unwrap(),
                }),
            },
        ],
    }
}

impl Generator {
    /// Schedules `events` events (some with a seat-map change before the onsale).
    pub async fn new(journal: Arc<dyn Journal>, events: usize, rows: u16, seats: u16, seed: u64) -> Self {
        let mut g = Self {
            journal,
            states: HashMap::new(),
            events: Vec::new(),
            rng: StdRng::seed_from_u64(seed),
            now: Utc.with_ymd_and_hms(2027, 1, 10, 9, 0, 0).unwrap(),
            pending: HashMap::new(),
            next_payment: 0,
            late: Vec::new(),
            records: 0,
        };
        let onsale = g.now + Duration::minutes(30);
        for i in 0..events {
            let event_id = EventId::from_uuid(Uuid::from_u64_pair(seed, i as u64 + 1));
            let info = EventScheduled {
                organizer: OrganizerId::parse(if i % 2 == 0 { "acme" } else { "other" }).unwrap(),
                title: format!("Show {i}"),
                starts_at: onsale + Duration::days(3650),
                hold_minutes: HoldMinutes::new(5).unwrap(),
                // Forty customers buy the whole house again and again: the limit stays out
                // of the way.
                max_seats_per_customer: Some(frontrow_command::domain::MAX_SEATS_PER_CUSTOMER),
                // Seats are picked at random here, whatever they leave alone: the no-orphan rule is off.
                allow_orphan_seats: true,
                ..testsuite::sample_event(event_id, onsale, map(rows.max(2) - u16::from(i % 3 == 0), seats))
            };
            g.command(event_id, Command::Schedule(Box::new(info)), None);
            if i % 3 == 0 {
                let change = Command::ChangeSeatMap {
                    organizer: OrganizerId::parse("acme").unwrap(),
                    seat_map: map(rows.max(2), seats),
                };
                g.command(event_id, change, None);
            }
            g.events.push(event_id);
        }
        g.now = onsale + Duration::seconds(1);
        g.flush().await;
        g
    }

    fn command(&mut self, event_id: EventId, command: Command, key: Option<String>) {
        let state = self.states.entry(event_id).or_default();
        let Ok(events) = domain::decide(state.as_ref(), event_id, &command, self.now) else {
            return;
        };
        let key = key.or_else(|| match &command {
            Command::Reserve { idempotency_key, .. } => Some(idempotency_key.clone()),
            _ => None,
        });
        let partition = partition_of(&event_id, self.journal.partitions());
        let meta = Meta {
            idempotency_key: key,
            ..Meta::default()
        };
        let rng = &mut self.rng;
        let new_id = || Uuid::from_u64_pair(rng.random(), rng.random());
        let records = self.pending.entry(partition).or_default();
        record(state, event_id, &events, self.now, &meta, new_id, records);
    }

    /// Appends what was decided, in batches like a writer's group commit.
    pub async fn flush(&mut self) {
        let mut pending: Vec<_> = std::mem::take(&mut self.pending).into_iter().collect();
        pending.sort_by_key(|(p, _)| *p);
        for (partition, records) in pending {
            for chunk in records.chunks(5000) {
                self.records += chunk.len() as u64;
                self.journal.append(partition, chunk.to_vec()).await.unwrap();
            }
        }
    }

    fn payment(&mut self, amount: Money) -> Payment {
        self.next_payment += 1;
        Payment {
            provider_event_id: format!("evt_{}_{}", self.rng.random::<u32>(), self.next_payment),
            payment_intent: format!("pi_{}", self.next_payment),
            amount,
        }
    }

    /// Decides `n` fan commands (and the expiries that fall due meanwhile), then appends them.
    pub async fn step(&mut self, n: usize) {
        for _ in 0..n {
            self.now += Duration::milliseconds(self.rng.random_range(50..4000));
            let event_id = self.events[self.rng.random_range(0..self.events.len())];
            self.expire_due(event_id);
            let roll = self.rng.random_range(0..100);
            let Some(state) = self.states.get(&event_id).and_then(Option::as_ref) else {
                continue;
            };
            let pick = |rng: &mut StdRng, status: ReservationStatus| {
                let mut ids: Vec<_> = state
                    .reservations
                    .values()
                    .filter(|r| r.status == status)
                    .map(|r| (r.id, r.customer.clone(), r.amount))
                    .collect();
                ids.sort_by_key(|r| r.0);
                (!ids.is_empty()).then(|| ids.swap_remove(rng.random_range(0..ids.len())))
            };
            let customer = CustomerId::parse(&format!("fan{}", self.rng.random_range(0..40))).unwrap();
            let command = match roll {
                0..=44 => {
                    let selection = if self.rng.random_bool(0.5) {
                        // Seat ids are for seats; places of the zone are reserved by count.
                        let free: Vec<u32> = (0..state.seats.len() as u32)
                            .filter(|&i| state.seats[i as usize] == SeatState::Available)
                            .filter(|&i| !state.layout.row_of(i).standing)
                            .collect();
                        if free.is_empty() {
                            continue;
                        }
                        let start = self.rng.random_range(0..free.len());
                        let count = self.rng.random_range(1..=3).min(free.len() - start);
                        SeatSelection::Explicit(
                            free[start..start + count]
                                .iter()
                                .map(|&i| state.layout.seat_at(i))
                                .collect(),
                        )
                    } else {
                        let section = ["A", "B", "C", "FLOOR"][self.rng.random_range(0..4)];
                        let (section, count) = (SectionCode::parse(section).unwrap(), self.rng.random_range(1..=4));
                        match state
                            .layout
                            .section_index(&section)
                            .and_then(|s| state.layout.zone_span(s))
                        {
                            Some(_) => SeatSelection::Zone { zone: section, count },
                            None => SeatSelection::BestAvailable { section, count },
                        }
                    };
                    Command::Reserve {
                        customer,
                        reservation_id: ReservationId::from_uuid(Uuid::from_u64_pair(
                            self.rng.random(),
                            self.rng.random(),
                        )),
                        selection,
                        idempotency_key: format!("k{}", self.rng.random::<u64>()),
                        admission: None,
                    }
                }
                45..=74 => {
                    // A held reservation is paid; now and then with the wrong amount, or twice.
                    let Some((rid, _, mut amount)) = pick(&mut self.rng, ReservationStatus::Held) else {
                        continue;
                    };
                    if self.rng.random_range(0..30) == 0 {
                        amount.amount += 100;
                    }
                    if self.rng.random_range(0..40) == 0 {
                        self.late
                            .push((self.now + Duration::seconds(30), event_id, rid, amount));
                    }
                    Command::PaymentSucceeded {
                        reservation_id: rid,
                        payment: self.payment(amount),
                    }
                }
                75..=79 => {
                    let Some((rid, ..)) = pick(&mut self.rng, ReservationStatus::Held) else {
                        continue;
                    };
                    self.next_payment += 1;
                    Command::PaymentFailed {
                        reservation_id: rid,
                        provider_event_id: format!("evt_failed_{}", self.next_payment),
                        payment_intent: format!("pi_{}", self.next_payment),
                        message: Some("Your card was declined.".into()),
                    }
                }
                80..=93 => {
                    // The owner lets a hold go (80 to 86) or cancels a booking.
                    let release = roll <= 86;
                    let status = if release {
                        ReservationStatus::Held
                    } else {
                        ReservationStatus::Booked
                    };
                    let Some((reservation_id, customer, _)) = pick(&mut self.rng, status) else {
                        continue;
                    };
                    if release {
                        Command::Release {
                            customer,
                            reservation_id,
                        }
                    } else {
                        Command::Cancel {
                            customer,
                            reservation_id,
                        }
                    }
                }
                94..=95 => {
                    // The organizer withholds a few free seats, or returns withheld ones.
                    let organizer = state.info.organizer.clone();
                    let withheld: Vec<u32> = state.withheld.keys().copied().collect();
                    let from: Vec<u32> = if !withheld.is_empty() && self.rng.random_bool(0.5) {
                        withheld
                    } else {
                        (0..state.seats.len() as u32)
                            .filter(|&i| state.seats[i as usize] == SeatState::Available)
                            .collect()
                    };
                    if from.is_empty() {
                        continue;
                    }
                    let start = self.rng.random_range(0..from.len());
                    let count = self.rng.random_range(1..=3).min(from.len() - start);
                    let seats = from[start..start + count]
                        .iter()
                        .map(|&i| state.layout.seat_at(i))
                        .collect();
                    if state.seats[from[start] as usize] == SeatState::Withheld {
                        Command::ReturnWithheld {
                            organizer,
                            seats,
                            idempotency_key: None,
                        }
                    } else {
                        Command::Withhold {
                            organizer,
                            seats,
                            label: "house seats".into(),
                            idempotency_key: None,
                        }
                    }
                }
                _ => {
                    // Time passes: holds run out.
                    self.now += Duration::minutes(3);
                    continue;
                }
            };
            self.command(event_id, command, None);
        }
        self.flush().await;
    }

    /// The writer's timer: expire the event's holds whose deadline has passed.
    fn expire_due(&mut self, event_id: EventId) {
        let Some(state) = self.states.get(&event_id).and_then(Option::as_ref) else {
            return;
        };
        let mut due: Vec<_> = state.due_holds(self.now).map(|r| (r.id, r.amount)).collect();
        due.sort_by_key(|d| d.0);
        for (reservation_id, amount) in due {
            self.command(event_id, Command::Expire { reservation_id }, None);
            // Some payments come after the hold ended: they book if the seats are still free.
            if self.rng.random_range(0..8) == 0 {
                let at = self.now + Duration::seconds(self.rng.random_range(1..600));
                self.late.push((at, event_id, reservation_id, amount));
            }
        }
        let (arrived, waiting) = std::mem::take(&mut self.late)
            .into_iter()
            .partition(|(at, ..)| *at <= self.now);
        self.late = waiting;
        for (_, event, reservation_id, amount) in arrived {
            let payment = self.payment(amount);
            self.command(
                event,
                Command::PaymentSucceeded {
                    reservation_id,
                    payment,
                },
                None,
            );
        }
    }

    /// Every event's state as the domain sees it.
    pub fn states(&self) -> impl Iterator<Item = &EventState> {
        self.states.values().filter_map(Option::as_ref)
    }

    /// The customer with the most bookings (paid reservations, cancelled or not), and how many.
    pub fn busiest_customer(&self) -> (CustomerId, usize) {
        let mut paid: HashMap<&CustomerId, usize> = HashMap::new();
        let reservations = self.states().flat_map(|s| s.reservations.values());
        for r in reservations.filter(|r| r.payment.is_some()) {
            *paid.entry(&r.customer).or_default() += 1;
        }
        let busiest = paid.into_iter().max_by_key(|&(c, n)| (n, std::cmp::Reverse(c)));
        let (customer, n) = busiest.expect("the generated log books");
        (customer.clone(), n)
    }
}
