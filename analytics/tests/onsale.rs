//! A seeded, simulated onsale made by the real domain (`decide` + `apply`, times passed in as the
//! writers do), appended to a real SQLite journal. The simulation keeps its own record of what it
//! did; the expected figures are computed from that record by the plain loops below, never by
//! the analytics code, and the report must equal them. The same log also proves that the
//! seat history from the log equals the ledger's, and that the HTML report is self-contained.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use frontrow_analytics::{ReplayOptions, Report, analyse, html, seat_history};
use frontrow_command::domain::{self, Command, EventState, SeatSelection};
use frontrow_command::writer::{Meta, record};
use frontrow_journal::{Journal, Record, SqliteJournal};
use frontrow_projector::{LedgerReads, Projector, SqliteLedger};
use frontrow_schema::partition::partition_of;
use frontrow_schema::testsuite;
use frontrow_schema::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PARTITIONS: u32 = 4;

/// What the simulation did, in its own words.
#[derive(Debug, Clone)]
enum Did {
    Reserved {
        rid: ReservationId,
        seats: Vec<SeatId>,
    },
    Booked {
        rid: ReservationId,
        seats: Vec<SeatId>,
        amount: i64,
    },
    Released {
        seats: Vec<SeatId>,
        reason: ReleaseReason,
    },
}

/// One action at one time for one event.
#[derive(Debug, Clone)]
struct Action {
    event: EventId,
    at: DateTime<Utc>,
    did: Did,
}

/// What the simulation's own tables say about an event: seat prices and places, in map order.
struct Venue {
    seats: Vec<(SeatId, String, String, i64)>,
    onsale: DateTime<Utc>,
}

impl Venue {
    fn place(&self, seat: &SeatId) -> (String, String, i64) {
        let (_, section, tier, price) = self.seats.iter().find(|s| &s.0 == seat).unwrap();
        (section.clone(), tier.clone(), *price)
    }

    fn order(&self, seat: &SeatId) -> usize {
        self.seats.iter().position(|s| &s.0 == seat).unwrap()
    }
}

/// Sections `A` (GOLD 12000), `B` (STD 5000), `C` (STD 5000, one row of BUDGET 2500) of
/// `rows` rows of `per_row` seats.
fn venue_map(rows: u16, per_row: u16) -> (SeatMap, Vec<(SeatId, String, String, i64)>) {
    let prices = [("GOLD", 12_000), ("STD", 5_000), ("BUDGET", 2_500)];
    let mut sections = Vec::new();
    let mut seats = Vec::new();
    for code in ["A", "B", "C"] {
        let mut row_list = Vec::new();
        for r in 1..=rows {
            let tier = match (code, r) {
                ("A", _) => "GOLD",
                ("C", r) if r == rows => "BUDGET",
                _ => "STD",
            };
            let price = prices.iter().find(|p| p.0 == tier).unwrap().1;
            row_list.push(serde_json::json!({"name": format!("R{r}"), "seats": per_row, "tier": tier}));
            for n in 1..=per_row {
                let seat: SeatId = format!("{code}-R{r}-{n}").parse().unwrap();
                seats.push((seat, code.to_owned(), tier.to_owned(), price));
            }
        }
        sections.push(serde_json::json!({"code": code, "name": format!("Section {code}"), "rows": row_list}));
    }
    let tiers: Vec<_> = prices
        .iter()
        .map(|(code, price)| serde_json::json!({"code": code, "name": code, "price": price}))
        .collect();
    let map = serde_json::from_value(serde_json::json!({"tiers": tiers, "sections": sections})).unwrap();
    (map, seats)
}

/// A fate decided for a reservation when it is made.
#[derive(Debug, Clone, Copy)]
enum Fate {
    Pay,
    Release,
    Fail,
    Abandon,
}

struct Sim {
    rng: StdRng,
    journal: Arc<SqliteJournal>,
    states: HashMap<EventId, Option<EventState>>,
    pending: HashMap<u32, Vec<Record>>,
    actions: Vec<Action>,
    venues: HashMap<EventId, Venue>,
    /// `(when, event, reservation, fate)` still to happen.
    agenda: Vec<(DateTime<Utc>, EventId, ReservationId, Fate)>,
    /// Booked reservations that may be cancelled.
    booked: Vec<(EventId, ReservationId)>,
    next_payment: u64,
}

