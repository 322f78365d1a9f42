//! The onsale figures, folded from the log one fact at a time.
//!
//! [`Figures`] is pure: [`Figures::observe`] takes each envelope in log order and updates one
//! `EventFold` per event; [`Figures::finish`] turns the folds into [`EventReport`]s. Every kind
//! of fact is one arm of the `match` in `EventFold::observe` (the compiler points at it when a
//! kind is added), and each figure is a field of the fold, so a new kind of fact, such as the
//! waiting room's, is one arm plus the fields it feeds.
//!
//! Definitions (also in the README):
//! - counts per second are counts of facts stamped in that UTC second: reservations (and the
//!   seats they hold), bookings (and seats sold), releases by reason;
//! - `sold_out_at` is the stamp of the first fact after which every seat of the event that the
//!   organizer does not withhold is booked; time to sell out runs from `onsale_at` (and, separately, from the first
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
use frontrow_schema::seatmap::{SeatLayout, SeatMap, TierCode};
use frontrow_schema::{
    Currency, Envelope, Event, EventId, EventScheduled, QueueEvent, ReleaseReason, ReservationId, SeatId, SeatStatus,
};
use serde::{Deserialize, Serialize};

use crate::replay::ReplayOptions;

/// How many seats the "held but never bought" list names.
pub const TOP_HELD: usize = 20;

/// Counts of facts in one second (or in total).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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

impl Counts {
    /// The counts in their declared order, as the per-second CSV's columns have them.
    pub fn as_array(&self) -> [u64; 8] {
        [
            self.reservations,
            self.seats_reserved,
            self.bookings,
            self.seats_booked,
            self.expired,
            self.released,
            self.payment_failed,
            self.refunded,
        ]
    }
}

/// One second with activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Second {
    /// The start of the UTC second.
    pub second: DateTime<Utc>,
    #[serde(flatten)]
    pub counts: Counts,
    /// Seats booked at the end of this second (the sales curve).
    pub seats_sold_total: u64,
}

/// Revenue of one section and price tier, in minor units.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevenueLine {
    pub section: String,
    pub tier: String,
    pub seats_booked: u64,
    pub gross: i64,
    pub seats_refunded: u64,
    pub refunded: i64,
    pub net: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeToSellOut {
    pub sold_out_at: DateTime<Utc>,
    /// From the event's `onsale_at`.
    pub from_onsale_seconds: f64,
    /// From the first reservation seen.
    pub from_first_reservation_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldSeat {
    pub seat: String,
    pub holds: u64,
}

/// Waiting-room figures of an event that had a queue (`null` for one that had none).
///
/// A fan's wait runs from when the queue started moving for them — their join, or the onsale
/// instant for a fan of the pre-queue (who joined before it) — to their admission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueFigures {
    /// Fans who joined in the range, and of them before the onsale (the lottery's pre-queue).
    pub joins: u64,
    pub pre_queue_joins: u64,
    /// Admissions in the range (each a fan let in to shop).
    pub admissions: u64,
    /// Admissions that ended unused, and admissions a booking used up.
    pub lapsed: u64,
    pub spent: u64,
    /// Fans who left the queue before being let in.
    pub left: u64,
    /// Fans told "sold out" while still waiting.
    pub told_sold_out: u64,
    pub waitlist_joins: u64,
    pub waitlist_offers: u64,
    /// Lower median and 95th percentile (nearest rank) of the waits of the admissions counted.
    pub wait_median_seconds: Option<f64>,
    pub wait_p95_seconds: Option<f64>,
    /// `(upper bound in seconds, fans)` buckets of the waits, for the distribution chart.
    pub wait_buckets: Vec<(f64, u64)>,
}

/// Upper bounds (seconds) of the wait distribution's buckets; the last bucket holds the rest.
const WAIT_BUCKETS: [f64; 10] = [1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0];

/// Everything the replay found out about one event.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Withheld by the organizer: booked, held and withheld seats never exceed `seats_total`,
    /// and the rest are available.
    pub seats_withheld_now: u64,
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
    /// the booking that holds it at the end), if it is sold. Not in the JSON: a report read
    /// back has an empty layout.
    #[serde(skip, default = "no_layout")]
    pub layout: SeatLayout,
    #[serde(skip)]
    pub sold_at: Vec<Option<DateTime<Utc>>>,
}

