# A replicated Apache Kafka cluster for the scale and chaos runs: three KRaft nodes (each a
# combined broker + controller, so any one can die and the quorum of two stays), on loopback
# ports of their own, beside (never instead of) the single broker of kafka.sh.
# Sourced by lib.sh; defines kafka_cluster_{running,prepare,start,wait,ready,down} and
# kafka_broker_{start,kill} for one node (deploy/local/kafka-broker.sh).
#
# Topics are created with replication factor 3, min.insync.replicas=2, unclean leader election
# off; the group coordinator accepts session timeouts from 1 s (FrontRow's failover).
# Brokers: 127.0.0.1:19092,19093,19094 (FRONTROW_KAFKA_CLUSTER_PORT_BASE moves them; the
# controllers listen 100 above). Data under $FR_DIR/kafka-cluster/node-N.

KAFKA_CLUSTER_SIZE=3
KAFKA_CLUSTER_PORT_BASE=${FRONTROW_KAFKA_CLUSTER_PORT_BASE:-19092}
KAFKA_CLUSTER_DIR=$FR_DIR/kafka-cluster

kafka_cluster_port() { echo $((KAFKA_CLUSTER_PORT_BASE + $1 - 1)); }
kafka_cluster_controller_port() { echo $((KAFKA_CLUSTER_PORT_BASE + 100 + $1 - 1)); }
kafka_cluster_node_dir() { echo "$KAFKA_CLUSTER_DIR/node-$1"; }
kafka_cluster_marker() { echo "$(kafka_cluster_node_dir "$1")/server.properties"; }
kafka_cluster_pidfile() { echo "$(kafka_cluster_node_dir "$1")/kafka.pid"; }

# The bootstrap list clients use: every broker.
kafka_cluster_brokers() {
  local n out=
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do out+="${out:+,}$FR_HOST:$(kafka_cluster_port "$n")"; done
  echo "$out"
}

kafka_broker_running() { pid_running "$(kafka_cluster_pidfile "$1")" "$(kafka_cluster_marker "$1")"; }

kafka_cluster_running() {
  local n
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do kafka_broker_running "$n" || return 1; done
}

kafka_cluster_prepare() {
  kafka_prepare_classpath
  local n voters= dir
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do
    voters+="${voters:+,}$n@$FR_HOST:$(kafka_cluster_controller_port "$n")"
  done
  mkdir -p "$KAFKA_CLUSTER_DIR"
  kafka_write_log4j "$KAFKA_CLUSTER_DIR"
  KAFKA_TOOLS_LOG4J=$KAFKA_CLUSTER_DIR/tools-log4j2.properties
  kafka_ensure_cluster_id "$KAFKA_CLUSTER_DIR/cluster.id"
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do
    dir=$(kafka_cluster_node_dir "$n")
    mkdir -p "$dir/data" "$dir/logs"
    {
      echo "# Written by deploy/local/kafka-cluster.sh on every start; edits are lost."
      kafka_node_properties "$n" "$voters" "$(kafka_cluster_port "$n")" "$(kafka_cluster_controller_port "$n")" \
        "$dir/data" 1 3 2
      cat <<PROPS
default.replication.factor=3
min.insync.replicas=2
unclean.leader.election.enable=false
transaction.state.log.num.partitions=8
# A dead broker is fenced by the controllers (and leaves the ISRs) within 3 s, not 9.
broker.session.timeout.ms=3000
broker.heartbeat.interval.ms=500
replica.lag.time.max.ms=5000
PROPS
    } >"$dir/server.properties"
    cp "$KAFKA_CLUSTER_DIR/log4j2.properties" "$dir/log4j2.properties"
    if [ ! -f "$dir/data/meta.properties" ]; then
      log "kafka-cluster: formatting node $n"
      kafka_tool kafka.tools.StorageTool format --cluster-id="$(cat "$KAFKA_CLUSTER_DIR/cluster.id")" \
        -c "$dir/server.properties" --ignore-formatted >"$dir/logs/format.log" 2>&1 \
        || fail_with_log kafka-cluster "formatting node $n failed" "$dir/logs/format.log"
    fi
  done
}

# kafka_broker_start N: starts node N (prepared) unless it runs.
kafka_broker_start() {
  local n=$1 dir port
  dir=$(kafka_cluster_node_dir "$n")
  port=$(kafka_cluster_port "$n")
  kafka_broker_running "$n" && return 0
  port_open "$port" && die "kafka-cluster: port $port is already taken by another process"
  port_open "$(kafka_cluster_controller_port "$n")" \
    && die "kafka-cluster: port $(kafka_cluster_controller_port "$n") is already taken by another process"
  log "kafka-cluster: starting node $n on $FR_HOST:$port"
  : >"$dir/logs/stdout.log"
  mark_log "$dir/logs/server.log"
  kafka_run_broker "$(kafka_cluster_pidfile "$n")" "$dir/logs" "$(kafka_cluster_marker "$n")" \
    "${FRONTROW_KAFKA_CLUSTER_HEAP:-512m}"
}

# kafka_broker_kill N: SIGKILL node N (the chaos run's broker crash; its data stays).
kafka_broker_kill() {
  local pidfile
  pidfile=$(kafka_cluster_pidfile "$1")
  if kafka_broker_running "$1"; then
    kill -9 "$(cat "$pidfile")" 2>/dev/null || true
    log "kafka-cluster: node $1 killed"
  fi
  rm -f "$pidfile"
}

kafka_cluster_start() {
  local n
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do kafka_broker_start "$n"; done
}

kafka_cluster_ready() {
  local n
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do port_open "$(kafka_cluster_port "$n")" || return 1; done
}

# kafka_broker_wait N: until node N answers on its port and the cluster answers metadata.
kafka_broker_wait() {
  local n=$1 dir
  dir=$(kafka_cluster_node_dir "$n")
  wait_for "kafka-cluster node $n" "$(kafka_cluster_pidfile "$n")" "$(kafka_cluster_marker "$n")" \
    "$dir/logs/stdout.log:$dir/logs/server.log" 120 port_open "$(kafka_cluster_port "$n")"
}

kafka_cluster_wait() {
  local n
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do kafka_broker_wait "$n"; done
  # The ports open before the nodes have a quorum: ask for metadata through all of them.
  KAFKA_TOOL_TIMEOUT=90 kafka_tool org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$(kafka_cluster_brokers)" --list >"$KAFKA_CLUSTER_DIR/ready-check.log" 2>&1 \
    || fail_with_log kafka-cluster "the cluster does not answer metadata requests" \
      "$KAFKA_CLUSTER_DIR/ready-check.log" "$(kafka_cluster_node_dir 1)/logs/server.log"
  log "kafka-cluster: ready at $(kafka_cluster_brokers)"
}

kafka_cluster_down() {
  local n
  for ((n = 1; n <= KAFKA_CLUSTER_SIZE; n++)); do
    stop_pid "kafka-cluster node $n" "$(kafka_cluster_pidfile "$n")" "$(kafka_cluster_marker "$n")"
  done
}
