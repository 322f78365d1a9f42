//! The relevance rules, written once: what a document indexes and how a query is planned.
//!
//! Both backends index the fields of [`document_fields`] (words from [`crate::text`], joined by
//! spaces) and translate a [`Plan`] literally into their own query objects, so that they give
//! the same hits in the same order: every alternative scores a constant (no term statistics),
//! a query word scores its best alternative, and a hit scores the sum over the query's words.
//!
//! - **Typos** by word length ([`Typos`], Algolia's 4/8 by default), a typo on the first letter
//!   counting as two, a swap of neighbours as one; fewer typos score higher.
//! - **Prefix**: the last word also matches as the start of a word, for results while typing.
//! - **Concatenation and splitting**: adjacent query words are also looked for run together
//!   (`pine apple` finds `Pineapple`), and documents index their adjacent words run together
//!   in [`Field::Joined`] (`pineapple` finds `Pine Apple`, `acdc` finds `AC/DC`,
//!   `ar rahman` finds `A. R. Rahman`); runs of single letters (initials, `R.E.M.`, `M.I.A.`)
//!   are also joined whole.
//! - **Connectors** (`and`, `n'`, `et`, `und`, ... [`crate::text::CONNECTORS`]; `&` and `+`
//!   are punctuation) are optional: they add a little when they match and cost nothing when not.
//! - **No dead ends**: every other word is required first; when that finds nothing, one word
//!   may be missing, then any number ([`Plan::tiers`]), ranked by how many words match and how
//!   well, so full matches stay above partial ones.
//! - **Aliases** are indexed as the artist (same field, same weight).
//! - **Did you mean**: a search that still finds nothing suggests the indexed artist names
//!   (and aliases) closest to it ([`suggest`]).

use std::collections::BTreeSet;
use std::future::Future;

use crate::index::{EventDoc, SearchError, SearchResults};
use crate::text::{self, Typos};

/// The searchable fields, as both backends name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The artist and the artist's aliases.
    Artist,
    Title,
    City,
    Venue,
    Tags,
    /// Adjacent words of the artist, aliases, title, venue and city run together.
    Joined,
}

impl Field {
    pub const ALL: [Field; 6] = [
        Field::Artist,
        Field::Title,
        Field::City,
        Field::Venue,
        Field::Tags,
        Field::Joined,
    ];

    /// The field's name in both indexes.
    pub fn name(self) -> &'static str {
        match self {
            Field::Artist => "s_artist",
            Field::Title => "s_title",
            Field::City => "s_city",
            Field::Venue => "s_venue",
            Field::Tags => "s_tags",
            Field::Joined => "s_joined",
        }
    }

    /// How much a match in this field counts.
    pub fn boost(self) -> f32 {
        match self {
            Field::Artist => 3.0,
            Field::Title | Field::Joined => 2.0,
            Field::City => 1.5,
            Field::Venue | Field::Tags => 1.0,
        }
    }
}

// How much each kind of match counts, times the field's boost. All are multiples of 1/8, so
// sums are exact in `f32` whatever order a backend adds them in.
const EXACT: f32 = 1.0;
const CONCATENATED: f32 = 0.875;
const PREFIX: f32 = 0.75;
const ONE_TYPO: f32 = 0.625;
const TWO_TYPOS: f32 = 0.375;
const CONNECTOR: f32 = 0.125;
/// The longest prefix matched (the OpenSearch edge n-grams stop there).
pub const MAX_PREFIX_CHARS: usize = 20;
/// The most words run together in [`Field::Joined`] and from a query.
const MAX_JOINED: usize = 3;
/// How many suggestions a zero-hit answer carries.
pub const SUGGESTIONS: usize = 3;
/// The most distinct artist names a suggestion is looked for among.
pub const MAX_SUGGESTION_NAMES: usize = 20_000;

/// The relevance settings a backend plans with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Relevance {
    pub typos: Typos,
}

/// The searchable text of `doc`, per field: its words joined by spaces.
pub fn document_fields(doc: &EventDoc) -> Vec<(Field, String)> {
    let artist: Vec<Vec<String>> = artist_names(doc).map(text::words).collect();
    let title = text::words(&doc.listing.title);
    let venue = text::words(&doc.listing.venue);
    let city = text::words(&doc.listing.city);
    let tags: Vec<String> = doc.listing.tags.iter().flat_map(|t| text::words(t)).collect();
    let mut joined = Vec::new();
    for words in artist.iter().chain([&title, &venue, &city]) {
        joined_words(words, &mut joined);
    }
    vec![
        (Field::Artist, artist.concat().join(" ")),
        (Field::Title, title.join(" ")),
        (Field::City, city.join(" ")),
        (Field::Venue, venue.join(" ")),
        (Field::Tags, tags.join(" ")),
        (Field::Joined, joined.join(" ")),
    ]
}