fn no_layout() -> SeatLayout {
    SeatLayout::new(SeatMap {
        tiers: Vec::new(),
        sections: Vec::new(),
    })
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
    seats: Vec<SeatStatus>,
    booked: u64,
    held: u64,
    withheld: u64,
    sold_at: Vec<Option<DateTime<Utc>>>,
    holds_per_seat: Vec<u64>,
    ever_booked: Vec<bool>,
    seconds: BTreeMap<i64, Counts>,
    /// Seats booked at the end of each second with activity.
    sold_total: BTreeMap<i64, u64>,
    totals: Counts,
    /// Keyed by the writer's own random ids, hashed with foldhash (SipHash, the standard
    /// library's, was 1.5% of a replay's time).
    reservations: HashMap<ReservationId, Hold, foldhash::fast::RandomState>,
    first_reservation_at: Option<DateTime<Utc>>,
    sold_out_at: Option<DateTime<Utc>>,
    made: u64,
    converted: u64,
    pay_ms: Vec<i64>,
    payments: i64,
    /// Per (section index, tier code): seats booked, gross, seats refunded, refunded. Money
    /// adds up saturating, never wrapping: with prices bounded (`MAX_PRICE`) no real log comes
    /// near `i64::MAX`; only events recorded before the bound could. A tier code is inline and
    /// ordered like its text: no allocation per booked seat.
    revenue: BTreeMap<(usize, TierCode), (u64, i64, u64, i64)>,
    /// `Some` once the log shows the event had a queue.
    queue: Option<QueueFold>,
}

#[derive(Default)]
struct QueueFold {
    /// When each ticket started waiting (its join, or the onsale for the pre-queue).
    waiting_since: HashMap<u64, DateTime<Utc>>,
    figures: QueueCounts,
    wait_ms: Vec<i64>,
}

