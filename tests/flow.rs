//! The booking flow over HTTP against the real server: create -> reserve -> pay -> booked, and
//! every way it can go sideways (expiry, late and duplicate webhooks, retries, bad input).

mod common;

use chrono::Duration;
use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn create_reserve_pay_booked() {
    let (app, event) = TestApp::spawn_with_event().await;

    let res = app.reserve_seats("alice", event, &["A-1-4", "A-1-5"]).await;
    let position = position(&res);
    let held: ReservationResponse = answer(res, 201).await;
    assert_eq!(held.reservation.status, "held");
    assert_eq!(held.reservation.amount, eur(20000));
    assert_eq!(held.position.as_deref(), Some(position.as_str()));
    let rid = held.reservation.reservation_id;

    // Read your own write: the map shows the hold once the position is visible.
    let map = app.availability(event, Some(&position)).await;
    assert_eq!(map.seats.held, 2);
    assert_eq!(seat_letters(&map)["A-1-4"], 'H');

    let paid = app.payment_event("payment_intent.succeeded", "evt_ok", event, rid, 20000);
    let answer: WebhookAnswer = ok(app.webhook(&paid).await).await;
    assert_eq!(answer.outcome, "booked");
    assert_eq!(answer.reservation_status.as_deref(), Some("booked"));

    let path = format!("/events/{event}/reservations/{rid}");
    let booked: ReservationResponse = ok(app.get_as("alice", &path).await).await;
    assert_eq!(booked.reservation.status, "booked");
    assert_eq!(booked.reservation.payment_intent.as_deref(), Some("pi_evt_ok"));
    let map = app.availability(event, booked.position.as_deref()).await;
    assert_eq!(map.seats.booked, 2);
    assert_eq!(map.seats.held, 0);

    // Cancelling the booking refunds it and frees the seats for the next fan.
    let cancelled: ReservationResponse = ok(app.post_as("alice", &format!("{path}/cancel")).await).await;
    assert_eq!(cancelled.reservation.status, "refunded");
    assert_eq!(cancelled.reservation.refunds[0].reason, RefundReason::BookingCancelled);
    let res = app.reserve_seats("bob", event, &["A-1-4"]).await;
    assert_eq!(res.status(), 201);
    app.stop().await;
}

#[tokio::test]
async fn the_demo_provider_pays_through_a_signed_webhook() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["B-1-1"]).await;
    // Bob cannot pay (or see) Alice's reservation.
    problem(
        app.demo_pay("bob", event, &rid, None).await,
        404,
        "reservation-not-found",
    )
    .await;
    let answer: WebhookAnswer = ok(app.demo_pay("alice", event, &rid, None).await).await;
    assert_eq!(answer.outcome, "booked");
    app.stop().await;
}

#[tokio::test]
async fn a_keyed_demo_payment_retried_delivers_the_same_payment() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["B-1-1"]).await;
    let pay = |key: &'static str| app.demo_pay("alice", event, &rid, Some(key));
    let first: WebhookAnswer = ok(pay("pay-1").await).await;
    assert_eq!(first.outcome, "booked");
    let retry: WebhookAnswer = ok(pay("pay-1").await).await;
    assert_eq!(retry.outcome, "duplicate", "the same provider event, applied once");
    assert_eq!(retry.reservation_status.as_deref(), Some("booked"));
    let booked = app.reservation("alice", event, &rid).await;
    assert!(booked.reservation.refunds.is_empty(), "no refund: {booked:?}");
    // Another key is another charge, which a booked reservation gives back.
    let second: WebhookAnswer = ok(pay("pay-2").await).await;
    assert_eq!(second.outcome, "refunded");
    problem(pay("").await, 400, "bad-idempotency-key").await;
    app.stop().await;
}