impl Sim {
    /// Decides a command, appends what it recorded, and returns the recorded facts.
    fn run(&mut self, event: EventId, command: Command, now: DateTime<Utc>, key: Option<&str>) -> Vec<Event> {
        let state = self.states.entry(event).or_insert(None);
        let events =
            domain::decide(state.as_ref(), event, &command, now).expect("the simulation only sends valid commands");
        let partition = partition_of(&event, PARTITIONS);
        let meta = Meta {
            idempotency_key: key.map(str::to_owned),
            ..Meta::default()
        };
        let records = self.pending.entry(partition).or_default();
        record(state, event, &events, now, &meta, uuid::Uuid::now_v7, records);
        events
    }

    async fn flush(&mut self) {
        for (partition, records) in self.pending.drain() {
            self.journal.append(partition, records).await.unwrap();
        }
    }

    fn schedule(&mut self, event: EventId, title: &str, rows: u16, per_row: u16, onsale: DateTime<Utc>) {
        let (seat_map, seats) = venue_map(rows, per_row);
        let info = EventScheduled {
            title: title.into(),
            hold_minutes: HoldMinutes::new(5).unwrap(),
            max_seats_per_order: 6,
            // A few simulated customers buy again and again: the per-customer limit stays out of the way.
            max_seats_per_customer: Some(frontrow_command::domain::MAX_SEATS_PER_CUSTOMER),
            // Seats are picked at random here, whatever they leave alone: the no-orphan rule is off.
            allow_orphan_seats: true,
            ..testsuite::sample_event(event, onsale, seat_map)
        };
        self.run(
            event,
            Command::Schedule(Box::new(info)),
            onsale - Duration::hours(1),
            None,
        );
        self.venues.insert(event, Venue { seats, onsale });
    }

    fn free_seats(&self, event: EventId) -> Vec<SeatId> {
        let state = self.states[&event].as_ref().unwrap();
        (0..state.layout.len() as u32)
            .filter(|&i| state.seats[i as usize] == domain::SeatState::Available)
            .map(|i| state.layout.seat_at(i))
            .collect()
    }

    fn reserve(&mut self, event: EventId, now: DateTime<Utc>, selling_out: bool) {
        let free = self.free_seats(event);
        if free.is_empty() {
            return;
        }
        let count = self.rng.random_range(1..=4usize).min(free.len());
        let mut seats = Vec::new();
        while seats.len() < count {
            let seat = free[self.rng.random_range(0..free.len())].clone();
            if !seats.contains(&seat) {
                seats.push(seat);
            }
        }
        let rid = ReservationId::new();
        let key = format!("k-{rid}");
        let command = Command::Reserve {
            customer: CustomerId::parse(&format!("fan{}", self.rng.random_range(0..500))).unwrap(),
            reservation_id: rid,
            selection: SeatSelection::Explicit(seats.clone()),
            idempotency_key: key.clone(),
            admission: None,
        };
        let facts = self.run(event, command, now, Some(&key));
        assert!(matches!(facts.as_slice(), [Event::SeatsReserved(_)]));
        self.actions.push(Action {
            event,
            at: now,
            did: Did::Reserved { rid, seats },
        });
        let fate = match (selling_out, self.rng.random_range(0..100)) {
            (true, _) | (_, 0..55) => Fate::Pay,
            (_, 55..70) => Fate::Release,
            (_, 70..80) => Fate::Fail,
            _ => Fate::Abandon,
        };
        let after = match fate {
            Fate::Abandon => Duration::minutes(5),
            _ => Duration::milliseconds(self.rng.random_range(2_000..120_000)),
        };
        if !matches!(fate, Fate::Abandon) {
            self.agenda.push((now + after, event, rid, fate));
        }
    }

    fn held_seats(&self, event: EventId, rid: ReservationId) -> Vec<SeatId> {
        let state = self.states[&event].as_ref().unwrap();
        let r = &state.reservations[&rid];
        state.seat_ids(&r.seats)
    }

