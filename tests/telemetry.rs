//! OpenTelemetry trace export: the real binary posts its spans over OTLP/HTTP to a receiver
//! run by the test, which decodes them with the OTLP protobuf definitions.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

/// An OTLP/HTTP collector stand-in: keeps every body posted to `/v1/traces`.
async fn receiver() -> (String, Arc<Mutex<Vec<Bytes>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(body);
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, bodies)
}

/// `frontrow serve` on a fresh data directory with `env`, logging at `warn` to nowhere; returns
/// it and its base URL.
fn serve(data_dir: &std::path::Path, env: &[(&str, &str)]) -> (Child, String) {
    spawn_serve(data_dir, "warn", env, Stdio::null())
}

/// `frontrow serve` with the log filter `log`, `env` and its stderr going to `stderr`.
fn spawn_serve(data_dir: &std::path::Path, log: &str, env: &[(&str, &str)], stderr: Stdio) -> (Child, String) {
    common::spawn_listening(
        Command::new(env!("CARGO_BIN_EXE_frontrow"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .env("FRONTROW_LOG", log)
            .envs(env.iter().copied())
            .stderr(stderr),
    )
}

/// SIGTERM, then the exit status (a graceful stop flushes the queued spans).
fn stop(mut child: Child) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    child.wait().unwrap()
}

fn text(value: &Option<AnyValue>) -> Option<String> {
    match value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| text(&kv.value))
}

