//! Read-your-writes: `?after=PARTITION:OFFSET` on a read answers only once what serves it has
//! applied that log position (a command response's `position`), waiting up to `wait_ms`; `503`
//! with `Retry-After` if it has not by then. The query side waits on its catalog, the ledger's
//! reads on the ledger's stored positions; both take the parameters and refuse the same way.

use std::time::Duration;

use axum::http::StatusCode;
use frontrow_journal::Position;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::Problem;

/// How long `?after=` waits when the client does not say.
pub const DEFAULT_WAIT_MS: u64 = 2_000;
/// The longest `?after=` may wait.
pub const MAX_WAIT_MS: u64 = 10_000;

/// Read-your-writes: answer only once a position the client wrote is visible here.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReadAfter {
    /// A log position from a command response (`PARTITION:OFFSET`): answer only once this node
    /// has applied it, waiting up to `wait_ms`; `503` with `Retry-After` if it has not by then.
    #[param(example = "3:1207", pattern = r"^[0-9]+:[0-9]+$")]
    pub after: Option<String>,
    /// How long to wait for `after`, in milliseconds (0 to 10000, default 2000).
    #[param(minimum = 0, maximum = 10000, default = 2000)]
    pub wait_ms: Option<u64>,
}

impl ReadAfter {
    /// The position to wait for and how long, checked against a journal of `partitions`
    /// partitions; `None` without `after`. A malformed one is a `400` (`bad-query`,
    /// `bad-position`).
    pub fn target(&self, partitions: u32) -> Result<Option<(Position, Duration)>, Problem> {
        let wait_ms = self.wait_ms.unwrap_or(DEFAULT_WAIT_MS);
        if wait_ms > MAX_WAIT_MS {
            return Err(Problem::bad_request(
                "bad-query",
                format!("wait_ms must be 0 to {MAX_WAIT_MS}, not {wait_ms}"),
            ));
        }
        let Some(after) = &self.after else {
            return Ok(None);
        };
        let position: Position = after
            .parse()
            .map_err(|e: String| Problem::bad_request("bad-position", e))?;
        if position.partition >= partitions {
            return Err(Problem::bad_request(
                "bad-position",
                format!(
                    "the journal has no partition {} (it has {partitions})",
                    position.partition
                ),
            ));
        }
        Ok(Some((position, Duration::from_millis(wait_ms))))
    }
}

/// The `503` for a position `what` (this node, the ledger) has not applied in time.
pub fn not_visible(position: Position, what: &str) -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "position-not-visible",
        format!("{what} has not applied position {position} yet; try again"),
    )
    .with("position", position.to_string())
    .retry_after(1)
}
