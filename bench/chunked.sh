#!/usr/bin/env bash
# One ProtoDUNE-like event (ROWS 48x48 patches, 8000 by default) through the EmTrkMichelId-shaped
# CNN: sent whole, and as chunks of several sizes with 1, 2 or 4 in flight (Client::infer_chunked,
# sonic-chunk-bench), against a sonic-server whose copy of the model takes batches up to 16384
# on two instances (one per core). On loopback, then across a 1 Gbit link to a server in a
# network namespace (bench/limited_link.sh; skipped without root). Medians of ROUNDS rounds.
#
#   bench/chunked.sh BUILD_DIR [ROUNDS (3)] [ROWS (8000)]
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS] [ROWS]}
rounds=${2:-3}
rows=${3:-8000}
server=$build/tools/sonic-server
bench=$build/bench/sonic-chunk-bench
model=$build/models/repository/emtrk_cnn_onnx
for program in "$server" "$bench"; do
  [[ -x $program ]] || { echo "chunked: $program is not built" >&2; exit 2; }
done
[[ -f $model/1/model.onnx ]] || { echo "chunked: $model is missing (build the tests' models)" >&2; exit 2; }
here=$(dirname "$0")
source "$here/start_server.sh"
source "$here/limited_link.sh"

mkdir -p "$work/repository/emtrk_cnn_onnx/1"
cp "$model/1/model.onnx" "$work/repository/emtrk_cnn_onnx/1/"
{ sed 's/^max_batch_size: .*/max_batch_size: 16384/' "$model/config.pbtxt"
  echo 'instance_group { count: 2 kind: KIND_CPU }'; } >"$work/repository/emtrk_cnn_onnx/config.pbtxt"

run() {
  "$bench" --url "$1" --rows "$rows" --chunks 64,512,2048 --in-flight 1,2,4 --whole \
    --rounds "$rounds"
}

loopback_then_link "loopback, $(nproc) cores" run --model-repository "$work/repository"
