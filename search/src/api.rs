//! `GET /search`: what fans type, with typos, as they type, filtered and paged.
//!
//! Answers are cached per normalized query (its words lowercased and folded, the normalized
//! filters and the page) and the cache is emptied whenever the index reports a change
//! ([`SearchIndex::changes`]); entries also lapse after [`CACHE_TTL`] so changes written by
//! another node show up. Responses allow CDNs to keep them for a few seconds. Bad input is a
//! `problem+json`: an empty query or a malformed filter is `400`, a query over
//! [`MAX_QUERY_CHARS`] characters or without a searchable word, an inverted date range or a
//! page past [`MAX_PAGE`] is `422`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use frontrow_http::{ApiQuery, Problem};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::index::{Hit, Listing, PER_PAGE, SearchError, SearchIndex, SearchQuery, SearchResults};
use crate::text;

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
/// The last page that can be asked for.
pub const MAX_PAGE: usize = 50;
/// How long a cached answer is served without asking the index again.
pub const CACHE_TTL: Duration = Duration::from_secs(2);
/// How many answers the cache keeps.
pub const CACHE_ENTRIES: usize = 4096;
/// Search answers move with seats left, but a CDN may keep them for a few seconds.
pub const CACHE_CONTROL_VALUE: &str = "public, max-age=5, stale-while-revalidate=30";
/// `hit` when the answer came from this node's result cache, `miss` otherwise.
pub const CACHE_HEADER: &str = "frontrow-cache";

/// The search API's OpenAPI description.
#[derive(OpenApi)]
#[openapi(
    paths(search),
    components(schemas(SearchResponse, SearchHit, PriceRange, Problem)),
    tags((name = "search", description = "Find events by artist, title, venue or city, typos forgiven"))
)]
pub struct SearchApi;

/// What the handler shares: the index and the cache of recent answers.
struct SearchState {
    index: Arc<dyn SearchIndex>,
    cache: ResultCache,
}

/// The search API over `index`, state applied.
pub fn router(index: Arc<dyn SearchIndex>) -> Router {
    let state = Arc::new(SearchState {
        index,
        cache: ResultCache::default(),
    });
    Router::new().route("/search", get(search)).with_state(state)
}

/// The query string of `GET /search`. Everything is read as text first so each malformed value
/// gets its own precise problem.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// What to look for: artist (or alias), title, venue, city or genre words; typos are
    /// forgiven, the last word also matches as a prefix, words may be run together or apart,
    /// and a word that matches nothing is dropped if needed (1 to 200 characters).
    #[param(example = "taylr swfit")]
    q: Option<String>,
    /// Only events in this city (case and accents ignored).
    #[param(example = "Mumbai")]
    city: Option<String>,
    /// Only events starting at or after this instant (RFC 3339) or day (`YYYY-MM-DD`, UTC).
    #[param(value_type = Option<String>, example = "2027-01-01")]
    from: Option<String>,
    /// Only events starting at or before this instant (RFC 3339) or day (`YYYY-MM-DD`, UTC,
    /// inclusive).
    #[param(value_type = Option<String>, example = "2027-12-31")]
    to: Option<String>,
    /// `true`: only events with seats left.
    #[param(value_type = Option<bool>)]
    available: Option<String>,
    /// The page, from 1 to 50; 20 hits a page.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 50)]
    page: Option<String>,
}

/// One page of search results.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SearchResponse {
    /// The query as understood: its words, lowercased, accents removed.
    pub query: String,
    pub page: usize,
    pub per_page: usize,
    /// Matching events in all pages.
    pub total: u64,
    pub pages: u64,
    /// Best match first; equally good matches sooner first.
    pub hits: Vec<SearchHit>,
    /// "Did you mean": when nothing matches, the indexed artist names closest to the query
    /// (at most 3, closest first); empty otherwise.
    pub suggestions: Vec<String>,
}

/// One event found.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SearchHit {
    #[serde(flatten)]
    pub listing: Listing,
    pub price: PriceRange,
    pub seats_total: u32,
    pub seats_left: u32,
    pub sold_out: bool,
    pub score: f32,
    /// Per field (`artist`, `title`, `venue`, `city`, `tags`), the HTML-escaped text with the
    /// matching words in `<em>`; fields without a match are left out.
    pub highlights: BTreeMap<String, String>,
}

/// The cheapest and dearest ticket, in minor units.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PriceRange {
    pub min: i64,
    pub max: i64,
    pub currency: String,
}

/// A search read from the query string, checked.
#[derive(Debug)]
struct Checked {
    query: SearchQuery,
    key: String,
}

