//! The scaled search index: Elasticsearch or OpenSearch over their shared REST API.
//!
//! Only calls both servers answer the same way are used: index create and delete, aliases,
//! bulk, get, search. Versions are indexes named `<alias>-v1-<created>` created with the mapping
//! in `schema/search/events-v1.json`; the alias moves to a rebuilt version in one
//! `_aliases` call. A batch is one `_bulk` request with `refresh=true`: the event documents
//! and one `position-<partition>` document per partition it advances, so the projector's
//! position is written with what it produced. Searches are a `bool` query with one clause per
//! query word (exact, `fuzziness: AUTO` with transpositions, and edge n-gram prefixes for the
//! last word), filters in `filter` context, sorted by `_score`, then `starts_at`.

use async_trait::async_trait;
use elasticsearch::http::request::JsonBody;
use elasticsearch::http::response::Response;
use elasticsearch::http::transport::Transport;
use elasticsearch::indices::{IndicesCreateParts, IndicesDeleteParts, IndicesGetAliasParts};
use elasticsearch::params::Refresh;
use elasticsearch::{BulkParts, Elasticsearch, GetParts, SearchParts};
use frontrow_schema::EventId;
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::info;

use crate::index::{Batch, EventDoc, Hit, Positions, SearchError, SearchIndex, SearchQuery, SearchResults};
use crate::text::{self, max_edits, query_words, required_words};

/// Text fields and their boosts, as in the embedded index.
const TEXT_FIELDS: [(&str, f32); 5] = [
    ("artist", 3.0),
    ("title", 2.0),
    ("city", 1.5),
    ("venue", 1.0),
    ("tags", 1.0),
];

/// A search index on an Elasticsearch or OpenSearch cluster.
pub struct OpenSearchIndex {
    client: Elasticsearch,
    alias: String,
    changes: watch::Sender<u64>,
}

fn backend(e: impl std::fmt::Display) -> SearchError {
    SearchError::backend(e)
}

/// The body of a successful answer, or the server's complaint as an error.
async fn ok_json(response: Result<Response, elasticsearch::Error>) -> Result<Value, SearchError> {
    let response = response.map_err(backend)?;
    let status = response.status_code();
    let body = response.text().await.map_err(backend)?;
    if !status.is_success() {
        return Err(backend(format!("{status}: {body}")));
    }
    serde_json::from_str(&body).map_err(backend)
}

fn fields(suffix: &str, factor: f32) -> Vec<String> {
    TEXT_FIELDS
        .iter()
        .map(|(name, boost)| format!("{name}{suffix}^{}", boost * factor))
        .collect()
}

impl OpenSearchIndex {
    /// A client of the cluster at `url` (e.g. `http://127.0.0.1:9200`) searching through `alias`
    /// (normally [`crate::DEFAULT_ALIAS`]). Nothing is sent until the first call.
    pub fn new(url: &str, alias: &str) -> Result<Self, SearchError> {
        let transport = Transport::single_node(url).map_err(backend)?;
        Ok(Self {
            client: Elasticsearch::new(transport),
            alias: alias.to_owned(),
            changes: watch::Sender::new(0),
        })
    }

    fn bump(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    fn event_source(doc: &EventDoc) -> Result<Value, SearchError> {
        let mut source = serde_json::to_value(doc).map_err(backend)?;
        if let Value::Object(map) = &mut source {
            map.insert("kind".into(), json!("event"));
            map.insert("city_key".into(), json!(text::normalize(&doc.city)));
        }
        Ok(source)
    }

    /// The search request body.
    fn body(q: &SearchQuery) -> Result<Value, SearchError> {
        let words = query_words(&q.text);
        if words.is_empty() {
            return Err(SearchError::InvalidQuery(format!(
                "{:?} has no word to search for",
                q.text
            )));
        }
        let should: Vec<Value> = words
            .iter()
            .enumerate()
            .map(|(i, word)| {
                let mut alternatives = vec![json!({"multi_match": {"query": word, "fields": fields("", 2.0)}})];
                if max_edits(word) > 0 {
                    alternatives.push(json!({"multi_match": {
                        "query": word, "fields": fields("", 1.0), "fuzziness": "AUTO",
                        "fuzzy_transpositions": true, "max_expansions": 50
                    }}));
                }
                if i + 1 == words.len() {
                    alternatives.push(json!({"multi_match": {"query": word, "fields": fields(".prefix", 1.0)}}));
                }
                json!({"dis_max": {"queries": alternatives}})
            })
            .collect();
        let mut filter = vec![json!({"term": {"kind": "event"}})];
        if let Some(city) = &q.city {
            filter.push(json!({"term": {"city_key": text::normalize(city)}}));
        }
        if q.from.is_some() || q.to.is_some() {
            let mut range = serde_json::Map::new();
            if let Some(from) = q.from {
                range.insert("gte".into(), json!(from.to_rfc3339()));
            }
            if let Some(to) = q.to {
                range.insert("lte".into(), json!(to.to_rfc3339()));
            }
            filter.push(json!({"range": {"starts_at": range}}));
        }
        if q.available {
            filter.push(json!({"term": {"sold_out": false}}));
        }
        Ok(json!({
            "from": q.offset(),
            "size": q.per_page,
            "track_total_hits": true,
            "query": {"bool": {
                "filter": filter,
                "should": should,
                "minimum_should_match": required_words(words.len()),
            }},
            "sort": [{"_score": "desc"}, {"starts_at": "asc"}],
        }))
    }
}

#[async_trait]
impl SearchIndex for OpenSearchIndex {
    fn backend(&self) -> &'static str {
        "opensearch"
    }

