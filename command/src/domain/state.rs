//! The state of one event as the log made it: seats, reservations, what was already processed.
//!
//! `apply` only records what happened; it never decides. Everything here is rebuilt from the
//! log on restart, including the idempotency keys and the provider event ids already consumed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use frontrow_schema::seatmap::SeatLayout;
use frontrow_schema::snapshot::WithheldSeats;
use frontrow_schema::*;

use super::queue::QueueState;

/// Where one seat is in its life cycle: one byte per seat, in layout order. Which reservation
/// holds or owns a seat is the reservation's to say ([`Reservation::seats`],
/// [`EventState::holder_of`]): no decision needs it by seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SeatState {
    Available,
    Held,
    Booked,
    /// The organizer keeps it out of the sale (see [`EventState::withheld`]).
    Withheld,
}

impl SeatState {
    /// The letter of this state in an availability map's row strings: `A`vailable, `H`eld,
    /// `B`ooked or `W`ithheld.
    pub fn letter(self) -> char {
        match self {
            SeatState::Available => 'A',
            SeatState::Held => 'H',
            SeatState::Booked => 'B',
            SeatState::Withheld => 'W',
        }
    }
}

pub use frontrow_schema::snapshot::ReservationStatus;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reservation {
    pub id: ReservationId,
    pub customer: CustomerId,
    /// Seat indexes in the event's layout.
    pub seats: Vec<u32>,
    pub amount: Money,
    pub hold_until: DateTime<Utc>,
    pub status: ReservationStatus,
    /// The payment that booked it.
    pub payment: Option<Payment>,
    /// Payments given back (late, duplicate, wrong amount, cancelled).
    pub refunds: Vec<(Payment, RefundReason)>,
    /// Whether it was booked by a payment that came after the hold ended.
    pub late: bool,
    /// The `Idempotency-Key` it was reserved with.
    pub idempotency_key: Option<String>,
    /// The queue ticket whose admission it holds seats with (events with a waiting room).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<u64>,
}

/// Seat totals of one event; they always add up to the number of seats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub available: u32,
    pub held: u32,
    pub booked: u32,
    /// Withheld by the organizer: neither for sale nor available.
    pub withheld: u32,
}

impl Counts {
    fn slot(&mut self, seat: SeatState) -> &mut u32 {
        match seat {
            SeatState::Available => &mut self.available,
            SeatState::Held => &mut self.held,
            SeatState::Booked => &mut self.booked,
            SeatState::Withheld => &mut self.withheld,
        }
    }
}

/// One event's state.
#[derive(Debug, Clone)]
pub struct EventState {
    pub info: EventScheduled,
    pub layout: SeatLayout,
    pub seats: Vec<SeatState>,
    /// Shared with a snapshot being stored: taking one copies pointers, not reservations, and a
    /// reservation that changes meanwhile is copied then (`Arc::make_mut`).
    pub reservations: HashMap<ReservationId, Arc<Reservation>>,
    /// `(customer, Idempotency-Key)` of every reservation.
    pub idempotency: HashMap<(CustomerId, String), ReservationId>,
    /// Provider event ids already applied: a webhook is consumed at most once.
    pub payments_seen: HashSet<String>,
    /// The `Idempotency-Key` the event was scheduled with, if any.
    pub schedule_key: Option<String>,
    /// Sequence of the last applied event of this event's stream.
    pub sequence: u64,
    pub counts: Counts,
    /// The waiting room, once the organizer opened one.
    pub queue: Option<QueueState>,
    /// Each customer's live reservations (held or booked), for the per-customer seat limit.
    /// Derived from the reservations.
    pub live: HashMap<CustomerId, Live>,
    /// The label of every seat the organizer withholds, by seat index.
    pub withheld: BTreeMap<u32, String>,
    /// The request digest of every organizer hold or return written with an `Idempotency-Key`,
    /// by key (see `domain::withheld`).
    pub organizer_requests: BTreeMap<String, String>,
}

/// A customer's live reservations (held or booked), each with its seat count, and their sum:
/// what the per-customer limit asks at every reservation, kept as the reservations change
/// rather than summed over them each time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Live {
    reservations: Vec<(ReservationId, usize)>,
    seats: usize,
}