#[derive(Default)]
struct QueueCounts {
    joins: u64,
    pre_queue_joins: u64,
    admissions: u64,
    lapsed: u64,
    spent: u64,
    left: u64,
    told_sold_out: u64,
    waitlist_joins: u64,
    waitlist_offers: u64,
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
            withheld: 0,
            sold_at: Vec::new(),
            holds_per_seat: Vec::new(),
            ever_booked: Vec::new(),
            seconds: BTreeMap::new(),
            sold_total: BTreeMap::new(),
            totals: Counts::default(),
            reservations: HashMap::default(),
            first_reservation_at: None,
            sold_out_at: None,
            made: 0,
            converted: 0,
            pay_ms: Vec::new(),
            payments: 0,
            revenue: BTreeMap::new(),
            queue: None,
        };
        fold.reset_seats();
        fold
    }

    fn reset_seats(&mut self) {
        let n = self.layout.len();
        self.seats = vec![SeatStatus::Available; n];
        self.sold_at = vec![None; n];
        self.holds_per_seat = vec![0; n];
        self.ever_booked = vec![false; n];
        self.booked = 0;
        self.held = 0;
        self.withheld = 0;
    }

    fn indexes(&self, seats: &[SeatId]) -> Vec<u32> {
        seats.iter().filter_map(|s| self.layout.index_of(s)).collect()
    }

    fn set(&mut self, index: u32, to: SeatStatus) {
        let slot = &mut self.seats[index as usize];
        match *slot {
            SeatStatus::Held => self.held -= 1,
            SeatStatus::Booked => self.booked -= 1,
            SeatStatus::Withheld => self.withheld -= 1,
            SeatStatus::Available => {}
        }
        match to {
            SeatStatus::Held => self.held += 1,
            SeatStatus::Booked => self.booked += 1,
            SeatStatus::Withheld => self.withheld += 1,
            SeatStatus::Available => {}
        }
        *slot = to;
    }

    fn place(&self, index: u32) -> (usize, TierCode, i64) {
        let span = self.layout.row_of(index);
        let tier = self.layout.tier_of(index).clone();
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
                    self.set(i, SeatStatus::Held);
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
                    self.set(i, SeatStatus::Booked);
                    self.sold_at[i as usize] = Some(time);
                    if counted {
                        self.ever_booked[i as usize] = true;
                        let (section, tier, price) = self.place(i);
                        let line = self.revenue.entry((section, tier)).or_default();
                        line.0 += 1;
                        line.1 = line.1.saturating_add(price);
                    }
                }
                counts.bookings = 1;
                counts.seats_booked = seats.len() as u64;
                if counted {
                    self.payments = self.payments.saturating_add(e.payment.amount.amount);
                    if let Some(hold) = self.reservations.get(&e.reservation_id)
                        && hold.counted
                    {
                        self.converted += 1;
                        self.pay_ms.push((time - hold.at).num_milliseconds());
                    }
                }
                if self.sold_out_at.is_none()
                    && self.booked + self.withheld == self.seats.len() as u64
                    && self.booked > 0
                {
                    self.sold_out_at = Some(time);
                }
            }
            Event::SeatsReleased(e) => {
                let seats = self.indexes(&e.seats);
                for &i in &seats {
                    if e.reason == ReleaseReason::Refunded && counted && self.seats[i as usize] == SeatStatus::Booked {
                        let (section, tier, price) = self.place(i);
                        let line = self.revenue.entry((section, tier)).or_default();
                        line.2 += 1;
                        line.3 = line.3.saturating_add(price);
                    }
                    self.set(i, SeatStatus::Available);
                    self.sold_at[i as usize] = None;
                }
                match e.reason {
                    ReleaseReason::Expired => counts.expired = 1,
                    ReleaseReason::Released => counts.released = 1,
                    ReleaseReason::PaymentFailed => counts.payment_failed = 1,
                    ReleaseReason::Refunded => counts.refunded = 1,
                }
            }
            Event::SeatsWithheld(e) => {
                for i in self.indexes(&e.seats) {
                    self.set(i, SeatStatus::Withheld);
                }
            }
            Event::SeatsReturned(e) => {
                for i in self.indexes(&e.seats) {
                    self.set(i, SeatStatus::Available);
                }
            }
            // Money facts without seat changes: the figures above already count what they did.
            Event::PaymentRefunded(_) | Event::PaymentFailed(_) => {}
            Event::Queue(e) => self.observe_queue(e, time, counted),
        }
        if counted && counts != Counts::default() {
            let slot = self.seconds.entry(second).or_default();
            add(slot, &counts);
            add(&mut self.totals, &counts);
            self.sold_total.insert(second, self.booked);
        }
    }

    fn observe_queue(&mut self, event: &QueueEvent, time: DateTime<Utc>, counted: bool) {
        let onsale = self.info.onsale_at;
        let queue = self.queue.get_or_insert_with(QueueFold::default);
        let tally = |n: &mut u64| *n += u64::from(counted);
        match event {
            QueueEvent::Opened(_) | QueueEvent::Shuffled(_) => {}
            QueueEvent::Joined(e) => {
                queue.waiting_since.insert(e.ticket, time.max(onsale));
                tally(&mut queue.figures.joins);
                if e.pre_queue {
                    tally(&mut queue.figures.pre_queue_joins);
                }
            }
            QueueEvent::Admitted(e) => {
                tally(&mut queue.figures.admissions);
                if let Some(since) = queue.waiting_since.remove(&e.ticket)
                    && counted
                {
                    queue.wait_ms.push((time - since).num_milliseconds().max(0));
                }
            }
            QueueEvent::Lapsed(_) => tally(&mut queue.figures.lapsed),
            QueueEvent::Spent(_) => tally(&mut queue.figures.spent),
            QueueEvent::Left(e) => {
                // Leaving the waiting list, or giving an admission back, is not leaving the queue.
                if queue.waiting_since.remove(&e.ticket).is_some() {
                    tally(&mut queue.figures.left);
                }
            }
            QueueEvent::SoldOut(e) => {
                if counted {
                    queue.figures.told_sold_out += e.waiting;
                }
                queue.waiting_since.clear();
            }
            QueueEvent::WaitlistJoined(_) => tally(&mut queue.figures.waitlist_joins),
            QueueEvent::WaitlistOffered(_) => tally(&mut queue.figures.waitlist_offers),
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
            revenue.gross = revenue.gross.saturating_add(*gross);
            revenue.refunded = revenue.refunded.saturating_add(*refunded);
            revenue.lines.push(RevenueLine {
                section: map.sections[*section].code.to_string(),
                tier: tier.to_string(),
                seats_booked: *seats_booked,
                gross: *gross,
                seats_refunded: *seats_refunded,
                refunded: *refunded,
                net: gross.saturating_sub(*refunded),
            });
        }
        revenue.net = revenue.gross.saturating_sub(revenue.refunded);
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
            seats_withheld_now: self.withheld,
            first_reservation_at: self.first_reservation_at,
            totals: self.totals,
            time_to_sell_out,
            conversion,
            revenue,
            most_held_never_bought,
            queue: self.queue.map(QueueFold::finish),
            per_second,
            layout: self.layout,
            sold_at: self.sold_at,
        }
    }
}