#[tokio::test]
async fn a_hold_expires_at_its_deadline_and_the_seats_return() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["A-2-1", "A-2-2"]).await;

    app.clock.advance(Duration::minutes(9));
    assert_eq!(app.reservation("alice", event, &rid).await.reservation.status, "held");

    app.clock.advance(Duration::minutes(1) + Duration::seconds(1));
    // The writer's timer fires on the clock jump; poll briefly for the expiry to be recorded.
    app.reservation_until("alice", event, &rid, "expired").await;
    let res = app.reserve_seats("bob", event, &["A-2-1"]).await;
    assert_eq!(res.status(), 201, "the expired seat is available again");
    app.stop().await;
}

#[tokio::test]
async fn late_payments_book_if_free_and_refund_otherwise() {
    let (app, event) = TestApp::spawn_with_event().await;
    let a = app
        .reserve_seats_ok("alice", event, &["A-1-1"])
        .await
        .reservation
        .reservation_id;
    // Bob's seat starts its own row, so taking it again leaves no seat alone (the no-orphan rule).
    let b = app
        .reserve_seats_ok("bob", event, &["A-2-1"])
        .await
        .reservation
        .reservation_id;
    let (a, b) = (&a, &b);
    app.clock.advance(Duration::minutes(11));
    // Wait until both holds have expired.
    for (owner, rid) in [("alice", a), ("bob", b)] {
        app.reservation_until(owner, event, rid, "expired").await;
    }
    // Carol takes Bob's seat after his hold expired.
    assert_eq!(app.reserve_seats("carol", event, &["A-2-1"]).await.status(), 201);

    let answer = app.pay(event, "evt_late_a", a, 10000).await;
    assert_eq!(answer.outcome, "booked", "seat still free: the late payment books it");
    assert!(app.reservation("alice", event, a).await.reservation.late_payment);

    let answer = app.pay(event, "evt_late_b", b, 10000).await;
    assert_eq!(answer.outcome, "refunded", "seat taken: the late payment is refunded");
    assert_eq!(
        app.reservation("bob", event, b).await.reservation.refunds[0].reason,
        RefundReason::SeatsTaken
    );
    app.stop().await;
}

#[tokio::test]
async fn duplicate_webhooks_apply_once() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["A-1-1"]).await;
    let first = app.pay(event, "evt_dup", &rid, 10000).await;
    let end_after_first = ends(app.journal.as_ref()).await;
    let second = app.pay(event, "evt_dup", &rid, 10000).await;
    assert_eq!(first.outcome, "booked");
    assert_eq!(second.outcome, "duplicate");
    assert_eq!(
        ends(app.journal.as_ref()).await,
        end_after_first,
        "a repeated delivery writes nothing"
    );

    // A failure reported for a booked reservation is recorded but frees nothing.
    let failed = app.payment_event("payment_intent.payment_failed", "evt_fail_late", event, rid, 10000);
    let answer: WebhookAnswer = typed(app.webhook(&failed).await.json().await.unwrap());
    assert_eq!(answer.outcome, "payment_failed");
    assert_eq!(answer.reservation_status.as_deref(), Some("booked"));

    // A second, different successful payment for the same reservation is refunded.
    assert_eq!(app.pay(event, "evt_second", &rid, 10000).await.outcome, "refunded");
    app.stop().await;
}

#[tokio::test]
async fn a_failed_payment_releases_the_hold() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["A-1-1"]).await;
    let failed = app.payment_event("payment_intent.payment_failed", "evt_f", event, rid, 10000);
    let answer: WebhookAnswer = typed(app.webhook(&failed).await.json().await.unwrap());
    assert_eq!(answer.outcome, "payment_failed");
    assert_eq!(answer.reservation_status.as_deref(), Some("payment_failed"));
    assert_eq!(app.reserve_seats("bob", event, &["A-1-1"]).await.status(), 201);
    app.stop().await;
}

