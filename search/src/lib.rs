//! Event search: fans find events by what they remember, misspelled.
//!
//! [`SearchIndex`] is the port: documents ([`EventDoc`]) written in batches together with the
//! search projector's journal positions, fuzzy and as-you-type search with filters, and
//! versioned indexes behind an alias so a rebuild can be swapped in. It has two
//! implementations: [`TantivyIndex`], embedded in the data directory (the default), and
//! [`OpenSearchIndex`], which speaks the Elasticsearch REST API (tested against OpenSearch 2.19).
//! `conformance` (behind the `testsuite` feature, with the `fixture` catalogue) is the one suite
//! both pass.
//!
//! [`projector`] follows the journal and keeps the index current (one upsert per changed event
//! per batch, position in the same write), [`api`] serves `GET /search` with a cache of recent
//! results. [`text`] and [`relevance`] hold the matching rules both backends share, written once:
//! how text becomes words, what a document indexes, how a query is planned (typos, prefixes,
//! words run together or split, connectors, fallbacks when nothing matches, suggestions) and
//! how hits are highlighted.

pub mod api;
#[cfg(feature = "testsuite")]
pub mod conformance;
#[cfg(any(test, feature = "testsuite"))]
pub mod fixture;
mod index;
mod opensearch;
pub mod projector;
pub mod relevance;
mod tantivy_index;
pub mod text;

pub use api::{SearchApi, router};
pub use index::{
    Batch, DEFAULT_ALIAS, EventDoc, Hit, Listing, PER_PAGE, Positions, SearchError, SearchIndex, SearchQuery,
    SearchResults,
};
pub use opensearch::OpenSearchIndex;
pub use tantivy_index::TantivyIndex;

/// The index mapping (settings, analyzers and fields) of schema version 2, as Elasticsearch and
/// OpenSearch read it. The tantivy schema in [`TantivyIndex`] mirrors it field by field.
pub const MAPPING_V2: &str = include_str!("../../schema/search/events-v2.json");
/// The schema version in index names (`<alias>-v2-<created>`).
pub const SCHEMA: &str = "v2";
