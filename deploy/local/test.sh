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

cargo test --workspace --locked -- --include-ignored
