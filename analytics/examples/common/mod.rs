//! What the analytics benchmarks share: their big seat map, the bench event, the facts of one
//! seat pair held by a random fan and then released or booked, numbered in order, and the log
//! of one event made of such pairs, which each benchmark appends to its own [`Sink`].

use std::ops::Range;

use chrono::{DateTime, Duration, Utc};
use frontrow_journal::Record;
use frontrow_schema::seatmap::SeatLayout;
use frontrow_schema::*;
use rand::Rng;
use rand::rngs::StdRng;

/// Rows per section of [`seat_map`], and seats per row.
pub const ROWS: u32 = 25;
pub const PER_ROW: u16 = 20;

/// `sections` sections of [`ROWS`] rows of [`PER_ROW`] seats; the first five rows Gold.
pub fn seat_map(sections: u32) -> SeatMap {
    let sections: Vec<_> = (1..=sections)
        .map(|s| {
            let rows: Vec<_> = (1..=ROWS)
                .map(|r| serde_json::json!({"name": format!("R{r}"), "seats": PER_ROW, "tier": if r <= 5 { "GOLD" } else { "STD" }}))
                .collect();
            serde_json::json!({"code": format!("S{s}"), "name": format!("Section {s}"), "rows": rows})
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "GOLD", "name": "Gold", "price": 12000}, {"code": "STD", "name": "Standard", "price": 5000}],
        "sections": sections
    }))
    .expect("a valid map")
}

/// A bench event on `map`, in euros.
pub fn bench_event(
    event: EventId,
    map: SeatMap,
    onsale_at: DateTime<Utc>,
    starts_at: DateTime<Utc>,
) -> anyhow::Result<EventScheduled> {
    Ok(EventScheduled {
        event_id: event,
        organizer: OrganizerId::parse("bench")?,
        title: format!("Bench {event}"),
        artist: "Load".into(),
        venue: "Arena".into(),
        city: "Lyon".into(),
        tags: vec![],
        aliases: vec![],
        starts_at,
        onsale_at,
        hold_minutes: HoldMinutes::DEFAULT,
        max_seats_per_order: 6,
        max_seats_per_customer: None,
        // Seats are picked at random here, whatever they leave alone: the no-orphan rule is off.
        allow_orphan_seats: true,
        currency: Currency::parse("EUR")?,
        seat_map: map.into(),
    })
}

/// Numbers one event's facts from 1 and stamps each in a fresh envelope, as its writer would.
pub struct Stamps {
    event: EventId,
    sequence: u64,
}

impl Stamps {
    pub fn new(event: EventId) -> Self {
        Self { event, sequence: 0 }
    }

    pub fn envelope(&mut self, fact: Event, now: DateTime<Utc>) -> Envelope {
        self.sequence += 1;
        Envelope::new(self.event, self.sequence, now, fact)
    }
}

/// The seats from index `first` (two, or the last one alone) held by a random fan.
pub struct Pair {
    rid: ReservationId,
    customer: CustomerId,
    seats: Vec<SeatId>,
    amount: Money,
}

impl Pair {
    pub fn new(layout: &SeatLayout, first: u32, rng: &mut StdRng, currency: Currency) -> anyhow::Result<Self> {
        let n = layout.len() as u32;
        let seats: Vec<SeatId> = (first..(first + 2).min(n)).map(|i| layout.seat_at(i)).collect();
        let amount: i64 = (first..(first + 2).min(n)).map(|i| layout.price_of(i)).sum();
        Ok(Self {
            rid: ReservationId::new(),
            customer: CustomerId::parse(&format!("fan{}", rng.random_range(0..100_000)))?,
            seats,
            amount: Money { amount, currency },
        })
    }

    /// The fan holds the pair from `now` for ten minutes.
    pub fn reserved(&self, now: DateTime<Utc>) -> Event {
        Event::SeatsReserved(SeatsReserved {
            reservation_id: self.rid,
            customer: self.customer.clone(),
            seats: self.seats.clone(),
            hold_until: now + Duration::minutes(10),
            amount: self.amount,
            admission_ticket: None,
        })
    }

