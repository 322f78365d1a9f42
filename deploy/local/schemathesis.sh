#!/usr/bin/env bash
# The contract test: schemathesis against a live `frontrow serve`.
#
# Installs the pinned schemathesis (and openapi-spec-validator) into a venv under
# $FRONTROW_SERVICES_DIR (once), starts the debug `frontrow serve` (built if missing) on a free
# loopback port with a temporary data directory, demo mode on and its own secrets, checks that
# GET /openapi.json is valid OpenAPI, then runs every schemathesis phase (examples, coverage,
# fuzzing, stateful) with the checks below, bounded by --max-examples and a hard timeout. Stops
# the server and exits non-zero on any failure (or when the time runs out).
#
#   FRONTROW_SCHEMATHESIS_EXAMPLES   test cases per operation and phase (default 50)
#   FRONTROW_SCHEMATHESIS_TIMEOUT    seconds before the run is killed and fails (default 420)
#   FRONTROW_SCHEMATHESIS_SEED       schemathesis' seed (default: a new one, printed)
#   FRONTROW_BIN                     the frontrow binary (default target/debug/frontrow)
#   extra arguments are passed to `schemathesis run` (e.g. --include-path /events)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=deploy/local/lib.sh
source "$here/lib.sh"

SCHEMATHESIS_VERSION=4.32.5
SPEC_VALIDATOR_VERSION=0.9.0
CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,negative_data_rejection

venv=$FR_DIR/schemathesis-$SCHEMATHESIS_VERSION
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -qF "$SCHEMATHESIS_VERSION" \
  || [ ! -x "$venv/bin/openapi-spec-validator" ]; then
  log "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION" \
    "openapi-spec-validator==$SPEC_VALIDATOR_VERSION" || die "pip install failed"
fi

bin=${FRONTROW_BIN:-$root/target/debug/frontrow}
if [ ! -x "$bin" ]; then
  log "building $bin"
  (cd "$root" && cargo build --workspace --bin frontrow)
fi

data=$(mktemp -d "${TMPDIR:-/tmp}/frontrow-schemathesis.XXXXXX")
server=
stop() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap stop EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
secret() { python3 -c 'import secrets; print(secrets.token_urlsafe(32))'; }
organizer_key=$(secret)
export FRONTROW_TOKEN_SECRET FRONTROW_WEBHOOK_SECRET FRONTROW_ORGANIZERS
FRONTROW_TOKEN_SECRET=$(secret)
FRONTROW_WEBHOOK_SECRET=$(secret)
# The sample event's organizer is `demo`: this key reaches its sales and seat histories.
FRONTROW_ORGANIZERS="{demo=\"$organizer_key\"}"
# One client sends every request: rate limits would answer most of them 429 before any check.
export FRONTROW_LIMITS__CUSTOMER_PER_SECOND=0 FRONTROW_LIMITS__ADDRESS_PER_SECOND=0
export FRONTROW_PARTITIONS=2 FRONTROW_DEMO=true FRONTROW_SAMPLE_EVENT=true

"$bin" --data-dir "$data/node" serve --listen "127.0.0.1:$port" >"$data/server.log" 2>&1 &
server=$!
base=http://127.0.0.1:$port
for _ in $(seq 1 240); do
  curl -sf "$base/ready" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { tail -n 40 "$data/server.log" >&2; die "frontrow serve exited"; }
  sleep 0.25
done
curl -sf "$base/ready" >/dev/null || { tail -n 40 "$data/server.log" >&2; die "frontrow serve is not ready"; }

curl -sf "$base/openapi.json" -o "$data/openapi.json"
"$venv/bin/openapi-spec-validator" "$data/openapi.json" >&2 || die "GET /openapi.json is not valid OpenAPI"

