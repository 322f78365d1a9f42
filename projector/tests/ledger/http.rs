//! The ledger's read API over a projected SQLite ledger.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::{Extension, Router};
use frontrow_http::auth::Auth;
use frontrow_projector::{Ledger, LedgerApi, LedgerReads, Projector, SqliteLedger};
use frontrow_schema::{CustomerId, OrganizerId};
use secrecy::SecretString;
use serde_json::Value;
use tower::ServiceExt;
use utoipa::OpenApi;

use crate::conformance::generated;
use crate::generate::Generator;

async fn get(app: &Router, path: &str, header: Option<(&str, String)>) -> (StatusCode, String, Value) {
    let mut req = Request::get(path);
    if let Some((k, v)) = header {
        req = req.header(k, v);
    }
    let res = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let status = res.status();
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24).await.unwrap();
    (status, ct, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The ledger API over `ledger` (of a two-partition journal) with organizers `acme` and `other`.
fn app(ledger: &Arc<dyn Ledger>) -> (Router, Arc<Auth>) {
    let auth = Arc::new(Auth::new(
        SecretString::from("secret"),
        [
            (OrganizerId::parse("acme").unwrap(), SecretString::from("acme-key")),
            (OrganizerId::parse("other").unwrap(), SecretString::from("other-key")),
        ],
    ));
    let app = frontrow_projector::router(ledger.clone(), 2).layer(Extension(auth.clone()));
    (app, auth)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookings_and_sales_over_http() {
    let (_journal_dir, g) = generated(2, 2, 600, 9).await;
    let dir = tempfile::tempdir().unwrap();
    let ledger: Arc<dyn Ledger> = Arc::new(SqliteLedger::open(dir.path()).await.unwrap());
    Projector::new(g.journal.clone(), ledger.clone(), 100)
        .catch_up()
        .await
        .unwrap();
    let (app, auth) = app(&ledger);
    let now = chrono::Utc::now();
    let fan = CustomerId::parse("fan3").unwrap();
    let token = auth.mint(&fan, now, now + chrono::Duration::minutes(5));

    let (status, _, body) = get(&app, "/me/bookings", Some(("authorization", format!("Bearer {token}")))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["customer"], "fan3");
    let want = g
        .states()
        .flat_map(|s| s.reservations.values())
        .filter(|r| r.customer == fan && r.payment.is_some())
        .count();
    assert_eq!(body["bookings"].as_array().unwrap().len(), want);
    pages_of_bookings(&app, &auth, &g).await;

    let (status, ct, body) = get(&app, "/me/bookings", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(ct, "application/problem+json");
    assert_eq!(body["type"], "urn:frontrow:problem:unauthorized");

    let acme = g.states().find(|s| s.info.organizer.as_str() == "acme").unwrap();
    let event = acme.event_id();
    let key = |k: &str| Some(("x-api-key", k.to_owned()));
    let (status, _, sales) = get(&app, &format!("/events/{event}/sales"), key("acme-key")).await;
    assert_eq!(status, StatusCode::OK, "{sales}");
    assert_eq!(sales["total"]["seats"].as_i64().unwrap() as usize, acme.seats.len());
    assert_eq!(
        sales["total"]["booked_now"].as_i64().unwrap() as u32,
        acme.counts.booked
    );
    assert!(sales["lines"].as_array().unwrap().len() >= 3);
    assert!(sales.get("organizer").is_none());
    let (status, _, _) = get(&app, &format!("/events/{event}/sales"), key("other-key")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = get(&app, &format!("/events/{event}/sales"), key("nope")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let unknown = uuid::Uuid::new_v4();
    let (status, _, body) = get(&app, &format!("/events/{unknown}/sales"), key("acme-key")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _, _) = get(&app, "/events/not-a-uuid/sales", key("acme-key")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A seat's history is the query role's (from the log): the ledger's router does not serve it,
    // so `frontrow serve` has the path once. The ledger still answers it for the agreement checks.
    let seat = acme
        .reservations
        .values()
        .flat_map(|r| r.seats.iter())
        .next()
        .map(|&i| acme.layout.seat_at(i))
        .unwrap();
    let (status, _, _) = get(&app, &format!("/events/{event}/seats/{seat}/history"), key("acme-key")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let history = ledger.seat_history(event, &seat).await.unwrap().unwrap();
    assert_eq!(history.history[0].kind, "held");
}

/// `/me/bookings` a page at a time, for the customer with the most bookings: pages of one,
/// each at the `next` of the page before, are the bookings of one page of 100 in its order, the
/// last page has no `next`, every page counts all of them; a bad `limit` or `cursor` is a `400`
/// that names it.
async fn pages_of_bookings(app: &Router, auth: &Auth, g: &Generator) {
    let (fan, _) = g.busiest_customer();
    let now = chrono::Utc::now();
    let token = auth.mint(&fan, now, now + chrono::Duration::minutes(5));
    let bearer = || Some(("authorization", format!("Bearer {token}")));
    let ids = |v: &Value| -> Vec<String> {
        let bookings = v["bookings"].as_array().unwrap();
        bookings
            .iter()
            .map(|b| b["reservation_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, _, first) = get(app, "/me/bookings?limit=100", bearer()).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let all = ids(&first);
    assert!(all.len() >= 3, "{fan} has {} bookings", all.len());
    assert!(first.get("next").is_none(), "all on one page: {first}");
    let bookings = first["bookings"].as_array().unwrap();
    let cancelled = bookings.iter().filter(|b| b["status"] == "cancelled").count();
    let (mut read, mut path) = (Vec::new(), "/me/bookings?limit=1".to_owned());
    loop {
        let (status, _, page) = get(app, &path, bearer()).await;
        assert_eq!(status, StatusCode::OK, "{path}: {page}");
        assert_eq!(page["booked_count"], (all.len() - cancelled) as i64);
        assert_eq!(page["cancelled_count"], cancelled as i64);
        read.extend(ids(&page));
        match page["next"].as_str() {
            Some(next) => path = format!("/me/bookings?limit=1&cursor={next}"),
            None => break,
        }
        assert!(read.len() < all.len(), "a next page after the last booking");
    }
    assert_eq!(read, all);
    for (query, problem) in [
        ("limit=0", "bad-limit"),
        ("limit=101", "bad-limit"),
        ("limit=ten", "bad-limit"),
        ("cursor=yesterday", "bad-cursor"),
        ("cursor=1796126400000000.not-a-uuid", "bad-cursor"),
        (
            "cursor=99999999999999999999.0192f5c1a3e47d2b9c1e5f3a7b8d9e01",
            "bad-cursor",
        ),
    ] {
        let (status, ct, body) = get(app, &format!("/me/bookings?{query}"), bearer()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(ct, "application/problem+json");
        assert_eq!(body["type"], format!("urn:frontrow:problem:{problem}"), "{query}");
    }
}

/// `?after=` a position answers once the ledger has applied it: not before (a read waiting for
/// it is still waiting while nothing projects), and with everything up to it once the projector
/// has caught up; a wait that ends first is a `503` with `Retry-After`, a bad position a `400`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_a_position_waits_until_the_ledger_has_applied_it() {
    let (_journal_dir, g) = generated(2, 2, 300, 11).await;
    let dir = tempfile::tempdir().unwrap();
    let ledger: Arc<dyn Ledger> = Arc::new(SqliteLedger::open(dir.path()).await.unwrap());
    let (app, auth) = app(&ledger);
    let now = chrono::Utc::now();
    let acme = g.states().find(|s| s.info.organizer.as_str() == "acme").unwrap();
    let event = acme.event_id();
    let partition = frontrow_schema::partition::partition_of(&event, 2);
    let last = g.journal.end_offset(partition).await.unwrap() - 1;
    let key = || Some(("x-api-key", "acme-key".to_owned()));

    // Nothing projected yet: a short wait ends in a 503 that names the position.
    let (status, ct, body) = get(
        &app,
        &format!("/events/{event}/sales?after={partition}:{last}&wait_ms=50"),
        key(),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(ct, "application/problem+json");
    assert_eq!(body["type"], "urn:frontrow:problem:position-not-visible");
    assert_eq!(body["position"], format!("{partition}:{last}"));
    assert_eq!(body["retry_after"], 1);

    // A read that waits long enough answers once the projector has caught up, with the event.
    let waiting = {
        let app = app.clone();
        let path = format!("/events/{event}/sales?after={partition}:{last}&wait_ms=10000");
        tokio::spawn(async move { get(&app, &path, key()).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the read answered before the ledger had the position"
    );
    Projector::new(g.journal.clone(), ledger.clone(), 100)
        .catch_up()
        .await
        .unwrap();
    let (status, _, sales) = waiting.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{sales}");
    assert_eq!(
        sales["total"]["booked_now"].as_i64().unwrap() as u32,
        acme.counts.booked
    );

    // Bookings take it too; once applied, the answer is at once.
    let fan = CustomerId::parse("fan3").unwrap();
    let bearer = Some((
        "authorization",
        format!("Bearer {}", auth.mint(&fan, now, now + chrono::Duration::minutes(5))),
    ));
    let (status, _, body) = get(
        &app,
        &format!("/me/bookings?after={partition}:{last}&wait_ms=0"),
        bearer.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["customer"], "fan3");

    // What is refused, and how.
    for (query, problem) in [
        ("after=2:0", "bad-position"),
        ("after=0:x", "bad-position"),
        ("after=-1:3", "bad-position"),
        ("after=0:0&wait_ms=10001", "bad-query"),
    ] {
        let (status, _, body) = get(&app, &format!("/me/bookings?{query}"), bearer.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["type"], format!("urn:frontrow:problem:{problem}"), "{query}");
    }
}

#[test]
fn openapi_documents_the_ledger_paths() {
    let doc = serde_json::to_value(LedgerApi::openapi()).unwrap();
    for path in ["/me/bookings", "/events/{event_id}/sales"] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    assert!(doc["paths"].get("/events/{event_id}/seats/{seat}/history").is_none());
}
