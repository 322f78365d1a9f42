//! The one projection logic: a batch of log records folded into row changes.
//!
//! [`project`] is pure: it reads the records, what the ledger already knows about the events
//! and reservations they mention ([`Known`]), and returns the [`Op`]s that bring the ledger's
//! tables up to date. Changes to a row created in the same batch are folded into its insert,
//! and repeated changes to an existing row into one update, so every op touches a row at most
//! once and the result does not depend on how the log was cut into batches.
//!
//! Money is double entry. Each transaction is one log record and its lines sum to zero:
//! - a booking moves the payment from `customer` to `event_revenue`, one revenue line per
//!   section and price tier of the seats sold;
//! - cancelling a booking moves its revenue (per section and tier again) to `refunds_payable`;
//! - a payment given back without a booking (late and the seats were taken, a duplicate, a
//!   wrong amount) moves it from `customer` straight to `refunds_payable`.
//!
//! So per event, the `event_revenue` lines sum to the bookings minus the cancelled bookings,
//! and per section and tier to the price of the seats that are booked now.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use frontrow_schema::seatmap::SeatLayout;
use frontrow_schema::*;
use uuid::Uuid;

use crate::rows::*;

/// What the projection needs to know about an event it did not schedule in the same batch.
#[derive(Debug, Clone)]
pub struct EventMeta {
    pub organizer: OrganizerId,
    pub currency: Currency,
    pub layout: SeatLayout,
}

impl EventMeta {
    pub fn new(organizer: OrganizerId, currency: Currency, map: impl Into<Arc<SeatMap>>) -> Self {
        Self {
            organizer,
            currency,
            layout: SeatLayout::new(map),
        }
    }

    /// A seat's section, tier and price, if the current map has it.
    pub fn seat(&self, seat: &SeatId) -> Option<(SectionCode, TierCode, i64)> {
        let index = self.layout.index_of(seat)?;
        let span = self.layout.row_of(index);
        let section = &self.layout.map().sections[span.section as usize];
        let tier = self.layout.tier_of(index).clone();
        Some((section.code.clone(), tier, span.price))
    }
}

/// What the ledger already holds that a batch may refer to.
#[derive(Debug, Default)]
pub struct Known {
    pub events: HashMap<EventId, Arc<EventMeta>>,
    /// The seats of reservations whose bookings may be cancelled in this batch.
    pub reservation_seats: HashMap<ReservationId, Vec<SeatId>>,
}

/// About how many ledger rows a record makes: one per seat of the map it schedules or puts in
/// place, one for anything else.
pub fn rows_made(envelope: &Envelope) -> usize {
    let map = match &envelope.event {
        Event::EventScheduled(e) => &e.seat_map,
        Event::SeatMapChanged(e) => &e.seat_map,
        _ => return 1,
    };
    map.sections
        .iter()
        .map(|s| {
            s.rows.iter().map(|r| usize::from(r.seats)).sum::<usize>()
                + s.standing.as_ref().map_or(0, |z| z.capacity as usize)
        })
        .sum::<usize>()
        .max(1)
}

/// What [`Known`] must hold for a batch: events not scheduled in the batch, and reservations
/// whose booking the batch cancels without having reserved them.
pub fn needs(records: &[Envelope], known: &Known) -> (Vec<EventId>, Vec<ReservationId>) {
    let mut scheduled = BTreeSet::new();
    let mut reserved = BTreeSet::new();
    let mut events = BTreeSet::new();
    let mut reservations = BTreeSet::new();
    for env in records {
        match &env.event {
            Event::EventScheduled(e) => {
                scheduled.insert(e.event_id);
            }
            Event::SeatsReserved(e) => {
                reserved.insert(e.reservation_id);
            }
            Event::PaymentRefunded(e)
                if e.reason == RefundReason::BookingCancelled && !reserved.contains(&e.reservation_id) =>
            {
                reservations.insert(e.reservation_id);
            }
            _ => {}
        }
        if !scheduled.contains(&env.event_id) && !known.events.contains_key(&env.event_id) {
            events.insert(env.event_id);
        }
    }
    (events.into_iter().collect(), reservations.into_iter().collect())
}