#[tokio::test]
async fn webhook_signatures_are_checked() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["A-1-1"]).await;
    let delivery = app.payment_event("payment_intent.succeeded", "evt_sig", event, rid, 10000);
    let now = app.now().timestamp();

    for (secret, at) in [("whsec_wrong", now), (WEBHOOK_SECRET, now - 301)] {
        problem(app.webhook_signed(&delivery, secret, at).await, 400, "bad-signature").await;
    }
    let unsigned = send(app.client.post(app.url("/webhooks/payments")).json(&delivery)).await;
    problem(unsigned, 400, "bad-signature").await;
    // None of those changed anything: the seat is still only held.
    assert_eq!(app.reservation("alice", event, &rid).await.reservation.status, "held");
    // A correctly signed delivery replayed within the tolerance is a duplicate, not a second booking.
    let signed_at = |at: i64| app.webhook_signed(&delivery, WEBHOOK_SECRET, at);
    let first: WebhookAnswer = typed(signed_at(now - 10).await.json().await.unwrap());
    let replayed: WebhookAnswer = typed(signed_at(now - 5).await.json().await.unwrap());
    assert_eq!((&*first.outcome, &*replayed.outcome), ("booked", "duplicate"));
    app.stop().await;
}

#[tokio::test]
async fn retried_commands_answer_the_same_and_apply_once() {
    let (app, event) = TestApp::spawn_with_event().await;
    let body = json!({"best_available": {"section": "A", "count": 3}});
    let first: ReservationResponse = answer(app.reserve("alice", event, "retry-1", body.clone()).await, 201).await;
    let second: ReservationResponse = answer(app.reserve("alice", event, "retry-1", body.clone()).await, 201).await;
    assert_eq!(first.reservation.reservation_id, second.reservation.reservation_id);
    assert_eq!(first.reservation.seats, second.reservation.seats);
    assert_eq!(first.reservation.hold_until, second.reservation.hold_until);
    let map = app.availability(event, second.position.as_deref()).await;
    assert_eq!(map.seats.held, 3, "the retry held nothing more");

    // The same key with another request is refused; the same key from another customer is theirs.
    let res = app
        .reserve("alice", event, "retry-1", json!({"seats": ["B-1-1"]}))
        .await;
    problem(res, 422, "idempotency-key-reused").await;
    assert_eq!(app.reserve("bob", event, "retry-1", body).await.status(), 201);

    // Creating an event with the same Idempotency-Key returns the same event.
    let create = |key: &'static str| {
        let body = app.event_body(Duration::minutes(-1));
        let app = &app;
        async move {
            let request = app
                .client
                .post(app.url("/events"))
                .header(AS_ORGANIZER.0, AS_ORGANIZER.1);
            let res = send(request.header("idempotency-key", key).json(&body)).await;
            answer::<EventWritten>(res, 201).await.event_id
        }
    };
    assert_eq!(create("create-1").await, create("create-1").await);
    // Releasing twice is harmless.
    let rid = &first.reservation.reservation_id;
    let path = format!("/events/{event}/reservations/{rid}/release");
    assert_eq!(app.post_as("alice", &path).await.status(), 200);
    let again: ReservationResponse = typed(app.post_as("alice", &path).await.json().await.unwrap());
    assert_eq!(again.reservation.status, "released");
    app.stop().await;
}

#[tokio::test]
async fn customers_see_and_touch_only_their_own_reservations() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["A-1-1"]).await;
    let path = format!("/events/{event}/reservations/{rid}");
    problem(app.get_as("bob", &path).await, 404, "reservation-not-found").await;
    let release = format!("{path}/release");
    problem(app.post_as("bob", &release).await, 404, "reservation-not-found").await;
    problem(app.get(&path).await, 401, "unauthorized").await;
    let res = app.get_with(&path, ("authorization", "Bearer not.a.token")).await;
    problem(res, 401, "unauthorized").await;
    assert_eq!(app.reservation("alice", event, &rid).await.reservation.status, "held");
    app.stop().await;
}

