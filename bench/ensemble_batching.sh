#!/usr/bin/env bash
# What an ensemble's steps cost when their model batches: sonic-perf against one sonic-server
# serving a 3-step ensemble of a 64 B ONNX identity, with the identity's dynamic_batching off
# (ensemble3: each step runs at once) and on (ensemble3_batched: the steps of concurrent requests
# join the identity's queue and merge when they meet there, as Triton's do), and the identity
# itself both ways, 1 and 8 requests in flight, in interleaved rounds. Prints the medians and
# the identity's executions per request (3 for an ensemble whose steps never merge, 1 for the
# identity called alone), from the server's statistics.
#
#   bench/ensemble_batching.sh BUILD_DIR [ROUNDS=5]
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS=5]}
rounds=${2:-5}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, $python, start_server, perf_summary, the cleanup
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
require_built "$server" "$perf"

models=$work/models
"$python" "$repo/bench/identity_models.py" "$models"
start_server "$server" "$work/server.log" --model-repository "$models" --http-port 0

# The step model's executions and requests so far, from the HTTP statistics route.
executions() {
  "$python" - "$http_port" "$1" <<'PY'
import json, sys, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/v2/models/{sys.argv[2]}/stats"
stats = json.load(urllib.request.urlopen(url, timeout=10))["model_stats"][0]
print(stats["execution_count"], stats["inference_stats"]["success"]["count"])
PY
}

for round in $(seq "$rounds"); do
  for concurrency in 1 8; do
    for model in ensemble3 ensemble3_batched onnx_identity onnx_identity_batched; do
      step=${model/ensemble3/onnx_identity}
      read -r executions_before _ < <(executions "$step")
      read -r _ requests_before < <(executions "$model")
      "$perf" --url "grpc://127.0.0.1:$port" --model "$model" --input "INPUT0=FP32:1,16:random" \
        --concurrency "$concurrency" --warmup 0.5 --window-requests 4000 --max-windows 1 \
        --json "$work/perf.json" >/dev/null 2>&1
      read -r executions_after _ < <(executions "$step")
      read -r _ requests_after < <(executions "$model")
      per_request=$("$python" -c "import sys; a = list(map(int, sys.argv[1:])); \
print(round((a[1] - a[0]) / max(1, a[3] - a[2]), 3))" \
        "$executions_before" "$executions_after" "$requests_before" "$requests_after")
      perf_summary "$work/perf.json" |
        sed "s/^/$model c$concurrency /; s/}\$/, \"step_executions\": $per_request}/" >>"$work/rows"
    done
  done
done

PYTHONPATH="$repo/bench" "$python" - "$work/rows" "$rounds" <<'PY'
import sys
from rows import medians
med, rows = medians(sys.argv[1])
print(f"3-step ensemble of a 64 B FP32 identity, and the identity, grpc:// on sonic-server; "
      f"medians of {sys.argv[2]} interleaved rounds")
print(f"{'model':>22} {'in flight':>9} {'infer/s':>9} {'p50 us':>9} {'p99 us':>9} "
      f"{'identity executions/request':>28}")
for (model, key) in rows:
    print(f"{model:>22} {key[1:]:>9} {med(model, key, 'throughput'):>9.0f} "
          f"{med(model, key, 'p50_us'):>9.1f} {med(model, key, 'p99_us'):>9.1f} "
          f"{med(model, key, 'step_executions'):>28.2f}")
PY