    /// Carries out everything due by `now`: fates, expiries (as the writer's timer would), and
    /// now and then a cancellation.
    fn due(&mut self, now: DateTime<Utc>) {
        // Expiries first, in deadline order, like the writer's deadline heap.
        let mut expiring: Vec<(DateTime<Utc>, EventId, ReservationId)> = self
            .states
            .iter()
            .filter_map(|(e, s)| s.as_ref().map(|s| (e, s)))
            .flat_map(|(e, s)| s.due_holds(now).map(move |r| (r.hold_until, *e, r.id)))
            .collect();
        expiring.sort();
        for (at, event, rid) in expiring {
            let seats = self.held_seats(event, rid);
            let facts = self.run(event, Command::Expire { reservation_id: rid }, at.max(now), None);
            assert!(matches!(facts.as_slice(), [Event::SeatsReleased(_)]));
            self.actions.push(Action {
                event,
                at: at.max(now),
                did: Did::Released {
                    seats,
                    reason: ReleaseReason::Expired,
                },
            });
        }
        self.agenda.sort_by_key(|a| a.0);
        while self.agenda.first().is_some_and(|a| a.0 <= now) {
            let (_, event, rid, fate) = self.agenda.remove(0);
            let state = self.states[&event].as_ref().unwrap();
            if state.reservations[&rid].status != domain::ReservationStatus::Held {
                continue;
            }
            let seats = self.held_seats(event, rid);
            let amount = state.reservations[&rid].amount;
            self.next_payment += 1;
            let n = self.next_payment;
            match fate {
                Fate::Pay => {
                    let payment = Payment {
                        provider_event_id: format!("evt_{n}"),
                        payment_intent: format!("pi_{n}"),
                        amount,
                    };
                    let facts = self.run(
                        event,
                        Command::PaymentSucceeded {
                            reservation_id: rid,
                            payment,
                        },
                        now,
                        None,
                    );
                    assert!(matches!(facts.as_slice(), [Event::SeatsBooked(_)]));
                    self.booked.push((event, rid));
                    self.actions.push(Action {
                        event,
                        at: now,
                        did: Did::Booked {
                            rid,
                            seats,
                            amount: amount.amount,
                        },
                    });
                }
                Fate::Release | Fate::Fail => {
                    let customer = state.reservations[&rid].customer.clone();
                    let (command, reason) = if matches!(fate, Fate::Release) {
                        (
                            Command::Release {
                                customer,
                                reservation_id: rid,
                            },
                            ReleaseReason::Released,
                        )
                    } else {
                        (
                            Command::PaymentFailed {
                                reservation_id: rid,
                                provider_event_id: format!("evt_{n}"),
                                payment_intent: format!("pi_{n}"),
                                message: Some("card declined".into()),
                            },
                            ReleaseReason::PaymentFailed,
                        )
                    };
                    let facts = self.run(event, command, now, None);
                    assert!(facts.iter().any(|f| matches!(f, Event::SeatsReleased(_))));
                    self.actions.push(Action {
                        event,
                        at: now,
                        did: Did::Released { seats, reason },
                    });
                }
                Fate::Abandon => unreachable!("abandoned holds have no agenda entry"),
            }
        }
    }

    fn cancel_one(&mut self, now: DateTime<Utc>) {
        if self.booked.is_empty() {
            return;
        }
        let (event, rid) = self.booked.remove(self.rng.random_range(0..self.booked.len()));
        let seats = self.held_seats(event, rid);
        let customer = self.states[&event].as_ref().unwrap().reservations[&rid]
            .customer
            .clone();
        let facts = self.run(
            event,
            Command::Cancel {
                customer,
                reservation_id: rid,
            },
            now,
            None,
        );
        assert!(facts.iter().any(|f| matches!(f, Event::SeatsReleased(_))));
        self.actions.push(Action {
            event,
            at: now,
            did: Did::Released {
                seats,
                reason: ReleaseReason::Refunded,
            },
        });
    }
}

struct Onsale {
    _dir: tempfile::TempDir,
    journal: Arc<SqliteJournal>,
    sim: Sim,
    big: EventId,
    small: EventId,
}