#[tokio::test]
async fn organizers_change_the_seat_map_only_before_the_onsale() {
    let app = TestApp::spawn().await;
    let event = app.create_event_from(&app.event_body(Duration::hours(1))).await;
    let mut map = app.event_body(Duration::hours(1))["seat_map"].clone();
    map["sections"][1]["rows"][0]["seats"] = json!(8);
    let put = |key: &str, body: Value| {
        let url = app.url(&format!("/events/{event}/seat-map"));
        send(app.client.put(url).header("x-api-key", key).json(&body))
    };
    problem(put(OTHER_ORGANIZER_KEY, map.clone()).await, 403, "forbidden").await;
    problem(put("no-such-key", map.clone()).await, 401, "unauthorized").await;
    let written: EventWritten = ok(put(ORGANIZER_KEY, map.clone()).await).await;
    let avail = app
        .availability(event, Some(written.position.as_deref().unwrap()))
        .await;
    assert_eq!(avail.seats.total, 28);
    // Not on sale yet.
    problem(app.reserve_seats("alice", event, &["A-1-1"]).await, 409, "not-on-sale").await;
    app.clock.advance(Duration::hours(2));
    assert_eq!(app.reserve_seats("alice", event, &["B-1-8"]).await.status(), 201);
    problem(put(ORGANIZER_KEY, map).await, 409, "onsale-started").await;
    app.stop().await;
}

