#!/usr/bin/env bash
# What a pipeline costs per request: sonic-perf, one request at a time, against one sonic-server
# serving an ONNX identity (64 B of FP32), a 3-step ensemble of that identity, and a
# Python-backend identity (when the server has the Python backend), in interleaved rounds. Prints
# the medians and each one's cost over the bare model.
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
"$python" - "$models" <<'PY'
import os, sys
import onnx
from onnx import TensorProto, helper
root = sys.argv[1]
def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
tensor = 'name: "{}" data_type: TYPE_FP32 dims: [ 16 ]'
x = helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ("batch", 16))
y = helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ("batch", 16))
graph = helper.make_graph([helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])], "id", [x], [y])
os.makedirs(f"{root}/bare/1")
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          f"{root}/bare/1/model.onnx")
io = f"input [{{ {tensor.format('INPUT0')} }}]\noutput [{{ {tensor.format('OUTPUT0')} }}]\n"
write(f"{root}/bare/config.pbtxt", f'backend: "onnxruntime"\nmax_batch_size: 8\n{io}')
steps = "".join(
    f'step [{{ model_name: "bare" model_version: -1 input_map {{ key: "INPUT0" value: "{a}" }} '
    f'output_map {{ key: "OUTPUT0" value: "{b}" }} }}]\n'
    for a, b in (("INPUT0", "t1"), ("t1", "t2"), ("t2", "OUTPUT0")))
os.makedirs(f"{root}/ensemble3/1")
write(f"{root}/ensemble3/config.pbtxt", f'platform: "ensemble"\nmax_batch_size: 8\n{io}'
      f"ensemble_scheduling {{\n{steps}}}\n")
write(f"{root}/python_identity/config.pbtxt", f'backend: "python"\nmax_batch_size: 8\n{io}')
write(f"{root}/python_identity/1/model.py", '''import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
''')
PY

# The Python model's stubs run under the interpreter that has numpy (Debian's, as the tests').
SONIC_PYTHON=${SONIC_PYTHON:-$python} start_server "$server" "$work/server.log" \
  --model-repository "$models"
served=(bare ensemble3)
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
print(f"{'model':>16} {'infer/s':>9} {'p50 us':>9} {'p99 us':>9} {'over bare, p50 us':>18}")
for (model, size) in rows:
    over = med(model, size, "p50_us") - med("bare", size, "p50_us")
    print(f"{model:>16} {med(model, size, 'throughput'):>9.0f} {med(model, size, 'p50_us'):>9.1f} "
          f"{med(model, size, 'p99_us'):>9.1f} {over:>18.1f}")
PY
