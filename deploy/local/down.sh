#!/usr/bin/env bash
# Stop local services: down.sh [postgres|kafka|opensearch|redis|chromium ...] (all when none named, kafka-cluster and balancer included).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

services=("$@")
[ ${#services[@]} -gt 0 ] || services=("${FR_ALL_SERVICES[@]}" "${FR_EXTRA_SERVICES[@]}")
check_services "${services[@]}"
for s in "${services[@]}"; do
  "${s//-/_}_down"
done
