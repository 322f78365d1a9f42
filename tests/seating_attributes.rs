//! Seat attributes and organizer holds over HTTP against the real server: accessible
//! best-available, every refusal (a problem+json that changes nothing), and withhold -> not
//! sellable -> return -> sold with the ledger and the analytics replay adding up.

mod common;

use chrono::Duration;
use common::*;
use frontrow_schema::EventId;
use serde_json::{Value, json};

/// The test event with attributes on section A: row 1 has wheelchair spaces 1 and 10 with
/// companion seats 2 and 9, aisle seats 1 and 10, and restricted view at 5.
fn attribute_event(app: &TestApp) -> Value {
    let mut body = app.event_body(Duration::minutes(-1));
    body["max_seats_per_order"] = json!(4);
    body["seat_map"]["sections"][0]["rows"][0] = json!({
        "name": "1", "seats": 10, "tier": "GOLD",
        "wheelchair": [1, 10], "companion": [2, 9], "aisle": [1, 10], "restricted_view": [5]
    });
    body
}

async fn best(app: &TestApp, who: &str, event: EventId, key: &str, best: Value) -> reqwest::Response {
    app.reserve(who, event, key, json!({ "best_available": best })).await
}

/// The hold [`best`] answers; fails unless it is a 201.
async fn best_held(app: &TestApp, who: &str, event: EventId, key: &str, best_available: Value) -> ReservationResponse {
    answer(best(app, who, event, key, best_available).await, 201).await
}

/// `POST` as an organizer (`key`), with an optional `Idempotency-Key`.
async fn organizer_post(app: &TestApp, key: &str, path: &str, idem: Option<&str>, body: Value) -> reqwest::Response {
    let mut req = app.client.post(app.url(path)).header("x-api-key", key).json(&body);
    if let Some(idem) = idem {
        req = req.header("idempotency-key", idem);
    }
    req.send().await.unwrap()
}

async fn withhold(app: &TestApp, event: EventId, seats: &[&str], label: &str) -> reqwest::Response {
    organizer_post(
        app,
        ORGANIZER_KEY,
        &format!("/events/{event}/withheld-seats"),
        None,
        json!({"seats": seats, "label": label}),
    )
    .await
}

#[tokio::test]
async fn accessible_best_available_takes_a_wheelchair_space_and_its_companion() {
    let app = TestApp::spawn().await;
    let event = app.create_event_from(&attribute_event(&app)).await;

    // The map and the event carry the attributes, per row.
    let map = app.availability(event, None).await;
    let row = &map.sections[0].rows[0].attributes;
    assert_eq!(row.wheelchair, [1, 10]);
    assert_eq!(row.companion, [2, 9]);
    assert_eq!(row.aisle, [1, 10]);
    assert_eq!(row.restricted_view, [5]);
    // Raw: an empty list is left out, not sent as `[]`.
    let raw = app.availability_json(event, None).await;
    assert!(
        raw["sections"][0]["rows"][1].get("wheelchair").is_none(),
        "empty lists are absent"
    );
    let details = app.event_details(event).await;
    assert_eq!(details.seat_map.sections[0].rows[0].attributes.companion, [2, 9]);

    let accessible = |count: u8| json!({"section": "A", "count": count, "accessible": true});
    let first = best_held(&app, "alice", event, "a1", accessible(2)).await;
    assert_eq!(first.reservation.seats, ["A-1-1", "A-1-2"]);
    // A retry with the same key is the same reservation.
    let again = best_held(&app, "alice", event, "a1", accessible(2)).await;
    assert_eq!(again.reservation.reservation_id, first.reservation.reservation_id);
    let bob = best_held(&app, "bob", event, "b1", accessible(2)).await;
    assert_eq!(bob.reservation.seats, ["A-1-9", "A-1-10"]);

    // None left: a precise 409 that writes nothing.
    let before = ends(app.journal.as_ref()).await;
    let res = best(&app, "carol", event, "c1", accessible(2)).await;
    let body = problem(res, 409, "no-accessible-seats").await;
    assert_eq!(
        body.detail,
        "section A has no 2 adjacent free seats with a wheelchair space and a companion seat next to it"
    );
    // One seat cannot be a wheelchair space and its companion.
    let res = best(&app, "carol", event, "c2", accessible(1)).await;
    let body = problem(res, 422, "accessible-too-few").await;
    assert_eq!(body.min_seats, Some(2));
    assert_eq!(ends(app.journal.as_ref()).await, before);
    let replayed = app.replay().await;
    assert_eq!(replayed[&event].counts.held, 4);

    // `aisle` alone prefers an aisle block; both of row 1's aisle seats are taken and row 2 has
    // none, so it is the plain best block of the frontmost row.
    let aisle = json!({"section": "A", "count": 2, "aisle": true});
    let dave = best_held(&app, "dave", event, "d1", aisle).await;
    assert_eq!(dave.reservation.seats, ["A-1-5", "A-1-6"]);
    app.stop().await;
}

