//! Logs and traces of one process: the `tracing` subscriber it runs under.
//!
//! Log lines go to stderr, filtered by `FRONTROW_LOG` (default `info`: one line per request),
//! one JSON object per line with `FRONTROW_LOG_FORMAT=json`. A request's thread only queues its
//! line; a thread of its own writes the queue out, so a stderr that is slow or not read at all
//! holds no request up. A full queue ([`LOG_QUEUE_LINES`], or `FRONTROW_LOG_QUEUE`) drops lines
//! instead; the count is exported as a metric and printed at shutdown.
//!
//! With `[telemetry] otlp_endpoint` set, the same spans (one per request, one per writer batch,
//! with their fields as attributes) are also exported as OpenTelemetry traces over OTLP/HTTP
//! (protobuf) to a collector, in batches from a background thread, so a slow or absent collector
//! never holds a request up: a full export queue drops spans instead.

use std::time::Duration;

use anyhow::Context;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Where traces go (`[telemetry]`, `FRONTROW_TELEMETRY__*`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Telemetry {
    /// Base URL of an OTLP/HTTP collector, e.g. `http://127.0.0.1:4318`; spans are posted to
    /// `<otlp_endpoint>/v1/traces`. None (the default): no traces leave the process.
    pub otlp_endpoint: Option<String>,
    /// Which spans are exported, as a `tracing` filter (default `info`: requests and writer
    /// batches), independent of the log filter.
    pub otlp_filter: String,
    /// Fraction of new traces exported, 0.0 to 1.0 (default 1.0).
    pub sample_ratio: f64,
    /// The exported `service.name` (default `frontrow-<role>`).
    pub service_name: Option<String>,
}

impl Default for Telemetry {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            otlp_filter: "info".into(),
            sample_ratio: 1.0,
            service_name: None,
        }
    }
}

/// Log lines queued for the writing thread at most, unless `FRONTROW_LOG_QUEUE` says otherwise;
/// more are dropped (and counted).
pub const LOG_QUEUE_LINES: usize = 128_000;

/// Bytes of log lines the writing thread gathers before it writes them to stderr.
const LOG_WRITE_BYTES: usize = 64 * 1024;

/// The queue's length: `FRONTROW_LOG_QUEUE` (1 or more lines) or [`LOG_QUEUE_LINES`].
fn log_queue_lines() -> anyhow::Result<usize> {
    match std::env::var("FRONTROW_LOG_QUEUE") {
        Err(_) => Ok(LOG_QUEUE_LINES),
        Ok(v) => v
            .trim()
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .with_context(|| format!("FRONTROW_LOG_QUEUE is {v:?}: it counts log lines, 1 or more")),
    }
}

/// The count of log lines dropped, of the subscriber this process installed.
static DROPPED: std::sync::OnceLock<tracing_appender::non_blocking::ErrorCounter> = std::sync::OnceLock::new();

/// Log lines dropped so far because the queue was full (0 before a subscriber is installed);
/// exported as `frontrow_log_lines_dropped_total`.
pub fn dropped_log_lines() -> u64 {
    DROPPED.get().map_or(0, |c| c.dropped_lines() as u64)
}

/// The installed subscriber's log writer and exporter, if any. [`Tracing::shutdown`] writes the
/// log lines and sends the spans still queued; a process that ends without it may lose its last
/// lines and spans.
pub struct Tracing {
    provider: Option<SdkTracerProvider>,
    logs: tracing_appender::non_blocking::WorkerGuard,
}

impl Tracing {
    /// Sends the spans still queued (waiting at most the exporter's timeout), writes the log
    /// lines still queued, and stops.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            eprintln!("traces not all exported at shutdown: {e}");
        }
        drop(self.logs);
        let dropped = dropped_log_lines();
        if dropped > 0 {
            eprintln!("{dropped} log lines dropped: the queue of lines waiting to be written was full");
        }
    }
}

/// Logs only, as before any configuration is read (for commands that print and exit).
pub fn init_logs() -> anyhow::Result<Tracing> {
    install(None)
}

/// Logs, and traces exported as `settings` says; `role` names the default service.
pub fn init(settings: &Telemetry, role: &str) -> anyhow::Result<Tracing> {
    let Some(endpoint) = settings.otlp_endpoint.as_deref() else {
        return install(None);
    };
    let provider = provider(settings, endpoint, role)?;
    let filter = EnvFilter::try_new(&settings.otlp_filter).with_context(|| {
        format!(
            "telemetry.otlp_filter {:?} is not a tracing filter",
            settings.otlp_filter
        )
    })?;
    install(Some((provider, filter)))
}

fn provider(settings: &Telemetry, endpoint: &str, role: &str) -> anyhow::Result<SdkTracerProvider> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&settings.sample_ratio),
        "telemetry.sample_ratio must be between 0.0 and 1.0, not {}",
        settings.sample_ratio
    );
    // This build speaks plain HTTP: a collector agent next to the node (the usual sidecar)
    // forwards over TLS if it must.
    anyhow::ensure!(
        endpoint.starts_with("http://"),
        "telemetry.otlp_endpoint must be an http:// URL of an OTLP/HTTP collector, not {endpoint:?}"
    );
    let traces = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(traces)
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(Duration::from_secs(5))
        .build()
        .context("building the OTLP span exporter")?;
    let service = settings
        .service_name
        .clone()
        .unwrap_or_else(|| format!("frontrow-{role}"));
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sample_ratio,
        ))))
        .with_resource(
            Resource::builder()
                .with_service_name(service)
                .with_attribute(opentelemetry::KeyValue::new("service.version", crate::VERSION))
                .build(),
        )
        .build())
}

/// Colours in the text logs only for a person at a terminal: a file, a pipe or a log shipper
/// gets plain text (escape codes there split every field's name from its value, and writing them
/// was about 3% of the request threads' time in a profile of `/health` under wrk), and
/// `NO_COLOR` (<https://no-color.org>) turns them off at a terminal too.
fn colours_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn install(exporter: Option<(SdkTracerProvider, EnvFilter)>) -> anyhow::Result<Tracing> {
    let logs_filter = EnvFilter::try_from_env("FRONTROW_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(log_queue_lines()?)
        .thread_name("frontrow-logs")
        // The writing thread flushes whenever it has emptied the queue (and when it stops), so
        // a line waits for no later one; under load the lines queued meanwhile go out in one
        // write instead of a system call each.
        .finish(std::io::BufWriter::with_capacity(LOG_WRITE_BYTES, std::io::stderr()));
    let dropped = writer.error_counter();
    let logs = tracing_subscriber::fmt::layer()
        .with_ansi(colours_on_stderr())
        .with_writer(writer);
    let logs = match std::env::var("FRONTROW_LOG_FORMAT").as_deref() {
        Ok("json") => logs.json().with_current_span(true).with_filter(logs_filter).boxed(),
        _ => logs.with_filter(logs_filter).boxed(),
    };
    let (provider, traces) = match exporter {
        Some((provider, filter)) => {
            let layer = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("frontrow"))
                .with_filter(filter);
            (Some(provider), Some(layer))
        }
        None => (None, None),
    };
    tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init()
        .context("installing the log subscriber")?;
    // Only the installed subscriber's count: a second install fails above and counts nothing.
    let _ = DROPPED.set(dropped);
    Ok(Tracing { provider, logs: guard })
}