/// The result of projecting a batch.
#[derive(Debug, Default)]
pub struct Projected {
    /// The row changes, in the order they must be written.
    pub ops: Vec<Op>,
    /// Events whose metadata the batch created or changed; the caller caches them once the
    /// batch is committed.
    pub events: Vec<(EventId, Arc<EventMeta>)>,
    /// Records that referred to an event the ledger does not have (the domain never writes
    /// these; they are skipped and counted).
    pub orphans: usize,
}

type SeatKey = (Uuid, String);
/// Where revenue was earned: a section and a price tier (none for an unpriced remainder).
type Place = Option<(SectionCode, TierCode)>;
/// One line of a money transaction: account, place, signed amount.
type Line = (&'static str, Place, i64);

#[derive(Default)]
struct Fold {
    metas: BTreeMap<EventId, Arc<EventMeta>>,
    events_new: BTreeMap<Uuid, EventRow>,
    events_upd: BTreeMap<Uuid, EventMapChange>,
    seats_cleared: BTreeSet<Uuid>,
    seats_new: BTreeMap<SeatKey, SeatRow>,
    seats_upd: BTreeMap<SeatKey, SeatChange>,
    res_new: BTreeMap<Uuid, ReservationRow>,
    res_upd: BTreeMap<Uuid, ReservationChange>,
    /// Seats of the reservations reserved in this batch.
    res_seats: HashMap<ReservationId, Vec<SeatId>>,
    bookings_new: BTreeMap<Uuid, BookingRow>,
    bookings_upd: BTreeMap<Uuid, BookingCancel>,
    payments_new: BTreeMap<String, PaymentRow>,
    payments_upd: BTreeMap<String, PaymentChange>,
    refunds: Vec<RefundRow>,
    money: Vec<MoneyEntry>,
    history: Vec<SeatHistoryRow>,
    orphans: usize,
}

/// Makes `change` on the row this batch inserts under `key`, so the insert writes it, or else
/// keeps it as the update of the stored row (replacing an earlier one: it sets the same
/// columns). Whether it became an update.
fn changed<K: Ord, R, C: ApplyTo<R>>(new: &mut BTreeMap<K, R>, upd: &mut BTreeMap<K, C>, key: K, change: C) -> bool {
    match new.get_mut(&key) {
        Some(row) => {
            change.apply_to(row);
            false
        }
        None => {
            upd.insert(key, change);
            true
        }
    }
}

fn join(seats: &[SeatId]) -> String {
    seats.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// The columns that start both a reservation's and a booking's row.
fn order_cols(rid: Uuid, eid: Uuid, customer: &CustomerId, seats: &[SeatId], amount: &Money) -> OrderCols {
    OrderCols {
        reservation_id: rid,
        event_id: eid,
        customer: customer.to_string(),
        seats: join(seats),
        seat_count: seats.len() as i64,
        amount: amount.amount,
        currency: amount.currency.as_str().to_owned(),
    }
}

fn refund_reason(r: RefundReason) -> &'static str {
    match r {
        RefundReason::SeatsTaken => "seats_taken",
        RefundReason::DuplicatePayment => "duplicate_payment",
        RefundReason::AmountMismatch => "amount_mismatch",
        RefundReason::BookingCancelled => "booking_cancelled",
        RefundReason::CustomerLimit => "customer_limit",
    }
}

/// The record being folded, as its seat changes need it: its event's metadata and id, its
/// time and its sequence.
#[derive(Clone, Copy)]
struct Fact<'a> {
    meta: &'a EventMeta,
    eid: Uuid,
    at: DateTime<Utc>,
    sequence: u64,
}

/// Folds `records` (consecutive records of one partition) into row changes.
pub fn project(records: &[Envelope], known: &Known) -> Projected {
    let mut f = Fold::default();
    for env in records {
        f.record(env, known);
    }
    f.finish()
}

impl Fold {
    fn meta(&self, event: &EventId, known: &Known) -> Option<Arc<EventMeta>> {
        self.metas.get(event).or_else(|| known.events.get(event)).cloned()
    }