/// Two events on one timeline: `big` (3 x 6 x 8 = 144 seats) sells out, `small` (3 x 2 x 3 =
/// 18 seats) does not.
async fn simulate(seed: u64) -> Onsale {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(SqliteJournal::open(&dir.path().join("journal.db"), PARTITIONS).unwrap());
    let mut sim = Sim {
        rng: StdRng::seed_from_u64(seed),
        journal: journal.clone(),
        states: HashMap::new(),
        pending: HashMap::new(),
        actions: Vec::new(),
        venues: HashMap::new(),
        agenda: Vec::new(),
        booked: Vec::new(),
        next_payment: 0,
    };
    let onsale = Utc.with_ymd_and_hms(2027, 3, 1, 10, 0, 0).unwrap();
    // Two ids in different partitions, fixed so the run is the same every time.
    let ids: Vec<EventId> = (1..100u64)
        .map(|i| EventId::from_uuid(uuid::Uuid::from_u64_pair(seed, i)))
        .collect();
    let big = ids[0];
    let small = *ids
        .iter()
        .find(|e| partition_of(e, PARTITIONS) != partition_of(&big, PARTITIONS))
        .unwrap();
    sim.schedule(big, "Big Night", 6, 8, onsale);
    sim.schedule(small, "Small Night", 2, 3, onsale + Duration::seconds(30));
    let mut now = onsale;
    for step in 0..4_000 {
        now += Duration::milliseconds(sim.rng.random_range(50..1_500));
        sim.due(now);
        let selling_out = step > 600;
        if sim.rng.random_range(0..100) < 70 {
            sim.reserve(big, now, selling_out);
        }
        if now >= onsale + Duration::seconds(30) && step < 300 && sim.rng.random_range(0..100) < 10 {
            sim.reserve(small, now, false);
        }
        if step % 97 == 13 && step < 500 {
            sim.cancel_one(now);
        }
        if step % 50 == 0 {
            sim.flush().await;
        }
        let state = sim.states[&big].as_ref().unwrap();
        if state.counts.booked as usize == state.layout.len() {
            break;
        }
    }
    // Let every remaining hold run out.
    now += Duration::minutes(6);
    sim.due(now);
    sim.flush().await;
    Onsale {
        _dir: dir,
        journal,
        sim,
        big,
        small,
    }
}

/// The figures the report must show, from the simulation's own record, for facts stamped in
/// `[from, to]`.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    per_second: BTreeMap<i64, [u64; 8]>,
    sold_total: BTreeMap<i64, u64>,
    totals: [u64; 8],
    booked_now: u64,
    held_now: u64,
    sold_out_at: Option<DateTime<Utc>>,
    first_reservation_at: Option<DateTime<Utc>>,
    reservations: u64,
    converted: u64,
    median_pay_ms: Option<i64>,
    payments: i64,
    revenue: BTreeMap<(String, String), (u64, i64, u64, i64)>,
    held_never_bought: Vec<(String, u64)>,
}

