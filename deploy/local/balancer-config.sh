#!/usr/bin/env bash
# Print the HAProxy config of deploy/local/balancer.sh for a port and node list, installing
# haproxy if it is missing (the chaos run starts its own `haproxy -db -f` on this):
#   balancer-config.sh 18080 127.0.0.1:18081,127.0.0.1:18082 > haproxy.cfg
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# = 2 ] || die "usage: balancer-config.sh PORT HOST:PORT[,HOST:PORT...]"
need_haproxy
balancer_config "$1" "$2"
