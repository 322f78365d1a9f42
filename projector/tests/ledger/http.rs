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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookings_and_sales_over_http() {
    let (_journal_dir, g) = generated(2, 2, 600, 9).await;
    let dir = tempfile::tempdir().unwrap();
    let ledger: Arc<dyn Ledger> = Arc::new(SqliteLedger::open(dir.path()).await.unwrap());
    Projector::new(g.journal.clone(), ledger.clone(), 100)
        .catch_up()
        .await
        .unwrap();
    let auth = Arc::new(Auth::new(
        SecretString::from("secret"),
        [
            (OrganizerId::parse("acme").unwrap(), SecretString::from("acme-key")),
            (OrganizerId::parse("other").unwrap(), SecretString::from("other-key")),
        ],
    ));
    let app = frontrow_projector::router(ledger.clone()).layer(Extension(auth.clone()));
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

#[test]
fn openapi_documents_the_ledger_paths() {
    let doc = serde_json::to_value(LedgerApi::openapi()).unwrap();
    for path in ["/me/bookings", "/events/{event_id}/sales"] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    assert!(doc["paths"].get("/events/{event_id}/seats/{seat}/history").is_none());
}
