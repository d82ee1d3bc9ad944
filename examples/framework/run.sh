#!/usr/bin/env bash
# Runs the event-loop example against a sonic-server on a free loopback port serving the
# generated models (BUILD_DIR/models/repository) on one model thread, so that the framework
# keeps the other core: first with infer_chunked_async (ExternalWork), then with a blocking call
# in the same place, for comparison. Extra options go to both runs (event_loop --help).
#
#   examples/framework/run.sh BUILD_DIR [event_loop options]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [event_loop options]}
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loop=$build/examples/framework/event_loop
models=$build/models/repository
[[ -x $loop ]] || { echo "run.sh: $loop is not built (needs libtbb-dev)" >&2; exit 2; }
[[ -d $models ]] || { echo "run.sh: $models is missing (the build generates it)" >&2; exit 2; }
source "$repo/bench/start_server.sh"

start_server "$build/tools/sonic-server" "$work/server.log" --threads 1 --model-repository "$models"
"$loop" --url "grpc://127.0.0.1:$port" "$@"
"$loop" --url "grpc://127.0.0.1:$port" --blocking "$@"