/// Every exported span with its resource's `service.name`.
fn spans(bodies: &[Bytes]) -> Vec<(String, Span)> {
    let mut all = Vec::new();
    for body in bodies {
        let request = ExportTraceServiceRequest::decode(body.as_ref()).expect("an OTLP protobuf body");
        for resource in request.resource_spans {
            let service = resource
                .resource
                .as_ref()
                .and_then(|r| attribute(&r.attributes, "service.name"))
                .unwrap_or_default();
            for scope in resource.scope_spans {
                all.extend(scope.spans.into_iter().map(|s| (service.clone(), s)));
            }
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_and_writer_spans_reach_an_otlp_collector() {
    let (collector, bodies) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = serve(dir.path(), &[("FRONTROW_TELEMETRY__OTLP_ENDPOINT", &collector)]);
    let client = reqwest::Client::new();
    let health = client
        .get(format!("{base}/health"))
        .header("x-request-id", "trace-me-7")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let token = common::send_json(
        client
            .post(format!("{base}/demo/tokens"))
            .json(&json!({ "customer": "otel-fan" })),
    )
    .await;
    let event = frontrow::sample::SAMPLE_EVENT_ID;
    let reserve = client
        .post(format!("{base}/events/{event}/reservations"))
        .bearer_auth(token["token"].as_str().unwrap())
        .header("idempotency-key", "otel-1")
        .header("x-request-id", "reserve-trace-8")
        .json(&json!({ "best_available": { "section": "FLA", "count": 2 } }))
        .send()
        .await
        .unwrap();
    let status = reserve.status().as_u16();
    assert_eq!(status, 201, "{}", reserve.text().await.unwrap());
    assert!(stop(child).success());

    let spans = spans(&bodies.lock().unwrap());
    let request = |id: &str| {
        spans
            .iter()
            .find(|(_, s)| s.name == "request" && attribute(&s.attributes, "request_id").as_deref() == Some(id))
            .unwrap_or_else(|| panic!("no request span for {id} among {} spans", spans.len()))
    };
    let (service, health) = request("trace-me-7");
    assert_eq!(service, "frontrow-serve");
    assert_eq!(attribute(&health.attributes, "route").as_deref(), Some("/health"));
    assert_eq!(attribute(&health.attributes, "status").as_deref(), Some("200"));
    assert!(health.end_time_unix_nano > health.start_time_unix_nano);
    let (_, reserve) = request("reserve-trace-8");
    assert_eq!(
        attribute(&reserve.attributes, "route").as_deref(),
        Some("/events/{event_id}/reservations")
    );
    assert_eq!(attribute(&reserve.attributes, "status"), Some(status.to_string()));
    let batch = spans
        .iter()
        .find(|(_, s)| s.name == "writer_batch")
        .expect("a writer batch span");
    assert!(
        attribute(&batch.1.attributes, "partition").is_some(),
        "{:?}",
        batch.1.attributes
    );
    assert!(attribute(&batch.1.attributes, "size").is_some());
}

/// With no collector listening, requests are answered as before and a graceful stop still
/// ends (the export gives up after its timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absent_collector_holds_nothing_up() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = serve(dir.path(), &[("FRONTROW_TELEMETRY__OTLP_ENDPOINT", &endpoint)]);
    for _ in 0..20 {
        let res = reqwest::get(format!("{base}/health")).await.unwrap();
        assert_eq!(res.status(), 200);
    }
    assert!(stop(child).success());
}

#[test]
fn bad_telemetry_settings_are_refused_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    for (key, value, says) in [
        (
            "FRONTROW_TELEMETRY__OTLP_ENDPOINT",
            "https://collector:4318",
            "http:// URL",
        ),
        ("FRONTROW_TELEMETRY__SAMPLE_RATIO", "1.5", "sample_ratio"),
        ("FRONTROW_LOG_QUEUE", "0", "FRONTROW_LOG_QUEUE"),
        ("FRONTROW_LOG_QUEUE", "lots", "FRONTROW_LOG_QUEUE"),
    ] {
        let mut env = vec![(key, value)];
        if key.ends_with("SAMPLE_RATIO") {
            env.push(("FRONTROW_TELEMETRY__OTLP_ENDPOINT", "http://127.0.0.1:4318"));
        }
        let out = Command::new(env!("CARGO_BIN_EXE_frontrow"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .envs(env)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{key}={value} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    }
}

/// `frontrow serve` at `info` with stderr piped and not read, and `env`; returns it and its base URL.
fn serve_unread_stderr(data_dir: &std::path::Path, env: &[(&str, &str)]) -> (Child, String) {
    spawn_serve(data_dir, "info", env, Stdio::piped())
}

/// Sends `n` `/health` requests one after the other; each must be answered within 5 s.
async fn health_requests(base: &str, n: usize) {
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .unwrap();
    for i in 0..n {
        let answer = http.get(format!("{base}/health")).send().await;
        assert!(
            answer.as_ref().is_ok_and(|r| r.status() == 200),
            "request {i} with stderr unread: {answer:?}"
        );
    }
}

/// Reads the child's stderr from now on, stops it gracefully and returns what it wrote.
fn stop_reading_stderr(mut child: Child) -> String {
    use std::io::Read;
    let mut stderr = child.stderr.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    assert!(stop(child).success());
    reading.join().unwrap()
}

/// What a `serve` at `info` with its stderr piped (and read only from its stop on) wrote after
/// answering `n` `/health` requests and stopping gracefully.
async fn stderr_after_health_requests(n: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = serve_unread_stderr(dir.path(), &[]);
    health_requests(&base, n).await;
    stop_reading_stderr(child)
}

/// Log lines are written by a thread of their own: a reader of stderr that stops reading (a
/// stuck log shipper) fills the pipe, and the requests go on being answered; the lines queued
/// meanwhile come out once it reads again, and a graceful stop writes the rest.
#[tokio::test]
async fn a_stderr_nobody_reads_holds_no_request_up() {
    // `info`: one line of about 300 bytes per request, so 2,000 of them are ten times what a
    // pipe holds (64 KiB) before a write to it blocks.
    let text = stderr_after_health_requests(2_000).await;
    let answered = text.matches("request answered").count();
    assert!(answered >= 2_000, "{answered} request lines written");
    assert!(
        text.contains("stopped cleanly"),
        "{}",
        &text[text.len().saturating_sub(2_000)..]
    );
    assert!(!text.contains("log lines dropped"), "nothing was to be dropped");
}

/// With a queue of 100 lines and the pipe full, the lines beyond are dropped, not waited for:
/// counted at `/metrics` while the node runs, and said at its graceful stop.
#[tokio::test]
async fn log_lines_beyond_a_full_queue_are_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = serve_unread_stderr(dir.path(), &[("FRONTROW_LOG_QUEUE", "100")]);
    health_requests(&base, 2_000).await;
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let dropped: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("frontrow_log_lines_dropped_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no dropped-lines counter in {metrics}"));
    // About 220 lines fit in the pipe and 100 in the queue: most of 2,000 cannot.
    assert!(dropped >= 1_000, "{dropped} lines counted as dropped");
    let text = stop_reading_stderr(child);
    assert!(
        text.contains("log lines dropped"),
        "{}",
        &text[text.len().saturating_sub(2_000)..]
    );
    assert!(text.matches("request answered").count() < 2_000);
}

/// Logs that go to a pipe or a file (a log shipper, `journald`, a redirect) are plain text:
/// no terminal colour codes in them, so `status=200` reads as it is written.
#[tokio::test]
async fn logs_to_a_pipe_are_plain_text() {
    let text = stderr_after_health_requests(1).await;
    let line = text
        .lines()
        .find(|l| l.contains("request answered"))
        .unwrap_or_else(|| panic!("no request line in {text}"));
    assert!(
        line.contains("route=/health") && line.contains("status=200"),
        "{line:?}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "escape codes in the log: {:?}",
        &text[..text.len().min(500)]
    );
}

/// A stop asked for as soon as a node says it listens (a supervisor stopping what it just
/// started, a test) is a graceful stop: the signal handlers are in place before that line is
/// printed. Before they were, such a SIGTERM ended the node by the signal's default action.
#[tokio::test]
async fn a_stop_as_soon_as_the_node_listens_is_graceful() {
    for attempt in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let (child, _) = serve_unread_stderr(dir.path(), &[]);
        let text = stop_reading_stderr(child);
        assert!(
            text.contains("shutdown requested") && text.contains("stopped cleanly"),
            "attempt {attempt}: {}",
            &text[text.len().saturating_sub(2_000)..]
        );
    }
}
