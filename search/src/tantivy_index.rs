//! The embedded search index: tantivy, in a directory of the data directory.
//!
//! Each version is a tantivy index in its own subdirectory; the file `ALIAS` names the live one
//! and is replaced atomically (write, fsync, rename) to swap a rebuild in. A batch is one tantivy
//! commit whose payload carries the projector positions, so documents and positions are durable
//! together or not at all. Queries follow [`crate::text`]: per query word, the best of an exact
//! term (BM25), a fuzzy term within [`max_edits`] (swaps count once) and, for the last word, a
//! prefix, across the text fields with per-field boosts; filters score nothing; hits are ordered
//! by score, then start time.
//!
//! Writers are opened on first write, and the serving process rereads `ALIAS` at most every
//! half second, so `frontrow projector rebuild search` can run as a separate process beside a
//! running server: it writes only the new version, swaps the alias, and the server follows.

use std::collections::HashMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use async_trait::async_trait;
use frontrow_schema::EventId;
use tantivy::collector::sort_key::{SortBySimilarityScore, SortByStaticFastValue};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, FuzzyTermQuery, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, Order, ReloadPolicy, TantivyDocument, Term};
use tokio::sync::watch;
use tracing::info;

use crate::index::{Batch, EventDoc, Hit, Positions, SearchError, SearchIndex, SearchQuery, SearchResults};
use crate::text::{self, max_edits, query_words, required_words};

const ALIAS_FILE: &str = "ALIAS";
const WRITER_HEAP: usize = 50_000_000;
/// How often the serving process looks whether another process moved the alias.
const ALIAS_CHECK: std::time::Duration = std::time::Duration::from_millis(500);
/// Searchable text fields and their boosts.
const TEXT_FIELDS: [(&str, f32); 5] = [
    ("artist", 3.0),
    ("title", 2.0),
    ("city", 1.5),
    ("venue", 1.0),
    ("tags", 1.0),
];

/// The embedded tantivy search index.
pub struct TantivyIndex {
    dir: PathBuf,
    /// Versions opened by this process, by name.
    opened: Mutex<HashMap<String, Arc<Version>>>,
    live: RwLock<Option<Arc<Version>>>,
    /// When `ALIAS` was last read: a rebuild by another process moves it.
    alias_checked: Mutex<std::time::Instant>,
    changes: watch::Sender<u64>,
}

#[derive(Clone, Copy)]
struct Fields {
    event_id: Field,
    text: [Field; 5],
    city_key: Field,
    starts_at: Field,
    seats_left: Field,
    sold_out: Field,
    source: Field,
}

struct Version {
    name: String,
    fields: Fields,
    reader: IndexReader,
    index: Index,
    /// Opened on the first write, so that another process (a rebuild) can read this version
    /// while the serving process holds its writer.
    writer: Mutex<Option<IndexWriter>>,
    /// The positions of the last commit (its payload).
    positions: Mutex<Positions>,
}

fn backend(e: impl std::fmt::Display) -> SearchError {
    SearchError::backend(e)
}

fn schema() -> Schema {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(text::WORDS)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    b.add_text_field("event_id", STRING | STORED);
    for (name, _) in TEXT_FIELDS {
        b.add_text_field(name, words.clone());
    }
    b.add_text_field("city_key", STRING);
    b.add_i64_field("starts_at", INDEXED | tantivy::schema::FAST);
    b.add_u64_field("seats_left", INDEXED | tantivy::schema::FAST);
    b.add_bool_field("sold_out", INDEXED);
    b.add_text_field("source", STORED);
    b.build()
}

fn fields(schema: &Schema) -> Result<Fields, SearchError> {
    let f = |name: &str| schema.get_field(name).map_err(backend);
    Ok(Fields {
        event_id: f("event_id")?,
        text: [f("artist")?, f("title")?, f("city")?, f("venue")?, f("tags")?],
        city_key: f("city_key")?,
        starts_at: f("starts_at")?,
        seats_left: f("seats_left")?,
        sold_out: f("sold_out")?,
        source: f("source")?,
    })
}

