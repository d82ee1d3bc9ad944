#!/usr/bin/env bash
# Many small requests with and without client-side batching (ClientOptions::batching), measured
# with sonic-perf against sonic-server: on loopback, then across a 1 Gbit link to a server in a
# network namespace (bench/limited_link.sh; skipped without root). Each round runs both modes
# back to back; the medians over the rounds, and their ratio, are printed.
#
#   bench/client_batching.sh BUILD_DIR [ROUNDS (3)] [CONCURRENCY (64)] [BATCH (32)]
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS] [CONCURRENCY] [BATCH]}
rounds=${2:-3}
concurrency=${3:-64}
batch=${4:-32}
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
for program in "$server" "$perf"; do
  [[ -x $program ]] || { echo "client_batching: $program is not built" >&2; exit 2; }
done
here=$(dirname "$0")
source "$here/start_server.sh"
source "$here/limited_link.sh"

# One sonic-perf point: "throughput p50_us client_cpu_us" of a 16-float request.
measure() {
  local url=$1
  shift
  "$perf" --url "$url" --model identity_fp32 --input INPUT0=FP32:1,16:random \
    --concurrency "$concurrency" --warmup 1 --window 2 --csv "$work/point.csv" "$@" \
    >/dev/null 2>"$work/perf.log" || { cat "$work/perf.log" >&2; exit 1; }
  awk -F, 'NR == 2 { print $7, $8, $12 }' "$work/point.csv"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Runs the rounds against one URL and prints the medians of both modes and their ratios.
compare() {
  local url=$1
  : >"$work/off" ; : >"$work/on"
  for _ in $(seq "$rounds"); do
    measure "$url" >>"$work/off"
    measure "$url" --client-batch "$batch" --batch-delay 200 >>"$work/on"
  done
  local column name off on
  printf '%-22s %14s %14s %8s\n' "" "one by one" "batched ($batch)" "ratio"
  for column in 1 2 3; do
    name=$(echo "infer/s p50_us client_cpu_us/request" | cut -d' ' -f"$column")
    off=$(cut -d' ' -f"$column" "$work/off" | median)
    on=$(cut -d' ' -f"$column" "$work/on" | median)
    printf '%-22s %14.1f %14.1f %8.2f\n' "$name" "$off" "$on" "$(awk -v a="$on" -v b="$off" 'BEGIN { print (b > 0 ? a / b : 0) }')"
  done
}

loopback_then_link "loopback: identity_fp32, 64 B requests, $concurrency in flight, medians of $rounds rounds, $(nproc) cores" compare