    fn record(&mut self, env: &Envelope, known: &Known) {
        let at = env.time;
        let eid = env.event_id.as_uuid();
        if let Event::EventScheduled(e) = &env.event {
            self.schedule(e, at);
            return;
        }
        let Some(meta) = self.meta(&env.event_id, known) else {
            self.orphans += 1;
            return;
        };
        let fact = Fact {
            meta: &meta,
            eid,
            at,
            sequence: env.sequence,
        };
        match &env.event {
            Event::EventScheduled(_) => {}
            Event::SeatMapChanged(e) => self.change_map(&meta, env.event_id, &e.seat_map, at),
            Event::SeatsReserved(e) => {
                let rid = e.reservation_id.as_uuid();
                self.seats(&fact, &e.seats, ("held", Some(rid)), Some(rid), "held");
                self.res_seats.insert(e.reservation_id, e.seats.clone());
                let row = ReservationRow {
                    order: order_cols(rid, eid, &e.customer, &e.seats, &e.amount),
                    hold_until: e.hold_until,
                    reserved_at: at,
                    status: "held",
                    status_at: at,
                };
                self.res_new.insert(rid, row);
            }
            Event::SeatsBooked(e) => {
                let rid = e.reservation_id.as_uuid();
                self.seats(&fact, &e.seats, ("booked", Some(rid)), Some(rid), "booked");
                self.reservation_status(rid, "booked", at);
                let row = BookingRow {
                    order: order_cols(rid, eid, &e.customer, &e.seats, &e.payment.amount),
                    provider_event_id: e.payment.provider_event_id.to_string(),
                    late: e.late,
                    booked_at: at,
                    cancelled_at: None,
                };
                self.bookings_new.insert(rid, row);
                self.payment(eid, rid, &e.payment, "booked", at, None);
                // The customer pays; the revenue is earned per section and tier.
                let lines = revenue_lines(&meta, &e.seats, e.payment.amount.amount);
                let mut txn = vec![("customer", None, -e.payment.amount.amount)];
                txn.extend(lines.into_iter().map(|(st, amount)| ("event_revenue", st, amount)));
                self.money(env.id, eid, rid, "booking", &e.payment.amount, txn, at);
            }
            Event::SeatsReleased(e) => {
                let rid = e.reservation_id.as_uuid();
                let kind = e.reason.as_str();
                self.seats(&fact, &e.seats, ("available", None), Some(rid), kind);
                self.reservation_status(rid, kind, at);
            }
            Event::PaymentRefunded(e) => {
                let rid = e.reservation_id.as_uuid();
                let amount = e.payment.amount;
                self.refunds.push(RefundRow {
                    provider_event_id: e.payment.provider_event_id.to_string(),
                    reservation_id: rid,
                    event_id: eid,
                    customer: e.customer.to_string(),
                    amount: amount.amount,
                    currency: amount.currency.as_str().to_owned(),
                    reason: refund_reason(e.reason),
                    refunded_at: at,
                });
                if e.reason == RefundReason::BookingCancelled {
                    self.cancel_booking(rid, &e.payment.provider_event_id, at);
                    let seats = self
                        .res_seats
                        .get(&e.reservation_id)
                        .or_else(|| known.reservation_seats.get(&e.reservation_id))
                        .cloned()
                        .unwrap_or_default();
                    let lines = revenue_lines(&meta, &seats, amount.amount);
                    let mut txn: Vec<_> = lines.into_iter().map(|(st, a)| ("event_revenue", st, -a)).collect();
                    txn.push(("refunds_payable", None, amount.amount));
                    self.money(env.id, eid, rid, "refund", &amount, txn, at);
                } else {
                    self.payment(eid, rid, &e.payment, "refunded", at, Some(at));
                    let txn = vec![
                        ("customer", None, -amount.amount),
                        ("refunds_payable", None, amount.amount),
                    ];
                    self.money(env.id, eid, rid, "refund", &amount, txn, at);
                }
            }
            Event::PaymentFailed(e) => {
                let rid = e.reservation_id.as_uuid();
                let ids = (e.provider_event_id.as_str(), e.payment_intent.as_str());
                self.payment_row(eid, rid, ids, None, "failed", at, None, e.message.clone());
            }
            // Organizer holds move seats out of the sale and back, with no reservation and no money.
            Event::SeatsWithheld(e) => {
                self.seats(&fact, &e.seats, ("withheld", None), None, "withheld");
            }
            Event::SeatsReturned(e) => {
                self.seats(&fact, &e.seats, ("available", None), None, "returned");
            }
            // The waiting room moves no seats and no money.
            Event::Queue(_) => {}
        }
    }

