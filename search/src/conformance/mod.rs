//! The one test suite every [`SearchIndex`] implementation passes.
//!
//! An implementation's tests provide a [`Harness`] that opens an index by name (each case uses
//! its own name, so cases run in parallel; the same name opens the same index again, as after
//! a restart) and invoke [`search_conformance!`](crate::search_conformance), which generates
//! one `#[tokio::test]` per case. Relevance is checked on the [`fixture`](crate::fixture)
//! catalogue; availability is driven through the projector by real journal records in a
//! [`SqliteJournal`](frontrow_journal::SqliteJournal).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{TimeZone, Utc};

use crate::fixture;
use crate::index::*;

mod projection;

#[doc(hidden)]
pub use frontrow_journal::conformance_tests;
pub use projection::{
    a_burst_of_appends_is_written_in_few_batches, rebuild_projects_the_journal_into_a_new_version,
    sell_outs_reach_the_available_filter,
};

/// Opens indexes for the suite.
#[async_trait]
pub trait Harness: Send + Sync {
    /// Opens the index called `name`, creating it if needed; the same name opens the same index.
    async fn open(&self, name: &str) -> Arc<dyn SearchIndex>;
}

/// How many fixture events the relevance cases index.
pub const FIXTURE_EVENTS: usize = 2_400;

/// A fresh index holding the fixture catalogue.
async fn fixture_index(h: &dyn Harness, name: &str) -> Arc<dyn SearchIndex> {
    let index = h.open(name).await;
    fill_with_fixture(&*index).await;
    index
}

/// Empties `index` and writes the fixture catalogue into it.
async fn fill_with_fixture(index: &dyn SearchIndex) {
    index.destroy().await.unwrap();
    index.ensure().await.unwrap();
    for chunk in fixture::events(FIXTURE_EVENTS).chunks(1_000) {
        let batch = Batch {
            upserts: chunk.to_vec(),
            ..Batch::default()
        };
        index.apply(None, batch).await.unwrap();
    }
}

pub(crate) async fn search(index: &dyn SearchIndex, q: SearchQuery) -> SearchResults {
    index
        .search(&q)
        .await
        .unwrap_or_else(|e| panic!("search {q:?} failed: {e}"))
}

/// The fixture's first class (misspellings, prefixes, accents and non-Latin scripts), kept
/// from before the relevance rules: every query finds its artist in the top three.
pub async fn typos_prefixes_and_scripts_find_the_artist(h: &dyn Harness) {
    let index = fixture_index(h, "typos").await;
    let mut failures = Vec::new();
    for (query, artist) in fixture::QUERY_CLASSES[0].cases {
        let found = search(&*index, SearchQuery::text(*query)).await;
        let top: Vec<&str> = found
            .hits
            .iter()
            .take(3)
            .map(|h| h.doc.listing.artist.as_str())
            .collect();
        if !top.contains(artist) {
            failures.push(format!("{query:?} -> {top:?}, wanted {artist:?}"));
        }
    }
    assert!(failures.is_empty(), "{}: {failures:#?}", index.backend());
    // Both words count: Coldplay in Mumbai comes first.
    let found = search(&*index, SearchQuery::text("coldpaly mumbai")).await;
    assert_eq!(found.hits[0].doc.listing.city, "Mumbai");
    assert!(found.total <= 30, "coldpaly mumbai matched {} events", found.total);
    let found = search(&*index, SearchQuery::text("bts seo")).await;
    assert_eq!(
        (
            found.hits[0].doc.listing.artist.as_str(),
            found.hits[0].doc.listing.city.as_str()
        ),
        ("BTS", "Seoul")
    );
    index.destroy().await.unwrap();
}