impl Version {
    fn open(dir: &Path, name: &str, create: bool) -> Result<Self, SearchError> {
        let path = dir.join(name);
        let index = if create {
            std::fs::create_dir_all(&path).map_err(backend)?;
            Index::create_in_dir(&path, schema()).map_err(backend)?
        } else {
            Index::open_in_dir(&path).map_err(|_| SearchError::NoSuchVersion(name.to_owned()))?
        };
        index.tokenizers().register(text::WORDS, text::analyzer());
        let fields = fields(&index.schema())?;
        let positions = match index.load_metas().map_err(backend)?.payload {
            Some(payload) => serde_json::from_str(&payload).map_err(backend)?,
            None => Positions::new(),
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(backend)?;
        Ok(Self {
            name: name.to_owned(),
            fields,
            reader,
            index,
            writer: Mutex::new(None),
            positions: Mutex::new(positions),
        })
    }

    fn document(&self, doc: &EventDoc) -> Result<TantivyDocument, SearchError> {
        let f = &self.fields;
        let mut d = TantivyDocument::default();
        d.add_text(f.event_id, doc.event_id.to_string());
        for (field, value) in f.text[..4].iter().zip([&doc.artist, &doc.title, &doc.city, &doc.venue]) {
            d.add_text(*field, value);
        }
        for tag in &doc.tags {
            d.add_text(f.text[4], tag);
        }
        d.add_text(f.city_key, text::normalize(&doc.city));
        d.add_i64(f.starts_at, doc.starts_at.timestamp());
        d.add_u64(f.seats_left, u64::from(doc.seats_left));
        d.add_bool(f.sold_out, doc.sold_out);
        d.add_text(f.source, serde_json::to_string(doc).map_err(backend)?);
        Ok(d)
    }

    fn apply(&self, batch: &Batch) -> Result<(), SearchError> {
        let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let writer = match &mut *guard {
            Some(writer) => writer,
            None => guard.insert(self.index.writer_with_num_threads(1, WRITER_HEAP).map_err(backend)?),
        };
        let id_term = |id: &EventId| Term::from_field_text(self.fields.event_id, &id.to_string());
        for id in &batch.deletes {
            writer.delete_term(id_term(id));
        }
        for doc in &batch.upserts {
            writer.delete_term(id_term(&doc.event_id));
            writer.add_document(self.document(doc)?).map_err(backend)?;
        }
        let mut merged = self.positions.lock().unwrap_or_else(PoisonError::into_inner).clone();
        merged.extend(batch.positions.iter().map(|(p, o)| (*p, *o)));
        let mut commit = writer.prepare_commit().map_err(backend)?;
        commit.set_payload(&serde_json::to_string(&merged).map_err(backend)?);
        commit.commit().map_err(backend)?;
        *self.positions.lock().unwrap_or_else(PoisonError::into_inner) = merged;
        self.reader.reload().map_err(backend)
    }

    fn stored(&self, searcher: &tantivy::Searcher, at: DocAddress) -> Result<EventDoc, SearchError> {
        let doc: TantivyDocument = searcher.doc(at).map_err(backend)?;
        let source = doc
            .get_first(self.fields.source)
            .and_then(|v| v.as_str())
            .ok_or_else(|| backend("a document without its source"))?;
        serde_json::from_str(source).map_err(backend)
    }

    fn get(&self, event_id: EventId) -> Result<Option<EventDoc>, SearchError> {
        let searcher = self.reader.searcher();
        let term = Term::from_field_text(self.fields.event_id, &event_id.to_string());
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        let top = searcher
            .search(&query, &TopDocs::with_limit(1).order_by_score())
            .map_err(backend)?;
        top.first().map(|(_, at)| self.stored(&searcher, *at)).transpose()
    }

    fn query(&self, q: &SearchQuery) -> Result<Box<dyn Query>, SearchError> {
        let words = query_words(&q.text);
        if words.is_empty() {
            return Err(SearchError::InvalidQuery(format!(
                "{:?} has no word to search for",
                q.text
            )));
        }
        let f = &self.fields;
        let mut per_word: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(words.len());
        for (i, word) in words.iter().enumerate() {
            let last = i + 1 == words.len();
            let edits = max_edits(word);
            let mut alternatives: Vec<Box<dyn Query>> = Vec::new();
            for (field, (_, boost)) in f.text.iter().zip(TEXT_FIELDS) {
                let term = Term::from_field_text(*field, word);
                alternatives.push(Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs)),
                    2.0 * boost,
                )));
                if edits > 0 {
                    let fuzzy = FuzzyTermQuery::new(term.clone(), edits, true);
                    alternatives.push(Box::new(BoostQuery::new(Box::new(fuzzy), boost)));
                }
                if last {
                    let prefix = FuzzyTermQuery::new_prefix(term, 0, true);
                    alternatives.push(Box::new(BoostQuery::new(Box::new(prefix), boost)));
                }
            }
            per_word.push((Occur::Should, Box::new(DisjunctionMaxQuery::new(alternatives))));
        }
        let matched = BooleanQuery::with_minimum_required_clauses(per_word, required_words(words.len()));
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(matched))];
        let mut filter = |query: Box<dyn Query>| {
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(query, 0.0))));
        };
        if let Some(city) = &q.city {
            let term = Term::from_field_text(f.city_key, &text::normalize(city));
            filter(Box::new(TermQuery::new(term, IndexRecordOption::Basic)));
        }
        if q.from.is_some() || q.to.is_some() {
            let bound = |at: Option<chrono::DateTime<chrono::Utc>>| match at {
                Some(at) => Bound::Included(Term::from_field_i64(f.starts_at, at.timestamp())),
                None => Bound::Unbounded,
            };
            filter(Box::new(RangeQuery::new(bound(q.from), bound(q.to))));
        }
        if q.available {
            let term = Term::from_field_bool(f.sold_out, false);
            filter(Box::new(TermQuery::new(term, IndexRecordOption::Basic)));
        }
        Ok(Box::new(BooleanQuery::new(clauses)))
    }

    fn search(&self, q: &SearchQuery) -> Result<SearchResults, SearchError> {
        let query = self.query(q)?;
        let searcher = self.reader.searcher();
        let order = (
            (SortBySimilarityScore, Order::Desc),
            (SortByStaticFastValue::<i64>::for_field("starts_at"), Order::Asc),
        );
        let top = TopDocs::with_limit(q.per_page.max(1))
            .and_offset(q.offset())
            .order_by(order);
        let (total, top) = searcher.search(&*query, &(Count, top)).map_err(backend)?;
        let hits = top
            .into_iter()
            .map(|((score, _), at)| {
                Ok(Hit {
                    doc: self.stored(&searcher, at)?,
                    score,
                })
            })
            .collect::<Result<_, SearchError>>()?;
        Ok(SearchResults {
            total: total as u64,
            hits,
        })
    }
}

