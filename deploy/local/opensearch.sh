# OpenSearch 2.19 (Elasticsearch-API compatible), jars from Maven Central, run through the small
# launcher in opensearch/FrontRowOpenSearch.java (compiled into the cache on first use).
# Sourced by lib.sh; defines opensearch_{running,prepare,start,wait,ready,down}.

OS_VERSION=2.19.6
OS_LOG4J_VERSION=2.25.4 # the log4j-api version opensearch $OS_VERSION brings
OS_PORT=${FRONTROW_OPENSEARCH_PORT:-9200}
OS_TRANSPORT_PORT=${FRONTROW_OPENSEARCH_TRANSPORT_PORT:-9300}
OS_DIR=$FR_DIR/opensearch
OS_PID=$OS_DIR/opensearch.pid
OS_LOG=$OS_DIR/logs/frontrow-local.log
OS_OUT=$OS_DIR/logs/stdout.log
OS_MARKER=$OS_DIR # the launcher's argument, on its command line

opensearch_running() { pid_running "$OS_PID" "$OS_MARKER"; }

opensearch_prepare() {
  need_java
  command -v curl >/dev/null || apt_install curl
  OS_CPF=$(resolve_classpath "opensearch-$OS_VERSION" "
    <dependency><groupId>org.opensearch</groupId><artifactId>opensearch</artifactId><version>$OS_VERSION</version></dependency>
    <dependency><groupId>org.opensearch.plugin</groupId><artifactId>transport-netty4-client</artifactId><version>$OS_VERSION</version></dependency>
    <dependency><groupId>org.opensearch.plugin</groupId><artifactId>analysis-common</artifactId><version>$OS_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$OS_LOG4J_VERSION</version></dependency>")
  local src=$FR_HERE/opensearch/FrontRowOpenSearch.java classes=$FR_CACHE/opensearch-$OS_VERSION/classes
  if [ ! -f "$classes/FrontRowOpenSearch.class" ] || [ "$src" -nt "$classes/FrontRowOpenSearch.class" ]; then
    log "opensearch: compiling launcher"
    rm -rf "$classes" && mkdir -p "$classes"
    "$FR_JAVA_HOME/bin/javac" --release 17 -nowarn -cp "$(cat "$OS_CPF")" -d "$classes" "$src" \
      || die "opensearch: javac $src failed"
  fi
  OS_CLASSES=$classes
  mkdir -p "$OS_DIR/config" "$OS_DIR/data" "$OS_DIR/logs" "$OS_DIR/tmp"
  cat >"$OS_DIR/config/opensearch.yml" <<YML
# Written by deploy/local/opensearch.sh on every start; edits are lost.
cluster.name: frontrow-local
node.name: frontrow-local
path.data: $OS_DIR/data
path.logs: $OS_DIR/logs
discovery.type: single-node
network.host: $FR_HOST
http.port: $OS_PORT
transport.port: $OS_TRANSPORT_PORT
http.type: netty4
transport.type: netty4
cluster.routing.allocation.disk.threshold_enabled: false
YML
  {
    echo "# One rolling file, logs/<cluster name>.log (OpenSearch sets the opensearch.logs.* properties)."
    log4j2_rolling_file error info \
      '${sys:opensearch.logs.base_path}${sys:file.separator}${sys:opensearch.logs.cluster_name}.log' \
      '[%d{ISO8601}][%-5p][%-25c{1.}] %m%n'
  } >"$OS_DIR/config/log4j2.properties"
}

opensearch_start() {
  port_open "$OS_PORT" && die "opensearch: port $OS_PORT is already taken by another process"
  port_open "$OS_TRANSPORT_PORT" && die "opensearch: transport port $OS_TRANSPORT_PORT is already taken by another process"
  log "opensearch: starting on $FR_HOST:$OS_PORT"
  : >"$OS_OUT"
  mark_log "$OS_LOG"
  # JVM flags from OpenSearch's own jvm.options, heap reduced.
  start_bg "$OS_PID" "$OS_OUT" "$FR_JAVA_HOME/bin/java" \
    -Xms"${FRONTROW_OPENSEARCH_HEAP:-512m}" -Xmx"${FRONTROW_OPENSEARCH_HEAP:-512m}" -XX:+UseG1GC \
    -Djava.io.tmpdir="$OS_DIR/tmp" -Dfile.encoding=UTF-8 -Djava.locale.providers=SPI,COMPAT \
    -Djna.nosys=true -XX:-OmitStackTraceInFastThrow -Dio.netty.noUnsafe=true \
    -Dio.netty.noKeySetOptimization=true -Dio.netty.recycler.maxCapacityPerThread=0 \
    -Dio.netty.allocator.numDirectArenas=0 -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
    -Dlog4j2.formatMsgNoLookups=true \
    -cp "$(cat "$OS_CPF"):$OS_CLASSES" FrontRowOpenSearch "$OS_DIR"
}

opensearch_ready() {
  curl -sf -o /dev/null "http://$FR_HOST:$OS_PORT/_cluster/health?wait_for_status=yellow&timeout=${1:-1s}"
}

opensearch_wait() {
  wait_for opensearch "$OS_PID" "$OS_MARKER" "$OS_OUT:$OS_LOG" 180 opensearch_ready
  log "opensearch: ready at http://$FR_HOST:$OS_PORT"
}

opensearch_down() { stop_pid opensearch "$OS_PID" "$OS_MARKER"; }
