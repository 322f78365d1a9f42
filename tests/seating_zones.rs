//! General admission over HTTP against the real server (embedded SQLite journal and ledger,
//! embedded search): a mixed seated + standing venue end to end, and every refusal of a zone
//! request as `application/problem+json` that writes nothing.

mod common;

use std::time::Duration as StdDuration;

use chrono::Duration;
use common::*;
use frontrow_schema::{EventId, TierCode};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Section `A`: one row of 2 seats at 80.00; `FLOOR`: a standing zone of 6 places at 30.00.
fn mixed_venue(app: &TestApp, artist: &str) -> Value {
    let mut body = app.event_body(Duration::minutes(-1));
    body["artist"] = json!(artist);
    body["max_seats_per_customer"] = json!(6);
    body["seat_map"] = mixed_seat_map(2, 6);
    body
}

async fn reserve_zone(app: &TestApp, who: &str, event: EventId, count: u8) -> reqwest::Response {
    let key = uuid::Uuid::new_v4().to_string();
    app.reserve(who, event, &key, json!({"zone": "FLOOR", "count": count}))
        .await
}

/// The `FLOOR` zone's counts on an availability map.
fn floor(map: &AvailabilityMap) -> &ZoneAvailability {
    map.sections[1].standing.as_ref().expect("FLOOR is a standing zone")
}

/// The next SSE event of a kind other than a heartbeat, within 5 s.
async fn next(stream: &mut SseReader) -> Sse {
    stream
        .next(StdDuration::from_secs(5))
        .await
        .expect("an SSE event within 5 s")
}

