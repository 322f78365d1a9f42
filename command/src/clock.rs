//! Where the writers get `now` from.
//!
//! The domain never reads a clock; the writer asks a [`Clock`] and passes the time in. The
//! system clock is anchored to tokio's monotonic clock, so tests that pause tokio's time move
//! it too; [`ManualClock`] lets HTTP tests move time by hand and wakes the writers when it does.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;

    /// A receiver that changes whenever time jumps (manual clocks only): writers re-check their
    /// hold deadlines then instead of waiting for a timer.
    fn jumps(&self) -> Option<watch::Receiver<()>> {
        None
    }
}

/// Wall-clock time read once at start, then advanced by tokio's monotonic clock.
pub struct SystemClock {
    base: DateTime<Utc>,
    start: tokio::time::Instant,
}

impl SystemClock {
    pub fn new() -> Self {
        Self {
            base: Utc::now(),
            start: tokio::time::Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = self.start.elapsed();
        self.base + chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::MAX)
    }
}

/// A clock that moves only when told to.
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    jumps: watch::Sender<()>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(start),
            jumps: watch::Sender::new(()),
        }
    }

    pub fn advance(&self, by: chrono::Duration) {
        *self.now.lock().expect("clock lock") += by;
        self.jumps.send_replace(());
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().expect("clock lock")
    }

    fn jumps(&self) -> Option<watch::Receiver<()>> {
        Some(self.jumps.subscribe())
    }
}
