#!/usr/bin/env bash
# The C API's test program against a real sonic-server on loopback ports it picks, over grpc://
# and again over http://.
#   run_test_c_api.sh SONIC_SERVER TEST_C_API [MODEL_REPOSITORY]
set -euo pipefail
server=$1 program=$2
source "$(dirname "$0")/../tools/serve.sh"
serve "$server"
# A loopback port where nothing listens: bound, then closed again.
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$program" "grpc://127.0.0.1:$port" "grpc://127.0.0.1:$dead" ${3:+"$3"}
"$program" "http://127.0.0.1:$http" "http://127.0.0.1:$dead"