impl QueueFold {
    fn finish(mut self) -> QueueFigures {
        self.wait_ms.sort_unstable();
        let seconds = |ms: i64| ms as f64 / 1000.0;
        let mut wait_buckets: Vec<(f64, u64)> = WAIT_BUCKETS.iter().map(|&upper| (upper, 0)).collect();
        let mut beyond = 0;
        for &ms in &self.wait_ms {
            match wait_buckets.iter_mut().find(|(upper, _)| seconds(ms) <= *upper) {
                Some(bucket) => bucket.1 += 1,
                None => beyond += 1,
            }
        }
        if beyond > 0 {
            let longest = self.wait_ms.last().copied().map(seconds).unwrap_or_default();
            wait_buckets.push((longest, beyond));
        }
        // Trailing empty buckets say nothing.
        while wait_buckets.last().is_some_and(|b| b.1 == 0) {
            wait_buckets.pop();
        }
        let c = self.figures;
        QueueFigures {
            joins: c.joins,
            pre_queue_joins: c.pre_queue_joins,
            admissions: c.admissions,
            lapsed: c.lapsed,
            spent: c.spent,
            left: c.left,
            told_sold_out: c.told_sold_out,
            waitlist_joins: c.waitlist_joins,
            waitlist_offers: c.waitlist_offers,
            wait_median_seconds: lower_median(&self.wait_ms).map(seconds),
            wait_p95_seconds: nearest_rank(&self.wait_ms, 95).map(seconds),
            wait_buckets,
        }
    }
}

