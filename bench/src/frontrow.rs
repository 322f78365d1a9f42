//! FrontRow under test: the real server (`App::build` + `App::run`, exactly what `frontrow
//! serve` runs) on the embedded defaults (SQLite journal fsynced per batch, tantivy search,
//! SQLite ledger) in a temporary data directory, in this process on a runtime of its own.
//! In-process so the harness can read the journal and the ledger directly for its checks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use frontrow::{App, Settings};
use frontrow_command::clock::{Clock, SystemClock};
use frontrow_command::domain::EventState;
use frontrow_http::auth::Auth;
use frontrow_journal::Journal;
use frontrow_projector::{Ledger, SqliteLedger};
use frontrow_schema::EventId;
use secrecy::SecretString;

use crate::serve::Served;

/// The organizer key the harness configures.
pub const ORGANIZER_KEY: &str = "bench-organizer-key-0123456789abcdef";

pub struct FrontRow {
    pub served: Served,
    pub journal: Arc<dyn Journal>,
    pub ledger: Arc<dyn Ledger>,
    pub auth: Arc<Auth>,
    pub dir: tempfile::TempDir,
}

impl FrontRow {
    pub async fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir().context("creating a data directory")?;
        let mut organizers = BTreeMap::new();
        organizers.insert("bench".to_owned(), SecretString::from(ORGANIZER_KEY));
        let settings = Settings {
            data_dir: dir.path().to_path_buf(),
            organizers,
            sample_event: false,
            // The harness measures throughput from one loopback address.
            limits: frontrow_http::limits::Limits::off(),
            ..Settings::default()
        };
        let (handles_tx, handles_rx) = tokio::sync::oneshot::channel();
        let served = Served::start("frontrow", move |listener, stop| async move {
            let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
            let app = App::build(settings, clock).await?;
            let ledger = app.ledger.clone().context("serve runs a ledger")?;
            let _ = handles_tx.send((app.journal.clone(), ledger, app.auth.clone()));
            app.run(listener, async move {
                let _ = stop.await;
            })
            .await
        })
        .await?;
        let Ok((journal, ledger, auth)) = handles_rx.await else {
            // The build failed: stopping the server returns its error.
            let cause = served.stop().await.err().unwrap_or_else(|| anyhow::anyhow!("no cause"));
            return Err(cause.context("FrontRow did not build"));
        };
        Ok(Self {
            served,
            journal,
            ledger,
            auth,
            dir,
        })
    }

    /// Every event's state replayed from the journal through the domain's `apply`.
    pub async fn replay(&self) -> anyhow::Result<HashMap<EventId, EventState>> {
        replay_journal(self.journal.as_ref()).await
    }

    /// Waits until the serving ledger has applied the whole journal.
    pub async fn ledger_caught_up(&self, timeout: Duration) -> anyhow::Result<bool> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let positions = self.ledger.positions().await?;
            let mut behind = false;
            for p in 0..self.journal.partitions() {
                let end = self.journal.end_offset(p).await?;
                if positions.get(&p).copied().unwrap_or(0) < end {
                    behind = true;
                }
            }
            if !behind {
                return Ok(true);
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Scenario 5 and the last check: replays the journal into a fresh ledger (timed), and
    /// compares it row for row with the ledger the projector kept during the run.
    pub async fn rebuild_and_compare(&self) -> anyhow::Result<(frontrow_projector::RebuildReport, bool)> {
        let fresh_dir = tempfile::tempdir()?;
        let fresh = SqliteLedger::open(fresh_dir.path()).await?;
        let report = frontrow_projector::rebuild(self.journal.clone(), &fresh, 5000).await?;
        let equal = fresh.dump().await? == self.ledger.dump().await?;
        Ok((report, equal))
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.served.stop().await
    }
}

/// Every event's state in `journal`, replayed through the domain's `apply` (see
/// [`frontrow_command::replay`]): fails when an event's sequence numbers repeat or skip (two
/// writers of one event), or when the journal's end does not become readable within 5 minutes.
pub async fn replay_journal(journal: &dyn Journal) -> anyhow::Result<HashMap<EventId, EventState>> {
    let replay = frontrow_command::replay::replay(journal);
    Ok(tokio::time::timeout(Duration::from_secs(300), replay)
        .await
        .context("the journal's end did not become readable within 5 minutes")??)
}

/// The status letter of each seat in an availability map.
pub fn map_letters(map: &serde_json::Value) -> anyhow::Result<BTreeMap<String, char>> {
    let mut seats = BTreeMap::new();
    for section in map["sections"].as_array().context("map without sections")? {
        let code = section["code"].as_str().context("section without code")?;
        for row in section["rows"].as_array().context("section without rows")? {
            let name = row["name"].as_str().context("row without name")?;
            for (i, c) in row["seats"].as_str().context("row without seats")?.chars().enumerate() {
                seats.insert(format!("{code}-{name}-{}", i + 1), c);
            }
        }
    }
    Ok(seats)
}