fn expected(onsale: &Onsale, event: EventId, from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Expected {
    let venue = &onsale.sim.venues[&event];
    let total = venue.seats.len() as u64;
    let mut x = Expected::default();
    let mut status: HashMap<SeatId, &str> = HashMap::new();
    let mut reserved_at: HashMap<ReservationId, (DateTime<Utc>, bool)> = HashMap::new();
    let mut holds: HashMap<SeatId, u64> = HashMap::new();
    let mut bought: HashSet<SeatId> = HashSet::new();
    let mut pays = Vec::new();
    for a in onsale.sim.actions.iter().filter(|a| a.event == event) {
        if to.is_some_and(|to| a.at > to) {
            break;
        }
        let counted = from.is_none_or(|f| a.at >= f);
        let mut row = [0u64; 8];
        match &a.did {
            Did::Reserved { rid, seats } => {
                row[0] = 1;
                row[1] = seats.len() as u64;
                for s in seats {
                    status.insert(s.clone(), "held");
                    if counted {
                        *holds.entry(s.clone()).or_default() += 1;
                    }
                }
                reserved_at.insert(*rid, (a.at, counted));
                if x.first_reservation_at.is_none() {
                    x.first_reservation_at = Some(a.at);
                }
                if counted {
                    x.reservations += 1;
                }
            }
            Did::Booked { rid, seats, amount } => {
                row[2] = 1;
                row[3] = seats.len() as u64;
                for s in seats {
                    status.insert(s.clone(), "booked");
                    if counted {
                        bought.insert(s.clone());
                        let (section, tier, price) = venue.place(s);
                        let line = x.revenue.entry((section, tier)).or_default();
                        line.0 += 1;
                        line.1 += price;
                    }
                }
                if counted {
                    x.payments += amount;
                    let (at, was_counted) = reserved_at[rid];
                    if was_counted {
                        x.converted += 1;
                        pays.push((a.at - at).num_milliseconds());
                    }
                }
                let booked = status.values().filter(|s| **s == "booked").count() as u64;
                if booked == total && x.sold_out_at.is_none() {
                    x.sold_out_at = Some(a.at);
                }
            }
            Did::Released { seats, reason, .. } => {
                let slot = match reason {
                    ReleaseReason::Expired => 4,
                    ReleaseReason::Released => 5,
                    ReleaseReason::PaymentFailed => 6,
                    ReleaseReason::Refunded => 7,
                };
                row[slot] = 1;
                for s in seats {
                    if *reason == ReleaseReason::Refunded && counted {
                        let (section, tier, price) = venue.place(s);
                        let line = x.revenue.entry((section, tier)).or_default();
                        line.2 += 1;
                        line.3 += price;
                    }
                    status.insert(s.clone(), "available");
                }
            }
        }
        if counted {
            let second = x.per_second.entry(a.at.timestamp()).or_default();
            for i in 0..8 {
                second[i] += row[i];
                x.totals[i] += row[i];
            }
            let booked = status.values().filter(|s| **s == "booked").count() as u64;
            x.sold_total.insert(a.at.timestamp(), booked);
        }
    }
    x.booked_now = status.values().filter(|s| **s == "booked").count() as u64;
    x.held_now = status.values().filter(|s| **s == "held").count() as u64;
    pays.sort();
    x.median_pay_ms = (!pays.is_empty()).then(|| pays[(pays.len() - 1) / 2]);
    let mut never: Vec<(SeatId, u64)> = holds.into_iter().filter(|(s, _)| !bought.contains(s)).collect();
    never.sort_by(|a, b| b.1.cmp(&a.1).then(venue.order(&a.0).cmp(&venue.order(&b.0))));
    x.held_never_bought = never.into_iter().take(20).map(|(s, n)| (s.to_string(), n)).collect();
    x
}

/// The same figures, read off the report.
fn observed(report: &Report, event: EventId) -> Expected {
    let e = report
        .events
        .iter()
        .find(|e| e.event_id == event)
        .expect("event in the report");
    let row = frontrow_analytics::figures::Counts::as_array;
    Expected {
        per_second: e
            .per_second
            .iter()
            .map(|s| (s.second.timestamp(), row(&s.counts)))
            .collect(),
        sold_total: e
            .per_second
            .iter()
            .map(|s| (s.second.timestamp(), s.seats_sold_total))
            .collect(),
        totals: row(&e.totals),
        booked_now: e.seats_booked_now,
        held_now: e.seats_held_now,
        sold_out_at: e.time_to_sell_out.as_ref().map(|t| t.sold_out_at),
        first_reservation_at: e.first_reservation_at,
        reservations: e.conversion.reservations,
        converted: e.conversion.booked,
        median_pay_ms: e
            .conversion
            .median_time_to_pay_seconds
            .map(|s| (s * 1000.0).round() as i64),
        payments: e.revenue.payments,
        revenue: e
            .revenue
            .lines
            .iter()
            .map(|l| {
                assert_eq!(l.net, l.gross - l.refunded);
                (
                    (l.section.clone(), l.tier.clone()),
                    (l.seats_booked, l.gross, l.seats_refunded, l.refunded),
                )
            })
            .collect(),
        held_never_bought: e
            .most_held_never_bought
            .iter()
            .map(|h| (h.seat.clone(), h.holds))
            .collect(),
    }
}

#[tokio::test]
async fn the_report_equals_what_the_simulation_did() {
    let onsale = simulate(7).await;
    let actions = &onsale.sim.actions;
    // The run is rich enough to mean something.
    let kinds = |f: fn(&Did) -> bool| actions.iter().filter(|a| f(&a.did)).count();
    assert!(kinds(|d| matches!(d, Did::Reserved { .. })) > 100);
    for reason in [
        ReleaseReason::Expired,
        ReleaseReason::Released,
        ReleaseReason::PaymentFailed,
        ReleaseReason::Refunded,
    ] {
        assert!(
            actions
                .iter()
                .any(|a| matches!(&a.did, Did::Released { reason: r, .. } if *r == reason)),
            "no {reason:?} in the simulation"
        );
    }

    let report = analyse(onsale.journal.clone(), &ReplayOptions::default(), |_| {})
        .await
        .unwrap();
    assert_eq!(report.events.len(), 2);
    for event in [onsale.big, onsale.small] {
        assert_eq!(
            observed(&report, event),
            expected(&onsale, event, None, None),
            "event {event}"
        );
    }
    let big = report.events.iter().find(|e| e.event_id == onsale.big).unwrap();
    let sold = big.time_to_sell_out.as_ref().expect("the big event sold out");
    let onsale_at = onsale.sim.venues[&onsale.big].onsale;
    assert_eq!(
        sold.from_onsale_seconds,
        (sold.sold_out_at - onsale_at).num_milliseconds() as f64 / 1000.0
    );
    assert!(
        report.events.iter().any(|e| e.time_to_sell_out.is_none()),
        "the small event did not sell out"
    );
    assert!(report.events.iter().all(|e| e.queue.is_none()));
    let revenue = &big.revenue;
    assert_eq!(revenue.net, revenue.gross - revenue.refunded);
    assert_eq!(revenue.payments, revenue.gross, "payments are the seat prices");
    assert!(revenue.lines.iter().any(|l| l.tier == "BUDGET"));

    // One event only: reads one partition, same figures.
    let one = analyse(
        onsale.journal.clone(),
        &ReplayOptions {
            event: Some(onsale.small),
            ..ReplayOptions::default()
        },
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(one.events.len(), 1);
    assert_eq!(
        observed(&one, onsale.small),
        expected(&onsale, onsale.small, None, None)
    );
    assert!(one.coverage.records_read < report.coverage.records_read);

    // CSV: a header and one line per event and second with activity.
    let csv = frontrow_analytics::per_second_csv(&report);
    let lines = report.events.iter().map(|e| e.per_second.len()).sum::<usize>();
    assert_eq!(csv.lines().count(), lines + 1);
}

#[tokio::test]
async fn a_time_range_counts_only_what_happened_in_it() {
    let onsale = simulate(11).await;
    let times: Vec<DateTime<Utc>> = onsale
        .sim
        .actions
        .iter()
        .filter(|a| a.event == onsale.big)
        .map(|a| a.at)
        .collect();
    let (from, to) = (times[times.len() / 4], times[times.len() / 2]);
    let options = ReplayOptions {
        event: Some(onsale.big),
        from: Some(from),
        to: Some(to),
        batch: 7,
    };
    let report = analyse(onsale.journal.clone(), &options, |_| {}).await.unwrap();
    let want = expected(&onsale, onsale.big, Some(from), Some(to));
    assert!(want.totals[0] > 10);
    assert_eq!(observed(&report, onsale.big), want);
}

#[tokio::test]
async fn the_seat_history_from_the_log_equals_the_ledgers() {
    let onsale = simulate(3).await;
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(SqliteLedger::open(dir.path()).await.unwrap());
    let journal: Arc<dyn Journal> = onsale.journal.clone();
    let mut projector = Projector::new(journal.clone(), ledger.clone(), 500);
    for partition in 0..PARTITIONS {
        projector.catch_up_partition(partition).await.unwrap();
    }
    let mut with_history = 0;
    for event in [onsale.big, onsale.small] {
        for (seat, ..) in &onsale.sim.venues[&event].seats {
            let from_log = seat_history(journal.as_ref(), event, seat).await.unwrap().unwrap();
            let from_ledger = ledger.seat_history(event, seat).await.unwrap().unwrap();
            assert_eq!(
                serde_json::to_value(&from_log).unwrap(),
                serde_json::to_value(&from_ledger).unwrap(),
                "seat {seat} of {event}"
            );
            if !from_log.history.is_empty() {
                with_history += 1;
            }
        }
    }
    assert!(with_history > 100);
    let nowhere: SeatId = "Z-R1-1".parse().unwrap();
    assert!(
        seat_history(journal.as_ref(), onsale.big, &nowhere)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        seat_history(journal.as_ref(), EventId::new(), &nowhere)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn the_html_report_is_self_contained_and_has_the_charts() {
    let onsale = simulate(5).await;
    let report = analyse(onsale.journal.clone(), &ReplayOptions::default(), |_| {})
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let paths = frontrow_analytics::write(&report, dir.path()).unwrap();
    assert_eq!(paths.len(), 3);
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert_eq!(page, html::render(&report));
    // Nothing to fetch: every http(s) URL is an SVG namespace declaration.
    let without_ns = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    let lower = page.to_lowercase();
    for tag in [
        "<script", "<link", "<img", "@import", "url(", "<iframe", "<object", "<embed",
    ] {
        assert!(!lower.contains(tag), "the page has {tag}");
    }
    for event in [onsale.big, onsale.small] {
        for chart in ["sales", "stack", "seatmap"] {
            let id = format!("<svg id=\"{chart}-{event}\"");
            assert!(page.contains(&id), "no {chart} chart for {event}");
        }
    }
    assert!(!page.contains("queue-waits"), "no queue chart without queue data");
    // The seat map draws every seat of both events.
    let seats: usize = onsale.sim.venues.values().map(|v| v.seats.len()).sum();
    let seat_map_rects: usize = page
        .split("<svg id=\"seatmap-")
        .skip(1)
        .map(|s| s.split("</svg>").next().unwrap().matches("<rect").count())
        .sum();
    assert_eq!(seat_map_rects, seats);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    assert!(json["events"][0]["queue"].is_null());
}
