//! How far a reader of the log is behind a partition's end, in records and in seconds
//! (`frontrow_follower_lag_records` and `frontrow_follower_lag_seconds`, labelled `reader` and
//! `partition`). Every reader of the log (the query nodes' maps, the search projector, the
//! ledger projector) reports through one [`LagMeter`] per partition.
//!
//! Records carry no time the journal can read, so the seconds are measured by the reader
//! itself: it notes when it first saw each new end of the partition, and the lag is how long
//! the oldest record it has not applied yet has been visible to it. That is 0 while it is caught
//! up, grows while it falls behind, and does not grow under a steady load that it keeps up with
//! (unlike "time since it was last at the end", which never resets when records keep coming).

use std::collections::VecDeque;
use std::time::Instant;

use metrics::Gauge;

use crate::Offset;

/// The most ends a meter remembers; past it the newest is widened instead (see
/// [`LagMeter::report`]), so a reader far behind costs a bounded amount of memory.
const MAX_SEEN: usize = 64;

/// One reader's lag on one partition.
pub struct LagMeter {
    /// Ends this reader has seen, oldest first, each with when it first saw it: the record at
    /// offset `o` became visible at the time of the first entry whose end is past `o`.
    seen: VecDeque<(Offset, Instant)>,
    records: Gauge,
    seconds: Gauge,
}

impl LagMeter {
    pub fn new(reader: &'static str, partition: u32) -> Self {
        let partition = partition.to_string();
        Self {
            seen: VecDeque::new(),
            records: metrics::gauge!("frontrow_follower_lag_records", "reader" => reader, "partition" => partition.clone()),
            seconds: metrics::gauge!("frontrow_follower_lag_seconds", "reader" => reader, "partition" => partition),
        }
    }

    /// Reports the lag of a reader whose next record is at `next` while the partition's durable
    /// end is `end`, and returns it in seconds.
    pub fn report(&mut self, end: Offset, next: Offset) -> f64 {
        let seconds = self.observe(end, next, Instant::now());
        self.records.set(end.saturating_sub(next) as f64);
        self.seconds.set(seconds);
        seconds
    }

    fn observe(&mut self, end: Offset, next: Offset, now: Instant) -> f64 {
        if self.seen.back().is_none_or(|&(seen, _)| end > seen) {
            if self.seen.len() < MAX_SEEN {
                self.seen.push_back((end, now));
            } else if let Some(newest) = self.seen.back_mut() {
                // The records between the newest end and this one are counted as seen when the
                // newest was: the lag is overstated by at most that, never understated.
                newest.0 = end;
            }
        }
        while self.seen.front().is_some_and(|&(seen, _)| seen <= next) {
            self.seen.pop_front();
        }
        self.seen
            .front()
            .map_or(0.0, |&(_, since)| now.saturating_duration_since(since).as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    fn meter() -> (LagMeter, Instant) {
        (LagMeter::new("test", 0), Instant::now())
    }

    #[test]
    fn a_caught_up_reader_is_not_behind() {
        let (mut meter, t) = meter();
        assert_eq!(meter.observe(0, 0, t), 0.0);
        assert_eq!(meter.observe(10, 10, at(t, 500)), 0.0);
    }

    #[test]
    fn the_lag_is_the_age_of_the_oldest_record_not_yet_applied() {
        let (mut meter, t) = meter();
        // Records 0..10 appear at 0 ms, 10..20 at 1,000 ms; the reader applies slowly.
        assert_eq!(meter.observe(10, 0, t), 0.0);
        assert_eq!(meter.observe(20, 5, at(t, 1_000)), 1.0);
        // Past the first end: the oldest unapplied record appeared at 1,000 ms.
        assert_eq!(meter.observe(20, 10, at(t, 1_500)), 0.5);
        assert_eq!(meter.observe(20, 20, at(t, 2_000)), 0.0);
    }

    #[test]
    fn a_reader_that_keeps_up_with_a_steady_load_stays_near_zero() {
        let (mut meter, t) = meter();
        // Ten records arrive every 10 ms and the reader applies each arrival within 10 ms: it
        // is never at the end when it looks, but never more than one step behind.
        for step in 0..1_000u64 {
            let lag = meter.observe((step + 1) * 10, step * 10, at(t, step * 10));
            assert!(lag <= 0.010, "step {step}: {lag}");
        }
    }

    #[test]
    fn a_reader_far_behind_remembers_a_bounded_number_of_ends_and_never_understates() {
        let (mut meter, t) = meter();
        for step in 1..=1_000u64 {
            meter.observe(step, 0, at(t, step));
        }
        assert_eq!(meter.seen.len(), MAX_SEEN);
        // Record 900 appeared at 900 ms; the meter may say it is older, never younger.
        let lag = meter.observe(1_000, 900, at(t, 2_000));
        assert!(lag >= 1.1, "{lag}");
        assert!(lag <= 2.0, "{lag}");
    }
}