    fn schedule(&mut self, e: &EventScheduled, at: DateTime<Utc>) {
        let eid = e.event_id.as_uuid();
        if self.events_new.contains_key(&eid) {
            return;
        }
        let map = serde_json::to_string(&e.seat_map).expect("seat maps serialise");
        let row = EventRow {
            event_id: eid,
            organizer: e.organizer.to_string(),
            title: e.title.clone(),
            artist: e.artist.clone(),
            venue: e.venue.clone(),
            city: e.city.clone(),
            starts_at: e.starts_at,
            onsale_at: e.onsale_at,
            hold_minutes: i64::from(e.hold_minutes.minutes()),
            max_seats_per_order: i64::from(e.max_seats_per_order),
            currency: e.currency.as_str().to_owned(),
            seat_map: map,
            scheduled_at: at,
            seat_map_at: at,
        };
        self.events_new.insert(eid, row);
        let meta = Arc::new(EventMeta::new(e.organizer.clone(), e.currency, e.seat_map.clone()));
        self.add_seats(&meta, eid, at);
        self.metas.insert(e.event_id, meta);
    }

    fn change_map(&mut self, old: &EventMeta, event: EventId, map: &SeatMap, at: DateTime<Utc>) {
        let eid = event.as_uuid();
        let seat_map = serde_json::to_string(map).expect("seat maps serialise");
        let change = EventMapChange {
            event_id: eid,
            seat_map,
            seat_map_at: at,
        };
        if changed(&mut self.events_new, &mut self.events_upd, eid, change) {
            self.seats_cleared.insert(eid);
        }
        self.seats_new.retain(|(e, _), _| *e != eid);
        self.seats_upd.retain(|(e, _), _| *e != eid);
        let meta = Arc::new(EventMeta::new(old.organizer.clone(), old.currency, map.clone()));
        self.add_seats(&meta, eid, at);
        self.metas.insert(event, meta);
    }

    fn add_seats(&mut self, meta: &EventMeta, eid: Uuid, at: DateTime<Utc>) {
        let layout = &meta.layout;
        for i in 0..layout.len() as u32 {
            let seat = layout.seat_at(i);
            let (section, tier, price) = meta.seat(&seat).expect("a laid-out seat is in its map");
            let name = seat.to_string();
            let row = SeatRow {
                event_id: eid,
                seat: name.clone(),
                section: section.to_string(),
                row_name: seat.row.to_string(),
                number: i64::from(seat.number),
                tier: tier.to_string(),
                price,
                state: "available",
                reservation_id: None,
                updated_at: at,
            };
            self.seats_new.insert((eid, name), row);
        }
    }