#[tokio::test]
async fn seat_maps_with_bad_attributes_are_refused_precisely() {
    let app = TestApp::spawn().await;
    let before = ends(app.journal.as_ref()).await;
    let cases = [
        (
            json!({"wheelchair": [3], "companion": [5]}),
            "invalid seat map: wheelchair space A-1-3 has no companion seat next to it (list one of its neighbours in companion)",
        ),
        (
            json!({"aisle": [11]}),
            "invalid seat map: row 1 in section A lists seat 11 as aisle, but its seats are 1 to 10",
        ),
        (
            json!({"restricted_view": [4, 4]}),
            "invalid seat map: seat A-1-4 is listed twice as restricted_view",
        ),
        (
            json!({"wheelchair": [3], "companion": [2, 7]}),
            "invalid seat map: companion seat A-1-7 is not next to a wheelchair space",
        ),
    ];
    for (attributes, detail) in cases {
        let mut body = app.event_body(Duration::minutes(-1));
        let row = &mut body["seat_map"]["sections"][0]["rows"][0];
        for (k, v) in attributes.as_object().unwrap() {
            row[k] = v.clone();
        }
        let res = app.create_event_with(ORGANIZER_KEY, &body).await;
        let problem = problem(res, 422, "invalid-seat-map").await;
        assert_eq!(problem.detail, detail);
    }
    assert_eq!(ends(app.journal.as_ref()).await, before);
    app.stop().await;
}

#[tokio::test]
async fn bad_withholds_and_returns_are_refused_and_change_nothing() {
    let (app, event) = TestApp::spawn_with_event().await;
    assert_eq!(app.reserve_seats("alice", event, &["A-1-1"]).await.status(), 201);
    assert_eq!(withhold(&app, event, &["A-1-5"], "sound desk").await.status(), 200);
    let path = format!("/events/{event}/withheld-seats");
    let back = format!("/events/{event}/withheld-seats/return");
    let before = ends(app.journal.as_ref()).await;

    let one_seat = json!({"seats": ["A-1-2"], "label": "x"});
    let res = send(app.client.post(app.url(&path)).json(&one_seat)).await;
    problem(res, 401, "unauthorized").await;
    let res = organizer_post(&app, OTHER_ORGANIZER_KEY, &path, None, one_seat).await;
    problem(res, 403, "forbidden").await;
    let res = organizer_post(&app, OTHER_ORGANIZER_KEY, &back, None, json!({"seats": ["A-1-5"]})).await;
    problem(res, 403, "forbidden").await;

    let res = withhold(&app, event, &["A-1-1", "A-1-2"], "house seats").await;
    let body = problem(res, 409, "seats-in-sale").await;
    assert_eq!(body.seats(), ["A-1-1"]);
    assert_eq!(
        body.detail,
        "customers hold or bought these seats, so they cannot be withheld: A-1-1"
    );
    let res = withhold(&app, event, &["A-1-5", "A-1-6"], "house seats").await;
    let body = problem(res, 409, "already-withheld").await;
    assert_eq!(
        (body.label.as_deref(), body.seats()),
        (Some("sound desk"), vec!["A-1-5"])
    );

    let res = withhold(&app, event, &["A-1-2"], " ").await;
    problem(res, 422, "invalid-label").await;
    let res = withhold(&app, event, &[], "x").await;
    assert_eq!(problem(res, 422, "bad-withhold-size").await.max_seats, Some(1000));
    let res = withhold(&app, event, &["A-1-2", "A-1-2"], "x").await;
    problem(res, 422, "duplicate-seat").await;
    let res = withhold(&app, event, &["A-9-1"], "x").await;
    assert_eq!(problem(res, 422, "unknown-seats").await.seats(), ["A-9-1"]);
    let res = organizer_post(&app, ORGANIZER_KEY, &back, None, json!({"seats": ["Z-1-1"]})).await;
    problem(res, 422, "unknown-seats").await;
    let not_a_seat = json!({"seats": ["nope"], "label": "x"});
    let res = organizer_post(&app, ORGANIZER_KEY, &path, None, not_a_seat).await;
    assert_eq!(res.status(), 422);
    assert_eq!(res.headers()["content-type"], "application/problem+json");

    assert_eq!(ends(app.journal.as_ref()).await, before, "no refusal wrote anything");
    app.stop().await;
}

