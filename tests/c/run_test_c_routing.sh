#!/usr/bin/env bash
# The C API's routing and batching test program against two sonic-servers on loopback ports
# they pick.
#   run_test_c_routing.sh SONIC_SERVER TEST_C_ROUTING
set -euo pipefail
server=$1 program=$2
source "$(dirname "$0")/../tools/serve.sh"
serve "$server"
first_port=$port
serve "$server"
"$program" "grpc://127.0.0.1:$first_port" "grpc://127.0.0.1:$port"
