//! The load generator: closed-loop (a fixed number of clients, each sending its next request
//! when the last one answered) and open-loop (a fixed arrival rate, whatever the answers do).
//!
//! Open-loop latency is measured from each request's *intended* send time, not from when the
//! generator got round to sending it: when the target stalls, the requests that should have
//! gone out meanwhile are charged the stall too (coordinated omission corrected). Every run is
//! bounded twice, by a request count and by a wall-clock limit, whichever comes first.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The answer the scenario wanted (e.g. `201`, `200`, `304`).
    Ok,
    /// A correct refusal the workload expects (e.g. `409`: the seats were taken first).
    Refused,
    /// Load shed by the target (`503`/`429` with `Retry-After`).
    Shed,
    /// Anything else: a wrong status, a transport error, a body that did not parse.
    Error,
}

/// A request: given its sequence number, send it and say how it ended.
pub type Job = Arc<dyn Fn(u64) -> Pin<Box<dyn Future<Output = Outcome> + Send>> + Send + Sync>;

/// How to drive the load.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    /// `clients` concurrent clients, each waiting for its answer before the next request.
    Closed { clients: usize },
    /// `rate` requests per second on schedule; at most `max_in_flight` outstanding (a request
    /// waiting for a slot is still timed from its intended send time).
    Open { rate: f64, max_in_flight: usize },
}

/// The bounds of one run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Bounds {
    pub max_requests: u64,
    #[serde(serialize_with = "secs")]
    pub max_time: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// What one run measured. Latencies in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    #[serde(flatten)]
    pub mode: Mode,
    pub requests: u64,
    pub ok: u64,
    pub refused: u64,
    pub shed: u64,
    pub errors: u64,
    pub elapsed_s: f64,
    /// Answered requests (any outcome) per second.
    pub throughput: f64,
    /// Requests with the wanted answer per second.
    pub ok_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

struct Recorder {
    histogram: Mutex<Histogram<u64>>,
    counts: [AtomicU64; 4],
}

impl Recorder {
    fn new() -> Self {
        Self {
            // Microseconds, 1 us to 5 minutes, 3 significant digits.
            histogram: Mutex::new(Histogram::new_with_bounds(1, 300_000_000, 3).expect("valid histogram bounds")),
            counts: Default::default(),
        }
    }

