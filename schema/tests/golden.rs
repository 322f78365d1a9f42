//! Golden files pin the stored JSON of every event type.
//!
//! Each file under `tests/golden/v1/` is an envelope as it was first written. The test checks
//! both directions: today's encoder writes exactly that JSON, and today's decoder reads the
//! file back into the same value. A change that breaks either needs a new schema version and an
//! upcaster, never an edit of these files. Regenerate a *new* file with `UPDATE_GOLDEN=1`.

use std::path::PathBuf;

use chrono::{DateTime, TimeZone, Utc};
use frontrow_schema::testsuite::{self, seated, standing};
use frontrow_schema::*;
use uuid::Uuid;

fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(0x0190_a4b8_0000_7000_8000_0000_0000_0000 | n)
}

fn envelope(seq: u64, event: Event) -> Envelope {
    let (id, event_id, time) = (
        uuid(0x100 + u128::from(seq)),
        EventId::from_uuid(uuid(1)),
        at(3, 1, 10, 0, seq as u32),
    );
    Envelope {
        causation_id: Some(uuid(0x200 + u128::from(seq))),
        correlation_id: Some(uuid(0x300)),
        idempotency_key: (seq == 3).then(|| "reserve-7f3a".to_owned()),
        ..Envelope::with_id(id, event_id, seq, time, event)
    }
}

fn seat_map() -> SeatMap {
    testsuite::seat_map(
        &[("GOLD", "Gold", 12900), ("STD", "Standard", 5900)],
        vec![
            seated("FLA", "Floor A", &[("1", 20, "GOLD"), ("2", 20, "GOLD")]),
            seated("101", "Lower 101", &[("A", 18, "STD")]),
        ],
    )
}

/// A mixed venue: one seated section and a standing zone.
fn zone_seat_map() -> SeatMap {
    testsuite::seat_map(
        &[("GOLD", "Gold", 12900), ("GA", "General admission", 4900)],
        vec![
            seated("101", "Lower 101", &[("A", 18, "GOLD")]),
            standing("FLOOR", "Standing floor", 5000, "GA"),
        ],
    )
}

fn money(amount: i64) -> Money {
    Money {
        amount,
        currency: Currency::parse("EUR").unwrap(),
    }
}

fn seats(ids: &[&str]) -> Vec<SeatId> {
    ids.iter().map(|s| s.parse().unwrap()).collect()
}

fn payment(evt: &str, amount: i64) -> Payment {
    Payment {
        provider_event_id: evt.into(),
        payment_intent: "pi_3Nx".into(),
        amount: money(amount),
    }
}

/// An instant of the fixtures' onsale year, 2026, in UTC.
fn at(month: u32, day: u32, hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, month, day, hour, minute, second).unwrap()
}

/// The Eras Tour as first scheduled: each `EventScheduled` case changes what it is about.
fn eras_tour() -> EventScheduled {
    EventScheduled {
        event_id: EventId::from_uuid(uuid(1)),
        organizer: OrganizerId::parse("riverside-live").unwrap(),
        title: "The Eras Tour".into(),
        artist: "Taylor Swift".into(),
        venue: "Riverside Arena".into(),
        city: "Amsterdam".into(),
        tags: vec![],
        aliases: vec![],
        starts_at: at(7, 4, 19, 30, 0),
        onsale_at: at(3, 1, 10, 0, 0),
        hold_minutes: HoldMinutes::new(10).unwrap(),
        max_seats_per_order: 6,
        max_seats_per_customer: None,
        allow_orphan_seats: false,
        currency: Currency::parse("EUR").unwrap(),
        seat_map: seat_map().into(),
    }
}

/// A BTS show at the Olympic Stadium in Seoul, in won, 4 seats per order.
fn bts(event: u128, title: &str, starts_at: DateTime<Utc>) -> EventScheduled {
    EventScheduled {
        event_id: EventId::from_uuid(uuid(event)),
        title: title.into(),
        artist: "BTS".into(),
        venue: "Olympic Stadium".into(),
        city: "Seoul".into(),
        tags: vec!["k-pop".into()],
        starts_at,
        max_seats_per_order: 4,
        currency: Currency::parse("KRW").unwrap(),
        ..eras_tour()
    }
}

/// Another show at the Riverside Arena, on sale with the Eras Tour.
fn riverside(event: u128, title: &str, artist: &str, starts_at: DateTime<Utc>) -> EventScheduled {
    EventScheduled {
        event_id: EventId::from_uuid(uuid(event)),
        title: title.into(),
        artist: artist.into(),
        starts_at,
        ..eras_tour()
    }
}