/// The `pct`th percentile of sorted values by the nearest-rank method.
pub fn nearest_rank(sorted: &[i64], pct: usize) -> Option<i64> {
    (!sorted.is_empty()).then(|| sorted[(sorted.len() * pct).div_ceil(100).max(1) - 1])
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

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use frontrow_schema::seatmap::HoldMinutes;
    use frontrow_schema::testsuite::{self, seated};
    use frontrow_schema::{
        AdmissionLapsed, AdmissionSpent, CustomerId, FanAdmitted, QueueJoined, QueueLeft, QueueOpened, QueueShuffled,
        QueueSoldOut,
    };

    use super::*;

    fn position(offset: u64) -> Position {
        Position { partition: 0, offset }
    }

    /// Waits are read off a hand-made log: pre-queue fans wait from the onsale, later fans from
    /// their join; leavers and fans told "sold out" have no wait.
    #[test]
    fn queue_figures_follow_the_queue_facts() {
        let event_id = EventId::new();
        let onsale = Utc.with_ymd_and_hms(2026, 6, 1, 10, 0, 0).unwrap();
        let scheduled = sample_schedule(onsale);
        let at = |s: i64| onsale + Duration::seconds(s);
        let fan = |n: u64| CustomerId::parse(&format!("fan{n}")).unwrap();
        let joined = |n: u64, pre_queue| {
            Event::Queue(QueueEvent::Joined(QueueJoined {
                customer: fan(n),
                ticket: n,
                pre_queue,
            }))
        };
        let admitted = |n: u64, s: i64| {
            Event::Queue(QueueEvent::Admitted(FanAdmitted {
                customer: fan(n),
                ticket: n,
                expires_at: at(s + 600),
            }))
        };
        let log = [
            (at(-3600), Event::EventScheduled(scheduled)),
            (
                at(-3500),
                Event::Queue(QueueEvent::Opened(QueueOpened {
                    max_size: None,
                    max_shoppers: 2,
                    admission_secs: 600,
                })),
            ),
            (at(-600), joined(1, true)),
            (at(-60), joined(2, true)),
            (
                at(0),
                Event::Queue(QueueEvent::Shuffled(QueueShuffled { seed: 7, pre_queue: 2 })),
            ),
            (at(0), admitted(2, 0)),
            (at(0), admitted(1, 0)),
            (at(5), joined(3, false)),
            (at(6), joined(4, false)),
            (at(7), joined(5, false)),
            (
                at(8),
                Event::Queue(QueueEvent::Left(QueueLeft {
                    customer: fan(4),
                    ticket: 4,
                })),
            ),
            (
                at(20),
                Event::Queue(QueueEvent::Spent(AdmissionSpent {
                    customer: fan(2),
                    ticket: 2,
                    reservation_id: ReservationId::new(),
                })),
            ),
            (at(45), admitted(3, 45)),
            (
                at(600),
                Event::Queue(QueueEvent::Lapsed(AdmissionLapsed {
                    customer: fan(1),
                    ticket: 1,
                })),
            ),
            (at(4000), admitted(5, 4000)),
            (at(4001), joined(6, false)),
            (at(4002), Event::Queue(QueueEvent::SoldOut(QueueSoldOut { waiting: 1 }))),
        ];
        let mut figures = Figures::new(ReplayOptions::default());
        for (i, (time, event)) in log.into_iter().enumerate() {
            figures.observe(position(i as u64), &Envelope::new(event_id, i as u64 + 1, time, event));
        }
        let report = figures.finish().remove(0);
        let q = report.queue.expect("the event had a queue");
        assert_eq!((q.joins, q.pre_queue_joins, q.admissions), (6, 2, 4));
        assert_eq!((q.lapsed, q.spent, q.left, q.told_sold_out), (1, 1, 1, 1));
        // Waits: fan 2 and fan 1 at 0 s (pre-queue, admitted at the onsale), fan 3 40 s, fan 5 3993 s.
        assert_eq!(q.wait_median_seconds, Some(0.0));
        assert_eq!(q.wait_p95_seconds, Some(3993.0));
        assert_eq!(
            q.wait_buckets,
            vec![
                (1.0, 2),
                (5.0, 0),
                (10.0, 0),
                (30.0, 0),
                (60.0, 1),
                (120.0, 0),
                (300.0, 0),
                (600.0, 0),
                (1800.0, 0),
                (3600.0, 0),
                (3993.0, 1)
            ]
        );
    }

    #[test]
    fn an_event_without_a_queue_has_no_queue_figures() {
        let event_id = EventId::new();
        let onsale = Utc.with_ymd_and_hms(2026, 6, 1, 10, 0, 0).unwrap();
        let mut figures = Figures::new(ReplayOptions::default());
        let env = Envelope::new(event_id, 1, onsale, Event::EventScheduled(sample_schedule(onsale)));
        figures.observe(position(0), &env);
        assert!(figures.finish()[0].queue.is_none());
    }

    #[test]
    fn nearest_rank_percentiles() {
        assert_eq!(nearest_rank(&[], 95), None);
        assert_eq!(nearest_rank(&[7], 95), Some(7));
        let hundred: Vec<i64> = (1..=100).collect();
        assert_eq!(nearest_rank(&hundred, 95), Some(95));
        assert_eq!(nearest_rank(&hundred, 50), Some(50));
    }

    fn sample_schedule(onsale: DateTime<Utc>) -> EventScheduled {
        let seat_map = testsuite::seat_map(
            &[("STD", "Standard", 4500)],
            vec![seated("A", "Floor", &[("1", 4, "STD")])],
        );
        EventScheduled {
            hold_minutes: HoldMinutes::new(5).unwrap(),
            max_seats_per_order: 2,
            ..testsuite::sample_event(EventId::new(), onsale, seat_map)
        }
    }
}
