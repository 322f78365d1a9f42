//! FrontRow's own account of a phase: the latency histograms its `/metrics` keeps (requests by
//! route, journal appends), read before and after the phase, so a report can say how much of a
//! tail the client saw was already there inside the server, and how much of that the journal's
//! appends (each one group commit, fsynced) account for.
//!
//! Prometheus histograms are cumulative bucket counts with fixed bounds, so a quantile is known
//! only to lie within one bucket: the figures here are "at most" bounds, never interpolated.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// FrontRow's `/metrics` text, from the node at `base` (`http://host:port`).
pub async fn scrape(http: &reqwest::Client, base: &str) -> anyhow::Result<String> {
    let res = http.get(format!("{base}/metrics")).send().await?.error_for_status()?;
    Ok(res.text().await?)
}

/// A histogram's buckets: each upper bound (seconds; `+Inf` last) and how many samples lie at or
/// below it, summed over every series of the metric whose labels matched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    buckets: BTreeMap<Bound, f64>,
}

/// A bucket's upper bound, ordered (an `f64` that is never NaN).
#[derive(Debug, Clone, Copy)]
struct Bound(f64);

impl PartialEq for Bound {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Bound {}

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Histogram {
    /// Reads `name`'s buckets from a Prometheus text exposition, summing the series whose labels
    /// contain every one of `labels` (e.g. `route="/events/{event_id}/reservations"`).
    pub fn read(text: &str, name: &str, labels: &[&str]) -> Self {
        let prefix = format!("{name}_bucket{{");
        let mut buckets = BTreeMap::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix(&prefix) else {
                continue;
            };
            let Some((series, count)) = rest.rsplit_once("} ") else {
                continue;
            };
            if !labels.iter().all(|l| series.contains(l)) {
                continue;
            }
            let le = series
                .split(',')
                .find_map(|pair| pair.trim().strip_prefix("le=\""))
                .and_then(|v| v.strip_suffix('"'));
            let (Some(le), Ok(count)) = (le, count.trim().parse::<f64>()) else {
                continue;
            };
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap_or(f64::NAN)
            };
            if bound.is_nan() {
                continue;
            }
            *buckets.entry(Bound(bound)).or_insert(0.0) += count;
        }
        Self { buckets }
    }

    /// What was recorded between `before` and `self` (two reads of the same counters).
    pub fn since(&self, before: &Histogram) -> Histogram {
        let buckets = self
            .buckets
            .iter()
            .map(|(bound, n)| (*bound, (n - before.buckets.get(bound).copied().unwrap_or(0.0)).max(0.0)))
            .collect();
        Histogram { buckets }
    }

    /// Samples recorded (the `+Inf` bucket).
    pub fn count(&self) -> f64 {
        self.buckets.values().copied().fold(0.0, f64::max)
    }

    /// The smallest bucket bound (seconds) that at least `q` of the samples lie at or below;
    /// `None` without samples, infinite if only `+Inf` holds them.
    pub fn at_most(&self, q: f64) -> Option<f64> {
        let total = self.count();
        (total > 0.0).then(|| {
            self.buckets
                .iter()
                .find(|(_, n)| **n >= q * total)
                .map_or(f64::INFINITY, |(bound, _)| bound.0)
        })
    }

    /// The share of the samples above `seconds` (which should be a bucket bound).
    pub fn share_over(&self, seconds: f64) -> Option<f64> {
        let total = self.count();
        let at_or_below = self
            .buckets
            .range(..=Bound(seconds))
            .next_back()
            .map_or(0.0, |(_, n)| *n);
        (total > 0.0).then(|| 1.0 - at_or_below / total)
    }

    /// The figures a report gives: the count, p50 and p99 as "at most" bucket bounds in ms, and
    /// the share above `over_ms`.
    fn figures(&self, over_ms: f64) -> Value {
        let ms = |q: f64| {
            self.at_most(q).map(|s| {
                if s.is_finite() {
                    json!(s * 1000.0)
                } else {
                    json!("+Inf")
                }
            })
        };
        json!({
            "count": self.count() as u64,
            "p50_at_most_ms": ms(0.50),
            "p99_at_most_ms": ms(0.99),
            format!("share_over_{over_ms}_ms"): self.share_over(over_ms / 1000.0),
        })
    }
}

/// The route of a reservation in FrontRow's request metrics.
const RESERVE_ROUTE: &str = "route=\"/events/{event_id}/reservations\"";

/// FrontRow's own figures for a phase of reservations, from two `/metrics` texts read before and
/// after it: its reservation requests, from the request's arrival in the router to its answer
/// (`frontrow_http_request_duration_seconds`); its writers' batches, how long each request waited in
/// the mailbox (`frontrow_writer_wait_seconds`) and how long each batch took to decide, append and
/// answer (`frontrow_writer_batch_seconds`); and its journal appends
/// (`frontrow_journal_append_seconds`, every partition). A request's time not in the last three
/// was spent before the writer or after its answer: parsing, checks, waiting for the runtime.
pub fn reserve_phase(before: &str, after: &str) -> Value {
    let read = |name: &str, labels: &[&str]| {
        Histogram::read(after, name, labels).since(&Histogram::read(before, name, labels))
    };
    let requests = read(
        "frontrow_http_request_duration_seconds",
        &[RESERVE_ROUTE, "method=\"POST\""],
    );
    let appends = read("frontrow_journal_append_seconds", &[]);
    json!({
        "requests": requests.figures(10.0),
        "writer_waits": read("frontrow_writer_wait_seconds", &[]).figures(5.0),
        "writer_batches": read("frontrow_writer_batch_seconds", &[]).figures(5.0),
        "journal_appends": appends.figures(5.0),
        "note": "from FrontRow's /metrics histograms: quantiles are the bucket bounds they lie at or below",
    })
}

