//! The search conformance suite on the embedded tantivy index.

use std::sync::Arc;

use async_trait::async_trait;
use frontrow_search::conformance::Harness;
use frontrow_search::{SearchIndex, TantivyIndex, search_conformance};

struct Tantivy(tempfile::TempDir);

#[async_trait]
impl Harness for Tantivy {
    async fn open(&self, name: &str) -> Arc<dyn SearchIndex> {
        Arc::new(TantivyIndex::open(&self.0.path().join(name)).unwrap())
    }
}

fn harness() -> Tantivy {
    Tantivy(tempfile::tempdir().unwrap())
}

search_conformance!(harness());

/// A rebuild made by another process (another `TantivyIndex` on the same directory) is
/// followed by the serving one.
#[tokio::test]
async fn a_server_follows_a_rebuild_made_by_another_process() {
    use frontrow_search::{Batch, SearchQuery, fixture};

    let dir = tempfile::tempdir().unwrap();
    let serving = TantivyIndex::open(dir.path()).unwrap();
    serving.ensure().await.unwrap();
    let mut old = fixture::events(1).remove(0);
    old.listing.artist = "Old Band".into();
    serving
        .apply(
            None,
            Batch {
                upserts: vec![old],
                ..Batch::default()
            },
        )
        .await
        .unwrap();
    let changes = serving.changes();

    let rebuilder = TantivyIndex::open(dir.path()).unwrap();
    let version = rebuilder.create_version().await.unwrap();
    let mut new = fixture::events(2).remove(1);
    new.listing.artist = "New Band".into();
    rebuilder
        .apply(
            Some(&version),
            Batch {
                upserts: vec![new],
                ..Batch::default()
            },
        )
        .await
        .unwrap();
    rebuilder.swap_alias(&version).await.unwrap();
    drop(rebuilder);

    // The serving process looks for a moved alias at most every half second.
    let live = || async { serving.live_version().await.unwrap() };
    let moved = |v: &Option<String>| (v.as_deref() == Some(version.as_str())).then_some(());
    let message = "the serving index follows the alias";
    frontrow_schema::testsuite::wait_until(std::time::Duration::from_secs(5), message, live, moved).await;
    let found = serving.search(&SearchQuery::text("band")).await.unwrap();
    assert_eq!(found.hits.len(), 1);
    assert_eq!(found.hits[0].doc.listing.artist, "New Band");
    assert!(changes.has_changed().unwrap(), "result caches are told");
}

/// A data directory whose live version has an older schema (before the relevance rules) opens,
/// gets a fresh version the projector fills from the journal, and loses the old one.
#[tokio::test]
async fn an_older_schema_version_is_replaced() {
    use frontrow_search::{Batch, SearchQuery, fixture};

    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v1-20260101000000000-0");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("meta.json"), "{}").unwrap();
    std::fs::write(dir.path().join("ALIAS"), "v1-20260101000000000-0").unwrap();
    let index = TantivyIndex::open(dir.path()).unwrap();
    assert_eq!(index.live_version().await.unwrap(), None);
    let live = index.ensure().await.unwrap();
    assert!(live.starts_with("v2-"), "{live}");
    assert!(!old.exists(), "the old version is deleted");
    let batch = Batch {
        upserts: fixture::events(1),
        ..Batch::default()
    };
    index.apply(None, batch).await.unwrap();
    assert_eq!(index.search(&SearchQuery::text("coldplay")).await.unwrap().total, 1);
}

/// The typo allowance is a setting: Meilisearch's allows no typo in a four-letter word,
/// Algolia's (the default) allows one.
#[tokio::test]
async fn the_typo_allowance_is_configurable() {
    use frontrow_search::relevance::Relevance;
    use frontrow_search::text::Typos;
    use frontrow_search::{Batch, SearchQuery, fixture};

    let dir = tempfile::tempdir().unwrap();
    let mut doc = fixture::events(1).remove(0);
    doc.listing.artist = "Bad Bunny".into();
    let default = TantivyIndex::open(dir.path()).unwrap();
    default.ensure().await.unwrap();
    let batch = Batch {
        upserts: vec![doc],
        ..Batch::default()
    };
    default.apply(None, batch).await.unwrap();
    let both = default.search(&SearchQuery::text("buny bad")).await.unwrap();
    assert_eq!(both.hits.len(), 1);
    drop(default);
    let meili = TantivyIndex::open(dir.path()).unwrap().with_relevance(Relevance {
        typos: Typos::MEILISEARCH,
    });
    let found = meili.search(&SearchQuery::text("buny bad")).await.unwrap();
    assert_eq!(found.hits.len(), 1, "bad still matches: the fallback drops buny");
    assert!(found.hits[0].score < both.hits[0].score, "only one word matched");
}
