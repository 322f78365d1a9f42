# HAProxy from Debian's packages in front of the command nodes: one address for clients,
# round-robin over the nodes, each checked on `GET /ready` every 500 ms (down after 2 failures,
# up after 2 passes; a node taken out has its open requests cut); a request whose connection is
# refused goes to another node.
# Sourced by lib.sh; defines balancer_{running,prepare,start,wait,ready,down} and
# balancer_config (the config for any port and node list; deploy/local/balancer-config.sh).
# Listens on 127.0.0.1:18080 (FRONTROW_BALANCER_PORT) over FRONTROW_BALANCER_NODES
# (comma-separated host:port, default 127.0.0.1:18081,127.0.0.1:18082,127.0.0.1:18083).

BALANCER_PORT=${FRONTROW_BALANCER_PORT:-18080}
BALANCER_NODES=${FRONTROW_BALANCER_NODES:-$FR_HOST:18081,$FR_HOST:18082,$FR_HOST:18083}
BALANCER_DIR=$FR_DIR/balancer
BALANCER_PID=$BALANCER_DIR/haproxy.pid
BALANCER_CONF=$BALANCER_DIR/haproxy.cfg
BALANCER_LOG=$BALANCER_DIR/haproxy.log

need_haproxy() { command -v haproxy >/dev/null || apt_install haproxy; }

# balancer_config PORT NODES: print an HAProxy config listening on 127.0.0.1:PORT over NODES.
balancer_config() {
  local port=$1 nodes i=0 node
  IFS=, read -ra nodes <<<"$2"
  cat <<CONF
# Written by deploy/local/balancer.sh; edits are lost.
global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    # A refused connection (a dead node) is retried on another node; a request a node
    # received is never replayed (the client retries it, with its Idempotency-Key).
    retries 3
    option redispatch 1
    retry-on conn-failure
    option http-server-close
    # The balancer's own answers are problems like FrontRow's (RFC 9457), never HTML pages.
    http-error status 503 content-type application/problem+json hdr Retry-After 1 string '{"type":"urn:frontrow:problem:no-node-ready","title":"Service Unavailable","status":503,"detail":"no FrontRow node is ready to serve this request; retry after Retry-After seconds"}'
    http-error status 502 content-type application/problem+json hdr Retry-After 1 string '{"type":"urn:frontrow:problem:node-failed","title":"Bad Gateway","status":502,"detail":"the node serving this request failed before it answered; it may or may not have been done, so retry it with the same Idempotency-Key"}'
    http-error status 504 content-type application/problem+json hdr Retry-After 1 string '{"type":"urn:frontrow:problem:node-timeout","title":"Gateway Timeout","status":504,"detail":"the node serving this request did not answer in time; it may or may not have been done, so retry it with the same Idempotency-Key"}'
frontend frontrow
    bind $FR_HOST:$port
    default_backend command
backend command
    balance roundrobin
    option httpchk GET /ready
    http-check expect status 200
    # A node taken out (it stopped answering its check: dead or paused) has the requests it
    # holds cut, so their clients retry on a live node at once instead of waiting on it.
    default-server inter 500ms fastinter 250ms downinter 500ms rise 2 fall 2 on-marked-down shutdown-sessions
CONF
  for node in "${nodes[@]}"; do
    i=$((i + 1))
    echo "    server node$i $node check"
  done
}

balancer_running() { pid_running "$BALANCER_PID" haproxy; }

balancer_prepare() {
  need_haproxy
  mkdir -p "$BALANCER_DIR"
  balancer_config "$BALANCER_PORT" "$BALANCER_NODES" >"$BALANCER_CONF"
  haproxy -c -q -f "$BALANCER_CONF" >"$BALANCER_LOG" 2>&1 \
    || fail_with_log balancer "haproxy refused the generated config" "$BALANCER_LOG"
}

balancer_start() {
  port_open "$BALANCER_PORT" && die "balancer: port $BALANCER_PORT is already taken by another process"
  log "balancer: starting on $FR_HOST:$BALANCER_PORT over $BALANCER_NODES"
  mark_log "$BALANCER_LOG"
  # -db: stay in the foreground (start_bg detaches it and keeps its pid).
  start_bg "$BALANCER_PID" "$BALANCER_LOG" haproxy -db -f "$BALANCER_CONF"
}

balancer_ready() { port_open "$BALANCER_PORT"; }

balancer_wait() {
  wait_for balancer "$BALANCER_PID" haproxy "$BALANCER_LOG" 30 balancer_ready
  log "balancer: ready at http://$FR_HOST:$BALANCER_PORT"
}

balancer_down() { stop_pid balancer "$BALANCER_PID" haproxy; }
