//! The onsale figures, folded from the log one fact at a time.
//!
//! [`Figures`] is pure: [`Figures::observe`] takes each envelope in log order and updates one
//! [`EventFold`] per event; [`Figures::finish`] turns the folds into [`EventReport`]s. Every kind
//! of fact is one arm of the `match` in [`EventFold::observe`] (the compiler points at it when a
//! kind is added), and each figure is a field of the fold, so a new kind of fact, such as the
//! waiting room's, is one arm plus the fields it feeds.
//!
//! Definitions (also in the README):
//! - counts per second are counts of facts stamped in that UTC second: reservations (and the
//!   seats they hold), bookings (and seats sold), releases by reason;
//! - `sold_out_at` is the stamp of the first fact after which every seat of the event is
//!   booked; time to sell out runs from `onsale_at` (and, separately, from the first
//!   reservation seen) to it; a refund after it does not move it;
//! - conversion is, of the reservations made in the range, the share that a booking in the
//!   range sold; time to pay is booking stamp minus reservation stamp, and its median is the
//!   lower median (element `(n - 1) / 2` of the sorted times, in milliseconds);
//! - revenue is per section and price tier at the seat prices of the map: gross for seats booked,
//!   refunded for seats a cancelled booking released, net the difference; `payments` is the sum
//!   the provider reported for the bookings;
//! - "held but never bought" are seats held at least once in the range and not booked by any
//!   booking in the range, most holds first.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, TimeZone, Utc};
use frontrow_journal::Position;
use frontrow_schema::seatmap::SeatLayout;
use frontrow_schema::{Currency, Envelope, Event, EventId, EventScheduled, ReleaseReason, ReservationId, SeatId};
use serde::Serialize;

use crate::replay::ReplayOptions;

/// How many seats the "held but never bought" list names.
pub const TOP_HELD: usize = 20;

/// Counts of facts in one second (or in total).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub reservations: u64,
    pub seats_reserved: u64,
    pub bookings: u64,
    pub seats_booked: u64,
    /// Releases (facts, one per reservation) by reason.
    pub expired: u64,
    pub released: u64,
    pub payment_failed: u64,
    pub refunded: u64,
}

/// One second with activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Second {
    /// The start of the UTC second.
    pub second: DateTime<Utc>,
    #[serde(flatten)]
    pub counts: Counts,
    /// Seats booked at the end of this second (the sales curve).
    pub seats_sold_total: u64,
}

