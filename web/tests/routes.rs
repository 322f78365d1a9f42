//! The web app's routes, without a browser: content types, entity tags and `304`, the security
//! headers, and that every file the pages and modules reference is served.

use std::collections::BTreeSet;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use frontrow_web::{ASSETS, CONTENT_SECURITY_POLICY, PAGES, router};
use tower::ServiceExt;

async fn get(path: &str, if_none_match: Option<&str>) -> Response {
    let mut request = Request::get(path);
    if let Some(tag) = if_none_match {
        request = request.header(header::IF_NONE_MATCH, tag);
    }
    router().oneshot(request.body(Body::empty()).unwrap()).await.unwrap()
}

async fn text(response: Response) -> String {
    String::from_utf8(to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec()).unwrap()
}

fn header_of(response: &Response, name: header::HeaderName) -> &str {
    response.headers().get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
}

/// `GET path`, checked to answer `status` with `content_type` (a failure names the path).
async fn get_as_expected(path: &str, status: StatusCode, content_type: &str) -> Response {
    let response = get(path, None).await;
    assert_eq!(response.status(), status, "{path}");
    assert_eq!(header_of(&response, header::CONTENT_TYPE), content_type, "{path}");
    response
}

#[tokio::test]
async fn pages_are_html_with_the_security_headers() {
    for path in ["/", "/e/0193a0c4-1111-7000-8000-000000000001", "/me"] {
        let response = get_as_expected(path, StatusCode::OK, "text/html; charset=utf-8").await;
        assert_eq!(
            header_of(&response, header::CONTENT_SECURITY_POLICY),
            CONTENT_SECURITY_POLICY
        );
        assert!(CONTENT_SECURITY_POLICY.starts_with("default-src 'self'"));
        assert_eq!(header_of(&response, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        let body = text(response).await;
        assert!(body.starts_with("<!doctype html>"), "{path}");
        // The policy forbids inline script; the pages must not need it.
        assert!(
            !body.contains("<script>") && !body.contains(" onclick="),
            "{path} has inline script"
        );
        assert!(!body.contains(" style="), "{path} has an inline style attribute");
    }
}

#[tokio::test]
async fn assets_have_their_content_types() {
    for (path, content_type) in [
        ("/assets/app.css", "text/css; charset=utf-8"),
        ("/assets/pages/search.js", "text/javascript; charset=utf-8"),
        ("/assets/lib/api.js", "text/javascript; charset=utf-8"),
        ("/assets/favicon.svg", "image/svg+xml"),
    ] {
        let response = get_as_expected(path, StatusCode::OK, content_type).await;
        assert_eq!(
            header_of(&response, header::CONTENT_SECURITY_POLICY),
            CONTENT_SECURITY_POLICY
        );
    }
}

#[tokio::test]
async fn a_matching_etag_answers_304_and_another_does_not() {
    let first = get("/assets/app.css", None).await;
    let etag = header_of(&first, header::ETAG).to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() > 10,
        "{etag:?}"
    );
    assert_eq!(header_of(&first, header::CACHE_CONTROL), "no-cache");

    let again = get("/assets/app.css", Some(&etag)).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(header_of(&again, header::ETAG), etag);
    assert!(text(again).await.is_empty());

    let weak_in_a_list = format!("\"nope\", W/{etag}");
    assert_eq!(
        get("/assets/app.css", Some(&weak_in_a_list)).await.status(),
        StatusCode::NOT_MODIFIED
    );
    assert_eq!(get("/", Some("*")).await.status(), StatusCode::NOT_MODIFIED);

    let stale = get("/assets/app.css", Some("\"0000\"")).await;
    assert_eq!(stale.status(), StatusCode::OK);
    assert!(!text(stale).await.is_empty());

    // Different files, different tags.
    let other = get("/assets/lib/api.js", None).await;
    assert_ne!(header_of(&other, header::ETAG), etag);
}

#[tokio::test]
async fn an_unknown_asset_is_a_problem_not_a_page() {
    for path in ["/assets/nope.js", "/assets/../Cargo.toml", "/assets/index.html"] {
        get_as_expected(path, StatusCode::NOT_FOUND, "application/problem+json").await;
    }
}

/// The `/assets/…` paths a file refers to: `src`/`href` attributes and `import … from '…'`
/// (module paths resolve against the importing file's folder).
fn references(from: &str, text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let folder = from.rsplit_once('/').map_or("", |(dir, _)| dir);
    for quote in ['"', '\''] {
        for piece in text.split(quote).skip(1).step_by(2) {
            let resolved = if let Some(path) = piece.strip_prefix("/assets/") {
                path.to_owned()
            } else if piece.ends_with(".js") && (piece.starts_with("./") || piece.starts_with("../")) {
                let mut parts: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
                for part in piece.split('/') {
                    match part {
                        "." => {}
                        ".." => {
                            parts.pop();
                        }
                        other => parts.push(other),
                    }
                }
                parts.join("/")
            } else {
                continue;
            };
            found.insert(resolved);
        }
    }
    found
}

#[tokio::test]
async fn every_referenced_asset_is_served_and_every_asset_is_referenced() {
    let mut referenced = BTreeSet::new();
    for asset in ASSETS {
        let text = std::str::from_utf8(asset.body).unwrap();
        referenced.extend(references(asset.path, text));
    }
    for page in PAGES {
        referenced.extend(references("", &page.html()));
    }
    for path in &referenced {
        let response = get(&format!("/assets/{path}"), None).await;
        assert_eq!(response.status(), StatusCode::OK, "{path} is referenced but not served");
    }
    for asset in ASSETS {
        assert!(
            referenced.contains(asset.path),
            "{} is embedded but nothing uses it",
            asset.path
        );
    }
    // The pages reach their modules and the stylesheet.
    assert!(referenced.contains("pages/event.js") && referenced.contains("app.css"));
}

/// Each page is the shell with its own parts: one title, its module, its `<main>`, and no
/// placeholder left over.
#[tokio::test]
async fn every_page_is_the_shell_with_its_own_parts() {
    for page in PAGES {
        let served = text(
            get_as_expected(
                &page.route.replace("{event_id}", "x"),
                StatusCode::OK,
                "text/html; charset=utf-8",
            )
            .await,
        )
        .await;
        assert_eq!(served, page.html(), "{}", page.route);
        assert!(served.contains(&format!("<title>FrontRow — {}</title>", page.title)));
        assert!(served.contains(&format!("src=\"/assets/pages/{}.js\"", page.name)));
        assert_eq!(served.matches("<main ").count(), 1, "{}", page.route);
        assert!(served.contains(&format!(
            "<main id=\"main\" class=\"page page-{}\">\n{}</main>",
            page.name, page.main
        )));
        for placeholder in ["{title}", "{name}", "{skip_to}", "{skip_label}", "{main}"] {
            assert!(!served.contains(placeholder), "{} keeps {placeholder}", page.route);
        }
    }
}
