# Apache Kafka, single node in KRaft mode (combined broker + controller), jars from Maven Central.
# Sourced by lib.sh; defines kafka_{running,prepare,start,wait,ready,down}.

KAFKA_VERSION=4.4.0
KAFKA_LOG4J_VERSION=2.25.5 # the log4j-api/-core version kafka_2.13 $KAFKA_VERSION brings
KAFKA_PORT=${FRONTROW_KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${FRONTROW_KAFKA_CONTROLLER_PORT:-9093}
KAFKA_DIR=$FR_DIR/kafka
KAFKA_PID=$KAFKA_DIR/kafka.pid
KAFKA_LOG=$KAFKA_DIR/logs/server.log
KAFKA_OUT=$KAFKA_DIR/logs/stdout.log
KAFKA_MARKER=$KAFKA_DIR/server.properties # appears on the broker's command line

kafka_running() { pid_running "$KAFKA_PID" "$KAFKA_MARKER"; }

# kafka_prepare_classpath: the JDK and the Kafka jars (resolved once), for brokers and tools.
kafka_prepare_classpath() {
  need_java
  # kafka-tools (TopicCommand, console producer/consumer) without Kafka Connect's runtime.
  KAFKA_CPF=$(resolve_classpath "kafka-$KAFKA_VERSION" "
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$KAFKA_VERSION</version>
      <exclusions><exclusion><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId></exclusion></exclusions></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$KAFKA_LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$KAFKA_LOG4J_VERSION</version></dependency>")
}

# kafka_write_log4j DIR: the broker's (log4j2.properties) and the tools' logging config.
kafka_write_log4j() {
  {
    echo "# Broker logging: one rolling file in the service's logs directory."
    log4j2_rolling_file warn INFO '${sys:kafka.logs.dir}/server.log' '[%d] %p %m (%c)%n'
    echo "logger.request.name = kafka.request.logger"
    echo "logger.request.level = WARN"
  } >"$1/log4j2.properties"
  cat >"$1/tools-log4j2.properties" <<'PROPS'
# Command-line tools (kafka_tool): warnings to stderr only.
status = warn
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = err
PROPS
}

kafka_prepare() {
  kafka_prepare_classpath
  mkdir -p "$KAFKA_DIR/data" "$KAFKA_DIR/logs"
  {
    echo "# Written by deploy/local/kafka.sh on every start; edits are lost."
    kafka_node_properties 1 "1@$FR_HOST:$KAFKA_CONTROLLER_PORT" "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" \
      "$KAFKA_DIR/data" "${FRONTROW_KAFKA_NUM_PARTITIONS:-1}" 1 1
  } >"$KAFKA_DIR/server.properties"
  kafka_write_log4j "$KAFKA_DIR"
  if [ ! -f "$KAFKA_DIR/data/meta.properties" ]; then
    kafka_ensure_cluster_id "$KAFKA_DIR/cluster.id"
    log "kafka: formatting storage"
    kafka_tool kafka.tools.StorageTool format --cluster-id="$(cat "$KAFKA_DIR/cluster.id")" \
      -c "$KAFKA_DIR/server.properties" --ignore-formatted >"$KAFKA_DIR/logs/format.log" 2>&1 \
      || fail_with_log kafka "kafka.tools.StorageTool format failed" "$KAFKA_DIR/logs/format.log"
  fi
}

# kafka_node_properties NODE VOTERS PORT CONTROLLER_PORT DATA_DIR PARTITIONS REPLICAS MIN_ISR: the
# server.properties lines (on stdout) of one combined broker + controller, node id NODE of the
# quorum VOTERS, whose internal topics have REPLICAS replicas and MIN_ISR in sync; callers add
# what only they set.
kafka_node_properties() {
  cat <<PROPS
process.roles=broker,controller
node.id=$1
controller.quorum.voters=$2
listeners=PLAINTEXT://$FR_HOST:$3,CONTROLLER://$FR_HOST:$4
advertised.listeners=PLAINTEXT://$FR_HOST:$3
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$5
num.partitions=$6
offsets.topic.replication.factor=$7
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$7
transaction.state.log.min.isr=$8
share.coordinator.state.topic.replication.factor=$7
share.coordinator.state.topic.min.isr=$8
group.initial.rebalance.delay.ms=0
# FrontRow's command group fails over within its session timeout (1 s by default).
group.min.session.timeout.ms=1000
PROPS
}

# kafka_ensure_cluster_id FILE: write a fresh cluster id to FILE unless it holds one. A KRaft
# cluster id is 16 random bytes in URL-safe base64 (22 characters); like Kafka's own
# Uuid.randomUuid it never starts with '-', which the storage tool would read as an option.
kafka_ensure_cluster_id() {
  [ -s "$1" ] && return 0
  local id
  id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)
  [ "${id:0:1}" = "-" ] && id="A${id:1}"
  echo "$id" >"$1"
}

# kafka_tool CLASS ARGS...: run a Kafka command-line class on the cached class path, e.g.
#   kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 --list
kafka_tool() {
  need_java
  ${KAFKA_TOOL_TIMEOUT:+timeout "$KAFKA_TOOL_TIMEOUT"} "$FR_JAVA_HOME/bin/java" -Xmx256m -XX:TieredStopAtLevel=1 -Xshare:auto \
    -Dlog4j2.configurationFile="${KAFKA_TOOLS_LOG4J:-$KAFKA_DIR/tools-log4j2.properties}" \
    -cp "$(cat "${KAFKA_CPF:-$FR_CACHE/kafka-$KAFKA_VERSION/classpath.txt}")" "$@"
}

kafka_start() {
  port_open "$KAFKA_PORT" && die "kafka: port $KAFKA_PORT is already taken by another process"
  port_open "$KAFKA_CONTROLLER_PORT" && die "kafka: controller port $KAFKA_CONTROLLER_PORT is already taken by another process"
  log "kafka: starting on $FR_HOST:$KAFKA_PORT"
  : >"$KAFKA_OUT"
  mark_log "$KAFKA_LOG"
  kafka_run_broker "$KAFKA_PID" "$KAFKA_DIR/logs" "$KAFKA_MARKER" "${FRONTROW_KAFKA_HEAP:-512m}"
}

# kafka_run_broker PIDFILE LOGDIR PROPERTIES HEAP: one broker JVM, detached (log4j2.properties
# beside PROPERTIES).
kafka_run_broker() {
  start_bg "$1" "$2/stdout.log" "$FR_JAVA_HOME/bin/java" \
    -Xms256m -Xmx"$4" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
    -Dkafka.logs.dir="$2" -Dlog4j2.configurationFile="$(dirname "$3")/log4j2.properties" \
    -cp "$(cat "$KAFKA_CPF")" kafka.Kafka "$3"
}

kafka_ready() { port_open "$KAFKA_PORT"; }

kafka_wait() {
  wait_for kafka "$KAFKA_PID" "$KAFKA_MARKER" "$KAFKA_OUT:$KAFKA_LOG" 120 kafka_ready
  # The port opens before the broker has joined its own quorum: ask for metadata.
  KAFKA_TOOL_TIMEOUT=90 kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$FR_HOST:$KAFKA_PORT" --list \
    >"$KAFKA_DIR/logs/ready-check.log" 2>&1 \
    || fail_with_log kafka "broker does not answer metadata requests" "$KAFKA_DIR/logs/ready-check.log" "$KAFKA_LOG"
  log "kafka: ready at $FR_HOST:$KAFKA_PORT"
}

kafka_down() { stop_pid kafka "$KAFKA_PID" "$KAFKA_MARKER"; }
