#!/usr/bin/env bash
# The demo: starts sonic-server on a free loopback port, sends the `simple` model a request with
# the example client, prints the outputs and round-trip latencies, and stops the server; then
# the mini-workflow (examples/workflow/run.sh): a ProtoDUNE-like job with its CNN on its own
# CPU, as a service, and as a service whose server is killed halfway, and how many such jobs
# one server takes.
#   scripts/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
server="$build/tools/sonic-server"
client="$build/examples/simple_client"
[ -x "$server" ] && [ -x "$client" ] || { echo "demo: build first (cmake --build $build)" >&2; exit 1; }

log=$(mktemp)
"$server" --host 127.0.0.1 --port 0 >"$log" 2>&1 &
pid=$!
# The server is stopped before the workflow runs: here it is already gone, which must not turn
# the demo's exit status into a failure (set -e applies inside the trap too).
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT

port=""
for _ in $(seq 100); do
  port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done
[ -n "$port" ] || { echo "demo: sonic-server did not start" >&2; cat "$log" >&2; exit 1; }

echo "sonic-server is listening on 127.0.0.1:$port"
"$client" "grpc://127.0.0.1:$port"
kill $pid 2>/dev/null; wait $pid 2>/dev/null || true

if [ -x "$build/examples/workflow/protodune_job" ]; then
  echo
  "$(dirname "$0")/../examples/workflow/run.sh" "$build"
else
  echo "demo: the mini-workflow needs the ONNX backend; it was not built"
fi
