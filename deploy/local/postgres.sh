# PostgreSQL from Debian's packages, a private cluster under $FR_DIR/postgres.
# Sourced by lib.sh; defines postgres_{running,prepare,start,wait,ready,down}.
# Gives postgres://frontrow:frontrow@127.0.0.1:5432/frontrow (role may create databases).

PG_PORT=${FRONTROW_PG_PORT:-5432}
PG_DIR=$FR_DIR/postgres
PG_DATA=$PG_DIR/data
PG_RUN=$PG_DIR/run # unix socket directory
PG_LOG=$PG_DIR/postgresql.log

# The newest installed server's bin directory (Debian keeps them in /usr/lib/postgresql/<ver>/bin).
pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

# The server refuses to run as root: as root, run everything as the postgres OS user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

postgres_running() {
  [ -f "$PG_DATA/PG_VERSION" ] && PG_BIN=${PG_BIN:-$(pg_bin)} && [ -n "$PG_BIN" ] \
    && as_pg "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1
}

# As root, the postgres user must be able to reach $PG_DIR: add o+x (search only) where missing.
pg_make_reachable() {
  [ "$(id -u)" = 0 ] || return 0
  local p="" part
  IFS=/ read -ra parts <<<"$(realpath -m "$PG_DIR")"
  for part in "${parts[@]}"; do
    [ -n "$part" ] || continue
    p=$p/$part
    [ -d "$p" ] || break
    if ! runuser -u postgres -- test -x "$p"; then
      log "postgres: chmod o+x $p so the postgres user can reach its data directory"
      chmod o+x "$p"
    fi
  done
}

postgres_prepare() {
  PG_BIN=$(pg_bin) || true
  if [ -z "$PG_BIN" ]; then
    apt_install postgresql
    PG_BIN=$(pg_bin) || die "postgres: no /usr/lib/postgresql/*/bin/initdb after installing postgresql"
  fi
  mkdir -p "$PG_DATA" "$PG_RUN"
  chmod 700 "$PG_DATA"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$PG_DIR"
  pg_make_reachable
  if [ ! -f "$PG_DATA/PG_VERSION" ]; then
    log "postgres: initdb $PG_DATA"
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 --no-sync \
      --auth-local=peer --auth-host=scram-sha-256 >"$PG_DIR/initdb.log" 2>&1 \
      || fail_with_log postgres "initdb failed" "$PG_DIR/initdb.log"
    echo "include_if_exists = 'frontrow.conf'" >>"$PG_DATA/postgresql.conf"
  fi
  cat >"$PG_DATA/frontrow.conf" <<CONF
# Written by deploy/local/postgres.sh on every start; edits are lost.
listen_addresses = '$FR_HOST'
port = $PG_PORT
unix_socket_directories = '$PG_RUN'
max_connections = 100
shared_buffers = 128MB
work_mem = 4MB
maintenance_work_mem = 64MB
effective_cache_size = 512MB
synchronous_commit = off
CONF
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$PG_DATA/frontrow.conf"
  return 0
}

postgres_start() {
  port_open "$PG_PORT" && die "postgres: port $PG_PORT is already taken by another process"
  log "postgres: starting on $FR_HOST:$PG_PORT"
  mark_log "$PG_LOG"
  as_pg "$PG_BIN/pg_ctl" start -D "$PG_DATA" -l "$PG_LOG" -w -t 60 >/dev/null \
    || fail_with_log postgres "pg_ctl start failed" "$PG_LOG"
}

postgres_ready() { "$PG_BIN/pg_isready" -q -h "$FR_HOST" -p "$PG_PORT"; }

postgres_wait() {
  local i
  for ((i = 0; i < 60; i++)); do postgres_ready && break; sleep 0.5; done
  postgres_ready || fail_with_log postgres "pg_isready fails on $FR_HOST:$PG_PORT" "$PG_LOG"
  # Role and database, created once (psql's \gexec runs the generated statement if any).
  as_pg "$PG_BIN/psql" -h "$PG_RUN" -p "$PG_PORT" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 >/dev/null <<'SQL' \
    || fail_with_log postgres "could not create role/database frontrow" "$PG_LOG"
SELECT 'CREATE ROLE frontrow LOGIN CREATEDB PASSWORD ''frontrow''' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'frontrow')
\gexec
SELECT 'CREATE DATABASE frontrow OWNER frontrow' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'frontrow')
\gexec
SQL
  log "postgres: ready at postgres://frontrow:frontrow@$FR_HOST:$PG_PORT/frontrow"
}

postgres_down() {
  if postgres_running; then
    log "postgres: stopping"
    as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t 60 >/dev/null
  else
    log "postgres: not running"
  fi
}
