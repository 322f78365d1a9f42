//! Search latency on both backends with a large catalogue.
//!
//! ```sh
//! deploy/local/up.sh opensearch
//! cargo build --release --example search_latency -p frontrow-search
//! target/release/examples/search_latency [--events 100000] [--rounds 20] [--backend tantivy|opensearch|both]
//! ```
//!
//! Indexes `--events` fixture events (default 100,000) into a fresh tantivy index in a temporary
//! directory and into a fresh OpenSearch index (`FRONTROW_OPENSEARCH_URL`, default
//! `http://127.0.0.1:9200`), then runs a mix of misspelled, prefix, non-Latin and filtered
//! searches one after another (`--rounds` times each) and prints p50, p99 and max per backend,
//! measured around `SearchIndex::search` (the HTTP layer and its cache are not in the figure).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{TimeZone, Utc};
use frontrow_search::{Batch, OpenSearchIndex, SearchIndex, SearchQuery, TantivyIndex, fixture};

/// How many of [`queries`] are the shapes measured before the relevance rules; the rest are
/// the shapes the rules added (fallbacks, zero hits with suggestions, words run together,
/// aliases, connectors, full-width), reported on their own line too.
const FIRST_SHAPES: usize = 18;

fn queries() -> Vec<SearchQuery> {
    let texts = [
        "taylr swfit",
        "coldpaly mumbai",
        "bts seo",
        "beyonse",
        "metalika",
        "rammstien",
        "arctik monkies",
        "billie ei",
        "tay",
        "방탄",
        "米津玄師",
        "محسن یگانه",
        "world tour",
        "stadium",
        "hans zimer live",
    ];
    let mut out: Vec<SearchQuery> = texts.iter().map(|t| SearchQuery::text(*t)).collect();
    out.push(SearchQuery {
        city: Some("London".into()),
        available: true,
        ..SearchQuery::text("tour")
    });
    out.push(SearchQuery {
        from: Utc.with_ymd_and_hms(2027, 6, 1, 0, 0, 0).single(),
        to: Utc.with_ymd_and_hms(2027, 9, 1, 0, 0, 0).single(),
        ..SearchQuery::text("rock")
    });
    out.push(SearchQuery {
        page: 3,
        ..SearchQuery::text("pop")
    });
    for text in [
        "taylor swift wembly tickts",
        "kolplay",
        "pine apple thief",
        "bangtan boys",
        "guns and roses",
        "ｃｏｌｄｐｌａｙ",
    ] {
        out.push(SearchQuery::text(text));
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn measure(index: Arc<dyn SearchIndex>, events: usize, rounds: usize) -> anyhow::Result<()> {
    index.destroy().await?;
    index.ensure().await?;
    let started = Instant::now();
    let docs = fixture::events(events);
    for chunk in docs.chunks(5_000) {
        let batch = Batch {
            upserts: chunk.to_vec(),
            ..Batch::default()
        };
        index.apply(None, batch).await.context("indexing")?;
    }
    let indexing = started.elapsed();
    let queries = queries();
    // Warm up caches and code paths.
    for q in &queries {
        index.search(q).await?;
    }
    let mut took = Vec::with_capacity(rounds * queries.len());
    let mut first = Vec::with_capacity(rounds * FIRST_SHAPES);
    let mut hits = 0u64;
    for _ in 0..rounds {
        for (i, q) in queries.iter().enumerate() {
            let t = Instant::now();
            let found = index.search(q).await?;
            let elapsed = t.elapsed();
            took.push(elapsed);
            if i < FIRST_SHAPES {
                first.push(elapsed);
            }
            hits += found.total;
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (label, mut took) in [
        (format!("{FIRST_SHAPES} shapes"), first),
        (format!("all {} shapes", queries.len()), took),
    ] {
        took.sort();
        println!(
            "{:<10} events={events} indexed_in={:.1}s {label}: searches={} p50={:.2}ms p99={:.2}ms max={:.2}ms",
            index.backend(),
            indexing.as_secs_f64(),
            took.len(),
            ms(percentile(&took, 0.50)),
            ms(percentile(&took, 0.99)),
            ms(*took.last().unwrap_or(&Duration::ZERO)),
        );
    }
    println!("(mean total hits {})", hits / (rounds * queries.len()).max(1) as u64);
    index.destroy().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut events = 100_000;
    let mut rounds = 20;
    let mut backend = "both".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().with_context(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--events" => events = value.parse()?,
            "--rounds" => rounds = value.parse()?,
            "--backend" => backend = value,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    if backend == "tantivy" || backend == "both" {
        let dir = std::env::temp_dir().join(format!("frontrow-search-latency-{}", std::process::id()));
        let index = Arc::new(TantivyIndex::open(&dir)?);
        measure(index, events, rounds).await?;
        std::fs::remove_dir_all(&dir).ok();
    }
    if backend == "opensearch" || backend == "both" {
        let url = std::env::var("FRONTROW_OPENSEARCH_URL").unwrap_or_else(|_| "http://127.0.0.1:9200".into());
        let alias = format!("frontrow-latency-{}", std::process::id());
        let index = Arc::new(OpenSearchIndex::new(&url, &alias)?);
        measure(index, events, rounds)
            .await
            .with_context(|| format!("opensearch at {url}"))?;
    }
    Ok(())
}