fn scheduled(seq: u64, info: EventScheduled) -> Envelope {
    envelope(seq, Event::EventScheduled(info))
}

/// `customer` holds `ids` for `amount` as `reservation`, from envelope `seq`'s time for ten
/// minutes.
fn reserved(seq: u64, reservation: ReservationId, customer: &str, ids: &[&str], amount: i64) -> SeatsReserved {
    SeatsReserved {
        reservation_id: reservation,
        customer: CustomerId::parse(customer).unwrap(),
        seats: seats(ids),
        hold_until: at(3, 1, 10, 10, seq as u32),
        amount: money(amount),
        admission_ticket: None,
    }
}

fn refunded(reservation: ReservationId, evt: &str, reason: RefundReason) -> Event {
    Event::PaymentRefunded(PaymentRefunded {
        reservation_id: reservation,
        customer: CustomerId::parse("alice").unwrap(),
        payment: payment(evt, 25800),
        reason,
    })
}

/// An envelope that carries the organizer's `Idempotency-Key`.
fn keyed(key: &str, env: Envelope) -> Envelope {
    Envelope {
        idempotency_key: Some(key.to_owned()),
        ..env
    }
}

fn cases() -> Vec<(&'static str, Envelope)> {
    scheduled_cases()
        .into_iter()
        .chain(seat_cases())
        .chain(withheld_cases())
        .chain(zone_cases())
        .chain(queue_cases())
        .collect()
}

fn scheduled_cases() -> Vec<(&'static str, Envelope)> {
    vec![
        ("event_scheduled", scheduled(1, eras_tour())),
        (
            "event_scheduled_with_tags",
            scheduled(
                8,
                EventScheduled {
                    tags: vec!["k-pop".into(), "stadium".into()],
                    hold_minutes: HoldMinutes::new(15).unwrap(),
                    ..bts(2, "Stadium Nights", at(9, 12, 19, 0, 0))
                },
            ),
        ),
        (
            "event_scheduled_with_aliases",
            scheduled(
                20,
                EventScheduled {
                    aliases: vec!["방탄소년단".into(), "Bangtan Boys".into()],
                    onsale_at: at(4, 1, 10, 0, 0),
                    ..bts(3, "Permission to Dance", at(10, 3, 19, 0, 0))
                },
            ),
        ),
        (
            "event_scheduled_with_customer_limit",
            scheduled(
                9,
                EventScheduled {
                    max_seats_per_customer: Some(12),
                    ..riverside(3, "Family Day", "The Wiggles", at(8, 2, 14, 0, 0))
                },
            ),
        ),
        (
            "event_scheduled_allowing_orphan_seats",
            scheduled(
                21,
                EventScheduled {
                    allow_orphan_seats: true,
                    ..riverside(4, "Club Night", "DJ Shadow", at(9, 5, 22, 0, 0))
                },
            ),
        ),
    ]
}

fn seat_cases() -> Vec<(&'static str, Envelope)> {
    let reservation = ReservationId::from_uuid(uuid(0x42));
    let alice = CustomerId::parse("alice").unwrap();
    let alices_seats = || seats(&["FLA-1-7", "FLA-1-8"]);
    let attributed_map = serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "STD", "name": "Standard", "price": 5900}],
        "sections": [
            {"code": "101", "name": "Lower 101", "rows": [
                {"name": "A", "seats": 12, "tier": "STD",
                 "wheelchair": [1, 12], "companion": [2, 11], "aisle": [1, 12]},
                {"name": "B", "seats": 12, "tier": "STD", "restricted_view": [5, 6, 7]}]}
        ]
    }))
    .unwrap();
    vec![
        (
            "seat_map_changed_with_seat_attributes",
            envelope(
                21,
                Event::SeatMapChanged(SeatMapChanged {
                    seat_map: attributed_map,
                }),
            ),
        ),
        (
            "seat_map_changed",
            envelope(
                2,
                Event::SeatMapChanged(SeatMapChanged {
                    seat_map: seat_map().into(),
                }),
            ),
        ),
        (
            "seats_reserved",
            envelope(
                3,
                Event::SeatsReserved(reserved(3, reservation, "alice", &["FLA-1-7", "FLA-1-8"], 25800)),
            ),
        ),
        (
            "seats_booked",
            envelope(
                4,
                Event::SeatsBooked(SeatsBooked {
                    reservation_id: reservation,
                    customer: alice,
                    seats: alices_seats(),
                    payment: payment("evt_1OkA", 25800),
                    late: false,
                }),
            ),
        ),
        (
            "seats_released",
            envelope(
                5,
                Event::SeatsReleased(SeatsReleased {
                    reservation_id: reservation,
                    seats: alices_seats(),
                    reason: ReleaseReason::Expired,
                }),
            ),
        ),
        (
            "payment_refunded",
            envelope(6, refunded(reservation, "evt_1OkB", RefundReason::SeatsTaken)),
        ),
        (
            "payment_refunded_over_customer_limit",
            envelope(10, refunded(reservation, "evt_1OkD", RefundReason::CustomerLimit)),
        ),
        (
            "payment_failed",
            envelope(
                7,
                Event::PaymentFailed(PaymentFailed {
                    reservation_id: reservation,
                    provider_event_id: "evt_1OkC".into(),
                    payment_intent: "pi_3Ny".into(),
                    message: Some("Your card was declined.".into()),
                }),
            ),
        ),
        (
            "seats_reserved_with_admission",
            envelope(
                9,
                Event::SeatsReserved(SeatsReserved {
                    admission_ticket: Some(17),
                    ..reserved(9, reservation, "bob", &["101-A-3"], 5900)
                }),
            ),
        ),
    ]
}

