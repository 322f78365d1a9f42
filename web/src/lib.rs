//! FrontRow's fan web app: hand-written HTML, CSS and JavaScript modules embedded in the binary
//! (no build step, no CDN), and the routes that serve them.
//!
//! Every file lives in one table, [`ASSETS`]; the HTML pages are the rows of [`PAGES`], each
//! its own `<main>` in the one shell every page shares (`assets/shell.html`: the head, the
//! skip link, the header and the message line), put together once at startup. Each
//! answer carries a strong `ETag` (a hash of the bytes, so a new binary changes it), answers
//! `304 Not Modified` to a matching `If-None-Match`, and carries a `Content-Security-Policy`
//! that allows only this origin (no inline script or style attribute, no third party).

use std::sync::LazyLock;

use axum::Router;
use axum::body::Bytes;
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

/// Every file of the app but the pages (see [`PAGES`]). Adding a page is its module's row here
/// and one row in [`PAGES`].
pub const ASSETS: &[Asset] = &[
    asset!("app.css", CSS),
    asset!("favicon.svg", SVG),
    asset!("lib/api.js", JS),
    asset!("lib/session.js", JS),
    asset!("lib/layout.js", JS),
    asset!("lib/format.js", JS),
    asset!("lib/seatmap.js", JS),
    asset!("lib/paging.js", JS),
    asset!("pages/search.js", JS),
    asset!("pages/event.js", JS),
    asset!("pages/hold.js", JS),
    asset!("pages/queue.js", JS),
    asset!("pages/zones.js", JS),
    asset!("pages/me.js", JS),
];

/// One HTML page: its route, and what it puts into the shell.
pub struct Page {
    pub route: &'static str,
    /// `pages/{name}.js` is its module and `pages/{name}.html` its `<main>`'s content; its
    /// `<main>` has the class `page-{name}`.
    pub name: &'static str,
    /// After "FrontRow — " in the `<title>`.
    pub title: &'static str,
    /// Where the skip link goes, and its words.
    pub skip_to: &'static str,
    pub skip_label: &'static str,
    pub main: &'static str,
}

macro_rules! page {
    ($route:literal, $name:literal, $title:literal, $skip_to:literal, $skip_label:literal) => {
        Page {
            route: $route,
            name: $name,
            title: $title,
            skip_to: $skip_to,
            skip_label: $skip_label,
            main: include_str!(concat!("../assets/pages/", $name, ".html")),
        }
    };
}

/// The HTML routes. The page's module reads the rest of the URL (e.g. the event id) itself.
pub const PAGES: &[Page] = &[
    page!("/", "search", "what is on sale", "#main", "Skip to content"),
    page!("/e/{event_id}", "event", "event", "#seat-map", "Skip to the seat map"),
    page!("/me", "me", "my bookings", "#main", "Skip to content"),
];

const SHELL: &str = include_str!("../assets/shell.html");

impl Page {
    /// The whole document: the shell with this page's parts.
    pub fn html(&self) -> String {
        // The page's own markup goes in last, so nothing in it is taken for a placeholder.
        SHELL
            .replace("{title}", self.title)
            .replace("{name}", self.name)
            .replace("{skip_to}", self.skip_to)
            .replace("{skip_label}", self.skip_label)
            .replace("{main}", self.main)
    }
}

/// The policy on every answer: this origin only, for scripts, styles, images and connections.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// A strong entity tag: a hash of the bytes.
fn etag(body: &[u8]) -> HeaderValue {
    let digest = Sha256::digest(body);
    HeaderValue::from_str(&format!("\"{}\"", hex::encode(&digest[..12]))).expect("hex is a valid header")
}

/// The entity tags of [`ASSETS`], one per row, computed once.
static ETAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| ASSETS.iter().map(|a| etag(a.body)).collect());

/// The documents of [`PAGES`] with their tags, one per row, put together once.
static DOCUMENTS: LazyLock<Vec<(HeaderValue, Bytes)>> = LazyLock::new(|| {
    PAGES
        .iter()
        .map(|p| {
            let body = Bytes::from(p.html());
            (etag(&body), body)
        })
        .collect()
});

/// The asset at `path`, if there is one.
pub fn asset(path: &str) -> Option<(usize, &'static Asset)> {
    ASSETS.iter().enumerate().find(|(_, a)| a.path == path)
}

fn serve(etag: &HeaderValue, content_type: &'static str, body: Bytes, request: &HeaderMap) -> Response {
    let etag = etag.clone();
    let fresh = none_match(request, etag.to_str().unwrap_or_default());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type)], body).into_response()
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

fn page(index: usize) -> impl Fn(HeaderMap) -> std::future::Ready<Response> + Clone + Send + 'static {
    move |headers: HeaderMap| {
        let (etag, body) = &DOCUMENTS[index];
        std::future::ready(serve(etag, "text/html; charset=utf-8", body.clone(), &headers))
    }
}

async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    match asset(&path) {
        Some((index, asset)) => serve(
            &ETAGS[index],
            asset.content_type,
            Bytes::from_static(asset.body),
            &headers,
        ),
        None => Problem::not_found(format!("there is no asset {path:?}")).into_response(),
    }
}

/// The web app's routes: the HTML pages of [`PAGES`] and `/assets/{*file}`.
pub fn router() -> Router {
    let mut router = Router::new().route("/assets/{*file}", get(file));
    for (index, p) in PAGES.iter().enumerate() {
        router = router.route(p.route, get(page(index)));
    }
    router
}
