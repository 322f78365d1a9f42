//! The read API through the real router: compact maps, ETags and 304s, waiting for a position,
//! and problems for bad requests.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use bytes::Bytes;
use frontrow_query::{Catalog, QueryApi, router};
use frontrow_schema::{EventId, ReservationId};
use serde_json::Value;
use tower::ServiceExt;
use utoipa::OpenApi;

use crate::support::*;

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    fn assert_problem(&self, status: StatusCode, kind: &str) -> Value {
        assert_eq!(self.status, status, "{:?}", String::from_utf8_lossy(&self.body));
        assert_eq!(self.header("content-type"), Some("application/problem+json"));
        let problem = self.json();
        assert_eq!(problem["status"], status.as_u16());
        assert_eq!(problem["type"], format!("urn:frontrow:problem:{kind}"));
        problem
    }
}

async fn get(catalog: &Arc<Catalog>, uri: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = Request::get(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router(catalog.clone())
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
    Answer { status, headers, body }
}

#[tokio::test]
async fn a_50_000_seat_map_is_compact_and_cacheable() {
    let (log, catalog, event) = one_event(stadium(50, 20, 50)).await;
    let pos = log
        .append(event, reserved(ReservationId::new(), &["S1-R1-2", "S50-R20-50"]))
        .await;
    assert!(catalog.wait_for(pos, WAIT).await);

    let answer = get(&catalog, &format!("/events/{event}/availability"), &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(
        answer.header("cache-control"),
        Some("public, max-age=1, stale-while-revalidate=5")
    );
    assert_eq!(
        answer.header("etag"),
        Some(format!("\"{}-{}\"", pos.partition, pos.offset).as_str())
    );
    assert!(answer.body.len() < 120_000, "the map is {} bytes", answer.body.len());

    let map = answer.json();
    assert_eq!(map["event_id"], event.to_string());
    assert_eq!(map["position"], pos.to_string());
    assert_eq!(
        map["seats"],
        serde_json::json!({"total": 50_000, "available": 49_998, "held": 2, "booked": 0, "withheld": 0})
    );
    assert_eq!(
        map["legend"],
        serde_json::json!({"A": "available", "H": "held", "B": "booked", "W": "withheld"})
    );
    let sections = map["sections"].as_array().unwrap();
    assert_eq!(sections.len(), 50);
    let first = &sections[0];
    assert_eq!(
        (first["code"].as_str(), first["name"].as_str()),
        (Some("S1"), Some("Section 1"))
    );
    assert_eq!(
        (first["available"].as_u64(), first["held"].as_u64()),
        (Some(999), Some(1))
    );
    let row = &first["rows"][0];
    assert_eq!(
        (row["name"].as_str(), row["tier"].as_str(), row["price"].as_i64()),
        (Some("R1"), Some("STD"), Some(4500))
    );
    let letters = row["seats"].as_str().unwrap();
    assert_eq!(letters.len(), 50);
    assert_eq!(&letters[..3], "AHA");
    assert!(sections[49]["rows"][19]["seats"].as_str().unwrap().ends_with("AH"));
}

#[tokio::test]
async fn the_etag_changes_exactly_when_the_event_changes_and_a_match_is_not_modified() {
    let (log, catalog, event) = one_event(small_map()).await;
    let uri = format!("/events/{event}/availability");
    let first = get(&catalog, &uri, &[]).await;
    let etag = first.header("etag").unwrap().to_owned();

    let not_modified = get(&catalog, &uri, &[("if-none-match", &etag)]).await;
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    assert_eq!(
        not_modified.header("cache-control"),
        Some("public, max-age=1, stale-while-revalidate=5")
    );
    assert!(not_modified.body.is_empty());
    for variant in [format!("W/{etag}"), format!("\"0-0\", {etag}"), "*".to_owned()] {
        assert_eq!(
            get(&catalog, &uri, &[("if-none-match", &variant)]).await.status,
            StatusCode::NOT_MODIFIED,
            "{variant}"
        );
    }

    // Facts that change nothing about the seats, and other events' changes, keep the version.
    let r = ReservationId::new();
    let other = EventId::new();
    let a = log.append(event, payment_failed(r)).await;
    let b = log.append(other, scheduled(other, "Other", at(2), small_map())).await;
    assert!(catalog.wait_for(a, WAIT).await && catalog.wait_for(b, WAIT).await);
    let same = get(&catalog, &uri, &[]).await;
    assert_eq!(same.header("etag"), Some(etag.as_str()));
    assert_eq!(same.body, first.body);

    let held = log.append(event, reserved(r, &["A-1-1"])).await;
    let changed = get(&catalog, &format!("{uri}?after={held}"), &[("if-none-match", &etag)]).await;
    assert_eq!(changed.status, StatusCode::OK);
    let new_etag = changed.header("etag").unwrap();
    assert_ne!(new_etag, etag);
    assert_eq!(new_etag, format!("\"{}-{}\"", held.partition, held.offset));
    assert_eq!(changed.json()["sections"][0]["rows"][0]["seats"], "HAAA");
}

#[tokio::test]
async fn after_waits_for_a_position_written_while_the_request_waits() {
    let (log, catalog, event) = one_event(small_map()).await;
    let next = log.next_position(&event).await;
    let request = tokio::spawn({
        let catalog = catalog.clone();
        async move {
            get(
                &catalog,
                &format!("/events/{event}/availability?after={next}&wait_ms=5000"),
                &[],
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!request.is_finished());
    let written = log
        .append(event, reserved(ReservationId::new(), &["B-1-1", "B-1-2"]))
        .await;
    assert_eq!(written, next);
    let answer = request.await.unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["sections"][1]["held"], 2);
    assert_eq!(answer.json()["position"], written.to_string());
}

#[tokio::test]
async fn after_a_position_that_never_comes_is_503_with_retry_after() {
    let (log, catalog, event) = one_event(small_map()).await;
    let next = log.next_position(&event).await;
    let started = std::time::Instant::now();
    let answer = get(
        &catalog,
        &format!("/events/{event}/availability?after={next}&wait_ms=100"),
        &[],
    )
    .await;
    assert!(started.elapsed() >= Duration::from_millis(100));
    answer.assert_problem(StatusCode::SERVICE_UNAVAILABLE, "position-not-visible");
    assert_eq!(answer.header("retry-after"), Some("1"));
    // wait_ms=0 answers at once, visible or not.
    let answer = get(
        &catalog,
        &format!("/events/{event}/availability?after={next}&wait_ms=0"),
        &[],
    )
    .await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn bad_requests_are_problems() {
    let (_log, catalog, event) = one_event(small_map()).await;
    let unknown = get(&catalog, &format!("/events/{}/availability", EventId::new()), &[]).await;
    unknown.assert_problem(StatusCode::NOT_FOUND, "not-found");
    get(&catalog, "/events/not-a-uuid/availability", &[])
        .await
        .assert_problem(StatusCode::NOT_FOUND, "not-found");
    get(&catalog, &format!("/events/{}", EventId::new()), &[])
        .await
        .assert_problem(StatusCode::NOT_FOUND, "not-found");

    let no_partition = format!("{PARTITIONS}:0");
    let positions = ["nope", "1", "1:x", "-1:0", "1:2:3", &no_partition];
    let waits = ["10001", "x", "-5"];
    let bad_queries = (positions.iter().map(|after| (format!("after={after}"), "bad-position"))).chain(
        waits
            .iter()
            .map(|wait| (format!("after=0:0&wait_ms={wait}"), "bad-query")),
    );
    for (query, kind) in bad_queries {
        get(&catalog, &format!("/events/{event}/availability?{query}"), &[])
            .await
            .assert_problem(StatusCode::BAD_REQUEST, kind);
    }
}

#[tokio::test]
async fn a_bad_page_or_filter_of_the_list_is_a_problem_naming_it() {
    let (_log, catalog, _event) = one_event(small_map()).await;
    let long_city = "a".repeat(101);
    let bad = [
        ("limit=0", StatusCode::BAD_REQUEST, "bad-limit", Some("limit")),
        ("limit=101", StatusCode::BAD_REQUEST, "bad-limit", Some("limit")),
        ("limit=ten", StatusCode::BAD_REQUEST, "bad-limit", Some("limit")),
        (
            "cursor=yesterday",
            StatusCode::BAD_REQUEST,
            "bad-cursor",
            Some("cursor"),
        ),
        (
            "cursor=1796126400000000.nope",
            StatusCode::BAD_REQUEST,
            "bad-cursor",
            Some("cursor"),
        ),
        ("from=tomorrow", StatusCode::BAD_REQUEST, "bad-date", Some("from")),
        ("to=2026-02-30", StatusCode::BAD_REQUEST, "bad-date", Some("to")),
        (
            "from=2026-06-02&to=2026-06-01",
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad-date-range",
            None,
        ),
        (
            &*format!("city={long_city}"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "city-too-long",
            Some("city"),
        ),
    ];
    for (query, status, kind, parameter) in bad {
        let problem = get(&catalog, &format!("/events?{query}"), &[])
            .await
            .assert_problem(status, kind);
        assert_eq!(problem["parameter"].as_str(), parameter, "{query}");
    }
    // Blank filters are no filters.
    let all = get(&catalog, "/events?city=&from=&to=%20", &[]).await;
    assert_eq!((all.status, all.json()["total"].as_u64()), (StatusCode::OK, Some(1)));
}

#[tokio::test]
async fn events_are_listed_and_described() {
    let (log, catalog, event) = one_event(small_map()).await;
    let earlier = EventId::new();
    let pos = log
        .append(
            earlier,
            scheduled(earlier, "Matinee", at(1) - chrono::Duration::hours(5), small_map()),
        )
        .await;
    let list = get(&catalog, &format!("/events?after={pos}"), &[]).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(
        list.header("cache-control"),
        Some("public, max-age=1, stale-while-revalidate=5")
    );
    let list = list.json();
    assert_eq!(list["total"], 2);
    assert!(list.get("next").is_none(), "one page: {list}");
    let events = list["events"].as_array().unwrap().clone();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["event_id"], earlier.to_string());
    assert_eq!(events[1]["title"], "Night");
    assert_eq!(events[1]["seats"]["total"], 9);
    assert_eq!(events[1]["currency"], "EUR");
    for field in ["artist", "venue", "city", "starts_at", "onsale_at"] {
        assert!(events[1][field].is_string(), "{field}");
    }

    // A page at a time: the next page at `cursor`, the filters in the query.
    let first = get(&catalog, "/events?limit=1", &[]).await.json();
    assert_eq!(
        (first["total"].as_u64(), first["events"][0]["event_id"].as_str()),
        (Some(2), Some(&*earlier.to_string()))
    );
    let next = first["next"].as_str().unwrap();
    let second = get(&catalog, &format!("/events?limit=1&cursor={next}"), &[])
        .await
        .json();
    assert_eq!(second["events"][0]["event_id"], event.to_string());
    assert!(second.get("next").is_none(), "{second}");
    let day = at(1).format("%Y-%m-%d");
    let evening = get(
        &catalog,
        &format!("/events?city=LYON&from={day}T18:00:00Z&to={day}"),
        &[],
    )
    .await
    .json();
    assert_eq!(
        (evening["total"].as_u64(), evening["events"][0]["title"].as_str()),
        (Some(1), Some("Night"))
    );
    let elsewhere = get(&catalog, "/events?city=Paris", &[]).await.json();
    assert_eq!(
        (
            elsewhere["total"].as_u64(),
            elsewhere["events"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );

    let details = get(&catalog, &format!("/events/{event}"), &[]).await;
    assert_eq!(details.status, StatusCode::OK);
    let etag = details.header("etag").unwrap().to_owned();
    let d = details.json();
    assert_eq!(d["hold_minutes"], 10);
    assert_eq!(d["max_seats_per_order"], 6);
    // No limit of its own: one customer may have one order's worth.
    assert_eq!(d["max_seats_per_customer"], 6);
    assert_eq!(
        d["seat_map"]["tiers"][0],
        serde_json::json!({"code": "GOLD", "name": "Gold", "price": 9900})
    );
    assert_eq!(
        d["seat_map"]["sections"][0]["rows"][1],
        serde_json::json!({"name": "2", "seats": 3, "tier": "STD"})
    );
    let again = get(&catalog, &format!("/events/{event}"), &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);

    // The page shows the waiting room from this flag, before anyone signs in.
    assert_eq!(d["waiting_room"], false);
    let opened = frontrow_schema::queue::QueueOpened {
        max_size: None,
        max_shoppers: 10,
        admission_secs: 300,
    };
    let pos = log
        .append(
            event,
            frontrow_schema::Event::Queue(frontrow_schema::queue::QueueEvent::Opened(opened)),
        )
        .await;
    let queued = get(&catalog, &format!("/events/{event}?after={pos}"), &[]).await;
    assert_eq!(queued.json()["waiting_room"], true);
}

#[test]
fn the_openapi_document_lists_the_routes() {
    let doc = serde_json::to_value(QueryApi::openapi()).unwrap();
    for path in ["/events", "/events/{event_id}", "/events/{event_id}/availability"] {
        assert!(doc["paths"][path]["get"].is_object(), "{path} missing");
    }
    assert!(doc["components"]["schemas"]["AvailabilityMap"].is_object());
}