impl Live {
    pub fn ids(&self) -> impl Iterator<Item = ReservationId> + '_ {
        self.reservations.iter().map(|&(id, _)| id)
    }

    /// Seats the live reservations hold or own between them.
    pub fn seats(&self) -> usize {
        self.seats
    }

    fn is_empty(&self) -> bool {
        self.reservations.is_empty()
    }

    /// Adds the reservation, or updates its seat count.
    fn set(&mut self, id: ReservationId, seats: usize) {
        match self.reservations.iter_mut().find(|(r, _)| *r == id) {
            Some((_, had)) => {
                self.seats = self.seats - *had + seats;
                *had = seats;
            }
            None => {
                self.reservations.push((id, seats));
                self.seats += seats;
            }
        }
    }

    fn remove(&mut self, id: ReservationId) {
        if let Some(i) = self.reservations.iter().position(|&(r, _)| r == id) {
            self.seats -= self.reservations.swap_remove(i).1;
        }
    }
}

/// Everything of an [`EventState`] that cannot be derived from the rest: what a snapshot
/// stores. Seat states, counts and idempotency keys follow from the reservations.
/// (`writer::snapshot` encodes it; the serde derive reads version-1 JSON snapshots.)
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct EventSnapshot {
    pub info: EventScheduled,
    pub schedule_key: Option<String>,
    pub sequence: u64,
    /// In no particular order (the encoding sorts them).
    pub reservations: Vec<Arc<Reservation>>,
    /// In no particular order (the encoding sorts them).
    pub payments_seen: Vec<String>,
    /// Absent in JSON snapshots of events without a waiting room (and older ones).
    #[serde(default)]
    pub queue: Option<QueueState>,
    /// Absent in JSON snapshots when no seat is withheld (and in older ones).
    #[serde(default)]
    pub withheld: Vec<WithheldSeats>,
    /// Absent in JSON snapshots when no organizer hold came with an `Idempotency-Key` (and in
    /// older ones).
    #[serde(default)]
    pub organizer_requests: BTreeMap<String, String>,
}

impl EventState {
    /// Each seat's [`SeatState::letter`] by seat name: what an availability map of this state
    /// shows.
    pub fn seat_letters(&self) -> BTreeMap<String, char> {
        self.seats
            .iter()
            .enumerate()
            .map(|(i, s)| (self.layout.seat_at(i as u32).to_string(), s.letter()))
            .collect()
    }

    /// What a snapshot keeps of this state. A writer takes it on its own task, so it copies
    /// no reservation and sorts nothing.
    pub fn snapshot(&self) -> EventSnapshot {
        EventSnapshot {
            info: self.info.clone(),
            schedule_key: self.schedule_key.clone(),
            sequence: self.sequence,
            reservations: self.reservations.values().cloned().collect(),
            payments_seen: self.payments_seen.iter().cloned().collect(),
            queue: self.queue.clone(),
            withheld: self.withheld_by_label(),
            organizer_requests: self.organizer_requests.clone(),
        }
    }

    /// The withheld seats grouped by label, labels and seats in order.
    fn withheld_by_label(&self) -> Vec<WithheldSeats> {
        let mut groups: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for (&seat, label) in &self.withheld {
            groups.entry(label).or_default().push(seat);
        }
        groups
            .into_iter()
            .map(|(label, seats)| WithheldSeats {
                label: label.to_owned(),
                seats,
            })
            .collect()
    }

    /// The state a snapshot was taken of.
    pub fn from_snapshot(snapshot: EventSnapshot) -> Self {
        let mut state = Self::scheduled(snapshot.info, snapshot.schedule_key);
        state.sequence = snapshot.sequence;
        state.payments_seen = snapshot.payments_seen.into_iter().collect();
        state.queue = snapshot.queue;
        state.organizer_requests = snapshot.organizer_requests;
        for group in snapshot.withheld {
            for seat in group.seats {
                state.withhold(seat, &group.label);
            }
        }
        for r in snapshot.reservations {
            let seat = match r.status {
                ReservationStatus::Held => Some(SeatState::Held),
                ReservationStatus::Booked => Some(SeatState::Booked),
                ReservationStatus::Released(_) => None,
            };
            if let Some(seat) = seat {
                for &i in &r.seats {
                    state.set_seat(i, seat);
                }
            }
            if let Some(key) = &r.idempotency_key {
                state.idempotency.insert((r.customer.clone(), key.clone()), r.id);
            }
            let id = r.id;
            state.reservations.insert(id, r);
            state.track(id);
        }
        state
    }

