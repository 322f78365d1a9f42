//! The virtual waiting room and the SSE streams over HTTP against the real server (embedded
//! SQLite journal): queue join/leave, admission tokens refused in every way they can be wrong,
//! the fan's status stream, and the seat-delta stream resumed with `Last-Event-ID`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration as StdDuration;

use chrono::Duration;
use common::*;
use frontrow_schema::{CustomerId, EventId, decode};
use serde_json::{Value, json};

/// An event going on sale in 10 minutes behind a waiting room of these sizes.
async fn queue_event(app: &TestApp, max_size: u32, max_shoppers: u32) -> EventId {
    let event = app.create_event_from(&app.event_body(Duration::minutes(10))).await;
    let settings = json!({"max_size": max_size, "max_shoppers": max_shoppers, "admission_secs": 120});
    let opened: QueueOpenedResponse = answer(app.open_queue(event, settings).await, 200).await;
    app.availability(event, opened.position.as_deref()).await;
    event
}

async fn reserve_with(
    app: &TestApp,
    who: &str,
    event: EventId,
    token: Option<&str>,
    seats: &[&str],
) -> reqwest::Response {
    let mut req = app
        .client
        .post(app.url(&format!("/events/{event}/reservations")))
        .bearer_auth(app.token(who))
        .header("idempotency-key", uuid::Uuid::new_v4().to_string())
        .json(&json!({ "seats": seats }));
    if let Some(t) = token {
        req = req.header("frontrow-admission", t);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn fans_queue_are_admitted_in_turn_and_tokens_are_checked() {
    let app = TestApp::spawn().await;
    let event = queue_event(&app, 3, 1).await;
    let other_event = app.create_event().await;
    let join = |who: &'static str| {
        let app = &app;
        async move { app.post_as(who, &format!("/events/{event}/queue/join")).await }
    };
    let first: QueueTicketResponse = answer(join("alice").await, 201).await;
    assert_eq!((first.ticket.ticket, &*first.ticket.status), (1, "waiting"));
    let again: QueueTicketResponse = answer(join("alice").await, 200).await;
    assert_eq!(again.ticket.ticket, 1, "joining twice is the same ticket");
    assert_eq!(join("bob").await.status(), 201);
    assert_eq!(join("carol").await.status(), 201);
    let full = problem(join("dave").await, 429, "queue-full").await;
    assert_eq!(full.max_size, Some(3));
    let waiting = status_until(&app, event, "carol", |s| s.awaiting_lottery).await;
    assert_eq!(waiting.position, None, "no place before the lottery");

    // A stream shows a pre-queue fan waiting for the draw.
    let mut carol = SseReader::open(&app, &format!("/events/{event}/queue/me/stream"), Some("carol"), None).await;
    let s = carol.next(StdDuration::from_secs(5)).await.unwrap();
    assert_eq!(s.event.as_deref(), Some("status"));
    let v: QueueStatus = typed(serde_json::from_str(&s.data).unwrap());
    assert_eq!((&*v.status, v.awaiting_lottery), ("waiting", true));
    drop(carol);

    // The onsale: the writer draws the lottery and lets one fan in (one shopper at a time).
    app.clock.advance(Duration::minutes(10));
    let statuses = || async {
        let mut statuses = Vec::new();
        for who in ["alice", "bob", "carol"] {
            let status: QueueStatus = typed(app.get_json_as(who, &format!("/events/{event}/queue/me")).await);
            statuses.push((who, status));
        }
        statuses
    };
    let admitted = |statuses: &Vec<(&'static str, QueueStatus)>| {
        statuses.iter().rev().find(|(_, s)| s.status == "admitted").cloned()
    };
    let (fan, status) = wait_until(WAIT, "somebody is let in at the onsale", statuses, admitted).await;
    let token = status.admission_token.expect("an admitted fan has a token");
    let ticket = status.ticket;
    let until = status.admitted_until.expect("an admission lasts until a time");
    let other_fan = if fan == "alice" { "bob" } else { "alice" };

    // Every wrong token is refused and changes nothing.
    let before = ends(app.journal.as_ref()).await;
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    let customer = CustomerId::parse(fan).unwrap();
    let elsewhere = app.auth.admission_token(other_event, &customer, ticket, until);
    let expired = app
        .auth
        .admission_token(event, &customer, ticket, app.now() - Duration::seconds(1));
    for (who, admission, kind) in [
        (fan, None, "admission-required"),
        (fan, Some(&forged), "admission-invalid"),
        (fan, Some(&elsewhere), "admission-wrong-event"),
        (other_fan, Some(&token), "admission-invalid"),
        (fan, Some(&expired), "admission-expired"),
    ] {
        let res = reserve_with(&app, who, event, admission.map(String::as_str), &["A-1-1"]).await;
        problem(res, 403, kind).await;
    }
    assert_eq!(ends(app.journal.as_ref()).await, before, "refusals record nothing");

    // The real token holds one reservation at a time; the booking spends it.
    let held: ReservationResponse = answer(
        reserve_with(&app, fan, event, Some(&token), &["A-1-1", "A-1-2"]).await,
        201,
    )
    .await;
    let rid = held.reservation.reservation_id;
    let again = || reserve_with(&app, fan, event, Some(&token), &["A-1-3"]);
    problem(again().await, 409, "admission-in-use").await;
    let paid = app
        .webhook(&app.payment_event("payment_intent.succeeded", "evt_q1", event, rid, 20000))
        .await;
    assert_eq!(paid.status(), 200);
    problem(again().await, 409, "admission-spent").await;
    let spent = status_until(&app, event, fan, |s| s.status == "spent").await;
    assert_eq!(spent.admission_token, None);

    // A waiting fan watches their place until let in: the spent admission freed the one
    // shopping place, and the other waiting fan leaves.
    let waiting: Vec<&str> = ["alice", "bob", "carol"].into_iter().filter(|w| *w != fan).collect();
    let (watcher, quitter) = (waiting[0], waiting[1]);
    let mut stream = SseReader::open(&app, &format!("/events/{event}/queue/me/stream"), Some(watcher), None).await;
    app.post_as(quitter, &format!("/events/{event}/queue/leave")).await;
    let mut seen = BTreeSet::new();
    let mut statuses = Vec::new();
    while let Some(s) = stream.next(StdDuration::from_secs(5)).await {
        assert!(seen.insert(s.id.clone().unwrap()), "no status twice");
        let v: QueueStatus = typed(serde_json::from_str(&s.data).unwrap());
        let waiting = v.status == "waiting";
        statuses.push(v);
        if !waiting {
            break;
        }
    }
    let last = statuses.last().unwrap();
    assert_eq!(last.status, "admitted", "{statuses:?}");
    assert!(last.admission_token.as_deref().unwrap().starts_with("fra1."));
    let left = status_until(&app, event, quitter, |s| s.status == "left").await;
    assert_eq!(left.admission_token, None);
    // Resuming: from the current version nothing is sent; from an older one, the current status
    // (raw: the stream's frame must be the very JSON `queue/me` answers).
    let now = app.get_json_as(watcher, &format!("/events/{event}/queue/me")).await;
    let current = typed::<QueueStatus>(now.clone()).version;
    let stream_path = format!("/events/{event}/queue/me/stream");
    let mut resumed = SseReader::open(&app, &stream_path, Some(watcher), Some(&current)).await;
    assert!(
        resumed.next(StdDuration::from_millis(300)).await.is_none(),
        "nothing changed since"
    );
    let oldest = seen.iter().min_by_key(|id| offset(id)).unwrap().clone();
    let mut resumed = SseReader::open(&app, &stream_path, Some(watcher), Some(&oldest)).await;
    let s = resumed.next(StdDuration::from_secs(5)).await.unwrap();
    assert_eq!(s.id.as_deref(), Some(current.as_str()));
    let v: Value = serde_json::from_str(&s.data).unwrap();
    assert_eq!(v, now);
    app.stop().await;
}

#[tokio::test]
async fn joining_a_queue_needs_one_and_the_waitlist_needs_a_sold_out_event() {
    let app = TestApp::spawn().await;
    let plain = app.create_event().await;
    problem(
        app.post_as("alice", &format!("/events/{plain}/queue/join")).await,
        404,
        "no-queue",
    )
    .await;
    let event = queue_event(&app, 10, 5).await;
    problem(
        app.post_as("alice", &format!("/events/{event}/waitlist")).await,
        409,
        "not-sold-out",
    )
    .await;
    problem(
        app.post_as("alice", &format!("/events/{event}/queue/leave")).await,
        404,
        "not-in-queue",
    )
    .await;
    let res = app.open_queue(event, json!({"max_shoppers": 0})).await;
    problem(res, 422, "invalid-queue").await;
    app.stop().await;
}

/// A fan who reads their place with the join's `position` as `?after=` is never told they are
/// not in the queue: the read waits until this node has applied the join. Here the reads are
/// sent before the join even exists (they name the position it will be written at), so a
/// read that did not wait would answer `404 not-in-queue`.
#[tokio::test]
async fn reading_ones_place_after_the_join_waits_for_it_instead_of_not_in_queue() {
    let app = TestApp::spawn().await;
    let event = app.create_event_from(&app.event_body(Duration::minutes(10))).await;
    let settings = json!({"max_size": 10, "max_shoppers": 5, "admission_secs": 120});
    let opened: QueueOpenedResponse = answer(app.open_queue(event, settings).await, 200).await;
    let opened = opened.position.unwrap();
    app.availability(event, Some(&opened)).await;
    let opened: frontrow_journal::Position = opened.parse().unwrap();
    // Nothing else writes to the event's partition: the join is its next record.
    let next = frontrow_journal::Position {
        partition: opened.partition,
        offset: opened.offset + 1,
    };
    let me = format!("/events/{event}/queue/me");
    problem(app.get_as("erin", &me).await, 404, "not-in-queue").await;

    // Both reads are sent now and answer once the join is applied.
    let send_now = |path: String| {
        let request = app.client.get(app.url(&path)).bearer_auth(app.token("erin"));
        tokio::spawn(async move { request.send().await.unwrap() })
    };
    let read = send_now(format!("{me}?after={next}&wait_ms=10000"));
    let stream = send_now(format!("{me}/stream?after={next}&wait_ms=10000"));
    tokio::time::sleep(StdDuration::from_millis(300)).await;
    assert!(
        !read.is_finished() && !stream.is_finished(),
        "both reads wait for the join"
    );

    let joined: QueueTicketResponse =
        answer(app.post_as("erin", &format!("/events/{event}/queue/join")).await, 201).await;
    assert_eq!(joined.position.as_deref(), Some(next.to_string().as_str()));
    let status: QueueStatus = answer(read.await.unwrap(), 200).await;
    assert_eq!((status.ticket, &*status.status), (joined.ticket.ticket, "waiting"));
    let mut stream = SseReader::from_response(stream.await.unwrap());
    let first = stream
        .next(StdDuration::from_secs(5))
        .await
        .expect("a status once joined");
    let streamed: QueueStatus = typed(serde_json::from_str(&first.data).unwrap());
    assert_eq!(streamed.ticket, joined.ticket.ticket);

    // A position this node has not applied within `wait_ms` is a 503, never a 404.
    let far = frontrow_journal::Position {
        partition: opened.partition,
        offset: opened.offset + 1_000,
    };
    let late = app.get_as("erin", &format!("{me}?after={far}&wait_ms=0")).await;
    assert_eq!(late.headers()["retry-after"], "1");
    problem(late, 503, "position-not-visible").await;
    app.stop().await;
}

/// Positions of the seat-moving records of `event` in the journal, in order.
async fn seat_record_ids(app: &TestApp, event: EventId) -> Vec<String> {
    let mut ids = Vec::new();
    for p in 0..app.journal.partitions() {
        for r in frontrow_journal::conformance::read_all(app.journal.as_ref(), p).await {
            let env = decode(&r.value).unwrap();
            if env.event_id == event
                && matches!(
                    env.event,
                    frontrow_schema::Event::SeatsReserved(_)
                        | frontrow_schema::Event::SeatsBooked(_)
                        | frontrow_schema::Event::SeatsReleased(_)
                )
            {
                ids.push(format!("{p}:{}", r.offset));
            }
        }
    }
    ids
}

fn apply_frame(map: &mut BTreeMap<String, char>, s: &Sse) {
    match s.event.as_deref() {
        Some("snapshot") => *map = seat_letters(&typed(serde_json::from_str(&s.data).unwrap())),
        Some("seat") => {
            let d: SeatData = typed(serde_json::from_str(&s.data).unwrap());
            let letter = match &*d.status {
                "held" => 'H',
                "booked" => 'B',
                "available" => 'A',
                other => panic!("status {other}"),
            };
            for seat in d.seats.into_owned() {
                map.insert(seat.to_string(), letter);
            }
        }
        other => panic!("unexpected event {other:?}"),
    }
}

#[tokio::test]
async fn the_seat_stream_resumes_from_last_event_id_without_gaps_or_repeats() {
    let (app, event) = TestApp::spawn_with_event().await;
    app.map_after(event, &app.reserve_seats("alice", event, &["B-1-1"]).await)
        .await;
    let path = format!("/events/{event}/seats/stream");
    let mut stream = SseReader::open(&app, &path, None, None).await;
    let snapshot = stream.next(StdDuration::from_secs(5)).await.unwrap();
    assert_eq!(snapshot.event.as_deref(), Some("snapshot"));
    let mut map = BTreeMap::new();
    apply_frame(&mut map, &snapshot);
    assert_eq!(map["B-1-1"], 'H');
    let mut received: Vec<String> = Vec::new();

    // Changes while connected: holds, a release, a booking.
    let mut rids = Vec::new();
    for (who, seats) in [
        ("bob", ["A-1-1", "A-1-2"]),
        ("carol", ["A-2-1", "A-2-2"]),
        ("dan", ["A-1-5", "A-1-6"]),
    ] {
        let held = app.reserve_seats_ok(who, event, &seats).await;
        rids.push((who, held.reservation.reservation_id));
    }
    app.post_as("carol", &format!("/events/{event}/reservations/{}/release", rids[1].1))
        .await;
    app.webhook(&app.payment_event("payment_intent.succeeded", "evt_s1", event, rids[0].1, 20000))
        .await;
    for _ in 0..5 {
        let s = stream.next(StdDuration::from_secs(5)).await.expect("a delta");
        received.push(s.id.clone().unwrap());
        apply_frame(&mut map, &s);
    }
    // Disconnect; more changes happen while away.
    drop(stream);
    let last_id = received.last().unwrap().clone();
    app.webhook(&app.payment_event("payment_intent.succeeded", "evt_s2", event, rids[2].1, 20000))
        .await;
    for i in 5..=8 {
        let seat = format!("A-2-{i}");
        app.reserve_seats("erin", event, &[seat.as_str()]).await;
    }
    // Resume: first the missed records from the journal, then live ones.
    let mut stream = SseReader::open(&app, &path, None, Some(&last_id)).await;
    let served = seat_letters(
        &app.map_after(event, &app.reserve_seats("fay", event, &["B-1-6"]).await)
            .await,
    );
    while map != served {
        let s = stream
            .next(StdDuration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("stream ended before the map caught up; got {received:?}"));
        assert_ne!(s.event.as_deref(), Some("snapshot"), "a resume is not a new snapshot");
        received.push(s.id.clone().unwrap());
        apply_frame(&mut map, &s);
    }
    assert_eq!(map, served, "the map rebuilt from deltas is the served map");
    // Every seat-moving record after the snapshot, exactly once, in log order.
    let expected: Vec<String> = seat_record_ids(&app, event)
        .await
        .into_iter()
        .filter(|id| offset(id) > offset(snapshot.id.as_deref().unwrap()))
        .collect();
    assert_eq!(received, expected);
    // A Last-Event-ID of another partition is refused.
    problem(
        app.get_with(&path, ("last-event-id", "999:1")).await,
        400,
        "bad-last-event-id",
    )
    .await;
    app.stop().await;
}

fn offset(id: &str) -> u64 {
    id.split_once(':').unwrap().1.parse().unwrap()
}