fn withheld_cases() -> Vec<(&'static str, Envelope)> {
    let withheld = |seq, ids: &[&str], request: Option<&str>| {
        let seats = seats(ids);
        let label = "house seats".into();
        let request = request.map(str::to_owned);
        envelope(seq, Event::SeatsWithheld(SeatsWithheld { seats, label, request }))
    };
    let returned = |seq, ids: &[&str], request: Option<&str>| {
        let request = request.map(str::to_owned);
        envelope(
            seq,
            Event::SeatsReturned(SeatsReturned {
                seats: seats(ids),
                request,
            }),
        )
    };
    vec![
        ("seats_withheld", withheld(22, &["FLA-1-1", "FLA-1-2"], None)),
        ("seats_returned", returned(23, &["FLA-1-2"], None)),
        (
            "seats_withheld_with_request",
            keyed(
                "hold-house-1",
                withheld(
                    24,
                    &[],
                    Some("5f2b0c6e9d1a4b3c8e7f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5"),
                ),
            ),
        ),
        (
            "seats_returned_with_request",
            keyed(
                "return-house-1",
                returned(
                    25,
                    &["FLA-1-1"],
                    Some("0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"),
                ),
            ),
        ),
    ]
}

fn zone_cases() -> Vec<(&'static str, Envelope)> {
    let floor = ["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3"];
    let reservation = ReservationId::from_uuid(uuid(0x43));
    vec![
        (
            "event_scheduled_with_zone",
            scheduled(
                21,
                EventScheduled {
                    seat_map: zone_seat_map().into(),
                    ..riverside(4, "Summer Sessions", "Fontaines D.C.", at(8, 20, 20, 0, 0))
                },
            ),
        ),
        (
            "seats_reserved_from_zone",
            envelope(
                22,
                Event::SeatsReserved(reserved(22, reservation, "carol", &floor, 14700)),
            ),
        ),
    ]
}

