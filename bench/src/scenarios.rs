//! The scenarios against each target: FrontRow's (hot onsale, availability reads, search,
//! the checks after every race, the ledger rebuild and the analytics replay) and the database
//! baselines' (the hot onsale and its checks). [`crate::run::run`] calls them in turn and collects
//! the figures.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use frontrow_analytics::ReplayOptions;
use frontrow_command::domain::EventState;
use serde_json::{Value, json};

use crate::baselines::{self, Database};
use crate::frontrow::{FrontRow, ORGANIZER_KEY, map_letters};
use crate::lean::LeanRace;
use crate::load::{Bounds, Job, Outcome, Timeline, classify, drive, drive_timed};
use crate::run::{Config, Results, client};
use crate::workload::{Kind, Race, RaceLog, ReplayedFigures, check_analytics, check_race, tokens};

/// Creates an event on FrontRow with the arena's seat map, on sale from `onsale_at`; returns
/// the answer (`event_id`, `position`).
pub(crate) async fn post_event(
    http: &reqwest::Client,
    base: &str,
    title: &str,
    artist: &str,
    city: &str,
    onsale_at: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Value> {
    // The harness's few hundred customers stand in for many more fans, each reserving again
    // and again: the event lets one customer have up to 1000 seats (the most an organizer may
    // allow), so that the per-customer limit does not cut the races short.
    let body = json!({
        "title": title, "artist": artist, "venue": "Riverside Arena", "city": city,
        "starts_at": chrono::Utc::now() + chrono::Duration::days(30), "onsale_at": onsale_at,
        "hold_minutes": 15, "max_seats_per_order": 8, "max_seats_per_customer": 1000, "currency": "EUR",
        "seat_map": frontrow::sample::arena(),
    });
    let res = http
        .post(format!("{base}/events"))
        .header("x-api-key", ORGANIZER_KEY)
        .json(&body)
        .send()
        .await?;
    anyhow::ensure!(res.status() == 201, "creating an event: {}", res.text().await?);
    Ok(res.json().await?)
}

/// Creates an on-sale event on FrontRow with the arena's seat map; returns its id once the
/// query side has it.
pub(crate) async fn create_event(
    http: &reqwest::Client,
    base: &str,
    title: &str,
    artist: &str,
    city: &str,
) -> anyhow::Result<String> {
    let onsale_at = chrono::Utc::now() - chrono::Duration::minutes(1);
    let written = post_event(http, base, title, artist, city, onsale_at).await?;
    let event = written["event_id"].as_str().context("no event_id")?.to_owned();
    let position = written["position"].as_str().unwrap_or_default();
    let map = http
        .get(format!(
            "{base}/events/{event}/availability?after={position}&wait_ms=10000"
        ))
        .send()
        .await?;
    anyhow::ensure!(map.status() == 200, "the new event is not readable");
    Ok(event)
}

/// The highest log position among acknowledged reservations (for `?after=`).
fn last_position(log: &RaceLog) -> Option<String> {
    log.won
        .lock()
        .expect("race log")
        .iter()
        .filter_map(|w| w.position.as_deref())
        .filter_map(|p| p.parse::<frontrow_journal::Position>().ok())
        .max()
        .map(|p| p.to_string())
}

pub(crate) async fn frontrow(
    config: &Config,
    results: &mut Results,
    capacity: usize,
    picks: Arc<Vec<Vec<String>>>,
) -> anyhow::Result<()> {
    println!("FrontRow (embedded defaults, in-process)");
    let fr = FrontRow::start().await?;
    let base = format!("http://{}", fr.served.addr);
    let http = client(config.clients * 2);
    let tokens = Arc::new(tokens(&fr.auth, config.customers));
    let node = Node {
        fr,
        http,
        base,
        tokens,
        picks,
    };
    let mut races = Races::new();
    // The ceiling of this process, which the reserve and map targets are ratios of.
    crate::run::health_ceiling(config, results, node.fr.served.addr).await;
    hot_onsale(&node, config, results, &mut races).await?;
    availability(&node, config, results, &mut races).await?;
    quiet(&node.fr).await?;
    search(&node, config, results, &mut races).await?;
    let race_checks = check_races(&node, capacity, results, &races).await?;
    ledger_rebuild(&node, results).await?;
    analytics_replay(&node, results, &race_checks).await?;
    node.fr.stop().await?;
    Ok(())
}

/// What FrontRow's phases share: the node in this process, a client of it, the customers'
/// tokens and the seats each explicit request asks for.
struct Node {
    fr: FrontRow,
    http: reqwest::Client,
    base: String,
    tokens: Arc<Vec<String>>,
    picks: Arc<Vec<Vec<String>>>,
}

impl Node {
    /// A race on `event`, with a log of its own.
    fn race(&self, event: String) -> Race {
        Race {
            kind: Kind::Frontrow,
            client: self.http.clone(),
            base: self.base.clone(),
            event,
            tokens: self.tokens.clone(),
            log: Arc::new(RaceLog::default()),
        }
    }
}

/// The phases' races, each with its name in the checks.
type Races = Vec<(&'static str, Race)>;

/// Scenario 1, the hot onsale: explicit seats at the maximum rate, then pay every hold; best
/// available at the maximum rate; explicit seats at half the maximum rate, open loop. The
/// explicit phases go through the lean client, as the ceiling's and the baselines' do.
async fn hot_onsale(node: &Node, config: &Config, results: &mut Results, races: &mut Races) -> anyhow::Result<()> {
    let Node {
        fr, http, base, picks, ..
    } = node;
    let race = |event: String| node.race(event);
    let explicit = LeanRace::new(race(
        create_event(http, base, "Hot Onsale", "Nova Lights", "Amsterdam").await?,
    ))?;
    quiet(fr).await?;
    let (mode, bounds) = config.closed(config.reserve_requests);
    let (max, timeline) = drive_timed(mode, bounds, explicit.reserve_explicit(picks.clone())).await;
    let max_rate = max.throughput;
    results.push("1-hot-onsale", "frontrow", "reserve explicit (max)", max);
    let won = Arc::new(explicit.race.log.won.lock().expect("race log").clone());
    if !won.is_empty() {
        let (mode, bounds) = config.closed(won.len() as u64);
        let paid = drive(mode, bounds, explicit.pay(won)).await;
        results.push("1-hot-onsale", "frontrow", "pay (simulated provider)", paid);
    }
    races.push(("reserve explicit + pay", explicit.race));

    // Best available: the writer picks adjacent seats in a section.
    let best = race(create_event(http, base, "Hot Onsale 2", "Nova Lights", "Amsterdam").await?);
    quiet(fr).await?;
    let sections: Arc<Vec<String>> = Arc::new(
        frontrow::sample::arena()
            .sections
            .iter()
            .map(|s| s.code.to_string())
            .collect(),
    );
    let (mode, bounds) = config.closed(config.reserve_requests);
    let stats = drive(mode, bounds, best.reserve_best(sections, 9)).await;
    results.push("1-hot-onsale", "frontrow", "reserve best-available (max)", stats);
    races.push(("reserve best-available", best));

    // The latency at half the maximum rate, open loop, paced as the baselines' half max is.
    let half = LeanRace::new(race(
        create_event(http, base, "Hot Onsale 3", "Nova Lights", "Rotterdam").await?,
    ))?;
    quiet(fr).await?;
    let (rate, first) = half_max_rate(&timeline, max_rate, config.open_s);
    let (mode, bounds) = config.open(rate);
    let before = crate::inside::scrape(http, base).await?;
    let stats = drive(mode, bounds, half.reserve_explicit(picks.clone())).await;
    let inside = crate::inside::reserve_phase(&before, &crate::inside::scrape(http, base).await?);
    results.push_extra(
        "1-hot-onsale",
        "frontrow",
        "reserve explicit (half max)",
        stats,
        Some(json!({ "inside": inside, "rate": rate, "paced_by": paced_by(first, max_rate) })),
    );
    println!("  {}", crate::inside::summary(&inside));
    races.push(("reserve at half max", half.race));
    Ok(())
}

/// Scenario 2, availability map reads of the hot event, full and `304`, while reservations keep coming.
async fn availability(node: &Node, config: &Config, results: &mut Results, races: &mut Races) -> anyhow::Result<()> {
    let Node {
        fr, http, base, picks, ..
    } = node;
    let hot = node.race(create_event(http, base, "Hot Onsale 4", "Nova Lights", "Utrecht").await?);
    quiet(fr).await?;
    let background = {
        let (mode, _) = config.open(config.background_rate);
        let bounds = Bounds {
            max_time: Duration::from_secs_f64(config.phase_s * 2.0 + 1.0),
            max_requests: u64::MAX,
        };
        let job = hot.reserve_explicit(picks.clone());
        tokio::spawn(drive(mode, bounds, job))
    };
    // The map readers go through the lean client, as the ceiling's requests do.
    let lean = Arc::new(crate::http1::Client::new(fr.served.addr));
    let map_path = format!("/events/{}/availability", hot.event);
    let (mode, bounds) = config.closed(u64::MAX);
    let stats = drive(mode, bounds, map_job(lean.clone(), &map_path, None)).await;
    results.push("2-availability", "frontrow", "map full (200)", stats);
    let etag = Arc::new(std::sync::Mutex::new(String::new()));
    let not_modified = Arc::new(AtomicU64::new(0));
    let stats = drive(
        mode,
        bounds,
        map_job(lean, &map_path, Some((etag, not_modified.clone()))),
    )
    .await;
    let share = not_modified.load(Ordering::Relaxed) as f64 / stats.requests.max(1) as f64;
    results.push_extra(
        "2-availability",
        "frontrow",
        "map If-None-Match (304)",
        stats,
        Some(json!({ "share_304": share })),
    );
    let bg = background.await.context("background writes")?;
    results.push("2-availability", "frontrow", "background reserves", bg);
    races.push(("reserve during map reads", hot));
    Ok(())
}

/// Scenario 4, search at a fixed rate while reservations run, on events the phase creates.
async fn search(node: &Node, config: &Config, results: &mut Results, races: &mut Races) -> anyhow::Result<()> {
    let Node {
        fr, http, base, picks, ..
    } = node;
    let artists = [
        ("Taylor Swift", "Amsterdam"),
        ("Nova Lights", "Berlin"),
        ("The Midnight Orbit", "Paris"),
        ("Arctic Monkeys", "London"),
        ("Billie Eilish", "Madrid"),
        ("Coldplay", "Rome"),
    ];
    let mut search_event = String::new();
    for (artist, city) in artists {
        search_event = create_event(http, base, &format!("{artist} Live"), artist, city).await?;
    }
    // The search projector indexes asynchronously: wait until the last event is found.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let found: Value = http
            .get(format!("{base}/search?q=coldplay"))
            .send()
            .await?
            .json()
            .await?;
        if found.to_string().contains(&search_event) {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "search never found the new events"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    quiet(fr).await?;
    let writes = node.race(search_event);
    let background = {
        let (mode, mut bounds) = config.open(config.background_rate);
        bounds.max_time = Duration::from_secs_f64(config.open_s + 0.5);
        bounds.max_requests = u64::MAX;
        tokio::spawn(drive(mode, bounds, writes.reserve_explicit(picks.clone())))
    };
    let queries = Arc::new(vec![
        "taylr swfit",
        "nova",
        "midnigt orbit",
        "arctic monkys",
        "billie",
        "coldpl",
        "live amsterdam",
        "lights",
    ]);
    let search_job: Job = {
        let (http, base) = (http.clone(), base.clone());
        Arc::new(move |i| {
            let url = format!("{base}/search?q={}", queries[i as usize % queries.len()]);
            let http = http.clone();
            Box::pin(async move {
                match http.get(url).send().await {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        match r.json::<Value>().await {
                            Ok(_) => classify(status, &[200], &[]),
                            Err(_) => Outcome::Error,
                        }
                    }
                    Err(_) => Outcome::Error,
                }
            })
        })
    };
    let (mode, bounds) = config.open(config.search_rate);
    let stats = drive(mode, bounds, search_job).await;
    results.push("4-search", "frontrow", "GET /search (fixed rate)", stats);
    let bg = background.await.context("background writes")?;
    results.push("4-search", "frontrow", "background reserves", bg);
    races.push(("reserve during search", writes));
    Ok(())
}

/// A race, its name and its check, for the analytics replay to check against.
type Checked<'a> = Vec<(&'static str, &'a Race, crate::workload::RaceCheck)>;

/// Every race: the answers, the query side's map and a replay of the journal agree.
async fn check_races<'a>(
    node: &Node,
    capacity: usize,
    results: &mut Results,
    races: &'a Races,
) -> anyhow::Result<Checked<'a>> {
    let Node { fr, http, base, .. } = node;
    let replayed = fr.replay().await?;
    let mut race_checks = Vec::new();
    for (name, race) in races {
        let after = last_position(&race.log).unwrap_or_else(|| "0:0".into());
        let res = http
            .get(format!(
                "{base}/events/{}/availability?after={after}&wait_ms=10000",
                race.event
            ))
            .send()
            .await?;
        anyhow::ensure!(res.status() == 200, "reading the map after the race: {}", res.status());
        let letters = map_letters(&res.json().await?)?;
        let event: frontrow_schema::EventId = race.event.parse().context("event id")?;
        let log_letters = replayed.get(&event).map(EventState::seat_letters);
        let check = check_race(
            &race.event,
            capacity,
            &race.log,
            &letters,
            Some(log_letters.as_ref() == Some(&letters)),
        );
        println!("  check {name}: {}", check.summary());
        results.checks.push((format!("frontrow: {name}"), check.clone()));
        race_checks.push((*name, race, check));
    }
    Ok(race_checks)
}

