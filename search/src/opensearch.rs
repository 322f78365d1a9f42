//! The scaled search index: Elasticsearch or OpenSearch over their shared REST API.
//!
//! Only calls both servers answer the same way are used: index create and delete, aliases,
//! bulk, get, search, a terms aggregation. Versions are indexes named `<alias>-v2-<created>`
//! created with the mapping in `schema/search/events-v2.json`; the alias moves to a rebuilt
//! version in one `_aliases` call. A batch is one `_bulk` request with `refresh=true`: the event
//! documents and one `position-<partition>` document per partition it advances, so the
//! projector's position is written with what it produced. Documents carry the words of
//! [`crate::relevance::document_fields`] (already analysed: the mapping only splits on spaces)
//! and the event itself under `doc`; a search translates a [`Plan`] literally: `term`,
//! edge n-gram and `fuzzy` queries under `constant_score`, a word their `dis_max`, the query a
//! `bool` with the tier's `minimum_should_match`; filters in `filter` context, sorted by
//! `_score`, then [`order_key`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

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
use crate::relevance::{self, Alternative, Clause, Match, Plan, Relevance, order_key};
use crate::text;

/// How long the artist names for suggestions are reused before they are asked for again.
const NAMES_TTL: Duration = Duration::from_secs(30);
/// How many terms a fuzzy alternative may expand to.
const MAX_EXPANSIONS: u32 = 200;

/// A search index on an Elasticsearch or OpenSearch cluster.
pub struct OpenSearchIndex {
    client: Elasticsearch,
    alias: String,
    relevance: Relevance,
    /// The indexed artist names, for suggestions, and when they were read.
    names: Mutex<Option<(Instant, u64, Vec<String>)>>,
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

/// Like [`ok_json`], but a 404 (no such alias or document) is `None`.
async fn json_unless_missing(response: Result<Response, elasticsearch::Error>) -> Result<Option<Value>, SearchError> {
    let response = response.map_err(backend)?;
    if response.status_code().as_u16() == 404 {
        return Ok(None);
    }
    ok_json(Ok(response)).await.map(Some)
}

fn alternative(a: &Alternative) -> Value {
    let field = a.field.name();
    let query = match a.matching {
        Match::Exact => json!({"term": {field: a.term}}),
        Match::Prefix => json!({"term": {format!("{field}.prefix"): a.term}}),
        Match::Fuzzy {
            edits,
            same_first_letter,
        } => json!({"fuzzy": {field: {
            "value": a.term, "fuzziness": edits, "prefix_length": u8::from(same_first_letter),
            "transpositions": true, "max_expansions": MAX_EXPANSIONS
        }}}),
    };
    json!({"constant_score": {"filter": query, "boost": a.score}})
}

fn clause(c: &Clause) -> Value {
    let queries: Vec<Value> = c.alternatives.iter().map(alternative).collect();
    json!({"dis_max": {"queries": queries, "tie_breaker": 0.0}})
}

impl OpenSearchIndex {
    /// A client of the cluster at `url` (e.g. `http://127.0.0.1:9200`) searching through `alias`
    /// (normally [`crate::DEFAULT_ALIAS`]). Nothing is sent until the first call.
    pub fn new(url: &str, alias: &str) -> Result<Self, SearchError> {
        let transport = Transport::single_node(url).map_err(backend)?;
        Ok(Self {
            client: Elasticsearch::new(transport),
            alias: alias.to_owned(),
            relevance: Relevance::default(),
            names: Mutex::new(None),
            changes: watch::Sender::new(0),
        })
    }

    /// The same index searching by other relevance settings (e.g. Meilisearch's typo allowance).
    pub fn with_relevance(mut self, relevance: Relevance) -> Self {
        self.relevance = relevance;
        self
    }

