//! The search conformance suite on a real OpenSearch (or Elasticsearch) node.
//!
//! Start one with `deploy/local/up.sh opensearch`; the node's URL comes from
//! `FRONTROW_OPENSEARCH_URL` (default `http://127.0.0.1:9200`). Every case uses its own alias
//! (`frontrow-test-<case>-<pid>`), so cases and concurrent runs do not meet. A missing server
//! fails these tests; it never skips them.

use std::sync::Arc;

use async_trait::async_trait;
use frontrow_search::conformance::Harness;
use frontrow_search::{OpenSearchIndex, SearchIndex, TantivyIndex, search_conformance};

struct OpenSearch {
    url: String,
}

#[async_trait]
impl Harness for OpenSearch {
    async fn open(&self, name: &str) -> Arc<dyn SearchIndex> {
        let alias = format!("frontrow-test-{name}-{}", std::process::id());
        Arc::new(OpenSearchIndex::new(&self.url, &alias).unwrap())
    }
}

fn harness() -> OpenSearch {
    OpenSearch {
        url: std::env::var("FRONTROW_OPENSEARCH_URL").unwrap_or_else(|_| "http://127.0.0.1:9200".into()),
    }
}

search_conformance!(#[ignore = "needs opensearch: run the README's test command"] => harness());

/// The relevance rules are written once: tantivy and OpenSearch give the same top three, with
/// the same scores, totals and suggestions, for every query of the fixture's classes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs opensearch: run the README's test command"]
async fn tantivy_and_opensearch_give_the_same_top_hits() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = TantivyIndex::open(dir.path()).unwrap();
    let cluster = harness().open("agree").await;
    frontrow_search::conformance::backends_agree(&embedded, &*cluster).await;
}
