#!/usr/bin/env bash
# Before and after: requests of identity_fp32 over grpc:// (64 B unless told; the default client
# and server) against two builds, interleaved round by round so that both see the same stretch of a
# noisy machine. Each build's client talks to its own sonic-server. Prints the median of ROUNDS
# runs of 20,000 requests per point, and B/A, then the interquartile range of B/A over the
# rounds (a range that holds 1.00 is within the machine's noise).
#
#   bench/compare.sh BUILD_A BUILD_B [ROUNDS=7]
#
# With SERVER_BUILD=DIR in the environment, both clients talk to that build's sonic-server:
# the ratios are then the clients' alone. With CLIENT_BUILD=DIR, both servers are driven by that
# build's sonic-perf: the ratios are the servers' alone. ELEMENTS=N sends N floats per request
# (default 16: 64 B; 16384: 64 KiB). SERVER_ARGS_A and SERVER_ARGS_B are options for that side's
# sonic-server: with the same build twice, they compare two settings of one server. SCHEME=http
# (or tcp) measures that port of the server instead of gRPC's.
#
# A build directory of an older layout (programs under examples/) works too.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 BUILD_A BUILD_B [ROUNDS=7]" >&2
  exit 2
fi
rounds=${3:-7}
concurrencies=(1 4 16)
elements=${ELEMENTS:-16}
scheme=${SCHEME:-grpc}
case $scheme in
  grpc) port_args=() ;;
  http) port_args=(--http-port 0) ;;
  tcp) port_args=(--tcp-port 0) ;;
  *) echo "compare: SCHEME is grpc, http or tcp" >&2; exit 2 ;;
esac

program() {  # BUILD NAME: the program's path in either layout
  local dir
  for dir in tools examples; do
    [[ -x $1/$dir/$2 ]] && { echo "$1/$dir/$2"; return; }
  done
  echo "compare: no $2 in $1" >&2
  exit 2
}

source "$(dirname "${BASH_SOURCE[0]}")/start_server.sh"  # $work, start_server, the cleanup
ticks=$(getconf CLK_TCK)

# One run: BUILD LABEL ROUND. Appends "label concurrency infer/s client_us server_us" lines.
run() {
  local build=$1 label=$2 round=$3 c before after
  local args_name="SERVER_ARGS_$label"
  # shellcheck disable=SC2086  # the options are words
  start_server "$(program "${SERVER_BUILD:-$build}" sonic-server)" "$work/server.log" \
    "${port_args[@]}" ${!args_name:-}
  local url_port=$port
  [[ $scheme == http ]] && url_port=$http_port
  [[ $scheme == tcp ]] && url_port=$tcp_port
  for c in "${concurrencies[@]}"; do
    before=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
    "$(program "${CLIENT_BUILD:-$build}" sonic-perf)" --url "$scheme://127.0.0.1:$url_port" \
      --model identity_fp32 --input "INPUT0=FP32:1,$elements:random" --concurrency "$c" --warmup 0.5 \
      --window-requests 20000 --max-windows 1 --json "$work/$label-$c-$round.json" \
      >/dev/null 2>&1
    after=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")
    python3 - "$work/$label-$c-$round.json" "$before" "$after" "$ticks" "$label" "$c" \
      >>"$work/rows" <<'PY'
import json, sys
path, before, after, ticks, label, c = sys.argv[1:]
p = json.load(open(path))["points"][0]
server_us = (int(after) - int(before)) / int(ticks) * 1e6 / p["all_requests"]
print(label, c, p["throughput"], p["client_cpu_us"], server_us)
PY
  done
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

for round in $(seq "$rounds"); do
  run "$1" A "$round"
  run "$2" B "$round"
done

python3 - "$work/rows" "$1" "$2" "$rounds" <<'PY'
import os, statistics, sys
path, a, b, rounds = sys.argv[1:]
rows = {}
for line in open(path):
    label, c, *values = line.split()
    rows.setdefault((label, int(c)), []).append([float(v) for v in values])
server, client = os.environ.get("SERVER_BUILD"), os.environ.get("CLIENT_BUILD")
size = 4 * int(os.environ.get("ELEMENTS", "16"))
print(f"A = {a} {os.environ.get('SERVER_ARGS_A', '')}\nB = {b} {os.environ.get('SERVER_ARGS_B', '')}\n{size} B identity_fp32 over {os.environ.get('SCHEME', 'grpc')}://, medians of {rounds} interleaved runs")
if server:
    print(f"both against the sonic-server of {server}")
if client:
    print(f"both driven by the sonic-perf of {client}")
print(f"{'inflight':>8} {'infer/s A':>10} {'B':>10} {'B/A':>6} {'client us A':>12} {'B':>7} "
      f"{'B/A':>6} {'server us A':>12} {'B':>7} {'B/A':>6}")
for c in sorted({c for _, c in rows}):
    med = {l: [statistics.median(col) for col in zip(*rows[(l, c)])] for l in "AB"}
    ratio = [med["B"][i] / med["A"][i] for i in range(3)]
    print(f"{c:>8} {med['A'][0]:>10.0f} {med['B'][0]:>10.0f} {ratio[0]:>6.2f} "
          f"{med['A'][1]:>12.1f} {med['B'][1]:>7.1f} {ratio[1]:>6.2f} "
          f"{med['A'][2]:>12.1f} {med['B'][2]:>7.1f} {ratio[2]:>6.2f}")

# The noise: B/A of each round's pair (run one after the other), as the interquartile range.
# A range that holds 1.00 is a difference the machine's noise can make.
def quartiles(values):
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return q[0], q[2]
print(f"B/A per round, interquartile range: {'infer/s':>15} {'client us':>15} {'server us':>15}")
for c in sorted({c for _, c in rows}):
    pairs = list(zip(rows[("A", c)], rows[("B", c)]))
    cells = []
    for i in range(3):
        low, high = quartiles([b[i] / a[i] for a, b in pairs if a[i] > 0])
        cells.append(f"{low:.2f}-{high:.2f}")
    print(f"{c:>8} {'':>34} {cells[0]:>15} {cells[1]:>15} {cells[2]:>15}")
PY