#[tokio::test]
async fn a_mixed_venue_sells_standing_places_end_to_end() {
    let app = TestApp::spawn().await;
    let event = app.create_event_from(&mixed_venue(&app, "Zonara Floorfield")).await;

    // The event and the map: the zone has counts, not letters.
    let details = app.event_details(event).await;
    let standing = Standing {
        capacity: 6,
        tier: TierCode::parse("GA").unwrap(),
    };
    assert_eq!(details.seat_map.sections[1].standing, Some(standing));
    assert_eq!(details.summary.seats.total, 8);
    // Raw: the zone's counts are exactly these (`withheld` absent when 0), a seated section has
    // no `standing` at all.
    let map = app.availability_json(event, None).await;
    assert_eq!(
        map["sections"][1]["standing"],
        json!({"zone": "FLOOR", "capacity": 6, "tier": "GA", "price": 3000,
               "available": 6, "held": 0, "booked": 0})
    );
    assert_eq!(map["sections"][1]["rows"], json!([]));
    assert!(map["sections"][0].get("standing").is_none());

    let mut stream = SseReader::open(&app, &format!("/events/{event}/seats/stream"), None, None).await;
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("snapshot"));

    // Reserve four places: the lowest-numbered ones, at the zone's price.
    let held: ReservationResponse = answer(reserve_zone(&app, "alice", event, 4).await, 201).await;
    assert_eq!(
        held.reservation.seats,
        ["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3", "FLOOR-GA-4"]
    );
    assert_eq!(held.reservation.amount.amount, 12000);
    let rid = held.reservation.reservation_id;
    let map = app.availability(event, held.position.as_deref()).await;
    assert_eq!((floor(&map).available, floor(&map).held), (2, 4));
    assert_eq!(map.seats.held, 4);

    // The stream: the per-place delta, then the zone's counts under the same id.
    let seat = next(&mut stream).await;
    assert_eq!(seat.event.as_deref(), Some("seat"));
    let data: SeatData = serde_json::from_str(&seat.data).unwrap();
    assert_eq!(data.status, "held");
    assert_eq!(data.seats.len(), 4);
    let zone = next(&mut stream).await;
    assert_eq!(zone.event.as_deref(), Some("zone"));
    assert_eq!(zone.id, seat.id);
    let counts: ZoneAvailability = serde_json::from_str(&zone.data).unwrap();
    assert_eq!(
        (counts.zone.as_str(), counts.available, counts.held, counts.booked),
        ("FLOOR", 2, 4, 0)
    );

    // Pay through the webhook: the places are booked.
    assert_eq!(app.pay(event, "evt_zone", &rid, 12000).await.outcome, "booked");
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("seat"));
    let zone = next(&mut stream).await;
    let counts: ZoneAvailability = serde_json::from_str(&zone.data).unwrap();
    assert_eq!((counts.held, counts.booked), (0, 4));

    // A second fan holds two places and lets them go: they are free again at once.
    let bob: ReservationResponse = answer(reserve_zone(&app, "bob", event, 2).await, 201).await;
    assert_eq!(bob.reservation.seats, ["FLOOR-GA-5", "FLOOR-GA-6"]);
    let brid = &bob.reservation.reservation_id;
    let release = format!("/events/{event}/reservations/{brid}/release");
    let released: ReservationResponse = ok(app.post_as("bob", &release).await).await;
    let map = app.availability_json(event, released.position.as_deref()).await;
    assert_eq!(
        map["sections"][1]["standing"],
        json!({"zone": "FLOOR", "capacity": 6, "tier": "GA", "price": 3000,
               "available": 2, "held": 0, "booked": 4})
    );
    for expected in ["held", "available"] {
        let seat = next(&mut stream).await;
        let data: SeatData = serde_json::from_str(&seat.data).unwrap();
        assert_eq!(data.status, expected);
        let zone: ZoneAvailability = serde_json::from_str(&next(&mut stream).await.data).unwrap();
        assert_eq!(zone.booked, 4);
    }

    // The ledger: a sales line for the zone, and a place's history like a seat's.
    let sales = sales_until(&app, event, |v| v.total.released == 2).await;
    let line = sales
        .lines
        .iter()
        .find(|l| l.section.as_deref() == Some("FLOOR"))
        .unwrap_or_else(|| panic!("no FLOOR line in {sales:?}"));
    assert_eq!(
        (
            line.tier.as_deref(),
            line.seats,
            line.booked,
            line.revenue,
            line.available_now
        ),
        (Some("GA"), 6, 4, 12000, 2)
    );
    let history = history_until(&app, event, "FLOOR-GA-5", 2).await;
    assert_eq!(history_kinds(&history), ["held", "released"]);
    let mine = bookings_until(&app, "alice").await;
    assert_eq!(mine.bookings[0].amount, 12000);

    // Search: with both seats sold the event is still available, for its standing places.
    for seat in ["A-1-1", "A-1-2"] {
        assert_eq!(app.reserve_seats("carol", event, &[seat]).await.status(), 201);
    }
    let is_hit = |v: &SearchResponse| has_hit(v, event);
    search_until(&app, "q=zonara&available=true", |v| {
        is_hit(v) && v.hits[0].seats_left == 2
    })
    .await;
    assert_eq!(reserve_zone(&app, "dave", event, 2).await.status(), 201);
    search_until(&app, "q=zonara&available=true", |v| !is_hit(v)).await;
    search_until(&app, "q=zonara", is_hit).await;

    // Analytics replays the log: the zone's places are seats sold at the zone's price.
    let report: Report = analytics(&app, &["--event", &event.to_string()]);
    let report = &report.events[0];
    assert_eq!(report.seats_total, 8);
    assert_eq!(report.seats_booked_now, 4);
    assert_eq!(report.seats_held_now, 4, "carol's two seats and dave's two places");
    let lines = &report.revenue.lines;
    let ga = lines
        .iter()
        .find(|l| l.section == "FLOOR")
        .unwrap_or_else(|| panic!("no FLOOR line in {lines:?}"));
    assert_eq!((ga.tier.as_str(), ga.seats_booked, ga.net), ("GA", 4, 12000));
    // The HTML report draws the zone's places as squares of their own, like the row's seats:
    // 8 squares for 2 seats and 6 places, the 4 sold ones coloured.
    let out = tempfile::tempdir().unwrap();
    analytics_cli(
        &app,
        &["--event", &event.to_string(), "--out", out.path().to_str().unwrap()],
    );
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    let svg = html
        .split("<svg id=\"seatmap-")
        .nth(1)
        .and_then(|s| s.split("</svg>").next())
        .expect("a seat map");
    assert!(svg.contains(">FLOOR (standing)</text>"), "{svg}");
    assert_eq!(svg.matches("<rect").count(), 8, "{svg}");
    assert_eq!(
        svg.matches("fill=\"#d0d7de\"").count(),
        4,
        "unsold squares are grey: {svg}"
    );
    // And its past map has the zone's counts as they were.
    let position = released.position.as_deref().unwrap();
    let past: AvailabilityMap = analytics(&app, &["map", "--event", &event.to_string(), "--at", position]);
    assert_eq!(floor(&past).available, 2);
    assert_eq!(floor(&past).booked, 4);
    app.stop().await;
}

