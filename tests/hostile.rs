//! Hostile input at the HTTP edge: requests built to make the server do unbounded work, abuse
//! limits and the startup decisions that keep demo mode off the internet.

mod common;

use common::{EventWritten, ORGANIZER_KEY, Problem, TestApp, answer, typed};
use serde_json::Value;

/// A forged `Stripe-Signature` with tens of thousands of `v1=` entries and a 1 MB body once
/// made the handler hash the body per entry (two such requests stalled `/health` for 33 s).
/// Now the header is refused for its length before anything is hashed, and the server answers
/// other requests meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_signature_flood_is_refused_without_hashing_while_health_answers() {
    let app = TestApp::spawn().await;
    let header = format!("t={},{}", app.now().timestamp(), "v1=00,".repeat(40_000));
    let body = vec![b' '; 1 << 20];
    // Generous guard so a regression fails instead of hanging; nothing here asserts speed.
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .unwrap();
    let forged: Vec<_> = (0..2)
        .map(|_| {
            let request = client
                .post(app.url("/webhooks/payments"))
                .header("content-type", "application/json")
                .header("stripe-signature", header.clone())
                .body(body.clone());
            tokio::spawn(request.send())
        })
        .collect();
    let health = client.get(app.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    for request in forged {
        let res = request.await.unwrap().unwrap();
        assert_eq!(res.status(), 400);
        assert_eq!(res.headers()["content-type"], "application/problem+json");
        let problem: Problem = typed(res.json().await.unwrap());
        assert_eq!(problem.kind, "urn:frontrow:problem:bad-signature");
        assert!(problem.detail.contains("longer than"), "{problem:?}");
    }
    app.stop().await;
}

/// The real binary with only the given `FRONTROW_*` variables (the caller's are removed).
fn frontrow(data_dir: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_frontrow"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("FRONTROW_") {
            command.env_remove(&key);
        }
    }
    command
        .env("FRONTROW_LOG", "warn")
        .envs(env.iter().copied())
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .stdin(std::process::Stdio::null());
    command
}

/// Demo mode on an address other than loopback is refused before anything listens.
#[test]
fn serve_refuses_demo_mode_on_a_public_address() {
    let dir = tempfile::tempdir().unwrap();
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let out = frontrow(dir.path(), &[], &["serve", "--listen", listen])
            .output()
            .unwrap();
        assert!(!out.status.success(), "serve on {listen} with demo mode started");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("demo mode is on"), "{stderr}");
        assert!(stderr.contains("FRONTROW_DEMO=false"), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    }
}

