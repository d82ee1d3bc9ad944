#!/usr/bin/env bash
# Overload without collapse: goodput against offered load past a server's capacity
# (sonic-overload-bench, whose header says what each figure is). One sonic-server on loopback
# serves a Python model with a fixed service time (20 ms, two instances) and an ONNX model that
# computes (sixteen 1024 x 1024 layers, one instance, one thread). For each, the bench measures
# the server's capacity in the same run, then offers 1, 2, 4 and 8 times it, open loop, each
# request with a deadline of 100 to 500 ms, through one client with the default options, in
# ROUNDS rounds, and prints the medians. Then the Python model again with the client's fallback
# configured (the same model in-process, FALLBACK_THREADS threads: what a grid job is given;
# the loads are then multiples of both capacities together), and with the server's early
# refusal off (--shed-early false), to compare.
# Writes overload.txt, overload.svg and overload.png (the goodput plot; PNG through
# rsvg-convert, from Debian's librsvg2-bin) into OUT_DIR: by default a new directory under
# BUILD_DIR/bench-results/.
#
#   bench/overload.sh BUILD_DIR [OUT_DIR]
#   (environment: ROUNDS=3, LOAD_SECONDS=6 per load, FALLBACK_THREADS=1)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/out_dir.sh"  # $build and $results
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, $python, start_server, require_built, the cleanup
server=$build/tools/sonic-server
bench=$build/bench/sonic-overload-bench
require_built "$server" "$bench"
rounds=${ROUNDS:-3}
seconds=${LOAD_SECONDS:-6}
fallback_threads=${FALLBACK_THREADS:-1}
mkdir -p "$results"
results=$(cd "$results" && pwd)
rm -f "$results/overload.tsv"

models=$work/models
"$python" "$repo/bench/overload_models.py" "$models"
# The Python models' stubs (the server's and the fallback's) run under the interpreter that has
# numpy; the one PATH finds may not.
export SONIC_PYTHON=${SONIC_PYTHON:-$python}
machine="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"

run() {  # LABEL SERVER_OPTIONS BENCH_OPTIONS...
  local label=$1 server_options=$2
  shift 2
  # shellcheck disable=SC2086  # the server's options are words
  start_server "$server" "$work/server.log" --model-repository "$models" $server_options
  echo "== $label"
  "$bench" --url "grpc://127.0.0.1:$port" --rounds "$rounds" --seconds "$seconds" \
    --deadline-ms 100:500 --label "$label" --plot "$results/overload.svg" \
    --plot-data "$results/overload.tsv" "$@"
  kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
  echo
}

unloaded() {  # SHED (true or false): the unloaded p50 of onnx_mlp
  start_server "$server" "$work/server.log" --model-repository "$models" --shed-early "$1"
  "$bench" --url "grpc://127.0.0.1:$port" --model onnx_mlp --shape 16,1024 --unloaded-only \
    --label "--shed-early $1:"
  kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
}

{
  echo "sonic-overload-bench, $(date -u +%Y-%m-%d), $machine"
  echo
  echo "== what the early refusal costs an unloaded server: onnx_mlp, one request at a time"
  for _ in $(seq "$rounds"); do
    unloaded true
    unloaded false
  done
  echo
  run "python 20 ms" "" --model python_20ms --shape 16
  run "onnx mlp" "" --model onnx_mlp --shape 16,1024
  run "python 20 ms, fallback" "" --model python_20ms --shape 16 \
    --fallback-repository "$models" --fallback-threads "$fallback_threads"
  run "python 20 ms, --shed-early false" "--shed-early false" --model python_20ms --shape 16
} | tee "$results/overload.txt"

if command -v rsvg-convert >/dev/null; then
  rsvg-convert -b white -o "$results/overload.png" "$results/overload.svg"
else
  echo "overload: rsvg-convert (Debian's librsvg2-bin) is missing: no PNG, the SVG is there" >&2
fi
echo "results in $results/"
