# Shared helpers for deploy/local/*.sh. Sourced, never run directly.
# All state lives under $FRONTROW_SERVICES_DIR (default ~/.frontrow-services):
#   cache/   Maven repository, resolved class paths, compiled launcher ($FRONTROW_SERVICES_CACHE moves it)
#   kafka/ postgres/ opensearch/ kafka-cluster/ balancer/   per-service config, data, logs, pid files
# chromium is a step, not a daemon: it installs the browser and its driver for the browser tests
set -euo pipefail
shopt -s inherit_errexit

FR_DIR=${FRONTROW_SERVICES_DIR:-$HOME/.frontrow-services}
FR_CACHE=${FRONTROW_SERVICES_CACHE:-$FR_DIR/cache}
FR_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FR_HOST=127.0.0.1
FR_ALL_SERVICES=(postgres kafka opensearch redis chromium)
# Started only when named (up.sh kafka-cluster balancer); down.sh without names stops them too.
FR_EXTRA_SERVICES=(kafka-cluster balancer)

log() { printf '[local-services] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# mark_log FILE: remember FILE's size so that fail_with_log shows only what this run appended.
declare -A FR_LOG_OFFSET=()
mark_log() { FR_LOG_OFFSET[$1]=$(stat -c %s "$1" 2>/dev/null || echo 0); }

# fail_with_log SERVICE MESSAGE LOGFILE...: report a failed start with the tails of its logs.
fail_with_log() {
  local name=$1 msg=$2 f tail; shift 2
  log "ERROR: $name: $msg"
  for f in "$@"; do
    [ -s "$f" ] || continue
    tail=$(tail -c +$((${FR_LOG_OFFSET[$f]:-0} + 1)) "$f" | tail -n "${FRONTROW_LOG_TAIL:-40}")
    [ -n "$tail" ] || continue
    log "last lines of $f:"
    sed 's/^/    /' <<<"$tail" >&2
  done
  exit 1
}

port_open() { (exec 3<>"/dev/tcp/$FR_HOST/$1") 2>/dev/null; }

# apt_install PKG...: install Debian packages (apt-get update once per run).
FR_APT_UPDATED=
apt_install() {
  [ "$(id -u)" = 0 ] || die "need root to run: apt-get install $*"
  if [ -z "$FR_APT_UPDATED" ]; then
    log "apt-get update"
    apt-get update -qq >/dev/null || die "apt-get update failed"
    FR_APT_UPDATED=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
    || die "apt-get install $* failed"
}

# need_java: set FR_JAVA_HOME to a JDK 17 (FRONTROW_JAVA_HOME overrides); install one if missing.
need_java() {
  [ -n "${FR_JAVA_HOME:-}" ] && return 0
  local h
  for h in "${FRONTROW_JAVA_HOME:-}" /usr/lib/jvm/java-17-openjdk-*; do
    if [ -n "$h" ] && [ -x "$h/bin/javac" ]; then FR_JAVA_HOME=$h; return 0; fi
  done
  apt_install openjdk-17-jdk-headless
  for h in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$h/bin/javac" ]; then FR_JAVA_HOME=$h; return 0; fi
  done
  die "no JDK 17 found under /usr/lib/jvm after installing openjdk-17-jdk-headless"
}

# resolve_classpath NAME DEPENDENCY_XML: resolve Maven artifacts once into $FR_CACHE/m2 and
# print the path of a file holding the class path. Later calls reuse it without running mvn.
resolve_classpath() {
  local name=$1 deps=$2 dir=$FR_CACHE/$1
  local cpf=$dir/classpath.txt
  if [ -s "$cpf" ] && classpath_complete "$cpf"; then echo "$cpf"; return 0; fi
  need_java
  command -v mvn >/dev/null || apt_install maven
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.frontrow</groupId>
  <artifactId>$name</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$deps
  </dependencies>
</project>
POM
  log "resolving $name from Maven Central (first run only)"
  if ! JAVA_HOME=$FR_JAVA_HOME mvn -B -q -f "$dir/pom.xml" -Dmaven.repo.local="$FR_CACHE/m2" \
      dependency:build-classpath -Dmdep.outputFile="$cpf.tmp" >"$dir/mvn.log" 2>&1; then
    fail_with_log "$name" "mvn could not resolve the dependencies" "$dir/mvn.log"
  fi
  mv "$cpf.tmp" "$cpf"
  echo "$cpf"
}

classpath_complete() {
  local jar
  while IFS= read -r -d: jar || [ -n "$jar" ]; do
    [ -f "$jar" ] || return 1
  done <"$1"
}

# JVM services: a pid file plus a marker string that must appear in the process's command line.
pid_running() { # PIDFILE MARKER
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  kill -0 "$pid" 2>/dev/null && grep -qaF -- "$2" "/proc/$pid/cmdline" 2>/dev/null
}

# start_bg PIDFILE STDOUT_LOG CMD...: run CMD detached (own session, no tty, output to a file).
start_bg() {
  local pidfile=$1 out=$2; shift 2
  setsid "$@" </dev/null >>"$out" 2>&1 &
  echo $! >"$pidfile"
}

# stop_pid NAME PIDFILE MARKER: SIGTERM, wait up to 60 s, then SIGKILL.
stop_pid() {
  local name=$1 pidfile=$2 marker=$3 pid i
  if ! pid_running "$pidfile" "$marker"; then
    rm -f "$pidfile"; log "$name: not running"; return 0
  fi
  pid=$(cat "$pidfile")
  log "$name: stopping (pid $pid)"
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 600; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name: still alive after 60 s, sending SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# wait_for NAME PIDFILE MARKER LOGS TIMEOUT_S CHECK...: poll CHECK until it succeeds; fail early
# (with the tails of the colon-separated LOGS) if the process dies, or after TIMEOUT_S seconds.
wait_for() {
  local name=$1 pidfile=$2 marker=$3 timeout=$5 logs
  IFS=: read -ra logs <<<"$4"
  shift 5
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    # Liveness only: right after start_bg the child may not have exec'd the service yet, so its
    # command line does not show the marker for a moment.
    kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null \
      || fail_with_log "$name" "process exited during startup" "${logs[@]}"
    ((SECONDS < deadline)) || fail_with_log "$name" "not ready after ${timeout}s" "${logs[@]}"
    sleep 0.5
  done
}

# log4j2_rolling_file STATUS LEVEL FILE LAYOUT: log4j2.properties lines (on stdout) for one
# rolling file appender, FILE (a log4j2 lookup may name it), 50 MB each with one older file kept,
# laid out by LAYOUT, taking the root logger's LEVEL; STATUS is log4j's own status level.
log4j2_rolling_file() {
  cat <<PROPS
status = $1
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = $3
appender.file.filePattern = $3.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = $4
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = $2
rootLogger.appenderRef.file.ref = file
PROPS
}

# check_services SERVICE...: die on an unknown service name.
check_services() {
  local s
  for s in "$@"; do
    case " ${FR_ALL_SERVICES[*]} ${FR_EXTRA_SERVICES[*]} " in
      *" $s "*) ;;
      *) die "unknown service '$s' (known: ${FR_ALL_SERVICES[*]} ${FR_EXTRA_SERVICES[*]})" ;;
    esac
  done
}

for _f in postgres kafka opensearch redis chromium kafka-cluster balancer; do
  # shellcheck source=/dev/null
  . "$FR_HERE/$_f.sh"
done
unset _f
