#!/usr/bin/env bash
# Run a Kafka command-line class on the cached class path (Kafka must have been set up by up.sh):
#   kafka-tool.sh org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 --list
#   kafka-tool.sh org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server 127.0.0.1:9092 --topic t --from-beginning
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ -s "$FR_CACHE/kafka-$KAFKA_VERSION/classpath.txt" ] || die "run up.sh kafka first"
kafka_tool "$@"
