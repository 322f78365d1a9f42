//! `GET /search` over the embedded index: answers, cache, problems.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use frontrow_search::api::SearchResponse;
use frontrow_search::{Batch, SearchApi, SearchIndex, TantivyIndex, fixture, router};
use tower::ServiceExt;
use utoipa::OpenApi;

async fn index() -> (tempfile::TempDir, Arc<dyn SearchIndex>) {
    let dir = tempfile::tempdir().unwrap();
    let index: Arc<dyn SearchIndex> = Arc::new(TantivyIndex::open(&dir.path().join("search")).unwrap());
    index.ensure().await.unwrap();
    let batch = Batch {
        upserts: fixture::events(2_000),
        ..Batch::default()
    };
    index.apply(None, batch).await.unwrap();
    (dir, index)
}

/// The search router over a fresh [`index`].
async fn app() -> (tempfile::TempDir, axum::Router) {
    let (dir, index) = index().await;
    (dir, router(index))
}

/// The page a search answers with 200.
async fn page_ok(app: &axum::Router, uri: &str) -> SearchResponse {
    let (status, _, body) = get(app, uri).await;
    assert_eq!(status, StatusCode::OK);
    serde_json::from_value(body).unwrap()
}

async fn get(app: &axum::Router, uri: &str) -> (StatusCode, axum::http::HeaderMap, serde_json::Value) {
    let response = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, headers, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn typos_find_the_artist_with_highlights_and_cache_headers() {
    let (_dir, app) = app().await;
    let (status, headers, body) = get(&app, "/search?q=taylr%20swfit").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["cache-control"], "public, max-age=5, stale-while-revalidate=30");
    assert_eq!(headers["frontrow-cache"], "miss");
    let page: SearchResponse = serde_json::from_value(body).unwrap();
    assert_eq!(page.query, "taylr swfit");
    assert_eq!(page.hits[0].listing.artist, "Taylor Swift");
    assert_eq!(page.hits[0].highlights["artist"], "<em>Taylor</em> <em>Swift</em>");
    assert!(page.total >= 1 && page.pages >= 1);

    // The same search, spelled differently: served from the cache.
    let (_, headers, _) = get(&app, "/search?q=%20Taylr%20%20SWFIT%20").await;
    assert_eq!(headers["frontrow-cache"], "hit");
}

#[tokio::test]
async fn aliases_are_shown_and_zero_hits_suggest_artists() {
    let (_dir, app) = app().await;
    let page = page_ok(&app, "/search?q=bangtan%20boys").await;
    assert_eq!(page.hits[0].listing.artist, "BTS");
    assert_eq!(page.hits[0].listing.aliases, ["Bangtan Boys", "Bangtan Sonyeondan"]);
    assert!(page.suggestions.is_empty());

    let (status, _, body) = get(&app, "/search?q=kolplay").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["total"], 0);
    assert_eq!(body["hits"], serde_json::json!([]));
    assert_eq!(body["suggestions"][0], "Coldplay");
}

#[tokio::test]
async fn a_change_to_the_index_empties_the_cache() {
    let (_dir, index) = index().await;
    let app = router(index.clone());
    let (_, _, body) = get(&app, "/search?q=coldpaly%20mumbai&available=true").await;
    let page: SearchResponse = serde_json::from_value(body).unwrap();
    let first = page
        .hits
        .iter()
        .find(|h| h.listing.city == "Mumbai")
        .expect("coldplay in mumbai");
    let mut doc = index.get(first.listing.event_id).await.unwrap().unwrap();
    let (_, headers, _) = get(&app, "/search?q=coldpaly%20mumbai&available=true").await;
    assert_eq!(headers["frontrow-cache"], "hit");

    doc.seats_left = 0;
    doc.sold_out = true;
    let batch = Batch {
        upserts: vec![doc.clone()],
        ..Batch::default()
    };
    index.apply(None, batch).await.unwrap();
    let (_, headers, body) = get(&app, "/search?q=coldpaly%20mumbai&available=true").await;
    assert_eq!(headers["frontrow-cache"], "miss");
    let page: SearchResponse = serde_json::from_value(body).unwrap();
    assert!(
        page.hits.iter().all(|h| h.listing.event_id != doc.listing.event_id),
        "sold out is filtered"
    );
}

#[tokio::test]
async fn filters_and_pages_apply() {
    let (_dir, app) = app().await;
    let page = page_ok(&app, "/search?q=tour&city=seoul&from=2027-03-01&to=2028-06-30&page=1").await;
    assert!(page.total > 0);
    assert!(page.hits.iter().all(|h| h.listing.city == "Seoul"));
    assert!(
        page.hits
            .iter()
            .all(|h| h.listing.starts_at.to_rfc3339().as_str() >= "2027-03-01")
    );
    let (_, _, body) = get(&app, "/search?q=tour&page=2").await;
    let page2: SearchResponse = serde_json::from_value(body).unwrap();
    assert_eq!(page2.page, 2);
    assert_eq!(page2.hits.len(), 20);
}

#[tokio::test]
async fn bad_searches_are_problems() {
    let (_dir, app) = app().await;
    let long = "a".repeat(201);
    for (uri, status, kind) in [
        ("/search".to_owned(), 400, "empty-query"),
        ("/search?q=%20%20".to_owned(), 400, "empty-query"),
        (format!("/search?q={long}"), 422, "query-too-long"),
        ("/search?q=%21%3F%21".to_owned(), 422, "no-search-terms"),
        ("/search?q=bts&from=soon".to_owned(), 400, "bad-date"),
        (
            "/search?q=bts&from=2027-05-01&to=2027-01-01".to_owned(),
            422,
            "bad-date-range",
        ),
        ("/search?q=bts&available=maybe".to_owned(), 400, "bad-available"),
        ("/search?q=bts&page=x".to_owned(), 400, "bad-page"),
        ("/search?q=bts&page=".to_owned(), 400, "bad-page"),
        ("/search?q=bts&available=".to_owned(), 400, "bad-available"),
        ("/search?q=bts&page=99".to_owned(), 422, "page-out-of-range"),
    ] {
        let (got, headers, body) = get(&app, &uri).await;
        assert_eq!(got.as_u16(), status, "{uri}: {body}");
        assert_eq!(headers["content-type"], "application/problem+json");
        assert_eq!(body["type"], format!("urn:frontrow:problem:{kind}"), "{uri}");
    }
}

#[test]
fn the_openapi_document_describes_search() {
    let doc = SearchApi::openapi();
    assert!(doc.paths.paths.contains_key("/search"));
    let json = serde_json::to_string(&doc).unwrap();
    assert!(json.contains("SearchResponse") && json.contains("\"q\""));
}
