#!/usr/bin/env bash
# What a pipeline costs per request: sonic-perf, one request at a time, against one sonic-server
# serving an ONNX identity (64 B of FP32), a 3-step ensemble of that identity, and a
# Python-backend identity (when the server has the Python backend), in interleaved rounds. Prints
# the medians and each one's cost over the bare ONNX identity.
#
#   bench/pipelines.sh BUILD_DIR [ROUNDS=5]
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

# The Python model's stubs run under the interpreter that has numpy (Debian's, as the tests').
SONIC_PYTHON=${SONIC_PYTHON:-$python} start_server "$server" "$work/server.log" \
  --model-repository "$models"
served=(onnx_identity ensemble3)
grep -q "python_identity.*READY" "$work/server.log" && served+=(python_identity)

for round in $(seq "$rounds"); do
  for model in "${served[@]}"; do
    "$perf" --url "grpc://127.0.0.1:$port" --model "$model" --input "INPUT0=FP32:1,16:random" \
      --concurrency 1 --warmup 0.5 --window-requests 3000 --max-windows 1 \
      --json "$work/perf.json" >/dev/null 2>&1
    perf_summary "$work/perf.json" | sed "s/^/$model one /" >>"$work/rows"
  done
done

PYTHONPATH="$repo/bench" "$python" - "$work/rows" "$rounds" <<'PY'
import sys
from rows import medians
med, rows = medians(sys.argv[1])
print(f"64 B FP32 identity, one request at a time, grpc:// on sonic-server; medians of "
      f"{sys.argv[2]} interleaved rounds")
print(f"{'model':>16} {'infer/s':>9} {'p50 us':>9} {'p99 us':>9} {'over onnx_identity, p50 us':>27}")
for (model, size) in rows:
    over = med(model, size, "p50_us") - med("onnx_identity", size, "p50_us")
    print(f"{model:>16} {med(model, size, 'throughput'):>9.0f} {med(model, size, 'p50_us'):>9.1f} "
          f"{med(model, size, 'p99_us'):>9.1f} {over:>27.1f}")
PY