/// `frontrow analytics ARGS` on the app's data directory, its JSON read as a `T`.
fn analytics<T: DeserializeOwned>(app: &TestApp, args: &[&str]) -> T {
    typed(serde_json::from_slice(&analytics_cli(app, args).stdout).unwrap())
}

#[tokio::test]
async fn every_wrong_zone_request_is_a_problem_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let event = app.create_event_from(&mixed_venue(&app, "Refusa")).await;
    // Five of six places held (by two fans), within their per-customer limit of 6.
    assert_eq!(reserve_zone(&app, "alice", event, 4).await.status(), 201);
    let bob: ReservationResponse = answer(reserve_zone(&app, "bob", event, 1).await, 201).await;
    let before = ends(app.journal.as_ref()).await;
    // The map once the query side has seen bob's hold (raw: a refusal changes nothing in it).
    let map = app.availability_json(event, bob.position.as_deref()).await;
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        ("carol", json!({"zone": "PIT", "count": 1}), 422, "unknown-zone"),
        ("carol", json!({"zone": "A", "count": 1}), 422, "not-a-zone"),
        (
            "carol",
            json!({"best_available": {"section": "FLOOR", "count": 1}}),
            422,
            "standing-zone",
        ),
        ("carol", json!({"seats": ["FLOOR-GA-6"]}), 422, "standing-zone"),
        ("carol", json!({"zone": "FLOOR", "count": 2}), 409, "not-enough-places"),
        ("carol", json!({"zone": "FLOOR", "count": 0}), 422, "bad-seat-count"),
        ("carol", json!({"zone": "FLOOR"}), 422, "bad-selection"),
        ("carol", json!({"count": 2}), 422, "bad-selection"),
        (
            "carol",
            json!({"zone": "FLOOR", "count": 1, "seats": ["A-1-1"]}),
            422,
            "bad-selection",
        ),
        ("carol", json!({"zone": "floor", "count": 1}), 422, "invalid-body"),
    ];
    for (who, body, status, kind) in cases {
        let res = app
            .reserve(who, event, &uuid::Uuid::new_v4().to_string(), body.clone())
            .await;
        let problem = problem(res, status, kind).await;
        if kind == "not-enough-places" {
            assert_eq!(problem.available, Some(1), "{problem:?}");
        }
    }
    assert_eq!(ends(app.journal.as_ref()).await, before, "a refusal wrote nothing");
    assert_eq!(app.availability_json(event, None).await, map);

    // Alice holds 4 places; the limit is 6: two seats fit, a fifth place after them does not.
    assert_eq!(
        app.reserve_seats("alice", event, &["A-1-1", "A-1-2"]).await.status(),
        201
    );
    let before = ends(app.journal.as_ref()).await;
    let res = reserve_zone(&app, "alice", event, 1).await;
    let body = problem(res, 409, "customer-limit").await;
    assert_eq!(body.seats_held_or_booked, Some(6), "{body:?}");
    assert_eq!(ends(app.journal.as_ref()).await, before);

    // The last place goes, then the zone is sold out.
    assert_eq!(reserve_zone(&app, "carol", event, 1).await.status(), 201);
    let before = ends(app.journal.as_ref()).await;
    let body = problem(reserve_zone(&app, "dave", event, 1).await, 409, "zone-sold-out").await;
    assert_eq!(body.available, Some(0));
    assert_eq!(ends(app.journal.as_ref()).await, before);
    app.stop().await;
}
