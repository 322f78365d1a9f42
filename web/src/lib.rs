//! FrontRow's fan web app: hand-written HTML, CSS and JavaScript modules embedded in the binary
//! (no build step, no CDN), and the routes that serve them.
//!
//! Every file lives in one table, [`ASSETS`]; the HTML pages are the rows of [`PAGES`]. Each
//! answer carries a strong `ETag` (a hash of the bytes, so a new binary changes it), answers
//! `304 Not Modified` to a matching `If-None-Match`, and carries a `Content-Security-Policy`
//! that allows only this origin (no inline script or style attribute, no third party).

use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use frontrow_http::{Problem, none_match};
use sha2::{Digest, Sha256};

/// One embedded file: its path under `/assets/` and its content type.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const SVG: &str = "image/svg+xml";

macro_rules! asset {
    ($path:literal, $content_type:expr) => {
        Asset {
            path: $path,
            content_type: $content_type,
            body: include_bytes!(concat!("../assets/", $path)),
        }
    };
}

/// Every file of the app. Adding a page is one HTML row here, one module under `pages/` and one
/// row in [`PAGES`].
pub const ASSETS: &[Asset] = &[
    asset!("index.html", HTML),
    asset!("event.html", HTML),
    asset!("me.html", HTML),
    asset!("app.css", CSS),
    asset!("favicon.svg", SVG),
    asset!("lib/api.js", JS),
    asset!("lib/session.js", JS),
    asset!("lib/layout.js", JS),
    asset!("lib/format.js", JS),
    asset!("lib/seatmap.js", JS),
    asset!("pages/search.js", JS),
    asset!("pages/event.js", JS),
    asset!("pages/hold.js", JS),
    asset!("pages/queue.js", JS),
    asset!("pages/zones.js", JS),
    asset!("pages/me.js", JS),
];

/// The HTML routes and the asset each one answers with. The page's module reads the rest of
/// the URL (e.g. the event id) itself.
pub const PAGES: &[(&str, &str)] = &[("/", "index.html"), ("/e/{event_id}", "event.html"), ("/me", "me.html")];

/// The policy on every answer: this origin only, for scripts, styles, images and connections.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Strong entity tags, one per row of [`ASSETS`], computed once.
static ETAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|a| {
            let digest = Sha256::digest(a.body);
            HeaderValue::from_str(&format!("\"{}\"", hex::encode(&digest[..12]))).expect("hex is a valid header")
        })
        .collect()
});

/// The asset at `path`, if there is one.
pub fn asset(path: &str) -> Option<(usize, &'static Asset)> {
    ASSETS.iter().enumerate().find(|(_, a)| a.path == path)
}

fn serve(index: usize, asset: &'static Asset, request: &HeaderMap) -> Response {
    let etag = ETAGS[index].clone();
    let fresh = none_match(request, etag.to_str().unwrap_or_default());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, etag);
    // Revalidate every time: a new binary brings new files under the same names.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

fn page(file: &'static str) -> impl Fn(HeaderMap) -> std::future::Ready<Response> + Clone + Send + 'static {
    move |headers: HeaderMap| {
        let (index, asset) = asset(file).expect("every page is in ASSETS");
        std::future::ready(serve(index, asset, &headers))
    }
}

async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    match asset(&path) {
        Some((index, asset)) if !asset.path.ends_with(".html") => serve(index, asset, &headers),
        _ => Problem::not_found(format!("there is no asset {path:?}")).into_response(),
    }
}

/// The web app's routes: the HTML pages of [`PAGES`] and `/assets/{*file}`.
pub fn router() -> Router {
    let mut router = Router::new().route("/assets/{*file}", get(file));
    for (route, file) in PAGES {
        router = router.route(route, get(page(file)));
    }
    router
}
