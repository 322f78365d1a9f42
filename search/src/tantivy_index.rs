//! The embedded search index: tantivy, in a directory of the data directory.
//!
//! Each version is a tantivy index in its own subdirectory; the file `ALIAS` names the live one
//! and is replaced atomically (write, fsync, rename) to swap a rebuild in. A batch is one tantivy
//! commit whose payload carries the projector positions, so documents and positions are durable
//! together or not at all. Documents are indexed and queries are planned by
//! [`crate::relevance`]; this file only translates: a plan's alternatives become term, prefix
//! and Levenshtein-automaton queries with constant scores, a word the best of them
//! ([`DisjunctionMaxQuery`]), the query their sum with the tier's minimum of words; filters
//! score nothing; hits are ordered by score, then [`order_key`].
//!
//! Writers are opened on first write, and the serving process rereads `ALIAS` at most every
//! half second, so `frontrow projector rebuild search` can run as a separate process beside a
//! running server: it writes only the new version, swaps the alias, and the server follows.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use async_trait::async_trait;
use frontrow_schema::EventId;
use tantivy::collector::sort_key::{SortBySimilarityScore, SortByStaticFastValue};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    AutomatonWeight, BooleanQuery, ConstScoreQuery, DfaWrapper, DisjunctionMaxQuery, EnableScoring, FuzzyTermQuery,
    Occur, Query, RangeQuery, TermQuery, Weight,
};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, Order, ReloadPolicy, TantivyDocument, Term};
use tantivy_fst::Automaton;
use tokio::sync::watch;
use tracing::info;

use crate::index::{Batch, EventDoc, Hit, Positions, SearchError, SearchIndex, SearchQuery, SearchResults};
use crate::relevance::{self, Alternative, Match, Plan, Relevance, order_key};
use crate::text;

const ALIAS_FILE: &str = "ALIAS";
const WRITER_HEAP: usize = 50_000_000;
/// How often the serving process looks whether another process moved the alias.
const ALIAS_CHECK: std::time::Duration = std::time::Duration::from_millis(500);

/// The embedded tantivy search index.
pub struct TantivyIndex {
    dir: PathBuf,
    relevance: Relevance,
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
    /// In the order of [`relevance::Field::ALL`].
    text: [Field; 6],
    artist_name: Field,
    city_key: Field,
    starts_at: Field,
    order: Field,
    sold_out: Field,
    source: Field,
}

impl Fields {
    fn text(&self, field: relevance::Field) -> Field {
        let i = relevance::Field::ALL.iter().position(|f| *f == field).unwrap_or(0);
        self.text[i]
    }
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
            .set_index_option(IndexRecordOption::Basic),
    );
    b.add_text_field("event_id", STRING | STORED);
    for field in relevance::Field::ALL {
        b.add_text_field(field.name(), words.clone());
    }
    b.add_text_field("artist_name", STRING);
    b.add_text_field("city_key", STRING);
    b.add_i64_field("starts_at", INDEXED | tantivy::schema::FAST);
    b.add_i64_field("order", tantivy::schema::FAST);
    b.add_bool_field("sold_out", INDEXED);
    b.add_text_field("source", STORED);
    b.build()
}

fn fields(schema: &Schema) -> Result<Fields, SearchError> {
    let f = |name: &str| {
        schema.get_field(name).map_err(|_| {
            backend(format!(
                "the index has no field {name}: rebuild it (frontrow projector rebuild search)"
            ))
        })
    };
    let mut text = [f("event_id")?; 6];
    for (slot, field) in text.iter_mut().zip(relevance::Field::ALL) {
        *slot = f(field.name())?;
    }
    Ok(Fields {
        event_id: f("event_id")?,
        text,
        artist_name: f("artist_name")?,
        city_key: f("city_key")?,
        starts_at: f("starts_at")?,
        order: f("order")?,
        sold_out: f("sold_out")?,
        source: f("source")?,
    })
}

/// A Levenshtein automaton that only accepts words starting with a given first letter.
struct SameFirstLetter {
    first: Vec<u8>,
    dfa: DfaWrapper,
}

impl Automaton for SameFirstLetter {
    /// Bytes of the first letter read so far, and the state of the Levenshtein automaton;
    /// `None` once the first letter differs.
    type State = Option<(usize, u32)>;

    fn start(&self) -> Self::State {
        Some((0, self.dfa.start()))
    }

    fn is_match(&self, state: &Self::State) -> bool {
        matches!(state, Some((read, s)) if *read == self.first.len() && self.dfa.is_match(s))
    }

    fn can_match(&self, state: &Self::State) -> bool {
        matches!(state, Some((_, s)) if self.dfa.can_match(s))
    }

    fn accept(&self, state: &Self::State, byte: u8) -> Self::State {
        let (read, s) = (*state)?;
        if read < self.first.len() {
            (self.first[read] == byte).then(|| (read + 1, self.dfa.accept(&s, byte)))
        } else {
            Some((read, self.dfa.accept(&s, byte)))
        }
    }
}

/// Words within `edits` of a term that start with the term's first letter.
#[derive(Debug, Clone)]
struct FuzzySameFirstLetter {
    term: Term,
    edits: u8,
}