/// One line for the console: what the server saw of the phase.
pub fn summary(inside: &Value) -> String {
    let ms = |v: &Value| match v {
        Value::Number(n) => format!("{} ms", n.as_f64().unwrap_or(0.0)),
        other => other.to_string(),
    };
    let r = &inside["requests"];
    let over5 = |name: &str| {
        let h = &inside[name];
        format!(
            "p50 ≤ {}, p99 ≤ {} ({:.1}% over 5 ms)",
            ms(&h["p50_at_most_ms"]),
            ms(&h["p99_at_most_ms"]),
            h["share_over_5_ms"].as_f64().unwrap_or(0.0) * 100.0,
        )
    };
    format!(
        "inside FrontRow: {} reservations p50 ≤ {}, p99 ≤ {} ({:.1}% over 10 ms); mailbox waits {}; {} batches took {}; {} journal appends {}",
        r["count"],
        ms(&r["p50_at_most_ms"]),
        ms(&r["p99_at_most_ms"]),
        r["share_over_10_ms"].as_f64().unwrap_or(0.0) * 100.0,
        over5("writer_waits"),
        inside["writer_batches"]["count"],
        over5("writer_batches"),
        inside["journal_appends"]["count"],
        over5("journal_appends"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"# TYPE frontrow_journal_append_seconds histogram
frontrow_journal_append_seconds_bucket{partition="0",le="0.001"} 10
frontrow_journal_append_seconds_bucket{partition="0",le="0.005"} 10
frontrow_journal_append_seconds_bucket{partition="0",le="+Inf"} 10
frontrow_journal_append_seconds_sum{partition="0"} 0.004
frontrow_journal_append_seconds_count{partition="0"} 10
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="0.005"} 5
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="0.01"} 5
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="0.025"} 5
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="+Inf"} 5
frontrow_http_request_duration_seconds_bucket{method="GET",route="/events/{event_id}/reservations",le="0.005"} 0
frontrow_http_request_duration_seconds_bucket{method="GET",route="/events/{event_id}/reservations",le="+Inf"} 900
"#;

    /// After: 1,000 more reservations (980 within 5 ms, 4 more within 10, 16 within 25) and 100
    /// more appends over two partitions (90 within 1 ms, 9 within 5 ms, 1 above).
    const AFTER: &str = r#"frontrow_journal_append_seconds_bucket{partition="0",le="0.001"} 60
frontrow_journal_append_seconds_bucket{partition="0",le="0.005"} 65
frontrow_journal_append_seconds_bucket{partition="0",le="+Inf"} 66
frontrow_journal_append_seconds_bucket{partition="1",le="0.001"} 40
frontrow_journal_append_seconds_bucket{partition="1",le="0.005"} 44
frontrow_journal_append_seconds_bucket{partition="1",le="+Inf"} 44
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="0.005"} 985
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="0.01"} 989
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="0.025"} 1005
frontrow_http_request_duration_seconds_bucket{method="POST",route="/events/{event_id}/reservations",le="+Inf"} 1005
frontrow_http_request_duration_seconds_bucket{method="GET",route="/events/{event_id}/reservations",le="+Inf"} 5000
frontrow_writer_wait_seconds_bucket{le="0.001"} 95
frontrow_writer_wait_seconds_bucket{le="0.005"} 98
frontrow_writer_wait_seconds_bucket{le="0.05"} 100
frontrow_writer_wait_seconds_bucket{le="+Inf"} 100
"#;

    #[test]
    fn a_phase_is_the_difference_of_two_reads_and_its_quantiles_are_bucket_bounds() {
        let inside = reserve_phase(BEFORE, AFTER);
        let r = &inside["requests"];
        assert_eq!(r["count"], json!(1000));
        assert_eq!(r["p50_at_most_ms"], json!(5.0));
        // 984 of 1,000 within 10 ms: the 99th percentile lies in (10, 25].
        assert_eq!(r["p99_at_most_ms"], json!(25.0));
        assert!((r["share_over_10_ms"].as_f64().unwrap() - 0.016).abs() < 1e-12);
        let a = &inside["journal_appends"];
        assert_eq!(a["count"], json!(100));
        assert_eq!(a["p50_at_most_ms"], json!(1.0));
        assert_eq!(a["p99_at_most_ms"], json!(5.0));
        assert!((a["share_over_5_ms"].as_f64().unwrap() - 0.01).abs() < 1e-12);
        let w = &inside["writer_waits"];
        assert_eq!(w["p99_at_most_ms"], json!(50.0));
        assert!((w["share_over_5_ms"].as_f64().unwrap() - 0.02).abs() < 1e-12);
        let line = summary(&inside);
        assert!(line.contains("1000 reservations p50 ≤ 5 ms, p99 ≤ 25 ms (1.6% over 10 ms)"));
        assert!(
            line.contains("mailbox waits p50 ≤ 1 ms, p99 ≤ 50 ms (2.0% over 5 ms)"),
            "{line}"
        );
    }

    #[test]
    fn samples_only_in_the_last_bucket_or_none_at_all_say_so() {
        let text = "x_bucket{le=\"0.1\"} 0\nx_bucket{le=\"+Inf\"} 3\n";
        let h = Histogram::read(text, "x", &[]);
        assert_eq!(h.at_most(0.5), Some(f64::INFINITY));
        assert_eq!(h.share_over(0.1), Some(1.0));
        let empty = h.since(&h);
        assert_eq!(empty.count(), 0.0);
        assert_eq!(empty.at_most(0.99), None);
        assert_eq!(
            Histogram::read("garbage\nx_bucket{le=\"nan\"} 1\n", "x", &[]).count(),
            0.0
        );
    }
}
