#!/usr/bin/env bash
# The model engine against ONNX Runtime, one thread, batch 1 and 256, in interleaved rounds
# (medians over ROUNDS):
#   - each field-shaped network (examples/models/field_models.py, ONNX at opset 13), the BDT and
#     the EmTrkMichelId CNN through sonic's fallback and sonic-server (its compute time), next to
#     ONNX Runtime's own Run on the same file, in the same process (sonic-engine-bench; also
#     each run after a kernel entry, after 8 MiB of other memory traffic, and after both, as a
#     server's thread finds the machine between requests; and sonic-server with
#     --inline-models, whose network thread runs the model), and to ONNX Runtime from Node
#     (npm's onnxruntime-node: the independent peer);
#   - the same networks as TorchScript, with libtorch on OpenBLAS (install-deps' default) and on
#     Debian's reference BLAS (what libtorch-dev uses without an optimized one).
#
#   bench/model_engine.sh BUILD_DIR [ROUNDS=3]
#
# The Node peer needs npm (the machine's, or Debian's npm package); without it that column is
# left out. Prints a table; the raw rows are kept in BUILD_DIR/bench-results/.
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS=3]}
rounds=${2:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=$build/bench/sonic-engine-bench
models=$build/models/repository
[[ -x $bench ]] || { echo "model_engine.sh: $bench is not built" >&2; exit 2; }
[[ -d $models ]] || { echo "model_engine.sh: $models is missing (build the tests' models)" >&2; exit 2; }

networks=(particlenet part deeptau deepjet deepmet gravnet)
onnx_jobs=() torch_jobs=()
for batch in 1 256; do
  for n in "${networks[@]}"; do
    onnx_jobs+=("${n}_onnx13:$batch")
    torch_jobs+=("${n}_torch:$batch")
  done
  onnx_jobs+=("bdt_onnx:$batch" "emtrk_cnn_onnx:$batch")
  torch_jobs+=("emtrk_cnn_torch:$batch")
done

# The generated models batch up to 64: copies that take 256.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for job in "${onnx_jobs[@]}" "${torch_jobs[@]}"; do
  model=${job%:*}
  [[ -d $work/$model ]] && continue
  cp -r "$models/$model" "$work/$model"
  sed -i 's/^max_batch_size: .*/max_batch_size: 256/' "$work/$model/config.pbtxt"
done
models=$work

node_modules=
if command -v npm >/dev/null && command -v node >/dev/null; then
  node_modules=$work/node
  mkdir -p "$node_modules"
  (cd "$node_modules" && npm install --ignore-scripts --no-audit --no-fund --silent \
    onnxruntime-node@1.30.0 >/dev/null) || node_modules=
fi
[[ -n $node_modules ]] || echo "model_engine.sh: no npm: the Node peer is left out" >&2

reference_blas=/usr/lib/$(gcc -print-multiarch)/blas
mkdir -p "$build/bench-results"
rows=$build/bench-results/model_engine-$(date -u +%Y%m%dT%H%M%SZ).jsonl
: >"$rows"
for round in $(seq "$rounds"); do
  echo "round $round of $rounds" >&2
  "$bench" "$models" 1 "${onnx_jobs[@]}" "${torch_jobs[@]}" >>"$rows"
  if [[ -n $node_modules ]]; then
    NODE_PATH=$node_modules/node_modules node "$repo/bench/ort_node.js" "$models" \
      "${onnx_jobs[@]}" >>"$rows"
  fi
  # The same TorchScript models with the reference BLAS ahead of the alternatives' choice.
  LD_LIBRARY_PATH=$reference_blas "$bench" "$models" 1 "${torch_jobs[@]}" |
    sed 's/"path": "\([a-z_]*\)"/"path": "\1_reference_blas"/' >>"$rows"
done

python3 - "$rows" <<'PY'
import json, statistics, sys
from collections import defaultdict
values = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    values[(r["model"], r["batch"], r["path"])].append(r["us"])
m = {k: statistics.median(v) for k, v in values.items()}
print("ONNX: microseconds per call, one thread; ratios to ONNX Runtime's own Run (same library);")
print("srv/served: the server's compute time to ONNX Runtime's own Run after a kernel entry and")
print("8 MiB of memory traffic, the state a server's thread runs the model in")
print(f"{'model':20} {'batch':>5} {'ort':>9} {'ort kern':>9} {'ort cold':>9} {'ort srvd':>9}"
      f" {'fallback':>9} {'server':>9} {'srv inl':>9} {'node':>9} {'fb/ort':>7} {'srv/ort':>7}"
      f" {'inl/ort':>7} {'srv/srvd':>8} {'node/ort':>8}")
for (model, batch, path), ort in sorted(m.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    if path != "ort":
        continue
    kernel, cold, served, fb, srv, inl, node = (
        m.get((model, batch, p)) for p in ("ort_kernel", "ort_cold", "ort_served", "fallback",
                                           "server", "server_inline", "ort_node"))
    ratio = lambda x, base=ort: f"{x / base:7.2f}" if x else "      -"
    print(f"{model:20} {batch:5} {ort:9.1f} {kernel:9.1f} {cold:9.1f} {served:9.1f} {fb:9.1f}"
          f" {srv:9.1f} {inl:9.1f} {node if node else 0:9.1f} {ratio(fb)} {ratio(srv)}"
          f" {ratio(inl)} {ratio(srv, served):>8} {ratio(node):>8}")
print()
print("TorchScript (fallback): OpenBLAS, Debian's reference BLAS, and ONNX Runtime on the ONNX file")
print(f"{'model':20} {'batch':>5} {'openblas':>10} {'ref BLAS':>10} {'ort':>10}"
      f" {'ref/open':>8} {'open/ort':>8}")
for (model, batch, path), fast in sorted(m.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    if path != "fallback" or not model.endswith("_torch"):
        continue
    slow = m.get((model, batch, "fallback_reference_blas"))
    base = model[: -len("_torch")]
    ort = m.get((base + "_onnx13", batch, "ort")) or m.get((base + "_onnx", batch, "ort"))
    print(f"{model:20} {batch:5} {fast:10.1f} {slow:10.1f} {ort:10.1f} {slow / fast:8.2f}"
          f" {fast / ort:8.2f}")
PY