    /// The state right after `EventScheduled`.
    pub fn scheduled(info: EventScheduled, idempotency_key: Option<String>) -> Self {
        let layout = SeatLayout::new(info.seat_map.clone());
        let n = layout.len();
        Self {
            info,
            layout,
            seats: vec![SeatState::Available; n],
            reservations: HashMap::new(),
            idempotency: HashMap::new(),
            payments_seen: HashSet::new(),
            schedule_key: idempotency_key,
            sequence: 1,
            counts: Counts {
                available: n as u32,
                ..Counts::default()
            },
            queue: None,
            live: HashMap::new(),
            withheld: BTreeMap::new(),
            organizer_requests: BTreeMap::new(),
        }
    }

    pub fn event_id(&self) -> EventId {
        self.info.event_id
    }

    /// Records one event that happened to this event (not `EventScheduled`, which creates it).
    pub fn apply(&mut self, event: &Event, idempotency_key: Option<&str>) {
        self.sequence += 1;
        if let Some(id) = event.provider_event_id() {
            self.payments_seen.insert(id.to_owned());
        }
        match event {
            Event::EventScheduled(_) => {}
            Event::SeatMapChanged(e) => {
                self.info.seat_map = e.seat_map.clone();
                self.layout = SeatLayout::new(e.seat_map.clone());
                self.seats = vec![SeatState::Available; self.layout.len()];
                self.counts = Counts {
                    available: self.layout.len() as u32,
                    ..Counts::default()
                };
                // The new map's seats are all on sale: holds of the old map's seats end.
                self.withheld.clear();
            }
            Event::SeatsReserved(e) => {
                let seats = self.indexes(&e.seats);
                for &i in &seats {
                    self.set_seat(i, SeatState::Held);
                }
                if let Some(key) = idempotency_key {
                    self.idempotency
                        .insert((e.customer.clone(), key.to_owned()), e.reservation_id);
                }
                self.reservations.insert(
                    e.reservation_id,
                    Arc::new(Reservation {
                        id: e.reservation_id,
                        customer: e.customer.clone(),
                        seats,
                        amount: e.amount,
                        hold_until: e.hold_until,
                        status: ReservationStatus::Held,
                        payment: None,
                        refunds: Vec::new(),
                        late: false,
                        idempotency_key: idempotency_key.map(str::to_owned),
                        admission: e.admission_ticket,
                    }),
                );
                if let (Some(ticket), Some(queue)) = (e.admission_ticket, self.queue.as_mut()) {
                    queue.hold(ticket, e.reservation_id);
                }
                self.track(e.reservation_id);
            }
            Event::SeatsBooked(e) => {
                let seats = self.indexes(&e.seats);
                for &i in &seats {
                    self.set_seat(i, SeatState::Booked);
                }
                if let Some(r) = self.reservations.get_mut(&e.reservation_id).map(Arc::make_mut) {
                    r.status = ReservationStatus::Booked;
                    r.payment = Some(e.payment.clone());
                    r.late = e.late;
                    r.seats = seats;
                }
                self.unhold(e.reservation_id);
                self.track(e.reservation_id);
            }
            Event::SeatsReleased(e) => {
                for i in self.indexes(&e.seats) {
                    self.set_seat(i, SeatState::Available);
                }
                if let Some(r) = self.reservations.get_mut(&e.reservation_id).map(Arc::make_mut) {
                    r.status = ReservationStatus::Released(e.reason);
                }
                self.unhold(e.reservation_id);
                self.track(e.reservation_id);
            }
            Event::PaymentRefunded(e) => {
                if let Some(r) = self.reservations.get_mut(&e.reservation_id).map(Arc::make_mut) {
                    r.refunds.push((e.payment.clone(), e.reason));
                }
            }
            Event::PaymentFailed(_) => {}
            Event::SeatsWithheld(e) => {
                for i in self.indexes(&e.seats) {
                    self.withhold(i, &e.label);
                }
                self.organizer_request(idempotency_key, &e.request);
            }
            Event::SeatsReturned(e) => {
                for i in self.indexes(&e.seats) {
                    if self.withheld.remove(&i).is_some() {
                        self.set_seat(i, SeatState::Available);
                    }
                }
                self.organizer_request(idempotency_key, &e.request);
            }
            Event::Queue(QueueEvent::Opened(config)) => match self.queue.as_mut() {
                Some(queue) => queue.apply(&QueueEvent::Opened(config.clone())),
                None => self.queue = Some(QueueState::opened(config.clone())),
            },
            Event::Queue(e) => {
                if let Some(queue) = self.queue.as_mut() {
                    queue.apply(e);
                }
            }
        }
    }