/// Scenario 5, the ledger: caught up, then the journal replayed into a fresh one must equal it.
async fn ledger_rebuild(node: &Node, results: &mut Results) -> anyhow::Result<()> {
    let fr = &node.fr;
    let caught_up = fr.ledger_caught_up(Duration::from_secs(60)).await?;
    anyhow::ensure!(
        caught_up,
        "the ledger projector did not catch up with the journal in 60 s"
    );
    let (report, equal) = fr.rebuild_and_compare().await?;
    println!(
        "  5-replay         frontrow   ledger rebuild: {} records in {:.2}s ({:.0} records/s); ledger equals log: {equal}",
        report.records,
        report.elapsed.as_secs_f64(),
        report.records_per_second()
    );
    results.rebuild = Some(json!({
        "records": report.records,
        "elapsed_s": report.elapsed.as_secs_f64(),
        "records_per_s": report.records_per_second(),
        "ledger": "sqlite (embedded), fresh generation",
    }));
    results.ledger_equals_log = Some(equal);
    Ok(())
}

/// Scenario 5, the analytics replay: the same journal through `frontrow analytics`' code, every
/// partition and event; each race's event must have the figures the race observed.
async fn analytics_replay(node: &Node, results: &mut Results, race_checks: &Checked<'_>) -> anyhow::Result<()> {
    let fr = &node.fr;
    let report = frontrow_analytics::analyse(
        fr.journal.clone(),
        &ReplayOptions {
            batch: 5000,
            ..ReplayOptions::default()
        },
        |_| {},
    )
    .await?;
    println!(
        "  5-replay         frontrow   analytics replay: {} records ({} events' reports) in {:.2}s ({:.0} events/s)",
        report.coverage.records_read,
        report.events.len(),
        report.replay_seconds,
        report.records_per_second
    );
    results.analytics = Some(json!({
        "records": report.coverage.records_read,
        "records_decoded": report.coverage.records_decoded,
        "undecodable": report.coverage.undecodable,
        "events_reported": report.events.len(),
        "elapsed_s": report.replay_seconds,
        "events_per_s": report.records_per_second,
        "journal": "sqlite (embedded), every partition side by side, every event (frontrow_analytics::analyse)",
    }));
    for (name, race, check) in race_checks {
        let event: frontrow_schema::EventId = race.event.parse().context("event id")?;
        let figures = report
            .events
            .iter()
            .find(|e| e.event_id == event)
            .map(ReplayedFigures::from);
        let agrees = check_analytics(&race.log, check, figures);
        println!(
            "  check analytics of {name}: {} (reservations {} / 201s {}; bookings {} / paid {}; booked seats {} / map {})",
            if agrees.passed { "ok" } else { "FAILED" },
            agrees.reservations.analytics,
            agrees.reservations.observed,
            agrees.bookings.analytics,
            agrees.bookings.observed,
            agrees.seats_booked_now.analytics,
            agrees.seats_booked_now.observed
        );
        results
            .analytics_checks
            .push((format!("frontrow analytics: {name}"), agrees));
    }
    Ok(())
}