    async fn ensure(&self) -> Result<String, SearchError> {
        if let Some(live) = self.live_version().await? {
            return Ok(live);
        }
        let name = self.create_version().await?;
        self.swap_alias(&name).await?;
        Ok(name)
    }

    async fn live_version(&self) -> Result<Option<String>, SearchError> {
        let response = self
            .client
            .indices()
            .get_alias(IndicesGetAliasParts::Name(&[&self.alias]))
            .send()
            .await
            .map_err(backend)?;
        if response.status_code().as_u16() == 404 {
            return Ok(None);
        }
        let body = ok_json(Ok(response)).await?;
        Ok(body.as_object().and_then(|m| m.keys().next().cloned()))
    }

    async fn create_version(&self) -> Result<String, SearchError> {
        let name = format!("{}-{}", self.alias, crate::index::version_name("v1"));
        let mapping: Value = serde_json::from_str(crate::MAPPING_V1).map_err(backend)?;
        let response = self
            .client
            .indices()
            .create(IndicesCreateParts::Index(&name))
            .body(mapping)
            .send()
            .await;
        ok_json(response).await?;
        Ok(name)
    }

    async fn swap_alias(&self, version: &str) -> Result<(), SearchError> {
        let old = self.live_version().await?;
        let mut actions = vec![json!({"add": {"index": version, "alias": self.alias}})];
        if let Some(old) = old.as_deref().filter(|o| *o != version) {
            actions.push(json!({"remove": {"index": old, "alias": self.alias}}));
        }
        let response = self
            .client
            .indices()
            .update_aliases()
            .body(json!({ "actions": actions }))
            .send()
            .await;
        ok_json(response).await?;
        self.bump();
        if let Some(old) = old.filter(|o| o != version) {
            let response = self
                .client
                .indices()
                .delete(IndicesDeleteParts::Index(&[&old]))
                .send()
                .await;
            ok_json(response).await?;
        }
        info!(version, alias = %self.alias, "search alias swapped");
        Ok(())
    }

    async fn apply(&self, version: Option<&str>, batch: Batch) -> Result<(), SearchError> {
        if batch.is_empty() {
            return Ok(());
        }
        let target = version.unwrap_or(&self.alias);
        let mut body: Vec<JsonBody<Value>> = Vec::with_capacity(2 * batch.upserts.len() + batch.deletes.len());
        for id in &batch.deletes {
            body.push(json!({"delete": {"_id": id.to_string()}}).into());
        }
        for doc in &batch.upserts {
            body.push(json!({"index": {"_id": doc.event_id.to_string()}}).into());
            body.push(Self::event_source(doc)?.into());
        }
        for (partition, offset) in &batch.positions {
            body.push(json!({"index": {"_id": format!("position-{partition}")}}).into());
            body.push(json!({"kind": "position", "partition": partition, "offset": offset}).into());
        }
        let response = self
            .client
            .bulk(BulkParts::Index(target))
            .refresh(Refresh::True)
            .body(body)
            .send()
            .await;
        let answer = ok_json(response).await?;
        if answer["errors"].as_bool() == Some(true) {
            let failed = answer["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| item.as_object()?.values().next()?.get("error").cloned())
                .next();
            if let Some(failed) = failed {
                return Err(backend(format!("bulk write refused: {failed}")));
            }
        }
        self.bump();
        Ok(())
    }

    async fn positions(&self, version: Option<&str>) -> Result<Positions, SearchError> {
        let target = version.unwrap_or(&self.alias);
        let response = self
            .client
            .search(SearchParts::Index(&[target]))
            .body(json!({"size": 1000, "query": {"term": {"kind": "position"}}}))
            .send()
            .await;
        let answer = ok_json(response).await?;
        let mut positions = Positions::new();
        for hit in answer["hits"]["hits"].as_array().into_iter().flatten() {
            let source = &hit["_source"];
            if let (Some(p), Some(o)) = (source["partition"].as_u64(), source["offset"].as_u64()) {
                positions.insert(p as u32, o);
            }
        }
        Ok(positions)
    }

    async fn get(&self, event_id: EventId) -> Result<Option<EventDoc>, SearchError> {
        let id = event_id.to_string();
        let response = self
            .client
            .get(GetParts::IndexId(&self.alias, &id))
            // What searches see: a document is visible once its bulk's refresh is done.
            .realtime(false)
            .send()
            .await
            .map_err(backend)?;
        if response.status_code().as_u16() == 404 {
            return Ok(None);
        }
        let answer = ok_json(Ok(response)).await?;
        if answer["found"].as_bool() != Some(true) {
            return Ok(None);
        }
        serde_json::from_value(answer["_source"].clone())
            .map(Some)
            .map_err(backend)
    }

    async fn search(&self, query: &SearchQuery) -> Result<SearchResults, SearchError> {
        let body = Self::body(query)?;
        let response = self
            .client
            .search(SearchParts::Index(&[&self.alias]))
            .body(body)
            .send()
            .await;
        let answer = ok_json(response).await?;
        let total = answer["hits"]["total"]["value"].as_u64().unwrap_or(0);
        let hits = answer["hits"]["hits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|hit| {
                Ok(Hit {
                    doc: serde_json::from_value(hit["_source"].clone()).map_err(backend)?,
                    score: hit["_score"]
                        .as_f64()
                        .or_else(|| hit["sort"][0].as_f64())
                        .unwrap_or(0.0) as f32,
                })
            })
            .collect::<Result<_, SearchError>>()?;
        Ok(SearchResults { total, hits })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    async fn destroy(&self) -> Result<(), SearchError> {
        let pattern = format!("{}-v*", self.alias);
        let response = self
            .client
            .indices()
            .delete(IndicesDeleteParts::Index(&[&pattern]))
            .send()
            .await;
        ok_json(response).await?;
        self.bump();
        Ok(())
    }
}
