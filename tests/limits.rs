//! Abuse limits decided by the writer, over HTTP against the real server: the per-customer seat
//! limit, and inputs whose arithmetic would overflow or whose text is too long once stored.

mod common;

use chrono::Duration;
use common::*;
use serde_json::{Value, json};

/// An on-sale event with one 60-seat section (`A`, 6 rows of 10), 6 seats per order, and the
/// given extra settings.
async fn event_with(app: &TestApp, settings: Value) -> frontrow_schema::EventId {
    created(app, settings).await.0
}

/// [`event_with`], and the log position of the create.
async fn created(app: &TestApp, settings: Value) -> (frontrow_schema::EventId, String) {
    let mut body = app.event_body(Duration::minutes(-1));
    body["max_seats_per_order"] = json!(6);
    body["seat_map"]["sections"][0]["rows"] = (1..=6)
        .map(|r| json!({"name": r.to_string(), "seats": 10, "tier": "GOLD"}))
        .collect();
    for (k, v) in settings.as_object().unwrap() {
        body[k] = v.clone();
    }
    let written: EventWritten = answer(app.create_event_with(ORGANIZER_KEY, &body).await, 201).await;
    (
        written.event_id,
        written.position.expect("a create answers its position"),
    )
}

/// The reproduction: one customer sends `requests` best-available reservations of 6
/// seats at once, each with a fresh `Idempotency-Key`. Returns the seats held and the refusals.
async fn one_customer_floods(app: &TestApp, event: frontrow_schema::EventId, requests: usize) -> (usize, Vec<Problem>) {
    let tasks: Vec<_> = (0..requests)
        .map(|i| {
            let (client, token) = (app.client.clone(), app.token("mallory"));
            let url = app.url(&format!("/events/{event}/reservations"));
            tokio::spawn(async move {
                let res = client
                    .post(url)
                    .bearer_auth(token)
                    .header("idempotency-key", format!("flood-{i}-{}", uuid::Uuid::new_v4()))
                    .json(&json!({"best_available": {"section": "A", "count": 6}}))
                    .send()
                    .await
                    .unwrap();
                (res.status().as_u16(), res)
            })
        })
        .collect();
    let (mut held, mut refused) = (0, Vec::new());
    for t in tasks {
        let (status, res) = t.await.unwrap();
        match status {
            201 => {
                held += typed::<ReservationResponse>(res.json().await.unwrap())
                    .reservation
                    .seats
                    .len()
            }
            409 => refused.push(problem(res, 409, "customer-limit").await),
            other => panic!("unexpected {other}: {}", res.text().await.unwrap()),
        }
    }
    (held, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_customer_cannot_hold_more_than_the_events_limit() {
    let app = TestApp::spawn().await;
    // No limit of its own: one order's worth (6).
    let event = event_with(&app, json!({})).await;
    let (held, refused) = one_customer_floods(&app, event, 100).await;
    assert_eq!(held, 6, "one order's worth");
    assert_eq!(refused.len(), 99);
    assert_eq!(refused[0].max_seats_per_customer, Some(6));
    assert_eq!(refused[0].seats_held_or_booked, Some(6));
    assert_eq!(
        refused[0].detail,
        "at most 6 seats per customer at this event: you hold or own 6, and asked for 6 more"
    );
    // Another customer is not affected.
    let res = app
        .reserve(
            "alice",
            event,
            "alice-1",
            json!({"best_available": {"section": "A", "count": 6}}),
        )
        .await;
    assert_eq!(res.status(), 201);
    // The log agrees: one live hold of mallory's.
    let states = app.replay().await;
    let mallory = frontrow_schema::CustomerId::parse("mallory").unwrap();
    assert_eq!(states[&event].live_seats_of(&mallory), 6);

    // An organizer may allow more (two orders here), and the event's details say so.
    let (event, position) = created(&app, json!({"max_seats_per_customer": 12})).await;
    let (held, refused) = one_customer_floods(&app, event, 100).await;
    assert_eq!((held, refused.len()), (12, 98));
    let details: EventDetails = typed(
        app.get(&format!("/events/{event}?after={position}"))
            .await
            .json()
            .await
            .unwrap(),
    );
    assert_eq!(details.max_seats_per_customer, 12);
    app.stop().await;
}

#[tokio::test]
async fn a_per_customer_limit_out_of_range_is_refused_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let before = ends(app.journal.as_ref()).await;
    for limit in [json!(0), json!(5), json!(1001), json!(70000), json!(-1)] {
        let mut body = app.event_body(Duration::minutes(-1));
        body["max_seats_per_order"] = json!(6);
        body["max_seats_per_customer"] = limit.clone();
        let res = app.create_event_with(ORGANIZER_KEY, &body).await;
        let kind = if limit.as_i64().is_some_and(|l| (0..=65535).contains(&l)) {
            "invalid-event"
        } else {
            "invalid-body"
        };
        problem(res, 422, kind).await;
    }
    assert_eq!(ends(app.journal.as_ref()).await, before);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflowing_prices_and_positions_are_refused_and_change_nothing() {
    let (app, event) = TestApp::spawn_with_event().await;
    let before = ends(app.journal.as_ref()).await;
    // Prices: above the bound, at i64::MAX, and beyond what an i64 holds.
    for (price, kind) in [
        (json!(100_000_001), "invalid-seat-map"),
        (json!(i64::MAX), "invalid-seat-map"),
        (json!(u64::MAX), "invalid-body"),
        (json!(-1), "invalid-seat-map"),
    ] {
        let mut body = app.event_body(Duration::minutes(10));
        body["seat_map"]["tiers"][0]["price"] = price.clone();
        problem(app.create_event_with(ORGANIZER_KEY, &body).await, 422, kind).await;
    }
    assert_eq!(ends(app.journal.as_ref()).await, before);
    // The same for a seat-map change of an event not yet on sale.
    let res = app
        .create_event_with(ORGANIZER_KEY, &app.event_body(Duration::hours(1)))
        .await;
    let later = typed::<EventWritten>(res.json().await.unwrap()).event_id;
    let before_change = ends(app.journal.as_ref()).await;
    let mut map = app.event_body(Duration::hours(1))["seat_map"].clone();
    map["tiers"][1]["price"] = json!(i64::MAX);
    let res = app
        .client
        .put(app.url(&format!("/events/{later}/seat-map")))
        .header("x-api-key", ORGANIZER_KEY)
        .json(&map)
        .send()
        .await
        .unwrap();
    problem(res, 422, "invalid-seat-map").await;
    assert_eq!(ends(app.journal.as_ref()).await, before_change);

    // Positions whose offset + 1 would overflow (u64::MAX), or that no journal can have.
    let partition = frontrow_schema::partition::partition_of(&event, 4);
    for offset in ["18446744073709551615", "9223372036854775808", "18446744073709551616"] {
        let position = format!("{partition}:{offset}");
        let res = app
            .client
            .get(app.url(&format!("/events/{event}/seats/stream")))
            .header("last-event-id", &position)
            .send()
            .await
            .unwrap();
        problem(res, 400, "bad-last-event-id").await;
        let res = app
            .get(&format!("/events/{event}/availability?after={position}&wait_ms=0"))
            .await;
        problem(res, 400, "bad-position").await;
        let res = app.get(&format!("/events/{event}/availability?at={position}")).await;
        problem(res, 400, "bad-instant").await;
    }
    // The highest offset a journal can have is a position like any other: not applied yet.
    let res = app
        .get(&format!(
            "/events/{event}/availability?after={partition}:9223372036854775807&wait_ms=0"
        ))
        .await;
    problem(res, 503, "position-not-visible").await;
    assert_eq!(ends(app.journal.as_ref()).await, before_change);
    app.stop().await;
}

#[tokio::test]
async fn text_limits_apply_to_what_is_stored() {
    let app = TestApp::spawn().await;
    let before = ends(app.journal.as_ref()).await;
    let padded = format!("{}{}{}", " ".repeat(20_000), "t".repeat(200), " ".repeat(20_000));
    for (field, value, kind) in [
        ("title", json!(padded), "invalid-event"),
        ("artist", json!(format!("{} ", "a".repeat(200))), "invalid-event"),
        ("city", json!("   "), "invalid-event"),
        ("tags", json!([format!(" {}", "x".repeat(40))]), "invalid-event"),
    ] {
        let mut body = app.event_body(Duration::minutes(10));
        body[field] = value;
        let res = app.create_event_with(ORGANIZER_KEY, &body).await;
        let body = problem(res, 422, kind).await;
        assert!(body.detail.contains(&format!(": {field}")), "{body:?}");
    }
    for name in [" ".repeat(3), format!("{} ", "S".repeat(100))] {
        let mut body = app.event_body(Duration::minutes(10));
        body["seat_map"]["sections"][0]["name"] = json!(name);
        problem(
            app.create_event_with(ORGANIZER_KEY, &body).await,
            422,
            "invalid-seat-map",
        )
        .await;
    }
    assert_eq!(ends(app.journal.as_ref()).await, before, "nothing was written");
    // At the limit, as sent, an event is created and keeps its text exactly.
    let mut body = app.event_body(Duration::minutes(10));
    body["title"] = json!("t".repeat(200));
    assert_eq!(app.create_event_with(ORGANIZER_KEY, &body).await.status(), 201);
    app.stop().await;
}