#[tokio::test]
async fn bad_input_gets_a_precise_problem_and_changes_nothing() {
    let app = TestApp::spawn_with(|s| s.max_body_bytes = 64 * 1024).await;
    let event = app.create_event().await;
    let before = ends(app.journal.as_ref()).await;
    let url = app.url(&format!("/events/{event}/reservations"));
    let reserve_raw = |body: &str, key: Option<&str>| {
        let mut req = app
            .client
            .post(url.clone())
            .bearer_auth(app.token("alice"))
            .header("content-type", "application/json");
        if let Some(k) = key {
            req = req.header("idempotency-key", k);
        }
        send(req.body(body.to_owned()))
    };
    let five = r#"{"seats": ["A-1-1","A-1-2","A-1-3","A-1-4","A-1-5"]}"#;
    let huge = format!(r#"{{"seats": ["{}"]}}"#, "A".repeat(100 * 1024));
    let cases = [
        ("{not json", Some("k"), 400, "malformed-json"),
        (r#"{"seats": "A-1-1"}"#, Some("k"), 422, "invalid-body"),
        (r#"{"seats": ["A-1-1"]}"#, None, 400, "idempotency-key-required"),
        (r#"{"seats": []}"#, Some("k0"), 422, "bad-seat-count"),
        (five, Some("k5"), 422, "bad-seat-count"),
        (r#"{"seats": ["A-9-1", "A-1-1"]}"#, Some("k1"), 422, "unknown-seats"),
        (r#"{"seats": ["A-1-1", "A-1-1"]}"#, Some("k2"), 422, "duplicate-seat"),
        (
            r#"{"best_available": {"section": "Z", "count": 2}}"#,
            Some("k3"),
            422,
            "unknown-section",
        ),
        (r#"{}"#, Some("k4"), 422, "bad-selection"),
        (huge.as_str(), Some("k6"), 413, "body-too-large"),
    ];
    for (body, key, status, kind) in cases {
        let answer = problem(reserve_raw(body, key).await, status, kind).await;
        if kind == "unknown-seats" {
            assert_eq!(answer.seats(), ["A-9-1"]);
        }
    }
    let nowhere = frontrow_schema::EventId::new();
    let res = app.reserve("alice", nowhere, "k7", json!({"seats": ["A-1-1"]})).await;
    problem(res, 404, "event-not-found").await;
    for path in ["/events/not-a-uuid/availability", "/no/such/route"] {
        problem(app.get(path).await, 404, "not-found").await;
    }
    let res = send(app.client.delete(app.url("/events"))).await;
    problem(res, 405, "method-not-allowed").await;
    // Organizer side: wrong key, invalid seat map, starts before onsale.
    let bad = |change: fn(&mut Value)| {
        let mut body = app.event_body(Duration::zero());
        change(&mut body);
        body
    };
    let cases = [
        ("wrong", bad(|_| {}), 401, "unauthorized"),
        (
            ORGANIZER_KEY,
            bad(|b| b["seat_map"]["sections"][0]["rows"][0]["tier"] = json!("NOPE")),
            422,
            "invalid-seat-map",
        ),
        (
            ORGANIZER_KEY,
            bad(|b| b["starts_at"] = b["onsale_at"].clone()),
            422,
            "invalid-event",
        ),
        (
            ORGANIZER_KEY,
            bad(|b| b["hold_minutes"] = json!(30)),
            422,
            "invalid-body",
        ),
    ];
    for (key, body, status, kind) in cases {
        problem(app.create_event_with(key, &body).await, status, kind).await;
    }
    assert_eq!(
        ends(app.journal.as_ref()).await,
        before,
        "no bad request wrote anything"
    );

    // A seat already taken: 409 naming it, and still nothing written by the refusal.
    assert_eq!(app.reserve_seats("alice", event, &["A-1-1"]).await.status(), 201);
    let before = ends(app.journal.as_ref()).await;
    let body = problem(
        app.reserve_seats("bob", event, &["A-1-2", "A-1-1"]).await,
        409,
        "seats-unavailable",
    )
    .await;
    assert_eq!(body.seats(), ["A-1-1"]);
    assert_eq!(ends(app.journal.as_ref()).await, before);
    app.stop().await;
}

/// serde fills a struct from an array by position (`["b"]` for `{"customer": "b"}`); the API's
/// objects are objects, at the top of a body and inside it, and such a body changes nothing.
#[tokio::test]
async fn an_array_where_an_object_belongs_is_refused_at_any_depth() {
    let (app, event) = TestApp::spawn_with_event().await;
    let before = ends(app.journal.as_ref()).await;
    let as_customer = |path: &str, body: Value| {
        let request = app.client.post(app.url(path)).bearer_auth(app.token("alice"));
        send(request.header("idempotency-key", "positional").json(&body))
    };
    let tokens = |body: Value| send(app.client.post(app.url("/demo/tokens")).json(&body));
    problem(tokens(json!(["b"])).await, 422, "invalid-body").await;
    let reserve = format!("/events/{event}/reservations");
    for body in [
        json!([["A-1-1"], null, null, null, null]),
        json!({"best_available": ["A", 2, false, false]}),
    ] {
        problem(as_customer(&reserve, body).await, 422, "invalid-body").await;
    }
    let rid = frontrow_schema::ReservationId::new();
    let pay = json!([event, rid, "succeeded"]);
    problem(as_customer("/demo/payments", pay).await, 422, "invalid-body").await;
    // A section of the seat map, fields in order.
    let mut body = app.event_body(Duration::zero());
    let section = body["seat_map"]["sections"][0].clone();
    body["seat_map"]["sections"][0] = json!([section["code"], section["name"], section["rows"], null]);
    problem(app.create_event_with(ORGANIZER_KEY, &body).await, 422, "invalid-body").await;
    assert_eq!(
        ends(app.journal.as_ref()).await,
        before,
        "no positional body wrote anything"
    );
    // The same values as objects go through.
    assert_eq!(tokens(json!({"customer": "b"})).await.status(), 200);
    let res = as_customer(&reserve, json!({"best_available": {"section": "A", "count": 2}})).await;
    assert_eq!(res.status(), 201);
    app.stop().await;
}

#[tokio::test]
async fn availability_is_cacheable() {
    let (app, event) = TestApp::spawn_with_event().await;
    let path = format!("/events/{event}/availability");
    let res = app.get(&path).await;
    assert_eq!(res.status(), 200);
    let etag = res.headers()["etag"].to_str().unwrap().to_owned();
    assert!(res.headers()["cache-control"].to_str().unwrap().contains("public"));
    let res = app.get_with(&path, ("if-none-match", &etag)).await;
    assert_eq!(res.status(), 304);
    let held = app.reserve_seats_ok("alice", event, &["A-1-1"]).await;
    app.availability(event, held.position.as_deref()).await;
    let res = app.get_with(&path, ("if-none-match", &etag)).await;
    assert_eq!(res.status(), 200, "a change gives a new ETag");
    assert_ne!(res.headers()["etag"].to_str().unwrap(), etag);
    app.stop().await;
}

#[tokio::test]
async fn health_ready_and_openapi() {
    let app = TestApp::spawn().await;
    assert_eq!(app.get("/health").await.status(), 200);
    assert_eq!(app.get("/ready").await.status(), 200);
    let doc = app.get_json("/openapi.json").await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/events",
        "/events/{event_id}/reservations",
        "/events/{event_id}/reservations/{reservation_id}/release",
        "/events/{event_id}/availability",
        "/webhooks/payments",
        "/search",
        "/me/bookings",
        "/events/{event_id}/sales",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from the OpenAPI document"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn created_events_become_searchable_and_sold_out_ones_leave_the_available_filter() {
    let app = TestApp::spawn().await;
    let mut body = app.event_body(Duration::minutes(-1));
    body["artist"] = json!("Marianne Vortexa");
    body["aliases"] = json!(["마리안 보르텍사", "MVX"]);
    body["seat_map"] = json!({"tiers": [{"code": "STD", "name": "Standard", "price": 5000}],
        "sections": [{"code": "A", "name": "Stalls", "rows": [{"name": "1", "seats": 2, "tier": "STD"}]}]});
    let event = app.create_event_from(&body).await;
    let has_event = |v: &SearchResponse| has_hit(v, event);
    // A typo still finds the artist, and so do the organizer's aliases.
    search_until(&app, "q=mariane%20vortexa", has_event).await;
    search_until(&app, "q=mvx", has_event).await;
    search_until(&app, "q=%EB%B3%B4%EB%A5%B4%ED%85%8D%EC%82%AC", has_event).await;
    let mut bad = app.event_body(Duration::minutes(-1));
    bad["aliases"] = json!(["  "]);
    assert_eq!(app.create_event_with(ORGANIZER_KEY, &bad).await.status(), 422);
    search_until(&app, "q=vortexa&available=true", has_event).await;
    let held = app.reserve_seats("alice", event, &["A-1-1", "A-1-2"]).await;
    assert_eq!(held.status(), 201);
    search_until(&app, "q=vortexa&available=true", |v| !has_event(v)).await;
    let res = app.get("/search?q=").await;
    assert_eq!(res.status(), 400);
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    app.stop().await;
}

#[tokio::test]
async fn the_ledger_follows_the_flow_bookings_sales_and_seat_history() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["A-1-1", "A-1-2"]).await;
    assert_eq!(app.pay(event, "evt_ledger", &rid, 20000).await.outcome, "booked");
    let expired = app.reserve_seats_ok("bob", event, &["B-1-1"]).await;
    app.clock.advance(Duration::minutes(11));
    let expired = &expired.reservation.reservation_id;
    app.reservation_until("bob", event, expired, "expired").await;

    let mine = bookings_until(&app, "alice").await;
    assert_eq!(mine.bookings[0].reservation_id, rid.as_uuid());
    assert_eq!(mine.bookings[0].amount, 20000);

    let sales_path = format!("/events/{event}/sales");
    let sales = sales_until(&app, event, |v| v.total.expired == 1).await;
    assert_eq!(sales.total.booked, 2);
    assert_eq!(sales.total.revenue, 20000);
    assert_eq!(sales.total.revenue, sales.total.booked_value);
    // Another organizer does not see these sales.
    let res = app.get_with(&sales_path, ("x-api-key", OTHER_ORGANIZER_KEY)).await;
    assert_eq!(res.status(), 403);

    let history = history_until(&app, event, "B-1-1", 2).await;
    assert_eq!(history_kinds(&history), ["held", "expired"]);
    assert_eq!(history.state, "available");
    app.stop().await;
}
