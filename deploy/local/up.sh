#!/usr/bin/env bash
# Start local services on loopback: up.sh [postgres|kafka|opensearch|redis|chromium|kafka-cluster|balancer ...]
# (when none are named: all but kafka-cluster and balancer).
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
  f=${s//-/_} # kafka-cluster -> kafka_cluster_*
  if "${f}_running"; then
    if "${f}_ready"; then
      log "$s: already running"
    else
      log "$s: running but not answering yet, waiting (if you changed its port, run down.sh first)"
      started+=("$s")
    fi
  else
    "${f}_prepare"
    "${f}_start"
    started+=("$s")
  fi
done
for s in ${started[@]+"${started[@]}"}; do
  "${s//-/_}_wait"
done
log "up: ${services[*]} (data in $FR_DIR)"