    fn bump(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// Deletes the index or indexes `name` (a pattern may match several).
    async fn delete_index(&self, name: &str) -> Result<(), SearchError> {
        let response = self
            .client
            .indices()
            .delete(IndicesDeleteParts::Index(&[name]))
            .send()
            .await;
        ok_json(response).await.map(drop)
    }

    fn event_source(doc: &EventDoc) -> Result<Value, SearchError> {
        let mut source = serde_json::Map::new();
        source.insert("kind".into(), json!("event"));
        source.insert("event_id".into(), json!(doc.listing.event_id.to_string()));
        source.insert("doc".into(), serde_json::to_value(doc).map_err(backend)?);
        for (field, words) in relevance::document_fields(doc) {
            source.insert(field.name().into(), json!(words));
        }
        let names: Vec<&str> = relevance::artist_names(doc).collect();
        source.insert("artist_name".into(), json!(names));
        source.insert("city_key".into(), json!(text::normalize(&doc.listing.city)));
        source.insert("starts_at".into(), json!(doc.listing.starts_at.to_rfc3339()));
        source.insert("order".into(), json!(order_key(doc)));
        source.insert("sold_out".into(), json!(doc.sold_out));
        Ok(Value::Object(source))
    }

    /// The search request body for `plan` with `required` of its words.
    fn body(plan: &Plan, required: usize, q: &SearchQuery) -> Value {
        let words: Vec<Value> = plan.required.iter().map(clause).collect();
        let optional: Vec<Value> = plan.optional.iter().map(clause).collect();
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
        json!({
            "from": q.offset(),
            "size": q.per_page,
            "track_total_hits": true,
            "_source": ["doc"],
            "query": {"bool": {
                "filter": filter,
                "must": [{"bool": {"should": words, "minimum_should_match": required}}],
                "should": optional,
            }},
            "sort": [{"_score": "desc"}, {"order": "asc"}],
        })
    }

    async fn run(&self, plan: &Plan, required: usize, q: &SearchQuery) -> Result<SearchResults, SearchError> {
        let response = self
            .client
            .search(SearchParts::Index(&[&self.alias]))
            .body(Self::body(plan, required, q))
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
                    doc: serde_json::from_value(hit["_source"]["doc"].clone()).map_err(backend)?,
                    score: hit["_score"]
                        .as_f64()
                        .or_else(|| hit["sort"][0].as_f64())
                        .unwrap_or(0.0) as f32,
                })
            })
            .collect::<Result<_, SearchError>>()?;
        Ok(SearchResults {
            total,
            hits,
            suggestions: Vec::new(),
        })
    }

    /// The distinct artist names and aliases indexed (a terms aggregation), reused for
    /// [`NAMES_TTL`] unless this instance wrote since.
    async fn artist_names(&self) -> Result<Vec<String>, SearchError> {
        let generation = *self.changes.borrow();
        if let Some((at, seen, names)) = &*self.names.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
            && at.elapsed() < NAMES_TTL
            && *seen == generation
        {
            return Ok(names.clone());
        }
        let body = json!({
            "size": 0,
            "query": {"term": {"kind": "event"}},
            "aggs": {"names": {"terms": {"field": "artist_name", "size": relevance::MAX_SUGGESTION_NAMES}}},
        });
        let response = self
            .client
            .search(SearchParts::Index(&[&self.alias]))
            .body(body)
            .send()
            .await;
        let answer = ok_json(response).await?;
        let names: Vec<String> = answer["aggregations"]["names"]["buckets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["key"].as_str().map(str::to_owned))
            .collect();
        *self.names.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((Instant::now(), generation, names.clone()));
        Ok(names)
    }
}

#[async_trait]
impl SearchIndex for OpenSearchIndex {
    fn backend(&self) -> &'static str {
        "opensearch"
    }

    async fn ensure(&self) -> Result<String, SearchError> {
        if let Some(live) = self.live_version().await?.filter(|v| crate::index::is_current(v)) {
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
            .await;
        let Some(body) = json_unless_missing(response).await? else {
            return Ok(None);
        };
        Ok(body.as_object().and_then(|m| m.keys().next().cloned()))
    }

    async fn create_version(&self) -> Result<String, SearchError> {
        let name = format!("{}-{}", self.alias, crate::index::version_name(crate::SCHEMA));
        let mapping: Value = serde_json::from_str(crate::MAPPING_V2).map_err(backend)?;
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
            self.delete_index(&old).await?;
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
            body.push(json!({"index": {"_id": doc.listing.event_id.to_string()}}).into());
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
            .await;
        let Some(answer) = json_unless_missing(response).await? else {
            return Ok(None);
        };
        if answer["found"].as_bool() != Some(true) {
            return Ok(None);
        }
        serde_json::from_value(answer["_source"]["doc"].clone())
            .map(Some)
            .map_err(backend)
    }

    async fn search(&self, query: &SearchQuery) -> Result<SearchResults, SearchError> {
        let plan = Plan::new(&query.text, &self.relevance)?;
        let run = |required| self.run(&plan, required, query);
        relevance::search_tiers(&plan, run, || self.artist_names()).await
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    async fn destroy(&self) -> Result<(), SearchError> {
        let pattern = format!("{}-v*", self.alias);
        self.delete_index(&pattern).await?;
        self.bump();
        Ok(())
    }
}
