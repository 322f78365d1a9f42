//! One event's live state on the query side: what it is, and where each of its seats stands.
//!
//! [`LiveEvent`] is pure: it is created from an `EventScheduled` fact and then only records the
//! facts that follow (`apply`), with no I/O, clock or locking of its own. Seats are kept as one
//! [`SeatStatus`] byte per seat of the flat [`SeatLayout`] index, with running counts per section
//! so that reading counts never walks the seats. The serialized availability map is built at most
//! once per change and then served as shared [`Bytes`].

use std::sync::OnceLock;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use frontrow_journal::Position;
use frontrow_schema::seatmap::SeatLayout;
use frontrow_schema::snapshot::{EventSeats, ReservationStatus};
use frontrow_schema::{Event, EventScheduled, QueueEvent, SeatId, SectionCode};
use metrics::Gauge;
use tokio::sync::watch;

use crate::queue::QueueLive;

use crate::views::{
    AvailabilityMap, EventDetails, EventSummary, Legend, RowAvailability, SeatCounts, SeatStatus, SectionAvailability,
    ZoneAvailability,
};

/// An event and the live status of its seats.
#[derive(Debug)]
pub struct LiveEvent {
    /// The schedule as announced; its `seat_map` is stale after a `SeatMapChanged` (the current
    /// map is `layout.map()`).
    info: EventScheduled,
    layout: SeatLayout,
    /// One entry per flat seat index.
    seats: Vec<SeatStatus>,
    /// Counts per section, in the layout's section order.
    sections: Vec<SeatCounts>,
    total: SeatCounts,
    /// The last record that changed this event: the version behind its `ETag`.
    position: Position,
    /// The JSON availability map of this version, built on first read.
    body: OnceLock<Bytes>,
    /// The same map gzip-compressed, built on the first read that accepts gzip.
    gzip: OnceLock<Bytes>,
    /// The waiting room, if the organizer opened one.
    queue: Option<QueueLive>,
    /// The last record that changed the waiting room: the version of every fan's status.
    queue_version: Option<Position>,
    /// Counts the waiting-room facts that can change a fan's status stream (not first joins):
    /// what the streams wait on, so a batch of joins wakes none of them.
    queue_changes: watch::Sender<u64>,
    /// The waiting room's gauges, looked up once.
    queue_gauges: OnceLock<(Gauge, Gauge)>,
}

/// What applying one fact did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Applied {
    /// The event's state (and so its version) changed.
    pub changed: bool,
    /// Seats named by the fact that the current seat map does not have; they were skipped.
    pub unknown_seats: usize,
}

impl LiveEvent {
    /// A newly scheduled event with every seat available.
    pub fn scheduled(info: &EventScheduled, at: Position) -> Self {
        let mut event = Self {
            info: info.clone(),
            layout: SeatLayout::new(info.seat_map.clone()),
            seats: Vec::new(),
            sections: Vec::new(),
            total: SeatCounts::default(),
            position: at,
            body: OnceLock::new(),
            gzip: OnceLock::new(),
            queue: None,
            queue_version: None,
            queue_changes: watch::Sender::new(0),
            queue_gauges: OnceLock::new(),
        };
        event.reset_seats();
        event
    }

    /// The event as a partition snapshot left it: `seats` is the snapshot's entry for it, and
    /// `at` the last record before the snapshot that changed it (which the snapshot does not
    /// say). Seats the current map does not have are skipped. The waiting room is not in it.
    pub fn from_snapshot(seats: &EventSeats, at: Position) -> Self {
        let mut event = Self::scheduled(&seats.info, at);
        for reservation in &seats.reservations {
            let to = match reservation.status {
                ReservationStatus::Held => SeatStatus::Held,
                ReservationStatus::Booked => SeatStatus::Booked,
                ReservationStatus::Released(_) => continue,
            };
            event.set_indexes(&reservation.seats, to);
        }
        for group in &seats.withheld {
            event.set_indexes(&group.seats, SeatStatus::Withheld);
        }
        event
    }

    /// Sets seats by flat index; indexes the map does not have are skipped.
    fn set_indexes(&mut self, indexes: &[u32], to: SeatStatus) {
        for &index in indexes {
            let Some(slot) = self.seats.get_mut(index as usize) else {
                continue;
            };
            let from = std::mem::replace(slot, to);
            if from != to {
                let section = self.layout.row_of(index).section as usize;
                self.sections[section].moved(from, to);
                self.total.moved(from, to);
            }
        }
    }