impl SearchParams {
    fn check(self) -> Result<Checked, Problem> {
        let text = self.q.unwrap_or_default();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(
                Problem::bad_request("empty-query", "give a search with q=, e.g. q=taylor swift")
                    .with("parameter", "q"),
            );
        }
        let chars = trimmed.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(Problem::unprocessable(
                "query-too-long",
                format!("the search is {chars} characters long; at most {MAX_QUERY_CHARS} are accepted"),
            )
            .with("parameter", "q")
            .with("max_chars", MAX_QUERY_CHARS));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(
                Problem::bad_request("malformed-query", "the search contains control characters")
                    .with("parameter", "q"),
            );
        }
        let normalized = text::normalize(trimmed);
        if normalized.is_empty() {
            return Err(Problem::unprocessable(
                "no-search-terms",
                format!("{trimmed:?} has no letters or digits to search for"),
            )
            .with("parameter", "q"));
        }
        let city = frontrow_http::page::city(self.city.as_deref())?.map(str::to_owned);
        let (from, to) = frontrow_http::page::date_range(self.from.as_deref(), self.to.as_deref())?;
        // `available` and `page` are a boolean and an integer: given empty, they are refused like
        // any other value that is not one (the text filters above may be left empty).
        let available = match self.available.as_deref().map(str::trim) {
            None | Some("false") | Some("0") => false,
            Some("true") | Some("1") => true,
            Some(other) => {
                return Err(Problem::bad_request(
                    "bad-available",
                    format!("available={other:?} must be true or false"),
                )
                .with("parameter", "available"));
            }
        };
        let page = match self.page {
            None => 1,
            Some(raw) => match raw.trim().parse::<usize>() {
                Ok(p) if (1..=MAX_PAGE).contains(&p) => p,
                Ok(p) => {
                    return Err(Problem::unprocessable(
                        "page-out-of-range",
                        format!("page {p} is outside 1..={MAX_PAGE}; narrow the search instead"),
                    )
                    .with("parameter", "page"));
                }
                Err(_) => {
                    return Err(
                        Problem::bad_request("bad-page", format!("page={raw:?} is not a page number"))
                            .with("parameter", "page"),
                    );
                }
            },
        };
        let key = format!(
            "{normalized}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{available}\u{1f}{page}",
            city.as_deref().map(text::normalize).unwrap_or_default(),
            from.map(|t| t.timestamp()).unwrap_or(i64::MIN),
            to.map(|t| t.timestamp()).unwrap_or(i64::MAX),
        );
        Ok(Checked {
            query: SearchQuery {
                text: normalized,
                city,
                from,
                to,
                available,
                page,
                per_page: PER_PAGE,
            },
            key,
        })
    }
}

/// Recent answers by normalized query, dropped when the index generation moves.
#[derive(Default)]
struct ResultCache {
    inner: Mutex<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    generation: u64,
    entries: HashMap<String, (Instant, Bytes)>,
}

impl ResultCache {
    fn get(&self, key: &str, generation: u64) -> Option<Bytes> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.generation != generation {
            inner.entries.clear();
            inner.generation = generation;
            return None;
        }
        match inner.entries.get(key) {
            Some((at, body)) if at.elapsed() < CACHE_TTL => Some(body.clone()),
            _ => None,
        }
    }

    fn put(&self, key: String, generation: u64, body: Bytes) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.generation != generation {
            // The index moved while this answer was computed: it may be stale already.
            return;
        }
        if inner.entries.len() >= CACHE_ENTRIES {
            inner.entries.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
            if inner.entries.len() >= CACHE_ENTRIES {
                inner.entries.clear();
            }
        }
        inner.entries.insert(key, (Instant::now(), body));
    }
}

fn hit_view(hit: Hit, words: &[String]) -> SearchHit {
    let d = hit.doc;
    let l = &d.listing;
    let mut highlights = BTreeMap::new();
    for (field, value) in [
        ("artist", &l.artist),
        ("title", &l.title),
        ("venue", &l.venue),
        ("city", &l.city),
    ] {
        if let Some(marked) = text::highlight(value, words) {
            highlights.insert(field.to_owned(), marked);
        }
    }
    let tags: Vec<String> = l.tags.iter().filter_map(|t| text::highlight(t, words)).collect();
    if !tags.is_empty() {
        highlights.insert("tags".to_owned(), tags.join(", "));
    }
    SearchHit {
        listing: d.listing,
        price: PriceRange {
            min: d.price_min,
            max: d.price_max,
            currency: d.currency,
        },
        seats_total: d.seats_total,
        seats_left: d.seats_left,
        sold_out: d.sold_out,
        score: hit.score,
        highlights,
    }
}

fn response(query: &SearchQuery, results: SearchResults) -> SearchResponse {
    let words = text::query_words(&query.text);
    let per_page = query.per_page.max(1) as u64;
    SearchResponse {
        query: query.text.clone(),
        page: query.page,
        per_page: query.per_page,
        total: results.total,
        pages: results.total.div_ceil(per_page),
        hits: results.hits.into_iter().map(|h| hit_view(h, &words)).collect(),
        suggestions: results.suggestions,
    }
}

