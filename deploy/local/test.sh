#!/usr/bin/env bash
# The README's test command: install and start every local service, then run every test,
# including the ones marked #[ignore = "needs ..."] (there a missing service is a failure).
# Services are stopped again at the end unless FRONTROW_KEEP_SERVICES=1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

./deploy/local/up.sh
if [ "${FRONTROW_KEEP_SERVICES:-0}" != 1 ]; then
  trap './deploy/local/down.sh || true' EXIT
fi

export FRONTROW_KAFKA_BROKERS="${FRONTROW_KAFKA_BROKERS:-127.0.0.1:${FRONTROW_KAFKA_PORT:-9092}}"
export FRONTROW_DATABASE_URL="${FRONTROW_DATABASE_URL:-postgres://frontrow:frontrow@127.0.0.1:${FRONTROW_PG_PORT:-5432}/frontrow}"
export FRONTROW_OPENSEARCH_URL="${FRONTROW_OPENSEARCH_URL:-http://127.0.0.1:${FRONTROW_OPENSEARCH_PORT:-9200}}"

cargo test --workspace --locked -- --include-ignored