/// The artist and the aliases of `doc`, as written.
pub fn artist_names(doc: &EventDoc) -> impl Iterator<Item = &str> {
    std::iter::once(doc.listing.artist.as_str()).chain(doc.listing.aliases.iter().map(String::as_str))
}

/// Adjacent `words` run together (2 to [`MAX_JOINED`] at a time), and each run of single
/// letters longer than that whole.
fn joined_words(words: &[String], out: &mut Vec<String>) {
    for (start, _) in words.iter().enumerate() {
        for len in 2..=MAX_JOINED {
            if let Some(window) = words.get(start..start + len) {
                out.push(window.concat());
            }
        }
    }
    for run in initial_runs(words) {
        if run.len() > MAX_JOINED {
            out.push(words[run].concat());
        }
    }
}

/// The ranges of `words` that are runs of at least two one-letter words (initials).
fn initial_runs(words: &[String]) -> Vec<std::ops::Range<usize>> {
    let single = |w: &String| w.chars().count() == 1;
    let mut runs = Vec::new();
    let mut start = None;
    for (i, w) in words.iter().enumerate() {
        match (single(w), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if i - s >= 2 {
                    runs.push(s..i);
                }
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start.filter(|s| words.len() - s >= 2) {
        runs.push(s..words.len());
    }
    runs
}

/// How an alternative matches an indexed word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Exact,
    /// The indexed word starts with the term.
    Prefix,
    /// Within `edits` edits (a swap of neighbours is one); with `same_first_letter`, only
    /// words starting with the term's first letter.
    Fuzzy {
        edits: u8,
        same_first_letter: bool,
    },
}

/// One way a query word can match: `term` in `field`, scoring `score`.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    pub field: Field,
    pub term: String,
    pub matching: Match,
    pub score: f32,
}

/// One query word: it matches when any alternative does and scores the best one.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub word: String,
    pub alternatives: Vec<Alternative>,
}

/// A planned query: clauses that must match (as many as the tier asks) and optional ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The query's words, in order.
    pub words: Vec<String>,
    pub required: Vec<Clause>,
    /// Connector words: they score when they match and are never needed.
    pub optional: Vec<Clause>,
}

fn alternatives_for(term: &str, weight: f32, last: bool, typos: &Typos, fields: &[Field], out: &mut Vec<Alternative>) {
    let allowed = typos.allowed(term);
    let prefix = last && term.chars().count() <= MAX_PREFIX_CHARS;
    for &field in fields {
        let mut add = |matching, kind: f32| {
            out.push(Alternative {
                field,
                term: term.to_owned(),
                matching,
                score: field.boost() * weight * kind,
            });
        };
        add(Match::Exact, EXACT);
        if prefix {
            add(Match::Prefix, PREFIX);
        }
        if allowed >= 1 {
            add(
                Match::Fuzzy {
                    edits: 1,
                    same_first_letter: true,
                },
                ONE_TYPO,
            );
        }
        if allowed >= 2 {
            add(
                Match::Fuzzy {
                    edits: 2,
                    same_first_letter: true,
                },
                TWO_TYPOS,
            );
            // A typo on the first letter counts as two: only one edit in all.
            add(
                Match::Fuzzy {
                    edits: 1,
                    same_first_letter: false,
                },
                TWO_TYPOS,
            );
        }
    }
}