    fn seats(
        &mut self,
        fact: &Fact,
        seats: &[SeatId],
        (state, reservation): (&'static str, Option<Uuid>),
        rid: Option<Uuid>,
        kind: &'static str,
    ) {
        let Fact {
            meta,
            eid,
            at,
            sequence,
        } = *fact;
        for seat in seats {
            let Some((section, tier, price)) = meta.seat(seat) else {
                self.orphans += 1;
                continue;
            };
            let key = (eid, seat.to_string());
            let change = SeatChange {
                event_id: eid,
                seat: key.1.clone(),
                state,
                reservation_id: reservation,
                updated_at: at,
            };
            changed(&mut self.seats_new, &mut self.seats_upd, key.clone(), change);
            self.history.push(SeatHistoryRow {
                event_id: eid,
                sequence: sequence as i64,
                seat: key.1,
                kind,
                reservation_id: rid,
                section: section.to_string(),
                tier: tier.to_string(),
                price,
                at,
            });
        }
    }

    fn reservation_status(&mut self, rid: Uuid, status: &'static str, at: DateTime<Utc>) {
        let change = ReservationChange {
            reservation_id: rid,
            status,
            status_at: at,
        };
        changed(&mut self.res_new, &mut self.res_upd, rid, change);
    }

    fn cancel_booking(&mut self, rid: Uuid, provider_event_id: &str, at: DateTime<Utc>) {
        let cancel = BookingCancel {
            reservation_id: rid,
            cancelled_at: at,
        };
        changed(&mut self.bookings_new, &mut self.bookings_upd, rid, cancel);
        let change = PaymentChange {
            provider_event_id: provider_event_id.to_owned(),
            status: "refunded",
            refunded_at: at,
        };
        changed(
            &mut self.payments_new,
            &mut self.payments_upd,
            provider_event_id.to_owned(),
            change,
        );
    }

    fn payment(
        &mut self,
        eid: Uuid,
        rid: Uuid,
        p: &Payment,
        status: &'static str,
        at: DateTime<Utc>,
        refunded_at: Option<DateTime<Utc>>,
    ) {
        let ids = (p.provider_event_id.as_str(), p.payment_intent.as_str());
        self.payment_row(eid, rid, ids, Some(&p.amount), status, at, refunded_at, None);
    }

    /// A new `payments` row: `ids` are the provider's event id and payment id, `paid` is
    /// absent (and `message` may say why) for a failed payment.
    #[expect(clippy::too_many_arguments, reason = "one payments row")]
    fn payment_row(
        &mut self,
        eid: Uuid,
        rid: Uuid,
        (provider_event_id, payment_intent): (&str, &str),
        paid: Option<&Money>,
        status: &'static str,
        at: DateTime<Utc>,
        refunded_at: Option<DateTime<Utc>>,
        message: Option<String>,
    ) {
        let row = PaymentRow {
            provider_event_id: provider_event_id.to_owned(),
            payment_intent: payment_intent.to_owned(),
            reservation_id: rid,
            event_id: eid,
            amount: paid.map(|m| m.amount),
            currency: paid.map(|m| m.currency.as_str().to_owned()),
            status,
            received_at: at,
            refunded_at,
            message,
        };
        self.payments_new.insert(provider_event_id.to_owned(), row);
    }

    #[expect(clippy::too_many_arguments, reason = "one double-entry transaction")]
    fn money(
        &mut self,
        txn: Uuid,
        eid: Uuid,
        rid: Uuid,
        kind: &'static str,
        money: &Money,
        lines: Vec<Line>,
        at: DateTime<Utc>,
    ) {
        for (line, (account, st, amount)) in lines.into_iter().enumerate() {
            let (section, tier) = st.map(|(s, t)| (s.to_string(), t.to_string())).unzip();
            self.money.push(MoneyEntry {
                txn_id: txn,
                line: line as i64,
                event_id: eid,
                reservation_id: rid,
                kind,
                account,
                section,
                tier,
                amount,
                currency: money.currency.as_str().to_owned(),
                at,
            });
        }
    }

    fn finish(self) -> Projected {
        let mut ops = vec![
            Op::Delete {
                table: &SEATS,
                col: SEATS.col("event_id"),
                values: self.seats_cleared.iter().map(|e| Val::Uuid(*e)).collect(),
            },
            insert(self.events_new.into_values()),
            update(self.events_upd.into_values()),
            insert(self.seats_new.into_values()),
            update(self.seats_upd.into_values()),
            insert(self.res_new.into_values()),
            update(self.res_upd.into_values()),
            insert(self.bookings_new.into_values()),
            update(self.bookings_upd.into_values()),
            insert(self.payments_new.into_values()),
            update(self.payments_upd.into_values()),
            insert(self.refunds),
            insert(self.money),
            insert(self.history),
        ];
        ops.retain(|op| !op.is_empty());
        Projected {
            ops,
            events: self.metas.into_iter().collect(),
            orphans: self.orphans,
        }
    }
}

/// Splits `amount` over the sections and tiers of `seats` by their prices. Any difference
/// between the amount and the seat prices (there is none for amounts the domain computed) goes
/// on a line without a section, so the transaction still balances.
fn revenue_lines(meta: &EventMeta, seats: &[SeatId], amount: i64) -> Vec<(Place, i64)> {
    let mut by: BTreeMap<(SectionCode, TierCode), i64> = BTreeMap::new();
    // Sums that do not fit (only prices of events recorded before prices were bounded) put the
    // whole amount on the line without a section: the split must add up exactly.
    for seat in seats {
        if let Some((section, tier, price)) = meta.seat(seat) {
            let line = by.entry((section, tier)).or_default();
            let Some(sum) = line.checked_add(price) else {
                return vec![(None, amount)];
            };
            *line = sum;
        }
    }
    let Some(rest) = checked_sum(by.values().copied()).and_then(|priced| amount.checked_sub(priced)) else {
        return vec![(None, amount)];
    };
    let mut lines: Vec<_> = by.into_iter().map(|(k, v)| (Some(k), v)).collect();
    if rest != 0 {
        lines.push((None, rest));
    }
    lines
}