/// The least share of a class's queries that must find their artist in the top three (the
/// suggestion class: among the suggestions of a zero-hit answer), for the tuned cases and for
/// the held-out ones, as measured on both backends when the rules were written (README).
const THRESHOLDS: &[(&str, f64, f64)] = &[
    ("typos, prefixes, accents, scripts", 1.0, 0.85),
    ("first-letter typos", 1.0, 0.75),
    ("one hopeless word", 1.0, 0.8),
    ("words run together or split", 1.0, 0.85),
    ("connectors and punctuation", 1.0, 0.85),
    ("initials and abbreviations", 1.0, 0.85),
    ("Persian and Arabic letter variants", 1.0, 0.8),
    ("full-width and compatibility forms", 1.0, 0.8),
    ("aliases", 1.0, 0.9),
    ("did you mean", 1.0, 0.5),
];

/// How one query fared: the rank (from 1) of the wanted artist, if it was found.
async fn rank(index: &dyn SearchIndex, suggestion: bool, query: &str, artist: &str) -> Option<usize> {
    let found = search(index, SearchQuery::text(query)).await;
    if suggestion {
        if found.total > 0 {
            return None;
        }
        return found.suggestions.iter().position(|s| s == artist).map(|p| p + 1);
    }
    assert!(
        found.total == 0 || found.suggestions.is_empty(),
        "{query:?} found {} and suggested",
        found.total
    );
    found
        .hits
        .iter()
        .take(3)
        .position(|h| h.doc.listing.artist == artist)
        .map(|p| p + 1)
}

/// Every query class of the fixture: hits@1 and hits@3 per class, tuned and held-out cases
/// apart, printed (`--nocapture`) and held to [`THRESHOLDS`].
pub async fn query_classes_find_the_artist(h: &dyn Harness) {
    let index = fixture_index(h, "classes").await;
    let mut report = vec![format!(
        "{:<38} {:>12} {:>12}   {:>12} {:>12}",
        index.backend(),
        "tuned @1",
        "tuned @3",
        "held-out @1",
        "held-out @3"
    )];
    let mut failures = Vec::new();
    for class in fixture::QUERY_CLASSES {
        let suggestion = class.name == fixture::SUGGESTION_CLASS;
        let mut line = format!("{:<38}", class.name);
        let (_, min_tuned, min_held) = THRESHOLDS
            .iter()
            .find(|(name, ..)| *name == class.name)
            .unwrap_or_else(|| panic!("no threshold for {}", class.name));
        for (cases, min) in [(class.cases, *min_tuned), (class.held_out, *min_held)] {
            let mut at1 = 0;
            let mut at3 = 0;
            for (query, artist) in cases {
                match rank(&*index, suggestion, query, artist).await {
                    Some(1) => {
                        at1 += 1;
                        at3 += 1;
                    }
                    Some(_) => at3 += 1,
                    None => failures.push(format!("{}: {query:?} missed {artist:?}", class.name)),
                }
            }
            let n = cases.len().max(1) as f64;
            line.push_str(&format!(
                " {:>12} {:>12}  ",
                format!("{at1}/{}", cases.len()),
                format!("{at3}/{}", cases.len())
            ));
            if (at3 as f64) / n < min {
                failures.push(format!("{}: hits@3 {at3}/{} is under {min}", class.name, cases.len()));
            }
        }
        report.push(line);
    }
    let report = report.join("\n");
    println!("{report}\nmisses: {:#?}", failures);
    let under: Vec<&String> = failures.iter().filter(|f| f.contains("is under")).collect();
    assert!(under.is_empty(), "{report}\n{failures:#?}");
    index.destroy().await.unwrap();
}

/// Zero-hit answers suggest, answers with hits do not, and nonsense suggests nothing.
pub async fn zero_hits_suggest_the_closest_artists(h: &dyn Harness) {
    let index = fixture_index(h, "suggest").await;
    let found = search(&*index, SearchQuery::text("kolplay")).await;
    assert_eq!(
        (found.total, found.suggestions.first().map(String::as_str)),
        (0, Some("Coldplay"))
    );
    assert!(found.suggestions.len() <= crate::relevance::SUGGESTIONS);
    let found = search(&*index, SearchQuery::text("coldplay")).await;
    assert!(found.total > 0 && found.suggestions.is_empty());
    let found = search(&*index, SearchQuery::text("zzxqv")).await;
    assert_eq!((found.total, found.suggestions.len()), (0, 0));
    index.destroy().await.unwrap();
}

