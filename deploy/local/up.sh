#!/usr/bin/env bash
# Start local services on loopback: up.sh [postgres|kafka|opensearch|redis|chromium ...] (all when none named).
# Idempotent: running services are left alone. Exits non-zero if a service cannot start.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

services=("$@")
[ ${#services[@]} -gt 0 ] || services=("${FR_ALL_SERVICES[@]}")
check_services "${services[@]}"
mkdir -p "$FR_DIR" "$FR_CACHE"

# Install/resolve and launch everything first, then wait, so the JVMs start in parallel.
# A service found running is only checked (postgres: pg_isready, kafka: port, opensearch: health).
started=()
for s in "${services[@]}"; do
  if "${s}_running"; then
    if "${s}_ready"; then
      log "$s: already running"
    else
      log "$s: running but not answering yet, waiting (if you changed its port, run down.sh first)"
      started+=("$s")
    fi
  else
    "${s}_prepare"
    "${s}_start"
    started+=("$s")
  fi
done
for s in ${started[@]+"${started[@]}"}; do
  "${s}_wait"
done
log "up: ${services[*]} (data in $FR_DIR)"
