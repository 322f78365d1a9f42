//! Seat streams through the real router: a subscriber too far behind is dropped rather than
//! buffered for, and resuming from its last id gives back every change it missed.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use frontrow_query::catalog::DELTA_BACKLOG;
use frontrow_query::{Catalog, router};
use frontrow_schema::{EventId, ReservationId};
use futures::StreamExt;
use tower::ServiceExt;

use crate::support::*;

fn seat_frames(chunk: &[u8]) -> usize {
    String::from_utf8_lossy(chunk).matches("event: seat\n").count()
}

/// `GET /events/{event}/seats/stream{query}` on a fresh router, with `Last-Event-ID: last_id`
/// when given.
async fn open_stream(catalog: &Arc<Catalog>, event: EventId, query: &str, last_id: Option<String>) -> Response {
    let mut request = Request::get(format!("/events/{event}/seats/stream{query}"));
    if let Some(id) = last_id {
        request = request.header("last-event-id", id);
    }
    router(catalog.clone())
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_seat_stream_too_far_behind_is_dropped_and_resumes_from_the_journal() {
    let (log, catalog, event) = one_event(stadium(1, 1, 500)).await;
    let response = open_stream(&catalog, event, "", None).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body().into_data_stream();
    let first = tokio::time::timeout(WAIT, body.next()).await.unwrap().unwrap().unwrap();
    let first = String::from_utf8_lossy(&first).into_owned();
    assert!(first.starts_with("event: snapshot\n"), "{first}");
    let snapshot_id = first.lines().find_map(|l| l.strip_prefix("id: ")).unwrap().to_owned();

    // The client reads nothing while more batches than the backlog are applied.
    let changes = DELTA_BACKLOG + 10;
    for i in 1..=changes {
        let seat = format!("S1-R1-{i}");
        let p = log.append(event, reserved(ReservationId::new(), &[&seat])).await;
        assert!(catalog.wait_for(p, WAIT).await);
    }
    let mut delivered = 0;
    loop {
        match tokio::time::timeout(WAIT, body.next()).await {
            Ok(Some(Ok(chunk))) => delivered += seat_frames(&chunk),
            Ok(Some(Err(_)) | None) => break,
            Err(_) => panic!("a lagging stream must end, not wait"),
        }
    }
    assert!(
        delivered < changes,
        "the lagging client was dropped, not served everything"
    );

    // Resuming after the snapshot: every change, once, read back from the journal.
    let response = open_stream(&catalog, event, "", Some(snapshot_id)).await;
    let mut body = response.into_body().into_data_stream();
    let mut replayed = 0;
    while replayed < changes {
        let chunk = tokio::time::timeout(WAIT, body.next()).await.unwrap().unwrap().unwrap();
        assert!(!String::from_utf8_lossy(&chunk).contains("snapshot"));
        replayed += seat_frames(&chunk);
    }
    assert_eq!(replayed, changes);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), body.next())
            .await
            .is_err(),
        "nothing more than what happened"
    );
}

/// A browser's `EventSource` cannot send `Last-Event-ID` on its first connection, so the page
/// names the map's position in `?last_event_id=`; on a reconnect the header it sends wins.
#[tokio::test]
async fn a_seat_stream_resumes_from_the_query_string_and_the_header_wins() {
    let log = TestLog::new();
    let event = EventId::new();
    let map = log
        .append(event, scheduled(event, "Night", at(1), stadium(1, 1, 10)))
        .await;
    let first = log.append(event, reserved(ReservationId::new(), &["S1-R1-1"])).await;
    let second = log.append(event, reserved(ReservationId::new(), &["S1-R1-2"])).await;
    let catalog = log.catalog().await;
    assert!(catalog.wait_for(second, WAIT).await);
    let first_frame = |response: Response| async move {
        let mut body = response.into_body().into_data_stream();
        let chunk = tokio::time::timeout(WAIT, body.next()).await.unwrap().unwrap().unwrap();
        String::from_utf8_lossy(&chunk).into_owned()
    };

    let resumed = first_frame(open_stream(&catalog, event, &format!("?last_event_id={map}"), None).await).await;
    assert!(
        resumed.contains("event: seat\n") && !resumed.contains("snapshot"),
        "resumes with the first change, no snapshot: {resumed}"
    );
    assert!(
        resumed.contains("S1-R1-1") && resumed.contains(&format!("id: {first}")),
        "{resumed}"
    );

    let header_wins = first_frame(
        open_stream(
            &catalog,
            event,
            &format!("?last_event_id={map}"),
            Some(first.to_string()),
        )
        .await,
    )
    .await;
    assert!(
        header_wins.contains("S1-R1-2") && !header_wins.contains("S1-R1-1"),
        "{header_wins}"
    );

    let fresh = first_frame(open_stream(&catalog, event, "", None).await).await;
    assert!(fresh.contains("event: snapshot\n"), "{fresh}");

    let bad = open_stream(&catalog, event, "?last_event_id=yesterday", None).await;
    assert_eq!(bad.status(), 400);
    let body = axum::body::to_bytes(bad.into_body(), usize::MAX).await.unwrap();
    assert!(String::from_utf8_lossy(&body).contains("bad-last-event-id"));
}
