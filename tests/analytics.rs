//! `frontrow analytics` against a live server: the real binary reads the running server's
//! journal (read-only, beside the writers) and its seat histories and past maps agree with what
//! the server answers over HTTP: the seat-history route (which reads the log too) and
//! `availability?at=`.

mod common;

use chrono::Duration;
use common::{
    AS_ORGANIZER, AvailabilityMap, ORGANIZER_KEY, OTHER_ORGANIZER_KEY, Report, SeatHistory, TestApp, analytics_cli,
    history_kinds, typed,
};
use serde_json::Value;

fn json_out(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test]
async fn the_cli_reads_a_live_log_and_agrees_with_the_server() {
    let (app, event, rid) = TestApp::spawn_holding("alice", &["A-1-1", "A-1-2"]).await;
    assert_eq!(app.pay(event, "evt_cli", &rid, 20000).await.outcome, "booked");
    // Raw: the CLI's past map and `?at=` must equal it to the byte, fields and all.
    let after_booking = app.availability_json(event, None).await;
    let b = app.reserve_seats_ok("bob", event, &["A-1-3", "B-1-1"]).await;
    let brid = &b.reservation.reservation_id;
    let res = app
        .post_as("bob", &format!("/events/{event}/reservations/{brid}/release"))
        .await;
    assert_eq!(res.status(), 200);
    let c = app.reserve_seats_ok("carol", event, &["B-1-1"]).await;
    app.clock.advance(Duration::minutes(11));
    let crid = &c.reservation.reservation_id;
    app.reservation_until("carol", event, crid, "expired").await;

    // The seat history: the route reads the log, so it answers at once and equals the CLI's.
    let history = |seat: String, key: &'static str| {
        let request = app
            .client
            .get(app.url(&format!("/events/{event}/seats/{seat}/history")))
            .header("x-api-key", key);
        async move {
            let res = request.send().await.unwrap();
            let status = res.status().as_u16();
            let content_type = res.headers()["content-type"].to_str().unwrap().to_owned();
            (status, content_type, res.json::<Value>().await.unwrap())
        }
    };
    for seat in ["A-1-1", "A-1-3", "B-1-1", "B-1-6"] {
        let from_log = json_out(&analytics_cli(
            &app,
            &["seat", "--event", &event.to_string(), "--seat", seat],
        ));
        let (status, _, from_route) = history(seat.to_owned(), ORGANIZER_KEY).await;
        assert_eq!(status, 200, "{from_route}");
        assert_eq!(from_route, from_log, "seat {seat}");
    }
    // Another organizer's event, a seat not in the map, an event not in the log: problems.
    let (status, content_type, problem) = history("B-1-1".into(), OTHER_ORGANIZER_KEY).await;
    assert_eq!(
        (status, content_type.as_str()),
        (403, "application/problem+json"),
        "{problem}"
    );
    let (status, _, problem) = history("Z-9-9".into(), ORGANIZER_KEY).await;
    assert_eq!(status, 404, "{problem}");
    assert_eq!(problem["type"], "urn:frontrow:problem:not-found");
    let unknown = uuid::Uuid::now_v7();
    let res = app
        .get_with(&format!("/events/{unknown}/seats/A-1-1/history"), AS_ORGANIZER)
        .await;
    assert_eq!(res.status(), 404);
    let b11: SeatHistory = typed(json_out(&analytics_cli(
        &app,
        &["seat", "--event", &event.to_string(), "--seat", "B-1-1"],
    )));
    assert_eq!(history_kinds(&b11), ["held", "released", "held", "expired"]);

    // A past map: the CLI and the server's `?at=` both give the map read live after the booking.
    let position = typed::<AvailabilityMap>(after_booking.clone()).position;
    let map = json_out(&analytics_cli(
        &app,
        &["map", "--event", &event.to_string(), "--at", &position],
    ));
    assert_eq!(map, after_booking);
    let res = app.get(&format!("/events/{event}/availability?at={position}")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap(), after_booking);
    let doc = app.get_json("/openapi.json").await;
    let params = doc["paths"]["/events/{event_id}/availability"]["get"]["parameters"]
        .as_array()
        .unwrap();
    assert!(params.iter().any(|p| p["name"] == "at"), "`at` is documented");
    let history = &doc["paths"]["/events/{event_id}/seats/{seat}/history"]["get"];
    assert_eq!(
        history["tags"][0], "history",
        "the seat history is documented once, as the log's"
    );

    // The report, written while the server runs.
    let out = tempfile::tempdir().unwrap();
    let printed = analytics_cli(
        &app,
        &["--event", &event.to_string(), "--out", out.path().to_str().unwrap()],
    );
    assert_eq!(String::from_utf8_lossy(&printed.stdout).lines().count(), 3);
    let report: Report =
        typed(serde_json::from_slice(&std::fs::read(out.path().join("report.json")).unwrap()).unwrap());
    let e = &report.events[0];
    assert_eq!(e.event_id, event);
    let t = &e.totals;
    assert_eq!((t.reservations, t.bookings, t.released, t.expired), (3, 1, 1, 1));
    assert_eq!(e.revenue.net, 20000);
    assert!(e.queue.is_none());
    assert!(out.path().join("per_second.csv").exists() && out.path().join("report.html").exists());
    app.stop().await;
}