/// When every word is required nothing matches, so the answer falls back to fewer words and
/// ranks events matching more words, and better, above the others.
pub async fn fallbacks_rank_full_matches_first(h: &dyn Harness) {
    let index = fixture_index(h, "fallback").await;
    // "xqzvy" matches nothing: Coldplay in Mumbai (two words) before Coldplay elsewhere (one).
    let found = search(&*index, SearchQuery::text("coldplay mumbai xqzvy")).await;
    assert!(found.total > 0);
    assert_eq!(
        (
            found.hits[0].doc.listing.artist.as_str(),
            found.hits[0].doc.listing.city.as_str()
        ),
        ("Coldplay", "Mumbai")
    );
    let two_words = found.hits.iter().take_while(|h| h.doc.listing.city == "Mumbai").count();
    assert!(found.hits[two_words..].iter().all(|h| h.score < found.hits[0].score));
    // A full match never needs the fallback, so its total is that of the full match.
    let full = search(&*index, SearchQuery::text("coldplay mumbai")).await;
    assert!(
        full.hits
            .iter()
            .all(|h| h.doc.listing.artist == "Coldplay" && h.doc.listing.city == "Mumbai")
    );
    index.destroy().await.unwrap();
}

/// Two backends holding the same catalogue give the same top three, in the same order, for
/// every query of every class (ties in score and start time go by event id on both).
pub async fn backends_agree(a: &dyn SearchIndex, b: &dyn SearchIndex) {
    for index in [a, b] {
        fill_with_fixture(index).await;
    }
    let mut differ = Vec::new();
    let mut compared = 0;
    for class in fixture::QUERY_CLASSES {
        for (query, _) in class.cases.iter().chain(class.held_out) {
            let top = |r: SearchResults| {
                let hits: Vec<(String, f32)> = r
                    .hits
                    .iter()
                    .take(3)
                    .map(|h| (h.doc.listing.event_id.to_string(), h.score))
                    .collect();
                (r.total, hits, r.suggestions)
            };
            let (x, y) = (
                top(search(a, SearchQuery::text(*query)).await),
                top(search(b, SearchQuery::text(*query)).await),
            );
            compared += 1;
            if x != y {
                differ.push(format!("{query:?}: {} {x:?} / {} {y:?}", a.backend(), b.backend()));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {compared} queries differ: {differ:#?}",
        differ.len()
    );
    a.destroy().await.unwrap();
    b.destroy().await.unwrap();
}

/// Queries about nothing in the catalogue find (next to) nothing.
pub async fn unrelated_queries_do_not_flood(h: &dyn Harness) {
    let index = fixture_index(h, "unrelated").await;
    for query in [
        "quantum chromodynamics",
        "plumber emergency repair",
        "zzxqv",
        "spreadsheet accounting",
        "volcano",
    ] {
        let found = search(&*index, SearchQuery::text(query)).await;
        assert!(
            found.total <= 5,
            "{}: {query:?} matched {} events: {:?}",
            index.backend(),
            found.total,
            found
                .hits
                .iter()
                .take(5)
                .map(|h| &h.doc.listing.artist)
                .collect::<Vec<_>>()
        );
    }
    let all_words = index.search(&SearchQuery::text("!!!")).await;
    assert!(matches!(all_words, Err(SearchError::InvalidQuery(_))));
    index.destroy().await.unwrap();
}

/// City, date and availability filters hold for every hit; pages do not overlap; hits come by
/// score, then start time.
pub async fn filters_order_and_pages(h: &dyn Harness) {
    let index = fixture_index(h, "filters").await;
    let tour = |f: fn(&mut SearchQuery)| {
        let mut q = SearchQuery::text("tour");
        f(&mut q);
        q
    };
    let all = search(&*index, tour(|_| {})).await;
    assert!(all.total > 200, "tour matched only {}", all.total);
    assert_eq!(all.hits.len(), PER_PAGE);

    let seoul = search(&*index, tour(|q| q.city = Some("seoul".into()))).await;
    assert!(seoul.total > 0 && seoul.total < all.total);
    assert!(seoul.hits.iter().all(|h| h.doc.listing.city == "Seoul"));
    let munchen = search(&*index, tour(|q| q.city = Some("MUNCHEN".into()))).await;
    assert!(munchen.total > 0 && munchen.hits.iter().all(|h| h.doc.listing.city == "München"));

    let from = Utc.with_ymd_and_hms(2027, 6, 1, 0, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2027, 8, 31, 23, 59, 59).unwrap();
    let summer = search(
        &*index,
        SearchQuery {
            from: Some(from),
            to: Some(to),
            ..SearchQuery::text("tour")
        },
    )
    .await;
    assert!(summer.total > 0 && summer.total < all.total);
    assert!(
        summer
            .hits
            .iter()
            .all(|h| h.doc.listing.starts_at >= from && h.doc.listing.starts_at <= to)
    );

    let available = search(&*index, tour(|q| q.available = true)).await;
    assert!(available.total < all.total, "some fixture events are sold out");
    assert!(available.hits.iter().all(|h| !h.doc.sold_out && h.doc.seats_left > 0));

    let page2 = search(&*index, tour(|q| q.page = 2)).await;
    assert_eq!(page2.total, all.total);
    assert!(page2.hits.iter().all(|h| {
        all.hits
            .iter()
            .all(|a| a.doc.listing.event_id != h.doc.listing.event_id)
    }));

    // Relevance first, then the sooner event.
    let swift = search(&*index, SearchQuery::text("taylor swift")).await;
    for pair in swift.hits.windows(2).chain(all.hits.windows(2)) {
        assert!(pair[0].score >= pair[1].score, "{pair:?}");
        if pair[0].score == pair[1].score {
            assert!(
                pair[0].doc.listing.starts_at <= pair[1].doc.listing.starts_at,
                "ties go by date: {pair:?}"
            );
        }
    }
    let far = search(&*index, tour(|q| q.page = 400)).await;
    assert!(far.hits.is_empty());
    index.destroy().await.unwrap();
}

fn doc(i: usize, artist: &str, city: &str) -> EventDoc {
    let mut d = fixture::events(1).remove(0);
    d.listing.event_id = fixture::event_id(900_000 + i);
    d.listing.artist = artist.into();
    d.listing.title = format!("{artist} live");
    d.listing.city = city.into();
    d
}

/// Documents and positions are written together, survive reopening, and deletes take effect.
pub async fn documents_and_positions_are_written_together(h: &dyn Harness) {
    let index = h.open("positions").await;
    index.destroy().await.unwrap();
    index.ensure().await.unwrap();
    assert!(index.positions(None).await.unwrap().is_empty());
    let changes = index.changes();
    let (a, b, c) = (
        doc(1, "Nova Lights", "Utrecht"),
        doc(2, "Nova Lights", "Lyon"),
        doc(3, "Polar Bloom", "Oslo"),
    );
    let batch = Batch {
        upserts: vec![a.clone(), b.clone(), c.clone()],
        deletes: vec![],
        positions: Positions::from([(0, 5), (1, 7)]),
    };
    index.apply(None, batch).await.unwrap();
    assert!(changes.has_changed().unwrap(), "a write moves the change counter");
    assert_eq!(index.positions(None).await.unwrap(), Positions::from([(0, 5), (1, 7)]));
    assert_eq!(index.get(b.listing.event_id).await.unwrap(), Some(b.clone()));
    assert_eq!(search(&*index, SearchQuery::text("nova lihgts")).await.total, 2);

    let mut b2 = b.clone();
    b2.seats_left = 0;
    b2.sold_out = true;
    let batch = Batch {
        upserts: vec![b2.clone()],
        deletes: vec![a.listing.event_id],
        positions: Positions::from([(0, 6)]),
    };
    index.apply(None, batch).await.unwrap();
    assert_eq!(index.positions(None).await.unwrap(), Positions::from([(0, 6), (1, 7)]));
    assert_eq!(index.get(a.listing.event_id).await.unwrap(), None);
    let found = search(&*index, SearchQuery::text("nova")).await;
    assert_eq!(found.total, 1, "an upsert replaces, a delete removes");
    assert_eq!(found.hits[0].doc, b2);
    drop(index);

    let reopened = h.open("positions").await;
    assert_eq!(
        reopened.positions(None).await.unwrap(),
        Positions::from([(0, 6), (1, 7)])
    );
    assert_eq!(reopened.get(c.listing.event_id).await.unwrap(), Some(c));
    reopened.destroy().await.unwrap();
}

/// A new version fills up unseen and replaces the live one in one step.
pub async fn a_rebuilt_version_is_swapped_in(h: &dyn Harness) {
    let index = h.open("swap").await;
    index.destroy().await.unwrap();
    let first = index.ensure().await.unwrap();
    assert_eq!(index.ensure().await.unwrap(), first, "ensure is idempotent");
    let old = doc(10, "Old Band", "Porto");
    let new = doc(11, "New Band", "Porto");
    index
        .apply(
            None,
            Batch {
                upserts: vec![old.clone()],
                ..Batch::default()
            },
        )
        .await
        .unwrap();
    let second = index.create_version().await.unwrap();
    assert_ne!(first, second);
    let batch = Batch {
        upserts: vec![new.clone()],
        deletes: vec![],
        positions: Positions::from([(0, 3)]),
    };
    index.apply(Some(&second), batch).await.unwrap();
    assert_eq!(search(&*index, SearchQuery::text("band")).await.hits[0].doc, old);
    assert_eq!(index.positions(Some(&second)).await.unwrap(), Positions::from([(0, 3)]));
    let changes = index.changes();
    index.swap_alias(&second).await.unwrap();
    assert!(changes.has_changed().unwrap());
    assert_eq!(index.live_version().await.unwrap(), Some(second.clone()));
    let found = search(&*index, SearchQuery::text("band")).await;
    assert_eq!(found.hits.iter().map(|h| &h.doc).collect::<Vec<_>>(), vec![&new]);
    assert_eq!(index.positions(None).await.unwrap(), Positions::from([(0, 3)]));
    assert!(index.positions(Some(&first)).await.is_err(), "the old version is gone");
    index.destroy().await.unwrap();
}

/// Generates one test per conformance case for a harness expression:
/// `search_conformance!(harness())`, or with attributes for every generated test,
/// `search_conformance!(#[ignore = "needs opensearch"] => harness())`.
#[macro_export]
macro_rules! search_conformance {
    ($(#[$attr:meta])* => $harness:expr) => {
        $crate::conformance::conformance_tests!([$(#[$attr])*] $harness; {$crate::conformance};
            typos_prefixes_and_scripts_find_the_artist, query_classes_find_the_artist,
            zero_hits_suggest_the_closest_artists, fallbacks_rank_full_matches_first,
            unrelated_queries_do_not_flood,
            filters_order_and_pages, documents_and_positions_are_written_together,
            a_rebuilt_version_is_swapped_in, sell_outs_reach_the_available_filter,
            a_burst_of_appends_is_written_in_few_batches,
            rebuild_projects_the_journal_into_a_new_version);
    };
    ($harness:expr) => {
        $crate::search_conformance!(=> $harness);
    };
}