impl Query for FuzzySameFirstLetter {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let dfa = FuzzyTermQuery::new(self.term.clone(), self.edits, true).automaton()?;
        let value = self.term.value();
        let first = value.as_str().and_then(|w| w.chars().next());
        let first = first.map(|c| c.to_string().into_bytes()).unwrap_or_default();
        let automaton = SameFirstLetter { first, dfa };
        Ok(Box::new(AutomatonWeight::new(self.term.field(), automaton)))
    }
}

fn alternative_query(fields: &Fields, a: &Alternative) -> Box<dyn Query> {
    let term = Term::from_field_text(fields.text(a.field), &a.term);
    let query: Box<dyn Query> = match a.matching {
        Match::Exact => Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
        Match::Prefix => Box::new(FuzzyTermQuery::new_prefix(term, 0, true)),
        Match::Fuzzy {
            edits,
            same_first_letter: false,
        } => Box::new(FuzzyTermQuery::new(term, edits, true)),
        Match::Fuzzy {
            edits,
            same_first_letter: true,
        } => Box::new(FuzzySameFirstLetter { term, edits }),
    };
    Box::new(ConstScoreQuery::new(query, a.score))
}

fn clause_query(fields: &Fields, clause: &relevance::Clause) -> Box<dyn Query> {
    let alternatives = clause
        .alternatives
        .iter()
        .map(|a| alternative_query(fields, a))
        .collect();
    Box::new(DisjunctionMaxQuery::new(alternatives))
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
        index.tokenizers().register(text::WORDS, text::whitespace());
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
        d.add_text(f.event_id, doc.listing.event_id.to_string());
        for (field, words) in relevance::document_fields(doc) {
            d.add_text(f.text(field), words);
        }
        for name in relevance::artist_names(doc) {
            d.add_text(f.artist_name, name);
        }
        d.add_text(f.city_key, text::normalize(&doc.listing.city));
        d.add_i64(f.starts_at, doc.listing.starts_at.timestamp());
        d.add_i64(f.order, order_key(doc));
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
            writer.delete_term(id_term(&doc.listing.event_id));
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

    fn query(&self, plan: &Plan, required: usize, q: &SearchQuery) -> Box<dyn Query> {
        let f = &self.fields;
        let words: Vec<(Occur, Box<dyn Query>)> = plan
            .required
            .iter()
            .map(|c| (Occur::Should, clause_query(f, c)))
            .collect();
        let matched = BooleanQuery::with_minimum_required_clauses(words, required);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(matched))];
        clauses.extend(plan.optional.iter().map(|c| (Occur::Should, clause_query(f, c))));
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
        Box::new(BooleanQuery::new(clauses))
    }

    fn search(&self, plan: &Plan, required: usize, q: &SearchQuery) -> Result<SearchResults, SearchError> {
        let query = self.query(plan, required, q);
        let searcher = self.reader.searcher();
        let order = (
            (SortBySimilarityScore, Order::Desc),
            (SortByStaticFastValue::<i64>::for_field("order"), Order::Asc),
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
            suggestions: Vec::new(),
        })
    }

    /// The distinct artist names and aliases indexed, at most
    /// [`relevance::MAX_SUGGESTION_NAMES`].
    fn artist_names(&self) -> Result<Vec<String>, SearchError> {
        let searcher = self.reader.searcher();
        let mut names = BTreeSet::new();
        for segment in searcher.segment_readers() {
            let index = segment.inverted_index(self.fields.artist_name).map_err(backend)?;
            let mut terms = index.terms().stream().map_err(backend)?;
            while terms.advance() && names.len() < relevance::MAX_SUGGESTION_NAMES {
                if let Ok(name) = std::str::from_utf8(terms.key()) {
                    names.insert(name.to_owned());
                }
            }
        }
        Ok(names.into_iter().collect())
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
            relevance: Relevance::default(),
            alias_checked: Mutex::new(std::time::Instant::now()),
            changes: watch::Sender::new(0),
        };
        match this.alias_target()? {
            Some(name) if crate::index::is_current(&name) => {
                let version = this.version(&name)?;
                *this.live.write().unwrap_or_else(PoisonError::into_inner) = Some(version);
            }
            Some(name) => info!(version = %name, "the search index has an older schema; a new version will be built"),
            None => {}
        }
        Ok(this)
    }

    /// The same index searching by other relevance settings (e.g. Meilisearch's typo allowance).
    pub fn with_relevance(mut self, relevance: Relevance) -> Self {
        self.relevance = relevance;
        self
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
        let outdated = self.alias_target()?;
        let name = self.create_version().await?;
        self.swap_alias(&name).await?;
        if let Some(old) = outdated.filter(|old| !crate::index::is_current(old) && !old.contains(['/', '\\', '.'])) {
            std::fs::remove_dir_all(self.dir.join(&old)).map_err(backend)?;
        }
        Ok(name)
    }

    async fn live_version(&self) -> Result<Option<String>, SearchError> {
        Ok(self.live().map(|v| v.name.clone()))
    }

    async fn create_version(&self) -> Result<String, SearchError> {
        let name = crate::index::version_name(crate::SCHEMA);
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
        let plan = Arc::new(Plan::new(&query.text, &self.relevance)?);
        let query = Arc::new(query.clone());
        let run = |required| {
            let (target, plan, query) = (target.clone(), plan.clone(), query.clone());
            blocking(move || target.search(&plan, required, &query))
        };
        let names = || {
            let target = target.clone();
            blocking(move || target.artist_names())
        };
        relevance::search_tiers(&plan, run, names).await
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
