#!/usr/bin/env bash
# sonic-server over a Triton model repository, as a user runs it: the model table it prints,
# answers equal to torch's (sonic-infer with the reference .npy inputs, outputs compared with
# numpy), the three model control modes, and the command-line mistakes.
#   test_sonic_server_repository.sh SONIC_SERVER SONIC_INFER MODELS_DIR PYTHON
set -euo pipefail
server=$1 infer=$2 models=$3 python=$4
source "$(dirname "$0")/serve.sh"

# Every output of sonic-infer --save-dir DIR matches the reference within 1e-5.
same_as_reference() {
  local model=$1 dir=$2
  "$python" - "$models/reference/$model" "$dir" <<'PY' || fail "$model: outputs differ from torch's"
import os, sys
import numpy as np
reference, saved = sys.argv[1], sys.argv[2]
names = os.listdir(saved)
assert names, "no outputs saved"
for name in names:
    got, want = np.load(os.path.join(saved, name)), np.load(os.path.join(reference, name))
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert np.max(np.abs(got - want)) <= 1e-5, (name, np.max(np.abs(got - want)))
PY
}

# --- none (the default): every model loads at start; a broken one is reported, not fatal ---
broken=$(mktemp -d)
served_works+=("$broken")  # removed with the servers' directories
mkdir -p "$broken/broken_onnx/1"
echo "not an ONNX file" >"$broken/broken_onnx/1/model.onnx"
serve "$server" --model-repository "$models/repository" --model-repository "$broken"
grep -q "^model jet_mlp_onnx: READY (version 1)$" "$work/server.log" || fail "table: $(cat "$work/server.log")"
grep -q "^model edgeconv_torch: READY (version 1)$" "$work/server.log" || fail "torch model not ready"
grep -q "^model broken_onnx: UNAVAILABLE: .*ONNX Runtime cannot load" "$work/server.log" ||
  fail "broken model not reported: $(cat "$work/server.log")"
url=grpc://127.0.0.1:$port
"$infer" --url "$url" --save-dir "$work/mlp" jet_mlp_onnx \
  features=@"$models/reference/jet_mlp_onnx/features.npy" >/dev/null
same_as_reference jet_mlp_onnx "$work/mlp"
"$infer" --url "$url" --save-dir "$work/cnn" emtrk_cnn_torch \
  INPUT__0=@"$models/reference/emtrk_cnn_torch/INPUT__0.npy" >/dev/null
same_as_reference emtrk_cnn_torch "$work/cnn"
out=$("$infer" --url "$url" --list)
grep -q "^  broken_onnx  UNAVAILABLE (.*ONNX Runtime cannot load" <<<"$out" || fail "--list shows why: $out"
stop_server

# --- explicit: only --load-model models load ---
serve "$server" --model-repository "$models/repository" --model-control-mode explicit \
  --load-model jet_mlp_torch
out=$("$infer" --url "grpc://127.0.0.1:$port" --list)
grep -q "^  jet_mlp_torch v1  READY$" <<<"$out" || fail "explicit: loaded model: $out"
grep -q "^  jet_mlp_onnx  UNAVAILABLE (unloaded)$" <<<"$out" || fail "explicit: others: $out"
stop_server

# --- poll: models added to and removed from the repository are loaded and unloaded ---
repo=$(mktemp -d)
cp -r "$models/repository/jet_mlp_onnx" "$repo/"
serve "$server" --model-repository "$repo" --model-control-mode poll --repository-poll-secs 1
cp -r "$models/repository/jet_mlp_torch" "$repo/"
for _ in $(seq 100); do
  grep -q "^model jet_mlp_torch: READY" "$work/server.log" && break
  sleep 0.1
done
grep -q "^model jet_mlp_torch: READY" "$work/server.log" || fail "poll: added model: $(cat "$work/server.log")"
rm -rf "$repo/jet_mlp_onnx"
for _ in $(seq 100); do
  grep -q "^model jet_mlp_onnx: unloaded" "$work/server.log" && break
  sleep 0.1
done
grep -q "^model jet_mlp_onnx: unloaded" "$work/server.log" || fail "poll: removed model"
stop_server
rm -rf "$repo"

# --- mistakes ---
set +e
err=$("$server" --port 0 --model-repository "$models/repository" --load-model jet_mlp_onnx 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "needs --model-control-mode explicit" <<<"$err" ||
  fail "--load-model without explicit: rc=$rc $err"
echo "sonic-server repository: OK"