/// Revenue of one section and price tier, in minor units.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RevenueLine {
    pub section: String,
    pub tier: String,
    pub seats_booked: u64,
    pub gross: i64,
    pub seats_refunded: u64,
    pub refunded: i64,
    pub net: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Revenue {
    pub currency: String,
    /// What the payment provider reported for the bookings counted.
    pub payments: i64,
    pub gross: i64,
    pub refunded: i64,
    pub net: i64,
    /// Sections and tiers with any booking, in seat-map order.
    pub lines: Vec<RevenueLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeToSellOut {
    pub sold_out_at: DateTime<Utc>,
    /// From the event's `onsale_at`.
    pub from_onsale_seconds: f64,
    /// From the first reservation seen.
    pub from_first_reservation_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conversion {
    /// Reservations made in the range.
    pub reservations: u64,
    /// Of those, booked in the range.
    pub booked: u64,
    /// `booked / reservations`, `null` without reservations.
    pub rate: Option<f64>,
    /// Lower median of booking minus reservation stamp, seconds.
    pub median_time_to_pay_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldSeat {
    pub seat: String,
    pub holds: u64,
}

/// Waiting-room figures. The waiting room's facts are not in the log yet, so this is always
/// absent (`null`); see the README.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueFigures {
    pub joins: u64,
    pub admissions: u64,
    pub wait_median_seconds: Option<f64>,
    pub wait_p95_seconds: Option<f64>,
    /// `(upper bound in seconds, fans)` buckets of the waits, for the distribution chart.
    pub wait_buckets: Vec<(f64, u64)>,
}

/// Everything the replay found out about one event.
#[derive(Debug, Clone, Serialize)]
pub struct EventReport {
    pub event_id: EventId,
    pub title: String,
    pub artist: String,
    pub venue: String,
    pub onsale_at: DateTime<Utc>,
    pub seats_total: u64,
    /// Seat states at the end of the replay.
    pub seats_booked_now: u64,
    pub seats_held_now: u64,
    pub first_reservation_at: Option<DateTime<Utc>>,
    pub totals: Counts,
    /// `null` when the event did not sell out in the replay.
    pub time_to_sell_out: Option<TimeToSellOut>,
    pub conversion: Conversion,
    pub revenue: Revenue,
    pub most_held_never_bought: Vec<HeldSeat>,
    /// Absent until the waiting room records its facts in the log.
    pub queue: Option<QueueFigures>,
    /// Seconds with activity, in order.
    pub per_second: Vec<Second>,
    /// For the report's seat map: the layout, and per seat index the second it was sold in (by
    /// the booking that holds it at the end), if it is sold.
    #[serde(skip)]
    pub layout: SeatLayout,
    #[serde(skip)]
    pub sold_at: Vec<Option<DateTime<Utc>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seat {
    Available,
    Held,
    Booked,
}

struct Hold {
    at: DateTime<Utc>,
    counted: bool,
}

/// The running figures of one event.
struct EventFold {
    info: EventScheduled,
    currency: Currency,
    layout: SeatLayout,
    seats: Vec<Seat>,
    booked: u64,
    held: u64,
    sold_at: Vec<Option<DateTime<Utc>>>,
    holds_per_seat: Vec<u64>,
    ever_booked: Vec<bool>,
    seconds: BTreeMap<i64, Counts>,
    /// Seats booked at the end of each second with activity.
    sold_total: BTreeMap<i64, u64>,
    totals: Counts,
    reservations: HashMap<ReservationId, Hold>,
    first_reservation_at: Option<DateTime<Utc>>,
    sold_out_at: Option<DateTime<Utc>>,
    made: u64,
    converted: u64,
    pay_ms: Vec<i64>,
    payments: i64,
    /// Per (section index, tier code): seats booked, gross, seats refunded, refunded.
    revenue: BTreeMap<(usize, String), (u64, i64, u64, i64)>,
}

impl EventFold {
    fn new(info: &EventScheduled) -> Self {
        let mut fold = Self {
            info: info.clone(),
            currency: info.currency,
            layout: SeatLayout::new(info.seat_map.clone()),
            seats: Vec::new(),
            booked: 0,
            held: 0,
            sold_at: Vec::new(),
            holds_per_seat: Vec::new(),
            ever_booked: Vec::new(),
            seconds: BTreeMap::new(),
            sold_total: BTreeMap::new(),
            totals: Counts::default(),
            reservations: HashMap::new(),
            first_reservation_at: None,
            sold_out_at: None,
            made: 0,
            converted: 0,
            pay_ms: Vec::new(),
            payments: 0,
            revenue: BTreeMap::new(),
        };
        fold.reset_seats();
        fold
    }

    fn reset_seats(&mut self) {
        let n = self.layout.len();
        self.seats = vec![Seat::Available; n];
        self.sold_at = vec![None; n];
        self.holds_per_seat = vec![0; n];
        self.ever_booked = vec![false; n];
        self.booked = 0;
        self.held = 0;
    }

    fn indexes(&self, seats: &[SeatId]) -> Vec<u32> {
        seats.iter().filter_map(|s| self.layout.index_of(s)).collect()
    }

    fn set(&mut self, index: u32, to: Seat) {
        let slot = &mut self.seats[index as usize];
        match *slot {
            Seat::Held => self.held -= 1,
            Seat::Booked => self.booked -= 1,
            Seat::Available => {}
        }
        match to {
            Seat::Held => self.held += 1,
            Seat::Booked => self.booked += 1,
            Seat::Available => {}
        }
        *slot = to;
    }

    fn place(&self, index: u32) -> (usize, String, i64) {
        let span = self.layout.row_of(index);
        let section = &self.layout.map().sections[span.section as usize];
        let tier = section.rows[span.row as usize].tier.to_string();
        (span.section as usize, tier, span.price)
    }

    fn observe(&mut self, env: &Envelope, counted: bool) {
        let time = env.time;
        let second = time.timestamp();
        let mut counts = Counts::default();
        match &env.event {
            Event::EventScheduled(_) => {}
            Event::SeatMapChanged(e) => {
                self.layout = SeatLayout::new(e.seat_map.clone());
                self.reset_seats();
            }
            Event::SeatsReserved(e) => {
                let seats = self.indexes(&e.seats);
                for &i in &seats {
                    self.set(i, Seat::Held);
                    if counted {
                        self.holds_per_seat[i as usize] += 1;
                    }
                }
                self.first_reservation_at.get_or_insert(time);
                self.reservations.insert(e.reservation_id, Hold { at: time, counted });
                counts.reservations = 1;
                counts.seats_reserved = seats.len() as u64;
                if counted {
                    self.made += 1;
                }
            }
            Event::SeatsBooked(e) => {
                let seats = self.indexes(&e.seats);
                for &i in &seats {
                    self.set(i, Seat::Booked);
                    self.sold_at[i as usize] = Some(time);
                    if counted {
                        self.ever_booked[i as usize] = true;
                        let (section, tier, price) = self.place(i);
                        let line = self.revenue.entry((section, tier)).or_default();
                        line.0 += 1;
                        line.1 += price;
                    }
                }
                counts.bookings = 1;
                counts.seats_booked = seats.len() as u64;
                if counted {
                    self.payments += e.payment.amount.amount;
                    if let Some(hold) = self.reservations.get(&e.reservation_id)
                        && hold.counted
                    {
                        self.converted += 1;
                        self.pay_ms.push((time - hold.at).num_milliseconds());
                    }
                }
                if self.sold_out_at.is_none() && self.booked == self.seats.len() as u64 && !self.seats.is_empty() {
                    self.sold_out_at = Some(time);
                }
            }
            Event::SeatsReleased(e) => {
                let seats = self.indexes(&e.seats);
                for &i in &seats {
                    if e.reason == ReleaseReason::Refunded && counted && self.seats[i as usize] == Seat::Booked {
                        let (section, tier, price) = self.place(i);
                        let line = self.revenue.entry((section, tier)).or_default();
                        line.2 += 1;
                        line.3 += price;
                    }
                    self.set(i, Seat::Available);
                    self.sold_at[i as usize] = None;
                }
                match e.reason {
                    ReleaseReason::Expired => counts.expired = 1,
                    ReleaseReason::Released => counts.released = 1,
                    ReleaseReason::PaymentFailed => counts.payment_failed = 1,
                    ReleaseReason::Refunded => counts.refunded = 1,
                }
            }
            // Money facts without seat changes: the figures above already count what they did.
            Event::PaymentRefunded(_) | Event::PaymentFailed(_) => {}
        }
        if counted && counts != Counts::default() {
            let slot = self.seconds.entry(second).or_default();
            add(slot, &counts);
            add(&mut self.totals, &counts);
            self.sold_total.insert(second, self.booked);
        }
    }

    fn finish(self, event_id: EventId) -> EventReport {
        let seconds_total = |s: f64| (s * 1000.0).round() / 1000.0;
        let time_to_sell_out = self.sold_out_at.map(|at| TimeToSellOut {
            sold_out_at: at,
            from_onsale_seconds: seconds_total((at - self.info.onsale_at).num_milliseconds() as f64 / 1000.0),
            from_first_reservation_seconds: self
                .first_reservation_at
                .map(|first| seconds_total((at - first).num_milliseconds() as f64 / 1000.0)),
        });
        let mut pay = self.pay_ms.clone();
        pay.sort_unstable();
        let conversion = Conversion {
            reservations: self.made,
            booked: self.converted,
            rate: (self.made > 0).then(|| self.converted as f64 / self.made as f64),
            median_time_to_pay_seconds: lower_median(&pay).map(|ms| ms as f64 / 1000.0),
        };
        let map = self.layout.map();
        let mut revenue = Revenue {
            currency: self.currency.to_string(),
            payments: self.payments,
            ..Revenue::default()
        };
        for ((section, tier), (seats_booked, gross, seats_refunded, refunded)) in &self.revenue {
            revenue.gross += gross;
            revenue.refunded += refunded;
            revenue.lines.push(RevenueLine {
                section: map.sections[*section].code.to_string(),
                tier: tier.clone(),
                seats_booked: *seats_booked,
                gross: *gross,
                seats_refunded: *seats_refunded,
                refunded: *refunded,
                net: gross - refunded,
            });
        }
        revenue.net = revenue.gross - revenue.refunded;
        let mut held: Vec<(u64, u32)> = self
            .holds_per_seat
            .iter()
            .enumerate()
            .filter(|&(i, &holds)| holds > 0 && !self.ever_booked[i])
            .map(|(i, &holds)| (holds, i as u32))
            .collect();
        held.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let most_held_never_bought = held
            .into_iter()
            .take(TOP_HELD)
            .map(|(holds, i)| HeldSeat {
                seat: self.layout.seat_at(i).to_string(),
                holds,
            })
            .collect();
        let per_second = self
            .seconds
            .iter()
            .map(|(&s, counts)| Second {
                second: Utc.timestamp_opt(s, 0).single().unwrap_or_default(),
                counts: *counts,
                seats_sold_total: self.sold_total.get(&s).copied().unwrap_or_default(),
            })
            .collect();
        EventReport {
            event_id,
            title: self.info.title.clone(),
            artist: self.info.artist.clone(),
            venue: self.info.venue.clone(),
            onsale_at: self.info.onsale_at,
            seats_total: self.seats.len() as u64,
            seats_booked_now: self.booked,
            seats_held_now: self.held,
            first_reservation_at: self.first_reservation_at,
            totals: self.totals,
            time_to_sell_out,
            conversion,
            revenue,
            most_held_never_bought,
            queue: None,
            per_second,
            layout: self.layout,
            sold_at: self.sold_at,
        }
    }
}

fn add(into: &mut Counts, c: &Counts) {
    into.reservations += c.reservations;
    into.seats_reserved += c.seats_reserved;
    into.bookings += c.bookings;
    into.seats_booked += c.seats_booked;
    into.expired += c.expired;
    into.released += c.released;
    into.payment_failed += c.payment_failed;
    into.refunded += c.refunded;
}

/// Element `(n - 1) / 2` of sorted values.
pub fn lower_median(sorted: &[i64]) -> Option<i64> {
    (!sorted.is_empty()).then(|| sorted[(sorted.len() - 1) / 2])
}

/// The figures of every event seen, folded fact by fact.
#[derive(Default)]
pub struct Figures {
    options: ReplayOptions,
    events: BTreeMap<EventId, EventFold>,
    /// Records of the events folded here that were read past their partition's other events.
    pub facts: u64,
}

impl Figures {
    pub fn new(options: ReplayOptions) -> Self {
        Self {
            options,
            events: BTreeMap::new(),
            facts: 0,
        }
    }

    /// Folds one envelope read at `_at`, in log order.
    pub fn observe(&mut self, _at: Position, env: &Envelope) {
        if self.options.event.is_some_and(|e| e != env.event_id) {
            return;
        }
        self.facts += 1;
        let counted = self.options.counts(env.time);
        match (&env.event, self.events.get_mut(&env.event_id)) {
            (Event::EventScheduled(info), None) => {
                self.events.insert(env.event_id, EventFold::new(info));
            }
            (_, Some(fold)) => fold.observe(env, counted),
            // A fact about an event whose schedule is not in the log: nothing to lay it out on.
            (_, None) => {}
        }
    }

    /// The reports, one per event, in event id order.
    pub fn finish(self) -> Vec<EventReport> {
        self.events.into_iter().map(|(id, fold)| fold.finish(id)).collect()
    }
}
