//! The search index port: what a search document is, what a search asks, and the trait both
//! backends implement.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use frontrow_journal::Offset;
use frontrow_schema::EventId;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use utoipa::ToSchema;

/// The alias searches go through; versioned indexes (`frontrow-events-v2-<created>`) sit behind it.
pub const DEFAULT_ALIAS: &str = "frontrow-events";
/// Hits per page.
pub const PER_PAGE: usize = 20;

/// An event as a search lists it: what fans type and when it is. A search document and a
/// search hit both carry it, flattened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Listing {
    pub event_id: EventId,
    pub title: String,
    pub artist: String,
    /// Other names of the artist (a romanisation, an abbreviation), searched like it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub venue: String,
    pub city: String,
    /// Genres and other words the event should be found by.
    // Always written, so required in the API; a search document stored without it reads as none.
    #[serde(default)]
    #[schema(required = true)]
    pub tags: Vec<String>,
    pub starts_at: DateTime<Utc>,
    pub onsale_at: DateTime<Utc>,
}

/// One event as search sees it: what fans type, what they filter on, and how full it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventDoc {
    #[serde(flatten)]
    pub listing: Listing,
    /// The cheapest and dearest price tier, in minor units of `currency`.
    pub price_min: i64,
    pub price_max: i64,
    pub currency: String,
    pub seats_total: u32,
    /// Seats neither held nor booked.
    pub seats_left: u32,
    pub sold_out: bool,
}

/// The next offset to project per journal partition, stored with the documents it produced.
pub type Positions = BTreeMap<u32, Offset>;

/// One write: documents to replace, events to remove and the positions they bring the index to.
/// A backend applies it as one unit and it is visible to searches when `apply` returns.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub upserts: Vec<EventDoc>,
    pub deletes: Vec<EventId>,
    /// Merged into the stored positions (partitions not named keep theirs).
    pub positions: Positions,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.deletes.is_empty() && self.positions.is_empty()
    }
}

/// A search: free text plus filters and a page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchQuery {
    /// What the fan typed, matched by the rules of [`crate::relevance`].
    pub text: String,
    /// Only events in this city (case and accents ignored).
    pub city: Option<String>,
    /// Only events starting at or after this instant.
    pub from: Option<DateTime<Utc>>,
    /// Only events starting at or before this instant.
    pub to: Option<DateTime<Utc>>,
    /// Only events with seats left.
    pub available: bool,
    /// From 1.
    pub page: usize,
    pub per_page: usize,
}

impl SearchQuery {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            city: None,
            from: None,
            to: None,
            available: false,
            page: 1,
            per_page: PER_PAGE,
        }
    }

    /// How many hits come before this page.
    pub fn offset(&self) -> usize {
        self.page.saturating_sub(1) * self.per_page
    }
}

/// One page of hits, best first (relevance, then the sooner event).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResults {
    /// How many events match in all.
    pub total: u64,
    pub hits: Vec<Hit>,
    /// When nothing matches: the indexed artist names closest to the query, closest first.
    pub suggestions: Vec<String>,
}

/// One matching event.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub doc: EventDoc,
    pub score: f32,
}

/// Why a search index operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The search cannot be run as asked (e.g. it has no searchable word): the caller's mistake.
    #[error("invalid search: {0}")]
    InvalidQuery(String),
    #[error("no index version {0:?}")]
    NoSuchVersion(String),
    /// The backend is unreachable or failed: ours, and possibly transient.
    #[error("search backend failed: {0}")]
    Backend(String),
}

impl SearchError {
    pub(crate) fn backend(e: impl std::fmt::Display) -> Self {
        SearchError::Backend(e.to_string())
    }
}

/// A search index: versioned indexes behind an alias, documents written in batches with the
/// projector's positions, and fuzzy search.
///
/// Writes name a version (`Some`) or go to the one behind the alias (`None`). Every method is
/// safe to call concurrently; a backend serialises its own writes.
#[async_trait]
pub trait SearchIndex: Send + Sync + 'static {
    /// `tantivy` or `opensearch`.
    fn backend(&self) -> &'static str;

    /// Makes sure the alias points at an index, creating the first version if none does;
    /// returns the version behind the alias.
    async fn ensure(&self) -> Result<String, SearchError>;

    /// The version behind the alias, if any.
    async fn live_version(&self) -> Result<Option<String>, SearchError>;

    /// Creates a fresh, empty version that is not behind the alias yet; returns its name.
    async fn create_version(&self) -> Result<String, SearchError>;

    /// Points the alias at `version` in one step and deletes the version it pointed at before.
    async fn swap_alias(&self, version: &str) -> Result<(), SearchError>;

    /// Applies `batch` to `version` (or the live one) as one unit, visible when this returns.
    async fn apply(&self, version: Option<&str>, batch: Batch) -> Result<(), SearchError>;

    /// The positions stored with the documents of `version` (or the live one).
    async fn positions(&self, version: Option<&str>) -> Result<Positions, SearchError>;

    /// One document of the live version.
    async fn get(&self, event_id: EventId) -> Result<Option<EventDoc>, SearchError>;

    /// Searches the live version.
    async fn search(&self, query: &SearchQuery) -> Result<SearchResults, SearchError>;

    /// A counter that moves whenever what this instance's searches see may have changed (a
    /// write or an alias swap through it). Result caches key on it.
    fn changes(&self) -> watch::Receiver<u64>;

    /// Deletes every version and the alias (tests, and operators starting over).
    async fn destroy(&self) -> Result<(), SearchError>;
}

/// A new version's name: `<schema>-<UTC time>-<counter>`, sortable by creation.
pub(crate) fn version_name(schema: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{schema}-{}-{seq}", Utc::now().format("%Y%m%d%H%M%S%3f"))
}

/// Whether the version called `name` (`v2-...` or `<alias>-v2-...`) has the current schema;
/// an older one is replaced by a fresh version the projector fills from the journal.
pub(crate) fn is_current(name: &str) -> bool {
    let schema = crate::SCHEMA;
    name.starts_with(&format!("{schema}-")) || name.contains(&format!("-{schema}-"))
}