/// Configured secrets shorter than 32 characters are refused at startup, naming the setting.
#[test]
fn serve_refuses_short_configured_secrets() {
    let dir = tempfile::tempdir().unwrap();
    for (key, value, named) in [
        ("FRONTROW_TOKEN_SECRET", "hunter2", "token_secret"),
        ("FRONTROW_WEBHOOK_SECRET", "whsec_short", "webhook_secret"),
        ("FRONTROW_ORGANIZERS", "{acme=\"acme-key\"}", "organizer \"acme\""),
    ] {
        let out = frontrow(dir.path(), &[(key, value)], &["serve", "--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{key}={value} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named) && stderr.contains("at least 32"), "{stderr}");
        assert!(!stderr.contains(value), "the secret was printed: {stderr}");
    }
}

/// With demo mode off the organizer key is never printed (it is still generated into the
/// secrets file, which is the owner's alone).
#[test]
fn serve_without_demo_mode_prints_no_organizer_key() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let mut child = frontrow(
        dir.path(),
        &[("FRONTROW_DEMO", "false"), ("FRONTROW_SAMPLE_EVENT", "false")],
        &["serve", "--listen", "127.0.0.1:0"],
    )
    .stdout(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let mut printed = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let done = line.contains("API description");
        printed.push(line);
        if done {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let printed = printed.join("\n");
    assert!(printed.contains("FrontRow listening on"), "{printed}");
    let secrets: Value = serde_json::from_slice(&std::fs::read(dir.path().join("secrets.json")).unwrap()).unwrap();
    let key = secrets["demo_organizer_key"].as_str().unwrap();
    assert!(!printed.contains(key), "{printed}");
    assert!(!printed.contains("API key"), "{printed}");
}

/// The generated secrets file is the owner's alone.
#[cfg(unix)]
#[tokio::test]
async fn the_generated_secrets_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let app = TestApp::spawn_with(|s| {
        s.token_secret = None;
        s.webhook_secret = None;
    })
    .await;
    let meta = std::fs::metadata(app.dir.path().join("secrets.json")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(!app.dir.path().join("secrets.tmp").exists());
    app.stop().await;
}

/// Rate limits on, at small numbers a test can reach: `(per second, burst)` per customer and
/// per address.
fn limited(customer: (u32, u32), address: (u32, u32)) -> impl FnOnce(&mut frontrow::Settings) {
    move |s| {
        s.limits = frontrow_http::limits::Limits {
            customer_per_second: customer.0,
            customer_burst: customer.1,
            address_per_second: address.0,
            address_burst: address.1,
            ..frontrow_http::limits::Limits::default()
        }
    }
}

async fn assert_limited(res: reqwest::Response, limit: &str) {
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    let retry: u32 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry >= 1);
    let problem: Problem = typed(res.json().await.unwrap());
    assert_eq!(problem.kind, "urn:frontrow:problem:rate-limited");
    assert_eq!(problem.limit.as_deref(), Some(limit), "{problem:?}");
}

/// A bucket of `burst` refilled at 1 a second lets through at most this many requests sent
/// within `elapsed` (the test does not assume how fast this machine is).
fn at_most(burst: usize, elapsed: std::time::Duration) -> usize {
    burst + elapsed.as_secs() as usize
}

/// One customer's writes beyond their burst get `429` with `Retry-After` and write nothing;
/// another customer from the same address is not held back by them.
#[tokio::test]
async fn a_customer_over_their_rate_is_refused_and_nothing_is_written() {
    let app = TestApp::spawn_with(limited((1, 5), (1000, 1000))).await;
    // The rate limit, not the per-customer seat limit, is what this customer runs into.
    let mut body = app.event_body(chrono::Duration::minutes(-1));
    body["max_seats_per_customer"] = serde_json::json!(20);
    let created: EventWritten = answer(app.create_event_with(ORGANIZER_KEY, &body).await, 201).await;
    let event = created.event_id;
    app.availability(event, created.position.as_deref()).await;
    let started = std::time::Instant::now();
    let answers = futures::future::join_all((1..=10).map(|i| {
        let app = &app;
        async move {
            let body = serde_json::json!({ "seats": [format!("A-1-{i}")] });
            app.reserve("greedy", event, &format!("greedy-{i}"), body).await
        }
    }))
    .await;
    let elapsed = started.elapsed();
    let created = answers.iter().filter(|r| r.status() == 201).count();
    assert!(created >= 5 && created <= at_most(5, elapsed), "{created} created");
    for res in answers.into_iter().filter(|r| r.status() != 201) {
        assert_limited(res, "customer").await;
    }
    // What was refused wrote nothing.
    let state = &app.replay().await[&event];
    assert_eq!(state.reservations.len(), created);
    assert!(state.reservations.values().all(|r| r.customer.as_str() == "greedy"));
    // Another customer behind the same address has a bucket of their own.
    assert_eq!(app.reserve_seats("patient", event, &["B-1-1"]).await.status(), 201);
    app.stop().await;
}

/// Requests without a customer (the webhook, demo tokens) are limited by client address, and
/// reads are not limited at all.
#[tokio::test]
async fn an_address_over_its_rate_is_refused_on_unauthenticated_writes() {
    let app = TestApp::spawn_with(limited((1000, 1000), (1, 10))).await;
    let unsigned = || {
        app.client
            .post(app.url("/webhooks/payments"))
            .header("content-type", "application/json")
            .body("{}")
            .send()
    };
    let started = std::time::Instant::now();
    let answers = futures::future::join_all((0..15).map(|_| unsigned())).await;
    let elapsed = started.elapsed();
    let answers: Vec<_> = answers.into_iter().map(Result::unwrap).collect();
    // Those let through reach the handler, which refuses them for the missing signature.
    let passed = answers.iter().filter(|r| r.status() == 400).count();
    assert!(passed >= 10 && passed <= at_most(10, elapsed), "{passed} passed");
    for res in answers.into_iter().filter(|r| r.status() != 400) {
        assert_limited(res, "address").await;
    }
    for _ in 0..30 {
        assert_eq!(app.client.get(app.url("/events")).send().await.unwrap().status(), 200);
    }
    app.stop().await;
}

/// Seat streams are capped per client address with `429` + `Retry-After`; an idle stream is
/// closed by the server and its place comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seat_streams_are_capped_per_address_and_idle_ones_end() {
    let app = TestApp::spawn_with(|s| {
        s.limits.sse_per_address = 2;
        s.limits.sse_idle_secs = 1;
    })
    .await;
    let event = app.create_event().await;
    let open = || app.client.get(app.url(&format!("/events/{event}/seats/stream"))).send();
    let first = open().await.unwrap();
    let second = open().await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(second.status(), 200);
    let refused = open().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let problem: Problem = typed(refused.json().await.unwrap());
    assert_eq!(problem.kind, "urn:frontrow:problem:rate-limited");
    assert_eq!(problem.limit.as_deref(), Some("address"));
    // Nothing happens on the event: each stream sends its snapshot, then the server ends it.
    for stream in [first, second] {
        let body = stream.text().await.unwrap();
        assert!(body.contains("event: snapshot"), "{body}");
    }
    assert_eq!(open().await.unwrap().status(), 200);
    app.stop().await;
}