impl TantivyIndex {
    /// Opens (creating if needed) the index directory `dir`, e.g. `<data_dir>/search`.
    pub fn open(dir: &Path) -> Result<Self, SearchError> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        let this = Self {
            dir: dir.to_owned(),
            opened: Mutex::new(HashMap::new()),
            live: RwLock::new(None),
            alias_checked: Mutex::new(std::time::Instant::now()),
            changes: watch::Sender::new(0),
        };
        if let Some(name) = this.alias_target()? {
            let version = this.version(&name)?;
            *this.live.write().unwrap_or_else(PoisonError::into_inner) = Some(version);
        }
        Ok(this)
    }

    fn alias_target(&self) -> Result<Option<String>, SearchError> {
        match std::fs::read_to_string(self.dir.join(ALIAS_FILE)) {
            Ok(name) => Ok(Some(name.trim().to_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(backend(e)),
        }
    }

    fn version(&self, name: &str) -> Result<Arc<Version>, SearchError> {
        if name.is_empty() || name.contains(['/', '\\', '.']) {
            return Err(SearchError::NoSuchVersion(name.to_owned()));
        }
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = opened.get(name) {
            return Ok(v.clone());
        }
        let v = Arc::new(Version::open(&self.dir, name, false)?);
        opened.insert(name.to_owned(), v.clone());
        Ok(v)
    }

    fn live(&self) -> Option<Arc<Version>> {
        self.follow_alias();
        self.live.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Picks up an alias moved by another process (`frontrow projector rebuild search`), at
    /// most every [`ALIAS_CHECK`].
    fn follow_alias(&self) {
        {
            let mut checked = self.alias_checked.lock().unwrap_or_else(PoisonError::into_inner);
            if checked.elapsed() < ALIAS_CHECK {
                return;
            }
            *checked = std::time::Instant::now();
        }
        let Ok(Some(name)) = self.alias_target() else { return };
        let current = self.live.read().unwrap_or_else(PoisonError::into_inner).clone();
        if current.as_ref().is_some_and(|v| v.name == name) {
            return;
        }
        match self.version(&name) {
            Ok(version) => {
                *self.live.write().unwrap_or_else(PoisonError::into_inner) = Some(version);
                if let Some(old) = current {
                    self.opened
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&old.name);
                }
                self.bump();
                info!(version = %name, "search alias moved by another process, following it");
            }
            Err(e) => tracing::warn!(version = %name, error = %e, "search alias names a version that cannot be opened"),
        }
    }

    fn target(&self, version: Option<&str>) -> Result<Arc<Version>, SearchError> {
        match version {
            Some(name) => self.version(name),
            None => self.live().ok_or_else(|| SearchError::NoSuchVersion("(live)".into())),
        }
    }

    fn bump(&self) {
        self.changes.send_modify(|n| *n += 1);
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SearchError> + Send + 'static,
) -> Result<T, SearchError> {
    tokio::task::spawn_blocking(f).await.map_err(backend)?
}

#[async_trait]
impl SearchIndex for TantivyIndex {
    fn backend(&self) -> &'static str {
        "tantivy"
    }

    async fn ensure(&self) -> Result<String, SearchError> {
        if let Some(live) = self.live() {
            return Ok(live.name.clone());
        }
        let name = self.create_version().await?;
        self.swap_alias(&name).await?;
        Ok(name)
    }

    async fn live_version(&self) -> Result<Option<String>, SearchError> {
        Ok(self.live().map(|v| v.name.clone()))
    }

    async fn create_version(&self) -> Result<String, SearchError> {
        let name = crate::index::version_name("v1");
        let v = Arc::new(Version::open(&self.dir, &name, true)?);
        self.opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.clone(), v);
        Ok(name)
    }

    async fn swap_alias(&self, version: &str) -> Result<(), SearchError> {
        let new = self.version(version)?;
        let tmp = self.dir.join(format!("{ALIAS_FILE}.tmp"));
        {
            use std::io::Write;
            let mut file = std::fs::File::create(&tmp).map_err(backend)?;
            file.write_all(version.as_bytes()).map_err(backend)?;
            file.sync_all().map_err(backend)?;
        }
        std::fs::rename(&tmp, self.dir.join(ALIAS_FILE)).map_err(backend)?;
        let old = self.live.write().unwrap_or_else(PoisonError::into_inner).replace(new);
        self.bump();
        if let Some(old) = old.filter(|o| o.name != version) {
            self.opened
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&old.name);
            let path = self.dir.join(&old.name);
            drop(old);
            std::fs::remove_dir_all(&path).map_err(backend)?;
        }
        info!(version, "search alias swapped");
        Ok(())
    }

    async fn apply(&self, version: Option<&str>, batch: Batch) -> Result<(), SearchError> {
        let target = self.target(version)?;
        blocking(move || target.apply(&batch)).await?;
        self.bump();
        Ok(())
    }

    async fn positions(&self, version: Option<&str>) -> Result<Positions, SearchError> {
        let target = self.target(version)?;
        let positions = target.positions.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(positions.clone())
    }

    async fn get(&self, event_id: EventId) -> Result<Option<EventDoc>, SearchError> {
        let target = self.target(None)?;
        blocking(move || target.get(event_id)).await
    }

    async fn search(&self, query: &SearchQuery) -> Result<SearchResults, SearchError> {
        let target = self.target(None)?;
        let query = query.clone();
        blocking(move || target.search(&query)).await
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    async fn destroy(&self) -> Result<(), SearchError> {
        self.live.write().unwrap_or_else(PoisonError::into_inner).take();
        self.opened.lock().unwrap_or_else(PoisonError::into_inner).clear();
        std::fs::remove_dir_all(&self.dir).map_err(backend)?;
        std::fs::create_dir_all(&self.dir).map_err(backend)?;
        self.bump();
        Ok(())
    }
}