fn queue_cases() -> Vec<(&'static str, Envelope)> {
    let bob = || CustomerId::parse("bob").unwrap();
    let until = at(3, 1, 10, 5, 0);
    let q = |seq, e| envelope(seq, Event::Queue(e));
    let opened = QueueOpened {
        max_size: Some(100_000),
        max_shoppers: 500,
        admission_secs: 600,
    };
    let spent = AdmissionSpent {
        customer: bob(),
        ticket: 17,
        reservation_id: ReservationId::from_uuid(uuid(0x42)),
    };
    let shuffled = QueueShuffled {
        seed: 0x5EED_0000_0000_0042,
        pre_queue: 2048,
    };
    let (ticket, expires_at) = (17, until);
    let waitlisted = 100_001;
    vec![
        ("queue_opened", q(10, QueueEvent::Opened(opened))),
        (
            "queue_joined",
            q(
                11,
                QueueEvent::Joined(QueueJoined {
                    customer: bob(),
                    ticket,
                    pre_queue: true,
                }),
            ),
        ),
        ("queue_shuffled", q(12, QueueEvent::Shuffled(shuffled))),
        (
            "queue_admitted",
            q(
                13,
                QueueEvent::Admitted(FanAdmitted {
                    customer: bob(),
                    ticket,
                    expires_at,
                }),
            ),
        ),
        (
            "queue_admission_lapsed",
            q(
                14,
                QueueEvent::Lapsed(AdmissionLapsed {
                    customer: bob(),
                    ticket,
                }),
            ),
        ),
        ("queue_admission_spent", q(15, QueueEvent::Spent(spent))),
        (
            "queue_left",
            q(
                16,
                QueueEvent::Left(QueueLeft {
                    customer: bob(),
                    ticket: 18,
                }),
            ),
        ),
        (
            "queue_sold_out",
            q(17, QueueEvent::SoldOut(QueueSoldOut { waiting: 95_000 })),
        ),
        (
            "waitlist_joined",
            q(
                18,
                QueueEvent::WaitlistJoined(WaitlistJoined {
                    customer: bob(),
                    ticket: waitlisted,
                }),
            ),
        ),
        (
            "waitlist_offered",
            q(
                19,
                QueueEvent::WaitlistOffered(WaitlistOffered {
                    customer: bob(),
                    ticket: waitlisted,
                    expires_at,
                }),
            ),
        ),
    ]
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1")
}

#[test]
fn every_event_type_has_a_golden_file() {
    let names: Vec<_> = cases().iter().map(|(_, env)| env.event.type_name()).collect();
    for ty in [
        "frontrow.event.scheduled",
        "frontrow.seatmap.changed",
        "frontrow.seats.reserved",
        "frontrow.seats.booked",
        "frontrow.seats.released",
        "frontrow.payment.refunded",
        "frontrow.payment.failed",
        "frontrow.seats.withheld",
        "frontrow.seats.returned",
        "frontrow.queue.opened",
        "frontrow.queue.joined",
        "frontrow.queue.shuffled",
        "frontrow.queue.admitted",
        "frontrow.queue.admission_lapsed",
        "frontrow.queue.admission_spent",
        "frontrow.queue.left",
        "frontrow.queue.sold_out",
        "frontrow.waitlist.joined",
        "frontrow.waitlist.offered",
    ] {
        assert!(names.contains(&ty), "no golden case for {ty}");
    }
}

#[test]
fn encoder_writes_the_golden_json_and_decoder_reads_it_back() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    for (name, env) in cases() {
        let path = golden_dir().join(format!("{name}.json"));
        let encoded: serde_json::Value = serde_json::from_slice(&encode(&env)).unwrap();
        if update && !path.exists() {
            std::fs::write(&path, serde_json::to_string_pretty(&encoded).unwrap() + "\n").unwrap();
        }
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let golden: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(encoded, golden, "{name}: the encoder no longer writes the v1 JSON");
        assert_eq!(decode(&bytes).unwrap(), env, "{name}: the decoder no longer reads v1");
    }
}

#[test]
fn events_written_before_the_customer_limit_read_with_one_order_per_customer() {
    let bytes = std::fs::read(golden_dir().join("event_scheduled.json")).unwrap();
    let Event::EventScheduled(info) = decode(&bytes).unwrap().event else {
        panic!("not an EventScheduled")
    };
    assert_eq!(info.max_seats_per_customer, None);
    assert_eq!(info.seats_per_customer(), 6, "max_seats_per_order");
}

#[test]
fn events_written_before_the_orphan_rule_read_with_the_rule_on() {
    for name in ["event_scheduled", "event_scheduled_with_customer_limit"] {
        let bytes = std::fs::read(golden_dir().join(format!("{name}.json"))).unwrap();
        let Event::EventScheduled(info) = decode(&bytes).unwrap().event else {
            panic!("{name}: not an EventScheduled")
        };
        assert!(!info.allow_orphan_seats, "{name}: the no-orphan rule is on");
    }
    let bytes = std::fs::read(golden_dir().join("event_scheduled_allowing_orphan_seats.json")).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v["data"]["allow_orphan_seats"], true,
        "written only when the organizer turned it off"
    );
}

#[test]
fn golden_files_are_cloudevents() {
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        for attr in [
            "specversion",
            "id",
            "source",
            "type",
            "subject",
            "time",
            "datacontenttype",
            "data",
        ] {
            assert!(v.get(attr).is_some(), "missing CloudEvents attribute {attr}");
        }
        assert_eq!(v["specversion"], "1.0");
        assert_eq!(v["partitionkey"], v["subject"]);
    }
}