# Test data the generated requests reach the core logic with: the sample event (on sale) for
# every `{event_id}`, and a second event with a waiting room before its onsale for the queue
# routes (onsale tomorrow).
sample=5a3b1e00-0000-4000-8000-000000000001
queue_event=$(python3 - "$base" "$organizer_key" <<'PY'
import datetime, json, sys, urllib.request
base, key = sys.argv[1], sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
def call(method, path, body, extra=None):
    headers = {"content-type": "application/json", "x-api-key": key, **(extra or {})}
    req = urllib.request.Request(base + path, json.dumps(body).encode(), headers, method=method)
    with urllib.request.urlopen(req) as res:
        return json.load(res)
event = call("POST", "/events", {
    "title": "Contract Night", "artist": "The Schemas", "venue": "Hall 2", "city": "Utrecht",
    "starts_at": (now + datetime.timedelta(days=30)).isoformat(),
    "onsale_at": (now + datetime.timedelta(days=1)).isoformat(),
    "currency": "EUR",
    "seat_map": {"tiers": [{"code": "STD", "name": "Standard", "price": 4500}],
                 "sections": [{"code": "A", "name": "Stalls", "rows": [{"name": "1", "seats": 20, "tier": "STD"}]}]},
}, {"idempotency-key": "schemathesis-queue-event"})
call("PUT", f"/events/{event['event_id']}/queue", {"max_shoppers": 5})
print(event["event_id"])
PY
) || die "could not create the waiting-room event"

customer_token=$("$bin" --data-dir "$data/node" token --customer schemathesis)
cat >"$data/schemathesis.toml" <<EOF
# An event stream never ends: its first event is enough to check its shape.
max-stream-events = 1

[auth.openapi.customer_token]
bearer = "\${FRONTROW_ST_CUSTOMER_TOKEN}"

[auth.openapi.organizer_key]
api_key = "\${FRONTROW_ST_ORGANIZER_KEY}"

[parameters]
event_id = "$sample"
seat = "101-A-7"

[[operations]]
include-path-regex = "/(queue|waitlist)"
exclude-path-regex = "/queue/me"
parameters = { event_id = "$queue_event" }

# A read whose \`after\` names a position this node has not applied yet answers the documented
# 503 position-not-visible with Retry-After: "come back later", not a server error.
[[operations]]
include-path-regex = "^/events(/[{]event_id[}](/availability)?)?\$"
include-method = "GET"
checks = { not_a_server_error = { expected-statuses = ["1xx", "2xx", "3xx", "4xx", "503"] } }

# The same for one's place in the queue (and its stream), read after the join's position.
[[operations]]
include-path-regex = "/queue/me"
parameters = { event_id = "$queue_event" }
checks = { not_a_server_error = { expected-statuses = ["1xx", "2xx", "3xx", "4xx", "503"] } }
EOF
export FRONTROW_ST_CUSTOMER_TOKEN=$customer_token FRONTROW_ST_ORGANIZER_KEY=$organizer_key

seed=()
[ -n "${FRONTROW_SCHEMATHESIS_SEED:-}" ] && seed=(--seed "$FRONTROW_SCHEMATHESIS_SEED")
log "schemathesis $SCHEMATHESIS_VERSION against $base (server log: kept on failure)"
status=0
cd "$data" # schemathesis keeps a .schemathesis/ cache in its working directory
timeout --kill-after=10 "${FRONTROW_SCHEMATHESIS_TIMEOUT:-420}" \
  "$venv/bin/schemathesis" --config-file "$data/schemathesis.toml" run "$base/openapi.json" \
  --checks "$CHECKS" \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "${FRONTROW_SCHEMATHESIS_EXAMPLES:-50}" \
  --request-timeout 15 \
  --no-color \
  "${seed[@]}" "$@" || status=$?
if [ "$status" -ne 0 ]; then
  [ "$status" -eq 124 ] && log "ERROR: schemathesis ran out of time (FRONTROW_SCHEMATHESIS_TIMEOUT)"
  log "last lines of the server log:"
  tail -n 40 "$data/server.log" | sed 's/^/    /' >&2
  exit "$status"
fi
log "schemathesis: no failures"
