//! Time travel against the live map: the real partition writers (on a manual clock) write an
//! onsale to a SQLite journal while a real query catalog follows it; at several instants the
//! test reads the live map through the query API. Afterwards the map `?at=` each instant (as a
//! log position and as a time) must be exactly what was read live then.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::{Request as HttpRequest, StatusCode};
use chrono::{DateTime, TimeZone, Utc};
use frontrow_analytics::{At, TravelLimits, availability_at};
use frontrow_command::clock::{Clock, ManualClock};
use frontrow_command::domain::{Command, SeatSelection};
use frontrow_command::writer::{Meta, Outcome, Request, WriterConfig, Writers};
use frontrow_journal::{Journal, Position, Snapshot, SqliteJournal};
use frontrow_query::Catalog;
use frontrow_schema::*;
use serde_json::Value;
use tower::ServiceExt;

async fn get(catalog: &Arc<Catalog>, uri: &str) -> (StatusCode, Value) {
    let response = frontrow_query::router(catalog.clone())
        .oneshot(HttpRequest::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// A show by the Travellers at the Hall, Lyon, 20 days after `start`, 6 seats per order.
fn travellers(
    event_id: EventId,
    title: &str,
    start: DateTime<Utc>,
    onsale_at: DateTime<Utc>,
    hold_minutes: u8,
    seat_map: SeatMap,
) -> EventScheduled {
    EventScheduled {
        event_id,
        organizer: OrganizerId::parse("acme").unwrap(),
        title: title.into(),
        artist: "Travellers".into(),
        venue: "Hall".into(),
        city: "Lyon".into(),
        tags: vec![],
        aliases: vec![],
        starts_at: start + chrono::Duration::days(20),
        onsale_at,
        hold_minutes: HoldMinutes::new(hold_minutes).unwrap(),
        max_seats_per_order: 6,
        // A few simulated customers buy again and again: the per-customer limit stays out of the way.
        max_seats_per_customer: Some(frontrow_command::domain::MAX_SEATS_PER_CUSTOMER),
        // Seats are picked at random here, whatever they leave alone: the no-orphan rule is off.
        allow_orphan_seats: true,
        currency: Currency::parse("EUR").unwrap(),
        seat_map: seat_map.into(),
    }
}

fn seats(ids: &[&str]) -> Vec<SeatId> {
    ids.iter().map(|s| s.parse().unwrap()).collect()
}

/// The instants observed live: where the log was, the writer's time, and the map read then.
struct Seen {
    position: Position,
    time: DateTime<Utc>,
    map: Value,
}

/// Sends `command` for `event_id` to the writers. A reservation is found again by its
/// Idempotency-Key, which travels in the metadata.
async fn send_command(writers: Writers, event_id: EventId, command: Command) -> Outcome {
    let idempotency_key = match &command {
        Command::Reserve { idempotency_key, .. } => Some(idempotency_key.clone()),
        _ => None,
    };
    let meta = Meta {
        idempotency_key,
        ..Meta::default()
    };
    writers
        .send(Request::Command {
            event_id,
            command,
            meta,
        })
        .await
        .unwrap()
}

/// Reads the live map of `event` once `position` is applied and remembers it.
async fn observe_map(catalog: Arc<Catalog>, event: EventId, position: Position, time: DateTime<Utc>) -> Seen {
    let (status, map) = get(&catalog, &format!("/events/{event}/availability?after={position}")).await;
    assert_eq!(status, StatusCode::OK);
    Seen { position, time, map }
}

#[tokio::test]
async fn the_map_at_an_instant_equals_the_map_read_live_then() {
    let dir = tempfile::tempdir().unwrap();
    let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::open(&dir.path().join("journal.db"), 3).unwrap());
    let start = Utc.with_ymd_and_hms(2027, 5, 1, 9, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let writers = Writers::start(journal.clone(), clock.clone(), WriterConfig::default())
        .await
        .unwrap();
    let (catalog, _followers) = Catalog::start(journal.clone()).await.unwrap();

    let event = EventId::new();
    let onsale = start + chrono::Duration::minutes(1);
    let map: SeatMap = serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "GOLD", "name": "Gold", "price": 9900}, {"code": "STD", "name": "Standard", "price": 4500}],
        "sections": [
            {"code": "A", "name": "Floor", "rows": [{"name": "1", "seats": 6, "tier": "GOLD"}, {"name": "2", "seats": 6, "tier": "STD"}]},
            {"code": "B", "name": "Balcony", "rows": [{"name": "1", "seats": 4, "tier": "STD"}]}
        ]
    }))
    .unwrap();
    let send = |command: Command| send_command(writers.clone(), event, command);
    let mut seen: Vec<Seen> = Vec::new();
    let observe = |position: Position, time: DateTime<Utc>| observe_map(catalog.clone(), event, position, time);

    let info = travellers(event, "Time", start, onsale, 5, map);
    let scheduled = send(Command::Schedule(Box::new(info))).await;
    seen.push(observe(scheduled.position.unwrap(), clock.now()).await);
    clock.advance(chrono::Duration::minutes(1));

    let customer = CustomerId::parse("ann").unwrap();
    let mut reservations = Vec::new();
    for (i, pick) in [
        &["A-1-1", "A-1-2"][..],
        &["A-2-3"],
        &["B-1-1", "B-1-2", "B-1-3"],
        &["A-1-6"],
    ]
    .into_iter()
    .enumerate()
    {
        let rid = ReservationId::new();
        let out = send(Command::Reserve {
            customer: customer.clone(),
            reservation_id: rid,
            selection: SeatSelection::Explicit(seats(pick)),
            idempotency_key: format!("k{i}"),
            admission: None,
        })
        .await;
        reservations.push((rid, out.reservation.unwrap().amount));
        seen.push(observe(out.position.unwrap(), clock.now()).await);
        clock.advance(chrono::Duration::seconds(1));
    }
    let (paid, amount) = reservations[0];
    let out = send(Command::PaymentSucceeded {
        reservation_id: paid,
        payment: Payment {
            provider_event_id: "evt_1".into(),
            payment_intent: "pi_1".into(),
            amount,
        },
    })
    .await;
    seen.push(observe(out.position.unwrap(), clock.now()).await);
    clock.advance(chrono::Duration::seconds(1));
    let out = send(Command::Release {
        customer: customer.clone(),
        reservation_id: reservations[1].0,
    })
    .await;
    seen.push(observe(out.position.unwrap(), clock.now()).await);

    // The other holds run out: the writer's timer expires them when the clock jumps.
    let partition = writers.partition_of(&event);
    let before = journal.end_offset(partition).await.unwrap();
    clock.advance(chrono::Duration::minutes(6));
    let expired_at = clock.now();
    let look = || async { journal.end_offset(partition).await.unwrap() };
    let end = frontrow_schema::testsuite::wait_until(Duration::from_secs(5), "both holds expired", look, |&e| {
        (e >= before + 2).then_some(e)
    })
    .await;
    seen.push(
        observe(
            Position {
                partition,
                offset: end - 1,
            },
            expired_at,
        )
        .await,
    );
    clock.advance(chrono::Duration::seconds(1));
    let out = send(Command::Cancel {
        customer,
        reservation_id: paid,
    })
    .await;
    seen.push(observe(out.position.unwrap(), clock.now()).await);

    // The maps differ from one instant to the next, so equality below means something.
    let counts: Vec<&Value> = seen.iter().map(|s| &s.map["seats"]).collect();
    assert!(counts.windows(2).all(|w| w[0] != w[1]), "{counts:?}");

    for s in &seen {
        let (status, by_position) = get(&catalog, &format!("/events/{event}/availability?at={}", s.position)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(by_position, s.map, "at position {}", s.position);
        let time = s.time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let (status, by_time) = get(&catalog, &format!("/events/{event}/availability?at={time}")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(by_time, s.map, "at time {time}");
        // The library (and the CLI through it) answers the same.
        let direct = availability_at(
            journal.as_ref(),
            event,
            At::Position(s.position),
            TravelLimits::default(),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(serde_json::to_value(direct).unwrap(), s.map);
    }
    // A time between two instants is the earlier one.
    let between =
        (seen[2].time + chrono::Duration::milliseconds(500)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (_, map) = get(&catalog, &format!("/events/{event}/availability?at={between}")).await;
    assert_eq!(map, seen[2].map);

    // Bad or impossible instants are problems, not maps.
    for (at, status, kind) in [
        ("yesterday".to_owned(), StatusCode::BAD_REQUEST, "bad-instant"),
        (
            format!("{}:0", (partition + 1) % 3),
            StatusCode::BAD_REQUEST,
            "bad-instant",
        ),
        (
            (start - chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            StatusCode::NOT_FOUND,
            "not-found",
        ),
    ] {
        let (got, problem) = get(&catalog, &format!("/events/{event}/availability?at={at}")).await;
        assert_eq!(got, status, "{at}: {problem}");
        assert_eq!(problem["type"], format!("urn:frontrow:problem:{kind}"), "{at}");
    }
    let limited = availability_at(
        journal.as_ref(),
        event,
        At::Position(seen.last().unwrap().position),
        TravelLimits {
            max_records: 3,
            batch: 2,
        },
    )
    .await;
    assert!(matches!(limited, Err(frontrow_analytics::TravelError::TooDeep { .. })));
    writers.shutdown().await;
}

/// The same, with the writers snapshotting every few records: each past map starts from the
/// nearest snapshot in the journal's history and replays only the tail, and must equal both the
/// map read live then and a replay from the start of the partition. An instant before the first
/// snapshot still works, and the replay cap applies to the tail only.
#[tokio::test]
async fn past_maps_from_snapshots_equal_the_live_maps_and_a_replay_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    // One partition, so the snapshots hold another event too and its records sit in between.
    let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::open(&dir.path().join("journal.db"), 1).unwrap());
    past_maps_from_snapshots(journal).await;
}

/// The same on Kafka: snapshots in the history topic, found by its binary search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn past_maps_from_snapshots_on_kafka() {
    let brokers = std::env::var("FRONTROW_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let settings = frontrow_journal::KafkaSettings {
        topic: format!("frontrow.test.travel.{}", uuid::Uuid::new_v4().simple()),
        ..frontrow_journal::KafkaSettings::new(brokers, 1)
    };
    let journal = frontrow_journal::KafkaJournal::connect(settings)
        .await
        .expect("Kafka is reachable: run deploy/local/up.sh kafka");
    past_maps_from_snapshots(Arc::new(journal)).await;
}

async fn past_maps_from_snapshots(journal: Arc<dyn Journal>) {
    use frontrow_journal::SnapshotBound;
    use frontrow_query::travel::{ReplayFrom, replay_to};

    let start = Utc.with_ymd_and_hms(2027, 6, 1, 9, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let config = WriterConfig {
        snapshot_every: 4,
        ..WriterConfig::default()
    };
    let writers = Writers::start(journal.clone(), clock.clone(), config).await.unwrap();
    let (catalog, _followers) = Catalog::start(journal.clone()).await.unwrap();
    let map: SeatMap = serde_json::from_value(serde_json::json!({
        "tiers": [{"code": "STD", "name": "Standard", "price": 4500}],
        "sections": [{"code": "A", "name": "Floor", "rows": [{"name": "1", "seats": 10, "tier": "STD"}, {"name": "2", "seats": 10, "tier": "STD"}]}]
    }))
    .unwrap();
    let send = |event_id: EventId, command: Command| send_command(writers.clone(), event_id, command);
    let schedule = |event_id: EventId| {
        Command::Schedule(Box::new(travellers(
            event_id,
            "Snapshots",
            start,
            start,
            15,
            map.clone(),
        )))
    };
    let (event, other) = (EventId::new(), EventId::new());
    let mut seen: Vec<Seen> = Vec::new();
    let observe = |position: Position, time: DateTime<Utc>| observe_map(catalog.clone(), event, position, time);
    let out = send(event, schedule(event)).await;
    seen.push(observe(out.position.unwrap(), clock.now()).await);
    clock.advance(chrono::Duration::seconds(1));
    send(other, schedule(other)).await;
    let customer = CustomerId::parse("ann").unwrap();
    let mut held = Vec::new();
    for i in 0..16u32 {
        clock.advance(chrono::Duration::seconds(1));
        let (row, n) = (1 + i % 2, 1 + i / 2);
        let rid = ReservationId::new();
        let out = send(
            event,
            Command::Reserve {
                customer: customer.clone(),
                reservation_id: rid,
                selection: SeatSelection::Explicit(seats(&[&format!("A-{row}-{n}")])),
                idempotency_key: format!("e{i}"),
                admission: None,
            },
        )
        .await;
        assert!(out.reservation.is_some(), "reserved A-{row}-{n}");
        held.push(rid);
        seen.push(observe(out.position.unwrap(), clock.now()).await);
        // Every third step gives an earlier hold back, so seats also return to available.
        if i % 3 == 2 {
            clock.advance(chrono::Duration::seconds(1));
            let out = send(
                event,
                Command::Release {
                    customer: customer.clone(),
                    reservation_id: held.remove(0),
                },
            )
            .await;
            seen.push(observe(out.position.unwrap(), clock.now()).await);
        }
        // Records of another event in between.
        send(
            other,
            Command::Reserve {
                customer: customer.clone(),
                reservation_id: ReservationId::new(),
                selection: SeatSelection::Explicit(seats(&[&format!("A-{row}-{n}")])),
                idempotency_key: format!("o{i}"),
                admission: None,
            },
        )
        .await;
    }
    // A graceful stop stores its last snapshot before it returns.
    writers.shutdown().await;

    // Snapshots were taken in between: most instants have one at or before them, the first none.
    let mut marks = Vec::new();
    for s in &seen {
        let found = journal
            .snapshot_before(0, SnapshotBound::Offset(s.position.offset))
            .await
            .unwrap();
        if let Some(Snapshot { mark, .. }) = found
            && !marks.contains(&mark)
        {
            marks.push(mark);
        }
    }
    assert!(
        journal
            .snapshot_before(0, SnapshotBound::Offset(seen[0].position.offset))
            .await
            .unwrap()
            .is_none()
    );
    assert!(marks.len() >= 4, "snapshots between the instants: {marks:?}");
    assert!(marks.iter().all(|m| m.stamped_ms.is_some()), "{marks:?}");

    // The reference: a replay of the log from its start, without snapshots.
    let from_start = |at| {
        replay_to(
            journal.as_ref(),
            event,
            at,
            TravelLimits::default(),
            ReplayFrom::LogStart,
        )
    };
    let counts: Vec<&Value> = seen.iter().map(|s| &s.map["seats"]).collect();
    assert!(counts.windows(2).all(|w| w[0] != w[1]), "{counts:?}");
    for s in &seen {
        for at in [At::Position(s.position), At::Time(s.time)] {
            let query = match at {
                At::Time(t) => t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                At::Position(p) => p.to_string(),
            };
            let (status, over_http) = get(&catalog, &format!("/events/{event}/availability?at={query}")).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(over_http, s.map, "at {at}");
            let from_start = from_start(at).await.unwrap().unwrap();
            assert_eq!(
                serde_json::to_value(from_start.availability()).unwrap(),
                s.map,
                "at {at}"
            );
        }
    }
    // A map seeded from a snapshot (and nothing after it) equals the replay up to its offset.
    for mark in &marks {
        let at = At::Position(Position {
            partition: 0,
            offset: mark.last,
        });
        let seeded = availability_at(journal.as_ref(), event, at, TravelLimits::default())
            .await
            .unwrap();
        let replayed = from_start(at).await.unwrap().map(|e| e.availability());
        assert!(seeded.is_some());
        assert_eq!(seeded, replayed, "at snapshot {mark:?}");
    }
    // The replay cap counts what the snapshot spares: the last instant is beyond a small cap
    // from the start, not from the last snapshot.
    let last = At::Position(seen.last().unwrap().position);
    let small = TravelLimits {
        max_records: 12,
        batch: 2,
    };
    assert!(matches!(
        replay_to(journal.as_ref(), event, last, small, ReplayFrom::LogStart).await,
        Err(frontrow_analytics::TravelError::TooDeep { .. })
    ));
    let near = availability_at(journal.as_ref(), event, last, small)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(serde_json::to_value(near).unwrap(), seen.last().unwrap().map);
}