impl Plan {
    /// Plans `text` under `relevance`; a text without words is the caller's mistake.
    pub fn new(text: &str, relevance: &Relevance) -> Result<Plan, SearchError> {
        let words = text::query_words(text);
        if words.is_empty() {
            return Err(SearchError::InvalidQuery(format!("{text:?} has no word to search for")));
        }
        let all_connectors = words.iter().all(|w| text::is_connector(w));
        let typos = &relevance.typos;
        let mut clauses: Vec<Clause> = words
            .iter()
            .enumerate()
            .map(|(i, word)| {
                let mut alternatives = Vec::new();
                alternatives_for(word, 1.0, i + 1 == words.len(), typos, &Field::ALL, &mut alternatives);
                Clause {
                    word: word.clone(),
                    alternatives,
                }
            })
            .collect();
        // Adjacent words run together: each word of the window may be matched by the whole.
        let base = &Field::ALL[..5];
        let mut windows: Vec<std::ops::Range<usize>> = Vec::new();
        for start in 0..words.len() {
            for len in 2..=MAX_JOINED {
                if start + len <= words.len() {
                    windows.push(start..start + len);
                }
            }
        }
        windows.extend(initial_runs(&words).into_iter().filter(|r| r.len() > MAX_JOINED));
        for window in windows {
            let term = words[window.clone()].concat();
            let last = window.end == words.len();
            let mut alternatives = Vec::new();
            let no_typos = Typos {
                one_from: usize::MAX,
                two_from: usize::MAX,
            };
            alternatives_for(&term, CONCATENATED, last, &no_typos, base, &mut alternatives);
            for clause in &mut clauses[window] {
                clause.alternatives.extend(alternatives.iter().cloned());
            }
        }
        let (required, mut optional): (Vec<Clause>, Vec<Clause>) = clauses
            .into_iter()
            .partition(|c| all_connectors || !text::is_connector(&c.word));
        for clause in &mut optional {
            clause
                .alternatives
                .retain(|a| a.matching == Match::Exact && a.term == clause.word);
            for a in &mut clause.alternatives {
                a.score = a.field.boost() * CONNECTOR;
            }
        }
        Ok(Plan {
            words,
            required,
            optional,
        })
    }

    /// How many required clauses a hit must match, strictest first: all, then all but one,
    /// then one. The first tier that finds anything is the answer.
    pub fn tiers(&self) -> Vec<usize> {
        let n = self.required.len();
        let mut tiers = vec![n];
        for k in [n.saturating_sub(1), 1] {
            if k >= 1 && !tiers.contains(&k) {
                tiers.push(k);
            }
        }
        tiers
    }
}

/// Runs `plan` tier by tier through `run` (which searches with that many required clauses)
/// until one finds something; a search that finds nothing at all asks `names` for the indexed
/// artist names and suggests the closest.
pub(crate) async fn search_tiers<Run, RunFut, Names, NamesFut>(
    plan: &Plan,
    mut run: Run,
    names: Names,
) -> Result<SearchResults, SearchError>
where
    Run: FnMut(usize) -> RunFut,
    RunFut: Future<Output = Result<SearchResults, SearchError>>,
    Names: FnOnce() -> NamesFut,
    NamesFut: Future<Output = Result<Vec<String>, SearchError>>,
{
    let mut results = SearchResults::default();
    for required in plan.tiers() {
        results = run(required).await?;
        if results.total > 0 {
            return Ok(results);
        }
    }
    let names = names().await?;
    results.suggestions = suggest(&plan.words, names.iter().map(String::as_str));
    Ok(results)
}

/// The [`SUGGESTIONS`] names closest to the query `words`: by the typos between the whole
/// query and the whole name (spaces ignored), or between a query word of four letters or more
/// and a word of the name, whichever is fewer; at most two letters in five may differ.
pub fn suggest<'a>(words: &[String], names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let query = words.concat();
    let mut scored: BTreeSet<(usize, String)> = BTreeSet::new();
    for name in names.take(MAX_SUGGESTION_NAMES) {
        let name_words = text::words(name);
        let whole = name_words.concat();
        let mut best = close(&query, &whole);
        for q in words.iter().filter(|w| w.chars().count() >= 4) {
            for w in &name_words {
                best = best.min(close(q, w));
            }
        }
        // A name the query already spells found nothing because of the filters: no news.
        if best != usize::MAX && whole != query {
            scored.insert((best, name.to_owned()));
        }
    }
    let mut out: Vec<String> = Vec::new();
    for (_, name) in scored {
        if !out.contains(&name) {
            out.push(name);
        }
        if out.len() == SUGGESTIONS {
            break;
        }
    }
    out
}

/// The edit distance of `a` and `b` when it is at most two fifths of the longer, else
/// `usize::MAX`.
fn close(a: &str, b: &str) -> usize {
    let longest = a.chars().count().max(b.chars().count());
    if b.is_empty() || a.chars().count().abs_diff(b.chars().count()) * 5 > longest * 2 {
        return usize::MAX;
    }
    let d = text::edit_distance(a, b);
    if d * 5 <= longest * 2 { d } else { usize::MAX }
}

