//! The harness's smoke run, so it keeps working: every scenario for a few seconds with small
//! counts, and every race checked. Speed is reported, never asserted.

use frontrow_bench::{Config, run_and_report};

fn checks_pass(results: &frontrow_bench::Results) {
    assert!(!results.checks.is_empty(), "no race was checked");
    for (name, check) in &results.checks {
        assert!(check.passed, "{name}: {check:?}");
        assert!(check.acknowledged_reservations > 0, "{name}: nobody got a seat");
    }
    assert_eq!(results.ledger_equals_log, Some(true), "the ledger differs from the log");
    // Scenario 5's analytics replay: every FrontRow race's event, its figures as the race saw them.
    let frontrow_races = results
        .checks
        .iter()
        .filter(|(n, _)| n.starts_with("frontrow:"))
        .count();
    assert_eq!(
        results.analytics_checks.len(),
        frontrow_races,
        "a race's event was not replayed"
    );
    for (name, check) in &results.analytics_checks {
        assert!(check.passed, "{name}: {check:?}");
    }
    let hot = &results.analytics_checks[0].1;
    assert!(
        hot.bookings.analytics > 0,
        "the hot onsale's paid holds are not bookings: {hot:?}"
    );
    assert!(hot.seats_booked_now.analytics > 0, "{hot:?}");
    let analytics = results.analytics.as_ref().expect("the analytics replay ran");
    assert!(analytics["records"].as_u64().unwrap() >= hot.reservations.analytics + hot.bookings.analytics);
    assert!(analytics["events_per_s"].as_f64().unwrap() > 0.0);
    assert!(
        results.unavailable.iter().all(|u| !u.scenario.starts_with("5-replay")),
        "{:?}",
        results.unavailable
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smoke_run_against_frontrow_and_the_hello_world_ceiling() {
    let out = tempfile::tempdir().unwrap();
    let config = Config {
        out_dir: out.path().to_path_buf(),
        ..Config::smoke()
    };
    let (results, path, md) = run_and_report(&config).await.unwrap();
    checks_pass(&results);
    for (scenario, target, phase) in [
        ("0-ceiling", "hello", "GET /hello (first)"),
        ("0-ceiling", "hello", "GET /hello (last)"),
        ("0-ceiling", "hello", "GET /hello (reqwest)"),
        ("0-ceiling", "frontrow", "GET /health (same process)"),
        ("1-hot-onsale", "frontrow", "reserve explicit (max)"),
        ("1-hot-onsale", "frontrow", "pay (simulated provider)"),
        ("1-hot-onsale", "frontrow", "reserve best-available (max)"),
        ("1-hot-onsale", "frontrow", "reserve explicit (half max)"),
        ("2-availability", "frontrow", "map full (200)"),
        ("2-availability", "frontrow", "map If-None-Match (304)"),
        ("4-search", "frontrow", "GET /search (fixed rate)"),
    ] {
        let stats = results
            .find(scenario, target, phase)
            .unwrap_or_else(|| panic!("{scenario} {target} {phase} missing"));
        assert!(stats.ok > 0, "{scenario} {target} {phase}: no wanted answer: {stats:?}");
        assert_eq!(stats.errors, 0, "{scenario} {target} {phase}: {stats:?}");
    }
    // FrontRow's half max is paced as the baselines' are, and says how.
    let half = results
        .find_extra("1-hot-onsale", "frontrow", "reserve explicit (half max)")
        .unwrap();
    assert!(half["rate"].as_f64().unwrap() > 0.0, "{half}");
    assert!(
        half["paced_by"]
            .as_str()
            .unwrap()
            .starts_with("half the max phase's rate over its first "),
        "{half}"
    );
    assert!(results.rebuild.is_some());
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(report["profile"], "smoke");
    assert!(report["machine"]["cpus"].as_u64().unwrap() >= 1);
    let scenarios = report["scenarios"].as_array().unwrap();
    let flash = scenarios.iter().find(|s| s["id"] == "3-flash-crowd").unwrap();
    assert_eq!(flash["available"], true);
    let joins = results
        .find("3-flash-crowd", "frontrow", "queue join (ramp)")
        .expect("the flash crowd's joins were measured");
    let fans = Config::smoke().flash.fans as u64;
    assert_eq!((joins.ok, joins.errors, joins.shed), (fans, 0, 0), "{joins:?}");
    assert_eq!(results.queue_checks.len(), 4, "{:?}", results.queue_checks);
    for c in &results.queue_checks {
        assert!(c.passed, "{}: {}", c.name, c.detail);
    }
    let crowd = results.flash_crowd.as_ref().unwrap();
    assert_eq!(
        crowd["sse_streams_held"], fans,
        "every fan held its status stream: {crowd}"
    );
    assert!(crowd["admitted_seen"].as_u64().unwrap() > 0, "{crowd}");
    let replay = scenarios.iter().find(|s| s["id"] == "5-replay").unwrap();
    assert_eq!(replay["available"], true);
    assert!(report["results"]["analytics"]["events_per_s"].as_f64().unwrap() > 0.0);
    assert!(
        md.contains("| 5-replay | frontrow | analytics replay (events/s) |"),
        "{md}"
    );
    assert!(
        md.contains("| frontrow analytics: reserve explicit + pay | yes |"),
        "{md}"
    );
    // Scenario 6 runs where chromedriver is installed and says it is unavailable elsewhere.
    match &results.web {
        Some(web) => {
            assert_eq!(web["navigation"]["count"], 3, "{web}");
            assert!(web["acknowledged"].as_u64().unwrap() > 0, "{web}");
            assert_eq!(web["unmatched"], 0, "every delta was matched to its paint: {web}");
        }
        None => assert!(
            results.unavailable.iter().any(|u| u.scenario == "6-web"),
            "{:?}",
            results.unavailable
        ),
    }
    assert!(report["ratios"]["reserve_vs_hello"].as_f64().unwrap() > 0.0);
    // The issue's targets are ratios of the same process's /health, measured in the run.
    assert!(report["ratios"]["reserve_vs_health"].as_f64().unwrap() > 0.0);
    assert!(report["ratios"]["map_304_vs_health"].as_f64().unwrap() > 0.0);
    assert_eq!(report["ratios"]["reserve_vs_naive_pg"], serde_json::Value::Null);
    assert!(
        md.contains("| 1-hot-onsale | frontrow | reserve explicit (max) |"),
        "{md}"
    );
    assert!(
        md.contains("not measured"),
        "the PostgreSQL ratio is not measured without it: {md}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs postgresql and redis: run the README's test command"]
async fn the_smoke_run_with_the_postgresql_and_redis_baselines() {
    let out = tempfile::tempdir().unwrap();
    let config = Config {
        out_dir: out.path().to_path_buf(),
        database_url: Some(
            std::env::var("FRONTROW_DATABASE_URL")
                .unwrap_or_else(|_| "postgres://frontrow:frontrow@127.0.0.1:5432/frontrow".into()),
        ),
        redis_url: Some(std::env::var("FRONTROW_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6390".into())),
        ..Config::smoke()
    };
    let (results, _, md) = run_and_report(&config).await.unwrap();
    checks_pass(&results);
    for target in ["naive-pg", "redis-lock"] {
        for phase in ["reserve explicit (max)", "pay", "reserve explicit (half max)"] {
            let stats = results
                .find("1-hot-onsale", target, phase)
                .unwrap_or_else(|| panic!("{target} {phase} missing"));
            assert!(stats.ok > 0, "{target} {phase}: {stats:?}");
            assert_eq!(stats.errors, 0, "{target} {phase}: {stats:?}");
        }
        assert!(
            results.checks.iter().any(|(name, _)| name.starts_with(target)),
            "{target} races were not checked"
        );
    }
    assert!(!md.contains("skipped"), "{md}");
    // The baselines' parts alone, where the tools are installed, and each bottleneck named.
    for (tool, target) in [("pgbench", "naive-pg"), ("redis-benchmark", "redis-lock")] {
        let ran: Vec<_> = results.tools.iter().filter(|t| t.tool == tool).collect();
        assert!(!ran.is_empty(), "{tool}: {:?}", results.tools);
        for t in ran {
            assert_eq!(t.target, target);
            if frontrow_bench::tools::find_tool(tool).is_some() {
                assert!(t.rate_per_s.unwrap_or(0.0) > 0.0, "{t:?}");
            } else {
                assert_eq!(t.note, format!("{tool} not available"));
            }
        }
    }
    let lines = frontrow_bench::report::bottlenecks(&results);
    assert_eq!(lines.len(), 3, "{lines:?}");
    // FrontRow's half max as its own metrics saw it, then each baseline's parts.
    assert!(
        lines[0].starts_with("frontrow: half max ") && lines[0].contains("inside FrontRow: "),
        "{lines:?}"
    );
    let inside = results
        .find_extra("1-hot-onsale", "frontrow", "reserve explicit (half max)")
        .map(|e| e["inside"].clone())
        .unwrap_or_default();
    assert!(inside["requests"]["count"].as_u64().unwrap_or(0) > 0, "{inside}");
    assert!(inside["journal_appends"]["count"].as_u64().unwrap_or(0) > 0, "{inside}");
    assert!(
        lines[1].starts_with("naive-pg: ") && lines[2].starts_with("redis-lock: "),
        "{lines:?}"
    );
    assert!(
        lines[1..].iter().all(|l| l.contains("inside the server per request")),
        "{lines:?}"
    );
}

/// Runs scenario `scenario` at smoke size against the real `frontrow serve` binary in a child
/// process (the one `cargo test --workspace` builds beside this test); the config comes back
/// with the results, for the sizes it asked for.
async fn run_in_a_child(scenario: &str) -> (Config, frontrow_bench::Results) {
    let out = tempfile::tempdir().unwrap();
    let mut config = Config {
        out_dir: out.path().to_path_buf(),
        scenarios: vec![scenario.into()],
        ..Config::smoke()
    };
    config.flash.frontrow_bin = Some(frontrow_bench::child::default_binary().unwrap());
    let (results, _, _) = run_and_report(&config).await.unwrap();
    (config, results)
}

/// Scenario 3 as the full run does it: the real `frontrow serve` binary in a child process
/// ([`run_in_a_child`]), the crowd's checks read from the child's journal once it has stopped,
/// and no process left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the frontrow binary (cargo test --workspace builds it): run the README's test command"]
async fn the_flash_crowd_against_frontrow_serve_in_a_child_process() {
    let (config, results) = run_in_a_child("3").await;
    assert!(results.checks.is_empty(), "only scenario 3 ran: {:?}", results.checks);
    let joins = results
        .find("3-flash-crowd", "frontrow", "queue join (ramp)")
        .expect("the flash crowd's joins were measured");
    let fans = config.flash.fans as u64;
    assert_eq!((joins.ok, joins.errors, joins.shed), (fans, 0, 0), "{joins:?}");
    assert_eq!(results.queue_checks.len(), 4, "{:?}", results.queue_checks);
    for c in &results.queue_checks {
        assert!(c.passed, "{}: {}", c.name, c.detail);
    }
    let crowd = results.flash_crowd.as_ref().unwrap();
    assert_eq!(crowd["server"], "child process", "{crowd}");
    assert_eq!(crowd["sse_streams_held"], fans, "{crowd}");
    assert_eq!(crowd["server_stopped_gracefully"], true, "{crowd}");
    assert!(crowd["admitted_seen"].as_u64().unwrap() > 0, "{crowd}");
    assert!(
        crowd["rss_held_mib"].as_f64().unwrap() > 0.0,
        "the child's memory was read: {crowd}"
    );
    let pid = crowd["server_pid"].as_u64().unwrap();
    assert_ne!(pid, u64::from(std::process::id()), "{crowd}");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the child {pid} is still there"
    );
}

/// Scenario 7 at a small size: events created through the API in a `frontrow serve` child,
/// then a graceful restart and a `kill -9` restart on the same data; after each the node said
/// `/ready` only with every event listed and the newest map complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the frontrow binary (cargo test --workspace builds it): run the README's test command"]
async fn the_catalogue_survives_both_restarts_and_is_loaded_when_ready() {
    let (config, results) = run_in_a_child("7").await;
    let cat = results.catalogue.as_ref().expect("scenario 7 ran");
    let events = config.catalogue.events as u64;
    assert_eq!(cat["events"], events, "{cat}");
    assert_eq!(cat["seats"].as_f64(), Some((events * 20_008) as f64), "{cat}");
    assert_eq!(cat["stopped_gracefully"], true, "{cat}");
    assert!(cat["data_dir_bytes"].as_u64().unwrap() > 0, "{cat}");
    assert!(
        cat["rss_created_mib"].as_f64().unwrap() > 0.0,
        "the child's memory was read: {cat}"
    );
    let starts = cat["starts"].as_array().unwrap();
    assert_eq!(starts.len(), 2, "{cat}");
    for start in starts {
        assert_eq!(start["loaded_at_ready"], true, "{start}");
        assert!(start["ready_s"].as_f64().unwrap() > 0.0, "{start}");
    }
}

/// The ceiling alone: the harness's client, reqwest and wrk against the same hello-world
/// server; the report holds wrk's ceiling and the harness/wrk ratio where wrk is installed,
/// and says "wrk not available" where it is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_holds_the_wrk_ceiling_beside_the_harness_one() {
    let out = tempfile::tempdir().unwrap();
    let config = Config {
        out_dir: out.path().to_path_buf(),
        scenarios: vec!["0".into()],
        phase_s: 1.0,
        ..Config::smoke()
    };
    let (results, path, md) = run_and_report(&config).await.unwrap();
    for phase in ["GET /hello (first)", "GET /hello (last)", "GET /hello (reqwest)"] {
        let stats = results.find("0-ceiling", "hello", phase).unwrap();
        assert!(stats.ok > 0 && stats.errors == 0, "{phase}: {stats:?}");
    }
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let ceilings = &report["ceilings"];
    assert!(ceilings["harness"].as_f64().unwrap() > 0.0, "{ceilings}");
    if frontrow_bench::tools::find_tool("wrk").is_some() {
        let wrk = ceilings["wrk"]
            .as_f64()
            .unwrap_or_else(|| panic!("no wrk ceiling: {ceilings}"));
        assert!(wrk > 0.0, "{ceilings}");
        let ratio = ceilings["harness_vs_wrk"].as_f64().unwrap();
        assert!(ratio > 0.0, "{ceilings}");
        assert_eq!(report["ratios"]["harness_vs_wrk_hello"].as_f64(), Some(ratio));
        assert_eq!(
            report["results"]["tools"].as_array().unwrap().len(),
            2,
            "wrk ran first and last"
        );
        assert!(md.contains("harness/wrk"), "{md}");
    } else {
        assert_eq!(ceilings["wrk"], serde_json::Value::Null);
        assert_eq!(ceilings["wrk_note"], "wrk not available", "{ceilings}");
        assert!(md.contains("wrk not available"), "{md}");
    }
}

/// The lean client answers what reqwest answers, status and body length, on a small local
/// server: plain text, JSON with a status of its own, an empty 304, a chunked (streamed) body,
/// a large body and a POST with a body; several requests on the same keep-alive connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lean_client_gets_the_same_answers_as_reqwest() {
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::{get, post};

    let router = axum::Router::new()
        .route("/hello", get(|| async { "Hello, World!" }))
        .route(
            "/conflict",
            get(|| async {
                (
                    StatusCode::CONFLICT,
                    axum::Json(serde_json::json!({ "detail": "taken" })),
                )
            }),
        )
        .route("/not-modified", get(|| async { StatusCode::NOT_MODIFIED }))
        .route(
            "/chunked",
            get(|| async {
                let parts = (0..50).map(|i| Ok::<_, std::io::Error>(format!("part {i};").into_bytes()));
                Body::from_stream(futures::stream::iter(parts))
            }),
        )
        .route("/large", get(|| async { "x".repeat(300_000) }))
        .route(
            "/echo",
            post(|body: axum::body::Bytes| async move { (StatusCode::CREATED, body) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let lean = frontrow_bench::http1::Client::new(addr);
    let http = reqwest::Client::new();
    for round in 0..3 {
        for path in ["/hello", "/conflict", "/not-modified", "/chunked", "/large"] {
            let (status, body) = lean.get(path).await.unwrap();
            let r = http.get(format!("http://{addr}{path}")).send().await.unwrap();
            let want = (r.status().as_u16(), r.bytes().await.unwrap());
            assert_eq!((status, body.len()), (want.0, want.1.len()), "round {round} {path}");
            assert_eq!(body, want.1.as_ref(), "round {round} {path}");
        }
        let payload = br#"{"seats":["A-1-1","A-1-2"]}"#;
        let request = lean.request("POST", "/echo", &[("content-type", "application/json")], payload);
        let (status, body) = lean.send(&request).await.unwrap();
        let r = http
            .post(format!("http://{addr}/echo"))
            .body(payload.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(
            (status, body.len()),
            (r.status().as_u16(), r.bytes().await.unwrap().len())
        );
    }
    assert_eq!(lean.idle(), 1, "one caller at a time: one keep-alive connection");
}