/// Waits until FrontRow's ledger projector has applied everything so far: the previous
/// phase's records and the new event's seats (20,008 rows) alike, so each phase starts without
/// a projection backlog competing for the two cores (the baselines insert their event's seats
/// before their phases start). Then a moment for the search projector, which follows the same
/// journal.
async fn quiet(fr: &FrontRow) -> anyhow::Result<()> {
    anyhow::ensure!(
        fr.ledger_caught_up(Duration::from_secs(120)).await?,
        "the ledger projector did not catch up within 120 s"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(())
}

/// Reads an availability map on the lean client (as wrk would: no `Accept-Encoding`, so the
/// full map is its uncompressed JSON): without a validator (`None`: the full map each time) or
/// with `If-None-Match` of the newest ETag seen (`304` while nothing changed).
fn map_job(
    http: Arc<crate::http1::Client>,
    path: &str,
    revalidate: Option<(Arc<std::sync::Mutex<String>>, Arc<AtomicU64>)>,
) -> Job {
    let path: Arc<str> = path.into();
    Arc::new(move |_| {
        let (http, path, revalidate) = (http.clone(), path.clone(), revalidate.clone());
        Box::pin(async move {
            let tag = revalidate
                .as_ref()
                .map(|(etag, _)| etag.lock().expect("etag").clone())
                .filter(|tag| !tag.is_empty());
            let headers: Vec<(&str, &str)> = tag.iter().map(|t| ("if-none-match", t.as_str())).collect();
            let request = http.request("GET", &path, &headers, b"");
            let Ok((head, body)) = http.exchange(&request).await else {
                return Outcome::Error;
            };
            match (head.status, &revalidate) {
                (200, _) if body.len() < 1000 => Outcome::Error,
                (200, Some((etag, _))) => {
                    if let Some(tag) = head.etag {
                        *etag.lock().expect("etag") = tag;
                    }
                    Outcome::Ok
                }
                (304, Some((_, not_modified))) => {
                    not_modified.fetch_add(1, Ordering::Relaxed);
                    Outcome::Ok
                }
                (status, _) => classify(status, &[200], &[]),
            }
        })
    })
}

pub(crate) async fn databases(
    config: &Config,
    results: &mut Results,
    db: &Database,
    capacity: usize,
    rows: &[Vec<String>],
    picks: Arc<Vec<Vec<String>>>,
) -> anyhow::Result<()> {
    let seats: Vec<String> = rows.iter().flatten().cloned().collect();
    // The baselines check tokens with the same code FrontRow uses, under a secret of their own.
    let auth = Arc::new(frontrow_http::auth::Auth::new(
        secrecy::SecretString::from(format!("bench-{}", uuid::Uuid::new_v4())),
        [],
    ));
    let tokens = Arc::new(tokens(&auth, config.customers));
    let designs: Vec<(&'static str, Kind, Option<&str>)> = match &config.redis_url {
        Some(redis) => vec![
            ("naive-pg", Kind::NaivePg, None),
            ("redis-lock", Kind::RedisLock, Some(redis.as_str())),
        ],
        None => {
            results.skipped_baselines.push("redis-lock: no --redis-url".into());
            vec![("naive-pg", Kind::NaivePg, None)]
        }
    };
    for (name, kind, redis) in designs {
        println!("{name} baseline (synchronous_commit = on)");
        let server = baselines::database_server(db, redis, auth.clone(), config.pg_pool).await?;
        // The lean client, one keep-alive connection per closed-loop client (as the ceiling's).
        let race = |event: uuid::Uuid| {
            LeanRace::new(Race {
                kind,
                client: client(1),
                base: format!("http://{}", server.addr),
                event: event.to_string(),
                tokens: tokens.clone(),
                log: Arc::new(RaceLog::default()),
            })
        };
        let mut races = Vec::new();
        let event = uuid::Uuid::now_v7();
        db.add_event(event, &seats).await?;
        let explicit = race(event)?;
        let (mode, bounds) = config.closed(config.reserve_requests);
        let (max, timeline) = drive_timed(mode, bounds, explicit.reserve_explicit(picks.clone())).await;
        let max_rate = max.throughput;
        // Where the design's time went (summed by the server over the phase's requests).
        let parts = take_parts(&explicit).await;
        if let Some(p) = &parts {
            println!("  {name} parts per request: {p}");
        }
        results.push_extra(
            "1-hot-onsale",
            name,
            "reserve explicit (max)",
            max,
            parts.map(|p| json!({ "server_time_per_request": p })),
        );
        let won = Arc::new(explicit.race.log.won.lock().expect("race log").clone());
        if !won.is_empty() {
            let (mode, bounds) = config.closed(won.len() as u64);
            let paid = drive(mode, bounds, explicit.pay(won)).await;
            results.push("1-hot-onsale", name, "pay", paid);
        }
        races.push((event, "reserve explicit + pay", explicit.race));
        let event = uuid::Uuid::now_v7();
        db.add_event(event, &seats).await?;
        let half = race(event)?;
        let (rate, first) = half_max_rate(&timeline, max_rate, config.open_s);
        let (mode, bounds) = config.open(rate);
        take_parts(&half).await;
        let stats = drive(mode, bounds, half.reserve_explicit(picks.clone())).await;
        let parts = take_parts(&half).await;
        results.push_extra(
            "1-hot-onsale",
            name,
            "reserve explicit (half max)",
            stats,
            Some(json!({
                "rate": rate,
                "server_time_per_request": parts,
                "paced_by": paced_by(first, max_rate),
            })),
        );
        races.push((event, "reserve at half max", half.race));
        server.stop().await?;
        for (event, phase, race) in races {
            let stored: BTreeMap<String, char> = db
                .seats(event)
                .await?
                .into_iter()
                .map(|(seat, (letter, _))| (seat, letter))
                .collect();
            let check = check_race(&race.event, capacity, &race.log, &stored, None);
            println!("  check {phase}: {}", check.summary());
            results.checks.push((format!("{name}: {phase}"), check));
        }
    }
    // Each design's parts on their own, with the standard tools, after every design's phases
    // (pgbench's writes and the checkpoints they bring are not to land in a design's phase).
    let mut figures = pg_parts(config, db, &seats, &picks).await?;
    if let Some(redis) = &config.redis_url {
        let mean = picks.iter().map(Vec::len).sum::<usize>() as f64 / picks.len().max(1) as f64;
        let pipeline = mean.round().max(1.0) as usize;
        figures.extend(crate::tools::redis_parts(redis, config.clients, pipeline, baselines::UNLOCK).await);
    }
    for f in figures {
        match f.rate_per_s {
            Some(rate) => println!(
                "  {:<16} {:<10} {:<26} {rate:>9.0}/s  ({})",
                f.tool, f.target, f.phase, f.note
            ),
            None => println!("  {:<16} {:<10} {:<26} {}", f.tool, f.target, f.phase, f.note),
        }
        results.tools.push(f);
    }
    Ok(())
}

/// The baseline server's time per reservation since the last call, by part (`DELETE /parts`).
async fn take_parts(race: &LeanRace) -> Option<Value> {
    let request = race.http.request("DELETE", "/parts", &[], b"");
    match race.http.send(&request).await {
        Ok((200, body)) => serde_json::from_slice(&body).ok(),
        _ => None,
    }
}

/// How [`half_max_rate`] paced a half-max phase, for the report.
fn paced_by(first: u64, max_rate: f64) -> String {
    format!(
        "half the max phase's rate over its first {first} answers (the requests this phase sends, on a fresh event: mostly 201s), not half its whole rate ({max_rate:.0}/s, mostly cheap 409s once the event sold out); past the max phase's last answer, its whole rate"
    )
}

/// The open-loop rate of a "half max" phase: half the closed loop's rate over the requests the
/// open loop will send. The max phase runs 40,000 picks into one event; once its seats are
/// sold most answers are quick `409`s (an `UPDATE` of no row: no WAL to flush), so its whole
/// rate is far above what the same target sustains on a fresh event, where most answers are
/// `201`s, each a durable commit. Half of that whole rate overloaded the naive design's half-max
/// phase (issue 17: 26 s of queueing). FrontRow's half max is paced the same way (its `201`s
/// cost an append and a share of an fsync, its `409`s a decision in memory). Found by
/// fixed-point iteration: `r = R(r * open_s) / 2`, `R(n)` the max phase's rate over its first
/// `n` answers. Returns the rate and that `n`.
pub(crate) fn half_max_rate(timeline: &Timeline, max_rate: f64, open_s: f64) -> (f64, u64) {
    let mut rate = max_rate / 2.0;
    let mut first = 0;
    for _ in 0..200 {
        first = (rate * open_s).ceil().max(1.0) as u64;
        let Some(r) = timeline.rate_of_first(first) else {
            break;
        };
        let converged = (r / 2.0 - rate).abs() <= rate * 1e-4;
        rate = r / 2.0;
        if converged {
            break;
        }
    }
    (rate.max(1.0), first)
}

/// The naive design's transaction alone, with pgbench, on a scratch event in the same table:
/// durable commits (every transaction writes its seats: the cost of a `201`) at the pool's
/// size and at the closed loop's client count, and refusals (the same `UPDATE` on a sold-out
/// event: no row, nothing to flush: the cost of a `409`).
async fn pg_parts(
    config: &Config,
    db: &Database,
    seats: &[String],
    picks: &[Vec<String>],
) -> anyhow::Result<Vec<crate::tools::ToolFigure>> {
    if crate::tools::find_tool("pgbench").is_none() {
        return Ok(vec![crate::tools::ToolFigure::missing(
            "pgbench",
            "naive-pg",
            "reserve transaction",
            "transactions",
        )]);
    }
    let event = uuid::Uuid::now_v7();
    db.add_event(event, seats).await?;
    db.add_picks(picks).await?;
    db.set_status(event, "BOOKED").await?;
    let pick = "\\set n random(0, :picks - 1)\nSELECT seats AS pick FROM pgbench_picks WHERE n = :n \\gset\n";
    let update = "UPDATE seats SET status = 'RESERVED', reservation_id = gen_random_uuid(), customer = 'pgbench', \
                  held_until = now() + interval '10 minutes' WHERE event_id = :event AND seat_id = ANY(:pick::text[])";
    let refuse = format!("{pick}BEGIN;\n{update} AND status = 'AVAILABLE';\nROLLBACK;\n");
    let commit = format!("{pick}BEGIN;\n{update};\nCOMMIT;\n");
    let defines = [("event", event.to_string()), ("picks", picks.len().to_string())];
    let secs = config.phase_s.clamp(1.0, 5.0).ceil() as u64;
    let mut figures = Vec::new();
    let mut runs = vec![
        ("409: UPDATE of no row", &refuse, config.pg_pool),
        ("201: durable commit", &commit, config.pg_pool),
    ];
    if config.clients as u32 != config.pg_pool {
        runs.push(("201: durable commit", &commit, config.clients as u32));
    }
    for (phase, script, clients) in runs {
        let mut f = crate::tools::pgbench(&db.url, &db.schema, clients, secs, phase, script, &defines).await;
        f.phase = format!("{phase} ({clients} conns)");
        figures.push(f);
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_max_is_half_the_rate_of_the_requests_the_open_loop_sends() {
        // A closed loop that answered its first 5,000 requests at 1,000/s (commits) and the
        // next 35,000 at 7,000/s (refusals): 40,000 in 10 s, 4,000/s overall.
        let marks = (1..=160u64)
            .map(|k| {
                let n = k * 250;
                let secs = if n <= 5000 {
                    n as f64 / 1000.0
                } else {
                    5.0 + (n - 5000) as f64 / 7000.0
                };
                (n, secs)
            })
            .collect();
        let timeline = Timeline { marks };
        let (rate, first) = half_max_rate(&timeline, 4000.0, 10.0);
        assert!((rate - 500.0).abs() < 1.0, "{rate}");
        assert!((4990..=5010).contains(&first), "{first}");
        // Without a timeline: half the whole rate.
        assert_eq!(half_max_rate(&Timeline::default(), 4000.0, 10.0).0, 2000.0);
    }
}