    fn record(&self, outcome: Outcome, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, 300_000_000);
        self.histogram
            .lock()
            .expect("histogram lock")
            .record(us)
            .expect("value within bounds");
        let i = match outcome {
            Outcome::Ok => 0,
            Outcome::Refused => 1,
            Outcome::Shed => 2,
            Outcome::Error => 3,
        };
        self.counts[i].fetch_add(1, Ordering::Relaxed);
    }

    fn merge(&self, other: &Recorder) {
        self.histogram
            .lock()
            .expect("histogram lock")
            .add(&*other.histogram.lock().expect("histogram lock"))
            .expect("same bounds");
        for (mine, theirs) in self.counts.iter().zip(&other.counts) {
            mine.fetch_add(theirs.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    fn stats(&self, mode: Mode, elapsed: Duration) -> Stats {
        let h = self.histogram.lock().expect("histogram lock");
        let c = |i: usize| self.counts[i].load(Ordering::Relaxed);
        let requests = h.len();
        let secs = elapsed.as_secs_f64().max(1e-9);
        let ms = |us: u64| us as f64 / 1000.0;
        Stats {
            mode,
            requests,
            ok: c(0),
            refused: c(1),
            shed: c(2),
            errors: c(3),
            elapsed_s: elapsed.as_secs_f64(),
            throughput: requests as f64 / secs,
            ok_per_s: c(0) as f64 / secs,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

/// Runs `job` under `mode` within `bounds` and returns what it measured.
pub async fn drive(mode: Mode, bounds: Bounds, job: Job) -> Stats {
    drive_timed(mode, bounds, job).await.0
}

/// When the answers came in: `(answers so far, seconds since the start)`, every
/// [`Timeline::STEP`] answers and at the end.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub marks: Vec<(u64, f64)>,
}

impl Timeline {
    pub const STEP: u64 = 250;

    /// The rate of the first `n` answers (`n` over the time the `n`th came in, interpolated
    /// between marks); past the last mark, the whole run's rate; `None` without marks.
    pub fn rate_of_first(&self, n: u64) -> Option<f64> {
        let at = self.marks.iter().position(|(count, _)| *count >= n);
        let (count, secs) = match at {
            None => *self.marks.last()?,
            Some(0) => self.marks[0],
            Some(i) => {
                let ((c0, t0), (c1, t1)) = (self.marks[i - 1], self.marks[i]);
                let share = (n - c0) as f64 / (c1 - c0).max(1) as f64;
                (n, t0 + (t1 - t0) * share)
            }
        };
        (secs > 0.0).then(|| count as f64 / secs)
    }
}

/// [`drive`], and when the answers came in (so that a later phase that sends only the first
/// requests of the same sequence can be paced by the rate of those requests).
pub async fn drive_timed(mode: Mode, bounds: Bounds, job: Job) -> (Stats, Timeline) {
    let recorder = Arc::new(Recorder::new());
    let started = Instant::now();
    let deadline = started + bounds.max_time;
    let answered = Arc::new(AtomicU64::new(0));
    let marks = Arc::new(Mutex::new(Vec::new()));
    let mark = {
        let (answered, marks) = (answered.clone(), marks.clone());
        move || {
            let n = answered.fetch_add(1, Ordering::Relaxed) + 1;
            if n % Timeline::STEP == 0 {
                marks
                    .lock()
                    .expect("timeline")
                    .push((n, started.elapsed().as_secs_f64()));
            }
        }
    };
    match mode {
        Mode::Closed { clients } => {
            // Each worker records into a histogram of its own, merged at the end: no lock shared
            // by every answer.
            let next = Arc::new(AtomicU64::new(0));
            let workers: Vec<_> = (0..clients.max(1))
                .map(|_| {
                    let (next, job, mark) = (next.clone(), job.clone(), mark.clone());
                    tokio::spawn(async move {
                        let local = Recorder::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= bounds.max_requests || Instant::now() >= deadline {
                                break;
                            }
                            let sent = Instant::now();
                            let outcome = job(i).await;
                            local.record(outcome, sent.elapsed());
                            mark();
                        }
                        local
                    })
                })
                .collect();
            for w in workers {
                if let Ok(local) = w.await {
                    recorder.merge(&local);
                }
            }
        }
        Mode::Open { rate, max_in_flight } => {
            let slots = Arc::new(tokio::sync::Semaphore::new(max_in_flight.max(1)));
            let interval = Duration::from_secs_f64(1.0 / rate.max(1e-3));
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..bounds.max_requests {
                let intended = started + interval.mul_f64(i as f64);
                if intended >= deadline {
                    break;
                }
                tokio::time::sleep_until(intended.into()).await;
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    break;
                };
                let (job, recorder, mark) = (job.clone(), recorder.clone(), mark.clone());
                tasks.spawn(async move {
                    let outcome = job(i).await;
                    recorder.record(outcome, intended.elapsed());
                    mark();
                    drop(slot);
                });
                // Reap finished tasks as we go so the set does not grow with the run.
                while tasks.try_join_next().is_some() {}
            }
            while tasks.join_next().await.is_some() {}
        }
    }
    let elapsed = started.elapsed();
    let mut timeline = Timeline {
        marks: std::mem::take(&mut *marks.lock().expect("timeline")),
    };
    timeline.marks.sort_by_key(|m| m.0);
    let total = answered.load(Ordering::Relaxed);
    if timeline.marks.last().is_none_or(|m| m.0 < total) {
        timeline.marks.push((total, elapsed.as_secs_f64()));
    }
    (recorder.stats(mode, elapsed), timeline)
}

/// Classifies an HTTP status: `ok` are the wanted ones, `refused` the expected refusals.
pub fn classify(status: u16, ok: &[u16], refused: &[u16]) -> Outcome {
    if ok.contains(&status) {
        Outcome::Ok
    } else if refused.contains(&status) {
        Outcome::Refused
    } else if status == 503 || status == 429 {
        Outcome::Shed
    } else {
        Outcome::Error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(delay: Duration) -> Job {
        Arc::new(move |i| {
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                if i % 2 == 0 { Outcome::Ok } else { Outcome::Refused }
            })
        })
    }

    #[tokio::test]
    async fn a_closed_loop_stops_at_its_request_count() {
        let bounds = Bounds {
            max_requests: 40,
            max_time: Duration::from_secs(10),
        };
        let stats = drive(Mode::Closed { clients: 4 }, bounds, job(Duration::from_millis(1))).await;
        assert_eq!(stats.requests, 40);
        assert_eq!((stats.ok, stats.refused, stats.errors), (20, 20, 0));
        assert!(stats.p50_ms >= 1.0, "each request slept 1 ms: {stats:?}");
    }

    #[tokio::test]
    async fn an_open_loop_charges_a_stall_to_the_requests_queued_behind_it() {
        // One slot and 20 ms per request at 1,000/s: request i waits about 20*i ms for its
        // slot, and that wait must show in its latency (coordinated omission corrected).
        let bounds = Bounds {
            max_requests: 10,
            max_time: Duration::from_secs(10),
        };
        let mode = Mode::Open {
            rate: 1000.0,
            max_in_flight: 1,
        };
        let stats = drive(mode, bounds, job(Duration::from_millis(20))).await;
        assert_eq!(stats.requests, 10);
        assert!(
            stats.max_ms >= 150.0,
            "the last request queued behind nine others: {stats:?}"
        );
    }

    #[tokio::test]
    async fn the_time_bound_ends_a_run_early() {
        let bounds = Bounds {
            max_requests: u64::MAX,
            max_time: Duration::from_millis(200),
        };
        let stats = drive(Mode::Closed { clients: 2 }, bounds, job(Duration::from_millis(10))).await;
        assert!(stats.requests < 100, "{stats:?}");
        assert!(stats.elapsed_s < 2.0);
    }

    #[tokio::test]
    async fn the_timeline_gives_the_rate_of_the_first_answers() {
        let bounds = Bounds {
            max_requests: 1000,
            max_time: Duration::from_secs(10),
        };
        let (stats, timeline) = drive_timed(Mode::Closed { clients: 8 }, bounds, job(Duration::ZERO)).await;
        assert_eq!(stats.requests, 1000);
        let counts: Vec<u64> = timeline.marks.iter().map(|m| m.0).collect();
        assert_eq!(counts, [250, 500, 750, 1000]);
        assert!(timeline.rate_of_first(100).unwrap() > 0.0);
        let late = Timeline {
            marks: vec![(250, 1.0), (500, 1.5), (1000, 2.0)],
        };
        assert_eq!(late.rate_of_first(250), Some(250.0));
        assert!((late.rate_of_first(500).unwrap() - 500.0 / 1.5).abs() < 1e-9);
        assert!((late.rate_of_first(750).unwrap() - 750.0 / 1.75).abs() < 1e-9);
        assert_eq!(
            late.rate_of_first(5000),
            Some(500.0),
            "past the end: the whole run's rate"
        );
        assert_eq!(Timeline::default().rate_of_first(1), None);
    }

    #[test]
    fn statuses_are_classified() {
        assert_eq!(classify(201, &[201], &[409]), Outcome::Ok);
        assert_eq!(classify(409, &[201], &[409]), Outcome::Refused);
        assert_eq!(classify(503, &[201], &[409]), Outcome::Shed);
        assert_eq!(classify(500, &[201], &[409]), Outcome::Error);
    }
}
