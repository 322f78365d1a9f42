#!/usr/bin/env bash
# The README's test command: install and start every local service (and the three-broker
# kafka-cluster), then run every test,
# including the ones marked #[ignore = "needs ..."] (there a missing service is a failure),
# then the schemathesis contract run (deploy/local/schemathesis.sh).
# Services are stopped again at the end unless FRONTROW_KEEP_SERVICES=1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

./deploy/local/up.sh
# The three-broker cluster for the short chaos run (bench/tests/chaos.rs); about 30 s to start.
# Its balancer is an haproxy of the run's own, so `balancer` is named here to install HAProxy
# (and to check the local balancer starts) on a machine that has never run it.
./deploy/local/up.sh kafka-cluster balancer
if [ "${FRONTROW_KEEP_SERVICES:-0}" != 1 ]; then
  trap './deploy/local/down.sh || true' EXIT
fi

# A test run builds from scratch and once: incremental-compilation caches would only take disk
# (many gigabytes across the workspace's test binaries; a CI run once ran out of it).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Formatting and lints first: cheap, and a red run says so before the long part.
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

# Every test, the service-backed ones included; all binaries run even when one fails.
cargo test --workspace --locked --no-fail-fast -- --include-ignored

# The contract: schemathesis against a live `frontrow serve` (the debug binary cargo test built),
# bounded in time; any failure fails the run.
./deploy/local/schemathesis.sh
