#!/usr/bin/env bash
# The client's instructions per request, counted by valgrind's callgrind (every thread of
# sonic-perf): deterministic where wall-clock CPU time on a shared 2-core VM is not, so that two
# builds compare to a fraction of a percent. Each figure is (instructions for N2 requests - for
# N1) / (N2 - N1), so that start-up and shutdown cancel. BASE's and NEW's sonic-perf run
# interleaved against one sonic-server (BASE's), over grpc://, tcp:// and http://, one and 16
# requests in flight, of a 64-byte FP32 tensor through identity_fp32.
#   bench/client_instructions.sh BASE_BUILD NEW_BUILD [ROUNDS]
# Prints "BUILD SCHEME c=C INSTRUCTIONS" per run. Needs valgrind (Debian's).
set -euo pipefail
base=$1 new=$2 rounds=${3:-2}
source "$(dirname "$0")/start_server.sh"
require_built "$base/tools/sonic-server" "$base/tools/sonic-perf" "$new/tools/sonic-perf"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
start_server "$base/tools/sonic-server" "$work/server.log" --tcp-port 0 --http-port 0
count() {  # PERF URL CONCURRENCY REQUESTS
  valgrind --tool=callgrind --cache-sim=no --callgrind-out-file="$work/cg.out" "$1" --url "$2" \
    --model identity_fp32 --input "INPUT0=FP32:1,16:random" --concurrency "$3" --warmup 0 \
    --window-requests "$4" --max-windows 1 --json "$work/perf.json" >/dev/null 2>"$work/vg.log"
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/vg.log"
}
for round in $(seq "$rounds"); do
  for url in "grpc://127.0.0.1:$port" "tcp://127.0.0.1:$tcp_port" "http://127.0.0.1:$http_port"; do
    for c in 1 16; do
      for build in base new; do
        dir=$base
        [[ $build == new ]] && dir=$new
        few=$(count "$dir/tools/sonic-perf" "$url" "$c" 2000)
        many=$(count "$dir/tools/sonic-perf" "$url" "$c" 12000)
        echo "$build ${url%%:*} c=$c $(((many - few) / 10000))"
      done
    done
  done
done