#[tokio::test]
async fn withheld_seats_are_unsellable_until_returned_and_everything_adds_up() {
    let (app, event) = TestApp::spawn_with_event().await;
    let path = format!("/events/{event}/withheld-seats");
    let body = json!({"seats": ["A-1-4", "A-1-5"], "label": "house seats"});
    let written: EventWritten =
        ok(organizer_post(&app, ORGANIZER_KEY, &path, Some("hold-1"), body.clone()).await).await;
    let map = app.availability(event, written.position.as_deref()).await;
    assert_eq!(map.seats.withheld, 2);
    assert_eq!(map.seats.available, 24);
    assert_eq!(map.sections[0].withheld, 2);
    assert_eq!(map.legend.withheld, "withheld");
    assert_eq!(map.sections[0].rows[0].seats, "AAAWWAAAAA");

    // A retry (same key, same body) writes nothing more.
    let before = ends(app.journal.as_ref()).await;
    let res = organizer_post(&app, ORGANIZER_KEY, &path, Some("hold-1"), body).await;
    assert_eq!(res.status(), 200);
    assert_eq!(ends(app.journal.as_ref()).await, before);

    // Not sellable: explicitly or by best-available.
    let res = app.reserve_seats("alice", event, &["A-1-5"]).await;
    assert_eq!(problem(res, 409, "seats-unavailable").await.seats(), ["A-1-5"]);
    let got = best_held(&app, "alice", event, "b1", json!({"section": "A", "count": 4})).await;
    assert!(
        !got.reservation.seats.iter().any(|s| s == "A-1-4" || s == "A-1-5"),
        "{got:?}"
    );

    // Returned: sellable again, and sold.
    let res = organizer_post(
        &app,
        ORGANIZER_KEY,
        &format!("/events/{event}/withheld-seats/return"),
        Some("return-1"),
        json!({"seats": ["A-1-5"]}),
    )
    .await;
    assert_eq!(res.status(), 200);
    let held = app.reserve_seats_ok("bob", event, &["A-1-5"]).await;
    let rid = &held.reservation.reservation_id;
    assert_eq!(app.pay(event, "evt_ret", rid, 10000).await.outcome, "booked");

    // The write side, the map, the ledger and the analytics replay agree, and add up.
    let state = &app.replay().await[&event];
    let c = state.counts;
    assert_eq!((c.available, c.held, c.booked, c.withheld), (20, 4, 1, 1));
    let seats = app.availability(event, None).await.seats;
    assert_eq!((seats.held, seats.booked, seats.withheld), (4, 1, 1));
    let sales = sales_until(&app, event, |v| v.total.booked_now == 1).await;
    let t = &sales.total;
    assert_eq!(t.withheld_now, 1);
    assert_eq!(t.available_now + t.held_now + t.booked_now + t.withheld_now, t.seats);
    assert_eq!(t.seats, 26);
    let history = history_until(&app, event, "A-1-5", 4).await;
    assert_eq!(history_kinds(&history), ["withheld", "returned", "held", "booked"]);
    assert_eq!(history.history[0].reservation_id, None);
    let still = get_until(
        &app,
        &format!("/events/{event}/seats/A-1-4/history"),
        AS_ORGANIZER,
        |v: &SeatHistory| v.state == "withheld",
    )
    .await;
    assert_eq!(still.history[0].kind, "withheld");

    let options = frontrow_analytics::replay::ReplayOptions {
        event: Some(event),
        ..Default::default()
    };
    let report = frontrow_analytics::analyse(app.journal.clone(), &options, |_| {})
        .await
        .unwrap();
    let e = &report.events[0];
    assert_eq!(
        (
            e.seats_booked_now,
            e.seats_held_now,
            e.seats_withheld_now,
            e.seats_total
        ),
        (1, 4, 1, 26)
    );
    app.stop().await;
}

/// A withhold's retry that arrives after the seats were returned (a client retrying a request
/// whose answer it lost) withholds nothing: the key wrote it once. The key sent with another
/// request is refused, and neither writes anything.
#[tokio::test]
async fn a_keyed_withhold_retried_after_its_return_withholds_nothing() {
    let (app, event) = TestApp::spawn_with_event().await;
    let path = format!("/events/{event}/withheld-seats");
    let back = format!("/events/{event}/withheld-seats/return");
    let hold = json!({"seats": ["A-1-3", "A-1-4"], "label": "camera"});
    let res = organizer_post(&app, ORGANIZER_KEY, &path, Some("cam-1"), hold).await;
    assert_eq!(res.status(), 200);
    let both = json!({"seats": ["A-1-3", "A-1-4"]});
    let returned: EventWritten = ok(organizer_post(&app, ORGANIZER_KEY, &back, Some("cam-back-1"), both).await).await;
    let map = app.availability(event, returned.position.as_deref()).await;
    assert_eq!(map.sections[0].rows[0].seats, "AAAAAAAAAA");

    let before = ends(app.journal.as_ref()).await;
    // The same request, seats in another order: done already.
    let retry = json!({"seats": ["A-1-4", "A-1-3"], "label": "camera"});
    let res = organizer_post(&app, ORGANIZER_KEY, &path, Some("cam-1"), retry).await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    // The key with another request.
    let other = json!({"seats": ["A-1-3", "A-1-4", "A-1-5"], "label": "camera"});
    let res = organizer_post(&app, ORGANIZER_KEY, &path, Some("cam-1"), other).await;
    problem(res, 422, "idempotency-key-reused").await;
    let res = organizer_post(&app, ORGANIZER_KEY, &back, Some("cam-1"), json!({"seats": ["A-1-3"]})).await;
    problem(res, 422, "idempotency-key-reused").await;
    assert_eq!(ends(app.journal.as_ref()).await, before, "nothing was written");
    let state = &app.replay().await[&event];
    assert_eq!(state.counts.withheld, 0);
    assert_eq!(state.organizer_requests.len(), 2, "{:?}", state.organizer_requests);
    assert_eq!(app.availability(event, None).await.seats.withheld, 0);
    app.stop().await;
}
