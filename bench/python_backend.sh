#!/usr/bin/env bash
# What a request costs through the Python backend (a model.py in its stub process) beside the
# same identity as an ONNX model run in-process by ONNX Runtime: sonic-perf against one
# sonic-server serving both, one request in flight and then 8 (the Python model with 1 and with 4
# instances), 64 B FP32 inputs, in interleaved rounds. Prints the medians and the difference per
# request.
#
#   bench/python_backend.sh BUILD_DIR [ROUNDS=5]
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
# The stubs run under the interpreter that has numpy (the one PATH finds may not).
SONIC_PYTHON=${SONIC_PYTHON:-$python} start_server "$server" "$work/server.log" \
  --model-repository "$models"

sonic_perf() {  # MODEL CONCURRENCY REQUESTS
  "$perf" --url "grpc://127.0.0.1:$port" --model "$1" --input "INPUT0=FP32:1,16:random" \
    --concurrency "$2" --warmup 0.5 --window-requests "$3" --max-windows 1 \
    --json "$work/perf.json" >/dev/null 2>&1
  perf_summary "$work/perf.json"
}

for round in $(seq "$rounds"); do
  for model in onnx_identity python_identity python_identity_x4; do
    sonic_perf "$model" 1 5000 | sed "s/^/$model 1 /" >>"$work/rows"
    sonic_perf "$model" 8 20000 | sed "s/^/$model 8 /" >>"$work/rows"
  done
done

PYTHONPATH="$repo/bench" "$python" - "$work/rows" "$rounds" <<'PY'
import sys
from rows import medians
med, rows = medians(sys.argv[1])
print(f"identity, FP32 [1,16] (64 B), grpc://; medians of {sys.argv[2]} interleaved rounds")
print(f"{'model':>20} {'in flight':>9} {'infer/s':>9} {'p50 us':>8} {'p99 us':>8}")
for (model, flight) in rows:
    print(f"{model:>20} {flight:>9} {med(model, flight, 'throughput'):>9.0f} "
          f"{med(model, flight, 'p50_us'):>8.1f} {med(model, flight, 'p99_us'):>8.1f}")
extra = med("python_identity", "1", "p50_us") - med("onnx_identity", "1", "p50_us")
print(f"\nthe Python backend adds {extra:.1f} us to a request's median latency (1 in flight)")
PY