    pub fn released(self, reason: ReleaseReason) -> Event {
        Event::SeatsReleased(SeatsReleased {
            reservation_id: self.rid,
            seats: self.seats,
            reason,
        })
    }

    /// The fan pays the hold in full.
    pub fn booked(self) -> Event {
        let rid = self.rid;
        Event::SeatsBooked(SeatsBooked {
            reservation_id: rid,
            customer: self.customer,
            seats: self.seats,
            payment: Payment {
                provider_event_id: format!("evt_{rid}"),
                payment_intent: format!("pi_{rid}"),
                amount: self.amount,
            },
            late: false,
        })
    }
}

/// Where a benchmark appends the envelopes of its log.
pub trait Sink {
    async fn push(&mut self, env: Envelope) -> anyhow::Result<()>;
}

/// The journal record of an envelope, keyed by its event.
pub fn record(env: &Envelope) -> Record {
    Record {
        key: env.key(),
        value: encode(env),
    }
}

/// One bench event's log, envelope by envelope: the event scheduled at the start, then from its
/// onsale `rounds + 1` passes over its seat pairs. In each pass every pair is held by a random
/// fan a few milliseconds (`step_ms`) after the fact before, and its hold ends at once:
/// released, for the reason `release` picks, in every pass but the last; booked in the last.
pub struct EventLog<'r, F> {
    rng: &'r mut StdRng,
    layout: SeatLayout,
    currency: Currency,
    stamps: Stamps,
    now: DateTime<Utc>,
    rounds: u32,
    round: u32,
    next_pair: u32,
    step_ms: Range<i64>,
    release: F,
    /// What comes before the next pair: the schedule, or the end of the pair just held.
    queued: Option<Envelope>,
}

impl<'r, F: FnMut(&mut StdRng) -> ReleaseReason> EventLog<'r, F> {
    pub fn new(
        info: EventScheduled,
        start: DateTime<Utc>,
        rng: &'r mut StdRng,
        rounds: u32,
        step_ms: Range<i64>,
        release: F,
    ) -> Self {
        let mut stamps = Stamps::new(info.event_id);
        let (layout, currency, now) = (SeatLayout::new(info.seat_map.clone()), info.currency, info.onsale_at);
        let queued = Some(stamps.envelope(Event::EventScheduled(info), start));
        Self {
            rng,
            layout,
            currency,
            stamps,
            now,
            rounds,
            round: 0,
            next_pair: 0,
            step_ms,
            release,
            queued,
        }
    }
}

impl<F: FnMut(&mut StdRng) -> ReleaseReason> EventLog<'_, F> {
    /// Pushes the whole log to `sink`; returns the time of its last fact.
    pub async fn write_to(self, sink: &mut impl Sink) -> anyhow::Result<DateTime<Utc>> {
        let mut last = self.now;
        for env in self {
            let env = env?;
            last = env.time;
            sink.push(env).await?;
        }
        Ok(last)
    }
}

impl<F: FnMut(&mut StdRng) -> ReleaseReason> Iterator for EventLog<'_, F> {
    type Item = anyhow::Result<Envelope>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(env) = self.queued.take() {
            return Some(Ok(env));
        }
        if self.next_pair >= self.layout.len() as u32 {
            (self.round, self.next_pair) = (self.round + 1, 0);
        }
        if self.round > self.rounds {
            return None;
        }
        self.now += Duration::milliseconds(self.rng.random_range(self.step_ms.clone()));
        let pair = match Pair::new(&self.layout, self.next_pair, self.rng, self.currency) {
            Ok(pair) => pair,
            Err(e) => return Some(Err(e)),
        };
        self.next_pair += 2;
        let held = self.stamps.envelope(pair.reserved(self.now), self.now);
        let end = if self.round < self.rounds {
            pair.released((self.release)(self.rng))
        } else {
            pair.booked()
        };
        self.queued = Some(self.stamps.envelope(end, self.now));
        Some(Ok(held))
    }
}