    /// Records a fact about this event that was read at `at`.
    pub fn apply(&mut self, event: &Event, at: Position) -> Applied {
        let mut applied = Applied::default();
        match event {
            Event::EventScheduled(_) => {}
            Event::SeatMapChanged(e) => {
                self.layout = SeatLayout::new(e.seat_map.clone());
                self.reset_seats();
                applied.changed = true;
            }
            _ => {
                if let Some((seats, to)) = event.seat_move() {
                    applied = self.set(seats, to);
                }
            }
        }
        if applied.changed {
            self.position = at;
            self.body = OnceLock::new();
            self.gzip = OnceLock::new();
        }
        applied
    }

    /// Records a waiting-room fact read at `at`, written at `time`.
    pub fn apply_queue(&mut self, event: &QueueEvent, at: Position, time: DateTime<Utc>) {
        let queue = self.queue.get_or_insert_with(QueueLive::default);
        if queue.apply(event, time) {
            self.queue_changes.send_modify(|n| *n += 1);
        }
        self.queue_version = Some(at);
        let (waiting, admitted) = self.queue_gauges.get_or_init(|| {
            let event_id = self.info.event_id.to_string();
            (
                metrics::gauge!("frontrow_queue_waiting", "event" => event_id.clone()),
                metrics::gauge!("frontrow_queue_admitted", "event" => event_id),
            )
        });
        waiting.set(queue.waiting as f64);
        admitted.set(queue.admitted as f64);
    }

    /// Resolves on each waiting-room fact that can change a fan's status (see
    /// [`QueueLive::apply`]).
    pub fn watch_queue(&self) -> watch::Receiver<u64> {
        self.queue_changes.subscribe()
    }

    /// The waiting room and its version, if the event has one.
    pub fn queue(&self) -> Option<(&QueueLive, Position)> {
        Some((self.queue.as_ref()?, self.queue_version?))
    }

    fn reset_seats(&mut self) {
        self.seats = vec![SeatStatus::Available; self.layout.len()];
        self.sections = (0..self.layout.section_count())
            .map(|s| {
                let seats = self.layout.section_rows(s).iter().map(|r| u32::from(r.seats)).sum();
                SeatCounts::all_available(seats)
            })
            .collect();
        self.total = SeatCounts::all_available(self.seats.len() as u32);
    }

    fn set(&mut self, seats: &[SeatId], to: SeatStatus) -> Applied {
        let mut applied = Applied {
            changed: true,
            unknown_seats: 0,
        };
        for seat in seats {
            let Some(index) = self.layout.index_of(seat) else {
                applied.unknown_seats += 1;
                continue;
            };
            let from = std::mem::replace(&mut self.seats[index as usize], to);
            if from != to {
                let section = self.layout.row_of(index).section as usize;
                self.sections[section].moved(from, to);
                self.total.moved(from, to);
            }
        }
        applied
    }

    pub fn info(&self) -> &EventScheduled {
        &self.info
    }

    pub fn position(&self) -> Position {
        self.position
    }

    pub fn counts(&self) -> SeatCounts {
        self.total
    }

    /// The status of one seat, if the current seat map has it.
    pub fn status(&self, seat: &SeatId) -> Option<SeatStatus> {
        self.layout.index_of(seat).map(|i| self.seats[i as usize])
    }

    pub fn summary(&self) -> EventSummary {
        let i = &self.info;
        EventSummary {
            event_id: i.event_id,
            title: i.title.clone(),
            artist: i.artist.clone(),
            venue: i.venue.clone(),
            city: i.city.clone(),
            starts_at: i.starts_at,
            onsale_at: i.onsale_at,
            currency: i.currency,
            seats: self.total,
        }
    }

    pub fn details(&self) -> EventDetails {
        let i = &self.info;
        EventDetails {
            summary: self.summary(),
            hold_minutes: i.hold_minutes.minutes(),
            max_seats_per_order: i.max_seats_per_order,
            max_seats_per_customer: i.seats_per_customer(),
            allow_orphan_seats: i.allow_orphan_seats,
            seat_map: self.layout.map().clone(),
            waiting_room: self.queue.is_some(),
            position: self.position.to_string(),
        }
    }

    /// The availability map of the current version.
    pub fn availability(&self) -> AvailabilityMap {
        let map = self.layout.map();
        let sections = map
            .sections
            .iter()
            .zip(&self.sections)
            .enumerate()
            .map(|(si, (section, counts))| SectionAvailability {
                code: section.code.clone(),
                name: section.name.clone(),
                available: counts.available,
                held: counts.held,
                booked: counts.booked,
                withheld: counts.withheld,
                rows: section
                    .rows
                    .iter()
                    .zip(self.layout.section_rows(si))
                    .map(|(row, span)| {
                        let start = span.start as usize;
                        let seats = &self.seats[start..start + usize::from(span.seats)];
                        RowAvailability {
                            name: row.name.clone(),
                            tier: row.tier.clone(),
                            price: span.price,
                            seats: seats.iter().map(|s| s.letter()).collect(),
                            attributes: (*row.attributes).clone(),
                        }
                    })
                    .collect(),
                standing: self.zone_at(si),
            })
            .collect();
        AvailabilityMap {
            event_id: self.info.event_id,
            position: self.position.to_string(),
            seats: self.total,
            legend: Legend::SEATS,
            sections,
        }
    }

