# Redis from Debian's packages, a private server under $FR_DIR/redis (for the benchmark's lock
# baseline). Sourced by lib.sh; defines redis_{running,prepare,start,wait,ready,down}.
# Gives redis://127.0.0.1:6390 (FRONTROW_REDIS_PORT overrides; not 6379, so a system Redis
# the package may start is left alone).

REDIS_PORT=${FRONTROW_REDIS_PORT:-6390}
REDIS_DIR=$FR_DIR/redis
REDIS_PID=$REDIS_DIR/redis.pid
REDIS_LOG=$REDIS_DIR/redis.log
REDIS_CONF=$REDIS_DIR/redis.conf

redis_running() { pid_running "$REDIS_PID" redis-server; }

redis_prepare() {
  command -v redis-server >/dev/null || apt_install redis-server
  mkdir -p "$REDIS_DIR"
  cat >"$REDIS_CONF" <<CONF
# Written by deploy/local/redis.sh on every start; edits are lost.
bind $FR_HOST
port $REDIS_PORT
protected-mode yes
daemonize no
dir $REDIS_DIR
pidfile $REDIS_PID
logfile ""
save ""
appendonly no
CONF
}

redis_start() {
  port_open "$REDIS_PORT" && die "redis: port $REDIS_PORT is already taken by another process"
  log "redis: starting on $FR_HOST:$REDIS_PORT"
  mark_log "$REDIS_LOG"
  start_bg "$REDIS_PID" "$REDIS_LOG" redis-server "$REDIS_CONF"
}

redis_ready() { [ "$(redis-cli -h "$FR_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; }

redis_wait() {
  wait_for redis "$REDIS_PID" redis-server "$REDIS_LOG" 30 redis_ready
  log "redis: ready at redis://$FR_HOST:$REDIS_PORT"
}

redis_down() { stop_pid redis "$REDIS_PID" redis-server; }