    /// Keeps a reservation in its customer's live list exactly while it holds or owns seats,
    /// with its seat count.
    fn track(&mut self, reservation_id: ReservationId) {
        let Some(r) = self.reservations.get(&reservation_id) else {
            return;
        };
        if matches!(r.status, ReservationStatus::Held | ReservationStatus::Booked) {
            if !self.live.contains_key(&r.customer) {
                self.live.insert(r.customer.clone(), Live::default());
            }
            if let Some(list) = self.live.get_mut(&r.customer) {
                list.set(reservation_id, r.seats.len());
            }
        } else if let Some(list) = self.live.get_mut(&r.customer) {
            list.remove(reservation_id);
            if list.is_empty() {
                self.live.remove(&r.customer);
            }
        }
    }

    /// The live reservation (held or booked) whose seats include this one, if any: found from the
    /// customers' live reservations, not kept per seat.
    pub fn holder_of(&self, index: u32) -> Option<ReservationId> {
        self.live
            .values()
            .flat_map(Live::ids)
            .filter_map(|id| self.reservations.get(&id).map(|r| &**r))
            .find(|r| r.seats.contains(&index))
            .map(|r| r.id)
    }

    /// Seats the customer holds or owns right now.
    pub fn live_seats_of(&self, customer: &CustomerId) -> usize {
        self.live.get(customer).map_or(0, Live::seats)
    }

    /// A hold of the customer's that is still holding its seats, if any.
    pub fn hold_of(&self, customer: &CustomerId) -> Option<ReservationId> {
        self.live_of(customer)
            .find(|r| r.status == ReservationStatus::Held)
            .map(|r| r.id)
    }

    fn live_of(&self, customer: &CustomerId) -> impl Iterator<Item = &Reservation> {
        self.live
            .get(customer)
            .into_iter()
            .flat_map(Live::ids)
            .filter_map(|id| self.reservations.get(&id).map(|r| &**r))
    }

    /// The reservation no longer holds seats with its admission.
    fn unhold(&mut self, reservation_id: ReservationId) {
        let ticket = self.reservations.get(&reservation_id).and_then(|r| r.admission);
        if let (Some(ticket), Some(queue)) = (ticket, self.queue.as_mut()) {
            queue.unhold(ticket, reservation_id);
        }
    }

    fn indexes(&self, seats: &[SeatId]) -> Vec<u32> {
        // Seats in the log were valid for the layout when decided, and the layout only changes
        // before any reservation exists; an unknown seat here would be a corrupted log.
        seats.iter().filter_map(|s| self.layout.index_of(s)).collect()
    }

    /// Remembers an organizer request written with an `Idempotency-Key`.
    fn organizer_request(&mut self, key: Option<&str>, digest: &Option<String>) {
        if let (Some(key), Some(digest)) = (key, digest) {
            self.organizer_requests.insert(key.to_owned(), digest.clone());
        }
    }

    fn withhold(&mut self, index: u32, label: &str) {
        self.withheld.insert(index, label.to_owned());
        self.set_seat(index, SeatState::Withheld);
    }

    fn set_seat(&mut self, index: u32, to: SeatState) {
        let slot = &mut self.seats[index as usize];
        *self.counts.slot(*slot) -= 1;
        *self.counts.slot(to) += 1;
        *slot = to;
    }

    /// The seat ids of some seat indexes.
    pub fn seat_ids(&self, seats: &[u32]) -> Vec<SeatId> {
        seats.iter().map(|&i| self.layout.seat_at(i)).collect()
    }

    /// Reservations whose hold has passed its deadline at `now` and still holds seats.
    pub fn due_holds(&self, now: DateTime<Utc>) -> impl Iterator<Item = &Reservation> {
        self.reservations
            .values()
            .map(|r| &**r)
            .filter(move |r| r.status == ReservationStatus::Held && r.hold_until <= now)
    }
}
