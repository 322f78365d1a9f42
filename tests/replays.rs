//! Request-time log replays are bounded per node, and anonymous ones (past maps, stream
//! resumes) cannot take the places organizers' seat-history reads need. A test binary of its
//! own: the places are the process's, and no other test may hold them meanwhile.

mod common;

use common::*;
use frontrow_query::replays::{MAX_PUBLIC_REPLAYS, Replayer, replay_permit};
use serde_json::json;

/// The `event:` name of the first server-sent event of a seat stream resumed after `last_id`.
async fn first_sse_event(app: &TestApp, event: frontrow_schema::EventId, last_id: &str) -> String {
    let mut res = app
        .get_with(&format!("/events/{event}/seats/stream"), ("last-event-id", last_id))
        .await;
    assert_eq!(res.status(), 200);
    let mut buf = String::new();
    while !buf.contains("\n\n") {
        let chunk = res.chunk().await.unwrap().expect("the stream stays open");
        buf.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let frame = buf.split("\n\n").find(|f| f.contains("event:")).unwrap_or_default();
    frame
        .lines()
        .find_map(|l| l.strip_prefix("event:"))
        .unwrap_or_else(|| panic!("no event in {buf:?}"))
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_replays_are_bounded_and_leave_organizers_their_place() {
    let app = TestApp::spawn().await;
    let (event, created_at) = app
        .create_event_written(&app.event_body(chrono::Duration::minutes(-1)))
        .await;
    let held: ReservationResponse = answer(
        app.reserve("alice", event, "k1", json!({"seats": ["A-1-1"]})).await,
        201,
    )
    .await;
    let position = held.position.expect("a hold answers its position");
    app.availability(event, Some(&position)).await;
    assert_eq!(
        first_sse_event(&app, event, &created_at).await,
        "seat",
        "a resume reads the missed delta"
    );

    // Anonymous callers hold every public place.
    let busy: Vec<_> = std::iter::from_fn(|| replay_permit(Replayer::Public)).collect();
    assert_eq!(busy.len(), MAX_PUBLIC_REPLAYS);
    let res = app.get(&format!("/events/{event}/availability?at={position}")).await;
    let retry_after = res.headers().get("retry-after").cloned();
    problem(res, 503, "overloaded").await;
    assert!(retry_after.is_some());
    // A resume then starts from a fresh snapshot rather than reading the journal.
    assert_eq!(first_sse_event(&app, event, &created_at).await, "snapshot");
    // And an organizer's seat history still has its place.
    let res = app
        .get_with(&format!("/events/{event}/seats/A-1-1/history"), AS_ORGANIZER)
        .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let history: SeatHistory = typed(res.json().await.unwrap());
    assert_eq!(history.state, "held", "{history:?}");

    drop(busy);
    let res = app.get(&format!("/events/{event}/availability?at={position}")).await;
    assert_eq!(res.status(), 200);
    app.stop().await;
}
