//! Prometheus metrics at `GET /metrics`.
//!
//! The code records through the `metrics` facade (`metrics::counter!` and friends, names
//! prefixed `frontrow_`) wherever the thing happens; this module installs the one recorder of
//! the process, a Prometheus exporter that renders on scrape. The recorder is global, so every
//! app built in one process (tests build several) reports into the same registry.

use std::sync::OnceLock;

use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use metrics::Recorder;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Latency buckets in seconds, from a fast in-memory read to a slow Kafka transaction.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Sizes (commands per batch, bytes per append).
const SIZE_BUCKETS: &[f64] = &[
    1.0,
    2.0,
    4.0,
    8.0,
    16.0,
    32.0,
    64.0,
    128.0,
    256.0,
    512.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
];

/// Every metric FrontRow records: name, kind and help text. The exporter describes each one
/// (`# HELP`), the dashboard in `deploy/grafana` may use only these, and a test checks that
/// every `frontrow_` series a node exports is listed here.
pub const METRICS: &[(&str, Kind, &str)] = &[
    (
        "frontrow_http_requests_total",
        Kind::Counter,
        "HTTP requests answered, by method, route template and status",
    ),
    (
        "frontrow_http_request_duration_seconds",
        Kind::Histogram,
        "HTTP request latency, by method and route template",
    ),
    (
        "frontrow_writer_batch_size",
        Kind::Histogram,
        "commands decided in one group commit",
    ),
    (
        "frontrow_writer_batch_seconds",
        Kind::Histogram,
        "time to decide, append and answer one batch",
    ),
    (
        "frontrow_writer_wait_seconds",
        Kind::Histogram,
        "how long each request waited in its partition writer's mailbox before its batch began",
    ),
    (
        "frontrow_writer_decide_seconds",
        Kind::Histogram,
        "time to decide one batch's commands in memory, before its append",
    ),
    (
        "frontrow_writer_mailbox_depth",
        Kind::Gauge,
        "requests waiting in a partition writer's mailbox after a batch",
    ),
    (
        "frontrow_writer_shed_total",
        Kind::Counter,
        "requests refused at once instead of queued, by reason",
    ),
    (
        "frontrow_journal_append_seconds",
        Kind::Histogram,
        "durable append latency, by partition",
    ),
    (
        "frontrow_journal_append_bytes",
        Kind::Histogram,
        "bytes per append, by partition",
    ),
    (
        "frontrow_journal_appended_records_total",
        Kind::Counter,
        "records appended, by partition",
    ),
    (
        "frontrow_journal_append_failures_total",
        Kind::Counter,
        "appends that failed, by partition",
    ),
    (
        "frontrow_journal_snapshots_total",
        Kind::Counter,
        "writer snapshots stored, by partition and outcome",
    ),
    (
        "frontrow_journal_snapshot_bytes",
        Kind::Histogram,
        "size of a stored writer snapshot",
    ),
    (
        "frontrow_follower_lag_records",
        Kind::Gauge,
        "records a reader of the log is behind its partition's end, by reader (query, search, ledger) and partition",
    ),
    (
        "frontrow_follower_lag_seconds",
        Kind::Gauge,
        "how long the oldest record a reader of the log has not applied yet has been visible to it (0 when caught up), by reader and partition",
    ),
    (
        "frontrow_partitions_owned",
        Kind::Gauge,
        "partitions this node's writers serve",
    ),
    (
        "frontrow_rebalances_total",
        Kind::Counter,
        "consumer group rebalances seen by a command node, by kind (assign, revoke, lapsed: its session lapsed and it serves on)",
    ),
    (
        "frontrow_sse_streams_open",
        Kind::Gauge,
        "server-sent event streams (seat maps and queue statuses) this node holds open",
    ),
    (
        "frontrow_queue_waiting",
        Kind::Gauge,
        "fans waiting in an event's waiting room, by event",
    ),
    (
        "frontrow_queue_admitted",
        Kind::Gauge,
        "admissions an event's waiting room has handed out so far, by event",
    ),
    (
        "frontrow_search_requests_total",
        Kind::Counter,
        "search requests, by cache (hit, miss)",
    ),
    (
        "frontrow_log_lines_dropped_total",
        Kind::Counter,
        "log lines dropped instead of written because the queue of lines waiting for stderr was full (FRONTROW_LOG_QUEUE)",
    ),
    (
        "frontrow_search_backend_seconds",
        Kind::Histogram,
        "time the search index took for a query the cache did not have",
    ),
];

/// What kind of metric an entry of [`METRICS`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's Prometheus recorder, installed on first use.
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_size".into()), SIZE_BUCKETS))
            .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_bytes".into()), SIZE_BUCKETS))
            .expect("bucket lists are not empty")
            .build_recorder();
        let handle = recorder.handle();
        for &(name, kind, help) in METRICS {
            match kind {
                Kind::Counter => recorder.describe_counter(name.into(), None, help.into()),
                Kind::Gauge => recorder.describe_gauge(name.into(), None, help.into()),
                Kind::Histogram => recorder.describe_histogram(name.into(), None, help.into()),
            }
        }
        // Another recorder may be installed already (a test harness, an embedding program):
        // then this handle renders an empty registry, which is honest about what it sees.
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics shows only this exporter's");
        }
        // Histograms buffer their samples until drained; scrapes may be rare or never come.
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(5));
                    upkeep.run_upkeep();
                }
            })
            .expect("spawning the metrics upkeep thread");
        handle
    })
}

/// The metrics in Prometheus' text format.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition format", content_type = "text/plain")))]
pub async fn scrape() -> Response {
    let handle = handle();
    metrics::counter!("frontrow_log_lines_dropped_total").absolute(crate::telemetry::dropped_log_lines());
    let text = handle.render();
    (
        [(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}