/// The key hits are ordered by after their score: the start time, then the event id, so both
/// backends break ties the same way.
pub fn order_key(doc: &EventDoc) -> i64 {
    let low = (doc.listing.event_id.as_uuid().as_u128() & 0xff_ffff) as i64;
    (doc.listing.starts_at.timestamp() << 24) | low
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn doc(artist: &str, aliases: &[&str], title: &str) -> EventDoc {
        let mut d = fixture::events(1).remove(0);
        d.listing.artist = artist.into();
        d.listing.aliases = aliases.iter().map(|a| (*a).to_owned()).collect();
        d.listing.title = title.into();
        d
    }

    fn field(doc: &EventDoc, f: Field) -> String {
        document_fields(doc).into_iter().find(|(g, _)| *g == f).unwrap().1
    }

    #[test]
    fn documents_index_aliases_as_the_artist_and_words_run_together() {
        let d = doc("A. R. Rahman", &["ARR"], "Pine Apple Nights");
        assert_eq!(field(&d, Field::Artist), "a r rahman arr");
        let joined = field(&d, Field::Joined);
        for j in ["ar", "arrahman", "pineapple", "pineapplenights"] {
            assert!(joined.split(' ').any(|w| w == j), "{j} in {joined}");
        }
        let rem = doc("R.E.M.", &[], "Monster Tour");
        assert!(field(&rem, Field::Joined).split(' ').any(|w| w == "rem"));
        let long = doc("K. D. L. A. N.", &[], "x");
        assert!(field(&long, Field::Joined).split(' ').any(|w| w == "kdlan"));
    }

    #[test]
    fn plans_make_connectors_optional_and_fall_back_in_tiers() {
        let r = Relevance::default();
        let plan = Plan::new("Guns n' Roses", &r).unwrap();
        assert_eq!(plan.words, ["guns", "n", "roses"]);
        assert_eq!(
            plan.required.iter().map(|c| c.word.as_str()).collect::<Vec<_>>(),
            ["guns", "roses"]
        );
        assert_eq!(plan.optional.len(), 1);
        assert_eq!(plan.tiers(), [2, 1]);
        assert_eq!(
            Plan::new("and", &r).unwrap().required.len(),
            1,
            "a query of connectors keeps them"
        );
        assert_eq!(Plan::new("a b c d", &r).unwrap().tiers(), [4, 3, 1]);
        assert_eq!(Plan::new("bts", &r).unwrap().tiers(), [1]);
        // "pine apple": both words may be matched by "pineapple".
        let plan = Plan::new("pine apple", &r).unwrap();
        for clause in &plan.required {
            assert!(clause.alternatives.iter().any(|a| a.term == "pineapple"));
        }
        assert!(matches!(Plan::new("!!", &r), Err(SearchError::InvalidQuery(_))));
    }

    #[test]
    fn typo_allowance_shapes_the_alternatives() {
        let fuzzy = |q: &str, r: &Relevance| {
            Plan::new(q, r).unwrap().required[0]
                .alternatives
                .iter()
                .filter(|a| a.field == Field::Artist && a.term == q)
                .map(|a| a.matching)
                .collect::<Vec<_>>()
        };
        let algolia = Relevance::default();
        let meili = Relevance {
            typos: Typos::MEILISEARCH,
        };
        assert_eq!(fuzzy("bts", &algolia).len(), 2, "exact, prefix");
        assert_eq!(fuzzy("abba", &algolia).len(), 3, "exact, prefix, one typo");
        assert_eq!(fuzzy("abba", &meili).len(), 2, "exact, prefix");
        assert_eq!(fuzzy("coldplay", &algolia).len(), 5);
    }

    #[test]
    fn suggestions_are_the_closest_names() {
        let names = ["Coldplay", "Beyoncé", "Cold War Kids", "Taylor Swift", "BTS"];
        let s = |q: &str| suggest(&text::query_words(q), names.iter().copied());
        assert_eq!(s("kolplai")[0], "Coldplay");
        assert_eq!(s("beyonsay"), ["Beyoncé"]);
        assert_eq!(s("tailor swiff")[0], "Taylor Swift");
        assert!(s("quantum chromodynamics").is_empty());
        assert!(
            !s("cold play").contains(&"Coldplay".to_owned()),
            "the query names it already"
        );
    }
}