fn search_problem(e: SearchError) -> Problem {
    match e {
        SearchError::InvalidQuery(detail) => Problem::unprocessable("no-search-terms", detail),
        SearchError::NoSuchVersion(_) | SearchError::Backend(_) => {
            tracing::warn!(error = %e, "search backend unavailable");
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "search-unavailable",
                "search is not available right now; try again shortly",
            )
            .retry_after(1)
        }
    }
}

frontrow_http::problems! {
    /// What a search refuses with.
    SearchProblems = [&[
        Cause::new(400, "Empty query or malformed parameter"),
        Cause::new(422, "Query too long or without words, inverted dates, page out of range"),
        Cause::new(503, "The search backend is unavailable; retry after `Retry-After` seconds"),
    ]];
}

/// Finds events by artist, title, venue, city or genre, with typos forgiven and the last word
/// matched as a prefix; filters by city, start date and seats left.
#[utoipa::path(
    get, path = "/search", tag = "search",
    params(SearchParams),
    responses(
        (status = 200, description = "One page of events, best match first", body = SearchResponse,
            headers(("Cache-Control" = String), ("FrontRow-Cache" = String, description = "`hit` or `miss`"))),
        SearchProblems,
    )
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn search(
    State(state): State<Arc<SearchState>>,
    ApiQuery(params): ApiQuery<SearchParams>,
) -> Result<Response, Problem> {
    let checked = params.check()?;
    let generation = *state.index.changes().borrow();
    let (body, cached) = match state.cache.get(&checked.key, generation) {
        Some(body) => (body, "hit"),
        None => {
            let started = std::time::Instant::now();
            let results = state.index.search(&checked.query).await.map_err(search_problem)?;
            metrics::histogram!("frontrow_search_backend_seconds").record(started.elapsed().as_secs_f64());
            let view = response(&checked.query, results);
            let body = Bytes::from(serde_json::to_vec(&view).map_err(Problem::internal)?);
            state.cache.put(checked.key, generation, body.clone());
            (body, "miss")
        }
    };
    metrics::counter!("frontrow_search_requests_total", "cache" => cached).increment(1);
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL_VALUE)),
        (HeaderName::from_static(CACHE_HEADER), HeaderValue::from_static(cached)),
    ];
    Ok((headers, body).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(q: &str) -> SearchParams {
        SearchParams {
            q: Some(q.to_owned()),
            ..SearchParams::default()
        }
    }

    #[test]
    fn bad_searches_are_precise_problems() {
        let slug = |p: SearchParams| p.check().unwrap_err().kind;
        assert_eq!(slug(SearchParams::default()), "empty-query");
        assert_eq!(slug(params("   ")), "empty-query");
        assert_eq!(slug(params(&"a".repeat(201))), "query-too-long");
        assert_eq!(slug(params("!!! ???")), "no-search-terms");
        assert_eq!(slug(params("bts\u{0}")), "malformed-query");
        let with = |f: fn(&mut SearchParams)| {
            let mut p = params("bts");
            f(&mut p);
            p
        };
        assert_eq!(slug(with(|p| p.from = Some("tomorrow".into()))), "bad-date");
        assert_eq!(
            slug(with(|p| {
                p.from = Some("2027-02-01".into());
                p.to = Some("2027-01-01".into());
            })),
            "bad-date-range"
        );
        assert_eq!(slug(with(|p| p.available = Some("yes please".into()))), "bad-available");
        assert_eq!(slug(with(|p| p.page = Some("two".into()))), "bad-page");
        assert_eq!(slug(with(|p| p.page = Some("0".into()))), "page-out-of-range");
        assert_eq!(slug(with(|p| p.page = Some("51".into()))), "page-out-of-range");
        // A number or a boolean given empty is not one (schemathesis: `?page=` was answered 200).
        assert_eq!(slug(with(|p| p.page = Some(String::new()))), "bad-page");
        assert_eq!(slug(with(|p| p.page = Some(" ".into()))), "bad-page");
        assert_eq!(slug(with(|p| p.available = Some(String::new()))), "bad-available");
        // The text filters may be left empty, as a form sends them.
        assert!(with(|p| p.city = Some(String::new())).check().is_ok());
        assert!(with(|p| p.from = Some(" ".into())).check().is_ok());
    }

    #[test]
    fn equivalent_searches_share_a_cache_key() {
        let a = params("  Taylor   SWIFT ").check().unwrap();
        let b = params("taylor swift").check().unwrap();
        assert_eq!(a.key, b.key);
        let mut c = params("taylor swift");
        c.to = Some("2027-01-01".into());
        let c = c.check().unwrap();
        assert_ne!(a.key, c.key);
        assert_eq!(c.query.to.unwrap().to_rfc3339(), "2027-01-01T23:59:59+00:00");
    }
}
