#!/usr/bin/env bash
# One node of the kafka-cluster service (up.sh kafka-cluster first), for fault runs:
#   kafka-broker.sh kill N    SIGKILL node N (1-3); its data stays
#   kafka-broker.sh start N   start node N again and wait until it listens
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# = 2 ] && [[ $2 =~ ^[1-9]$ ]] && (($2 <= KAFKA_CLUSTER_SIZE)) || die "usage: kafka-broker.sh kill|start N"
case $1 in
  kill) kafka_broker_kill "$2" ;;
  start)
    kafka_cluster_prepare
    kafka_broker_start "$2"
    kafka_broker_wait "$2"
    ;;
  *) die "usage: kafka-broker.sh kill|start N" ;;
esac