    /// The counts of a standing zone, if `code` is one.
    pub fn zone(&self, code: &SectionCode) -> Option<ZoneAvailability> {
        self.zone_at(self.layout.section_index(code)?)
    }

    fn zone_at(&self, section: usize) -> Option<ZoneAvailability> {
        let span = self.layout.zone_span(section)?;
        let zone = self.layout.map().sections[section].standing.as_ref()?;
        let counts = self.sections[section];
        Some(ZoneAvailability {
            zone: self.layout.map().sections[section].code.clone(),
            capacity: u32::from(span.seats),
            tier: zone.tier.clone(),
            price: span.price,
            available: counts.available,
            held: counts.held,
            booked: counts.booked,
            withheld: counts.withheld,
        })
    }

    /// The availability map as JSON, serialized once per version and shared after that.
    pub fn availability_body(&self) -> Bytes {
        self.body
            .get_or_init(|| {
                // Plain structs of strings and numbers always serialise.
                Bytes::from(serde_json::to_vec(&self.availability()).expect("availability serialises"))
            })
            .clone()
    }

    /// [`availability_body`](Self::availability_body) gzip-compressed, once per version: a
    /// 20,008-seat map is about 60 KB of JSON and a few KB compressed, and an onsale's readers
    /// ask for the same version thousands of times.
    pub fn availability_gzip(&self) -> Bytes {
        self.gzip
            .get_or_init(|| {
                use std::io::Write;
                // The fast level: the letters compress well at any level, and this runs under the
                // catalog's read lock.
                let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                encoder
                    .write_all(&self.availability_body())
                    .and_then(|()| encoder.finish())
                    .map(Bytes::from)
                    .expect("compressing into memory cannot fail")
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use frontrow_schema::testsuite;
    use frontrow_schema::*;

    use super::*;

    fn at(offset: u64) -> Position {
        Position { partition: 0, offset }
    }

    /// The schema's sample event on the integration tests' small map: A (4 GOLD, 3 STD) and
    /// B (2 STD), on sale from 1 March 2026.
    fn scheduled() -> EventScheduled {
        let onsale = Utc.with_ymd_and_hms(2026, 3, 1, 10, 0, 0).unwrap();
        let seat_map = serde_json::from_str(include_str!("../tests/query/small_map.json")).unwrap();
        testsuite::sample_event(EventId::new(), onsale, seat_map)
    }

    fn seats(ids: &[&str]) -> Vec<SeatId> {
        ids.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn reserved(ids: &[&str]) -> Event {
        Event::SeatsReserved(SeatsReserved {
            reservation_id: ReservationId::new(),
            customer: CustomerId::parse("alice").unwrap(),
            seats: seats(ids),
            hold_until: Utc.with_ymd_and_hms(2026, 3, 1, 10, 10, 0).unwrap(),
            amount: Money {
                amount: 0,
                currency: Currency::parse("EUR").unwrap(),
            },
            admission_ticket: None,
        })
    }

    #[test]
    fn holds_show_in_counts_and_letters() {
        let mut event = LiveEvent::scheduled(&scheduled(), at(0));
        assert_eq!(
            event.counts(),
            SeatCounts {
                total: 9,
                available: 9,
                held: 0,
                booked: 0,
                withheld: 0
            }
        );
        let applied = event.apply(&reserved(&["A-1-2", "B-1-1", "Z-9-9"]), at(4));
        assert_eq!(
            applied,
            Applied {
                changed: true,
                unknown_seats: 1
            }
        );
        assert_eq!(event.position(), at(4));
        assert_eq!(
            event.counts(),
            SeatCounts {
                total: 9,
                available: 7,
                held: 2,
                booked: 0,
                withheld: 0
            }
        );
        let map = event.availability();
        assert_eq!(map.sections[0].rows[0].seats, "AHAA");
        assert_eq!(map.sections[0].rows[1].seats, "AAA");
        assert_eq!(map.sections[1].rows[0].seats, "HA");
        assert_eq!((map.sections[0].held, map.sections[1].held), (1, 1));
        assert_eq!(map.sections[0].rows[0].price, 9900);
    }

    #[test]
    fn payment_facts_do_not_change_the_version() {
        let mut event = LiveEvent::scheduled(&scheduled(), at(0));
        let body = event.availability_body();
        let failed = Event::PaymentFailed(PaymentFailed {
            reservation_id: ReservationId::new(),
            provider_event_id: "evt_1".into(),
            payment_intent: "pi_1".into(),
            message: None,
        });
        assert!(!event.apply(&failed, at(1)).changed);
        assert_eq!(event.position(), at(0));
        // The cached body is the same allocation, not a rebuilt copy.
        assert_eq!(event.availability_body().as_ptr(), body.as_ptr());
    }

    #[test]
    fn a_new_seat_map_frees_every_seat() {
        let mut event = LiveEvent::scheduled(&scheduled(), at(0));
        event.apply(&reserved(&["A-1-1"]), at(1));
        let mut map = scheduled().seat_map;
        std::sync::Arc::make_mut(&mut map).sections.pop();
        event.apply(&Event::SeatMapChanged(SeatMapChanged { seat_map: map }), at(2));
        assert_eq!(
            event.counts(),
            SeatCounts {
                total: 7,
                available: 7,
                held: 0,
                booked: 0,
                withheld: 0
            }
        );
        assert_eq!(event.status(&"B-1-1".parse().unwrap()), None);
        assert_eq!(event.details().seat_map.sections.len(), 1);
    }

    #[test]
    fn a_standing_zone_shows_its_counts_instead_of_letters() {
        let mut info = scheduled();
        info.seat_map = serde_json::from_value(serde_json::json!({
            "tiers": [{"code": "GOLD", "name": "Gold", "price": 9900},
                      {"code": "GA", "name": "Standing", "price": 3500}],
            "sections": [
                {"code": "A", "name": "Seats", "rows": [{"name": "1", "seats": 2, "tier": "GOLD"}]},
                {"code": "FLOOR", "name": "Floor", "standing": {"capacity": 5000, "tier": "GA"}}
            ]
        }))
        .unwrap();
        let mut event = LiveEvent::scheduled(&info, at(0));
        let places: Vec<SeatId> = ["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let reserved = |seats: Vec<SeatId>| {
            Event::SeatsReserved(SeatsReserved {
                reservation_id: ReservationId::new(),
                customer: CustomerId::parse("ann").unwrap(),
                seats,
                hold_until: Utc.with_ymd_and_hms(2026, 3, 1, 10, 10, 0).unwrap(),
                amount: Money {
                    amount: 10500,
                    currency: Currency::parse("EUR").unwrap(),
                },
                admission_ticket: None,
            })
        };
        event.apply(&reserved(places.clone()), at(1));
        event.apply(
            &Event::SeatsBooked(SeatsBooked {
                reservation_id: ReservationId::new(),
                customer: CustomerId::parse("ann").unwrap(),
                seats: places[..1].to_vec(),
                payment: Payment {
                    provider_event_id: "evt_1".into(),
                    payment_intent: "pi_1".into(),
                    amount: Money {
                        amount: 3500,
                        currency: Currency::parse("EUR").unwrap(),
                    },
                },
                late: false,
            }),
            at(2),
        );
        let map = event.availability();
        assert_eq!(map.seats.total, 5002);
        let floor = &map.sections[1];
        assert!(floor.rows.is_empty());
        let zone = floor.standing.as_ref().expect("FLOOR is a zone");
        assert_eq!(
            (zone.capacity, zone.available, zone.held, zone.booked, zone.price),
            (5000, 4997, 2, 1, 3500)
        );
        assert_eq!((floor.available, floor.held, floor.booked), (4997, 2, 1));
        assert_eq!(map.sections[0].standing, None);
        let json = serde_json::to_value(&map).unwrap();
        assert!(
            json["sections"][0].get("standing").is_none(),
            "seated sections read as before"
        );
        assert_eq!(json["sections"][1]["standing"]["available"], 4997);
        assert!(json.to_string().len() < 1000, "no letter per place: {json}");
        assert_eq!(event.zone(&SectionCode::parse("FLOOR").unwrap()), Some(zone.clone()));
        assert_eq!(event.zone(&SectionCode::parse("A").unwrap()), None);
        assert!(
            json["sections"][1]["standing"].get("withheld").is_none(),
            "a zone with no place withheld reads as before"
        );

        // The organizer keeps two places back (a guest list): the zone's counts still add up to
        // its capacity.
        event.apply(
            &Event::SeatsWithheld(SeatsWithheld {
                seats: vec!["FLOOR-GA-4".parse().unwrap(), "FLOOR-GA-5".parse().unwrap()],
                label: "guest list".into(),
                request: None,
            }),
            at(3),
        );
        let map = event.availability();
        let zone = map.sections[1].standing.as_ref().unwrap();
        assert_eq!((zone.available, zone.held, zone.booked, zone.withheld), (4995, 2, 1, 2));
        assert_eq!(zone.available + zone.held + zone.booked + zone.withheld, zone.capacity);
        let json = serde_json::to_value(&map).unwrap();
        assert_eq!(json["sections"][1]["standing"]["withheld"], 2);
    }
}
