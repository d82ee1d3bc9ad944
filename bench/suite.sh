#!/usr/bin/env bash
# The benchmark suite: sonic against the loopback's raw TCP rate (iperf3, same run) and memcpy
# for the data path, payloads from 64 B to 64 MiB at 1, 4 and 16 requests in flight, with the
# client's and sonic-server's CPU per request. Results go to bench/results/ (JSON per point, and
# summary.txt); a few minutes on 2 cores.
#
#   bench/suite.sh BUILD_DIR
#
# iperf3 (Debian package iperf3) is optional: without it that comparison is skipped, said so.
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
results=$repo/bench/results
server=$build/examples/sonic-server
perf=$build/examples/sonic-perf
shm_bench=$build/bench/sonic-shm-bench
for program in "$server" "$perf" "$shm_bench"; do
  [[ -x $program ]] || { echo "suite: $program is not built" >&2; exit 2; }
done
mkdir -p "$results"
summary=$results/summary.txt
log=$(mktemp)
cleanup() {
  [[ -n ${server_pid:-} ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  [[ -n ${iperf_pid:-} ]] && kill "$iperf_pid" 2>/dev/null
  rm -f "$log"
}
trap cleanup EXIT

{
  echo "sonic benchmark suite, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
       "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
  echo
} >"$summary"

echo "== loopback TCP (iperf3, 3 s)"
if command -v iperf3 >/dev/null; then
  port=$((20000 + RANDOM % 20000))
  iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  iperf_pid=$!
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -t 3 -J >"$results/iperf3.json"
  wait "$iperf_pid" 2>/dev/null || true
  iperf_pid=
  gbps=$(python3 -c "import json; d=json.load(open('$results/iperf3.json')); print('%.2f' % (d['end']['sum_received']['bits_per_second']/1e9))")
  echo "iperf3 loopback: $gbps Gbit/s" | tee -a "$summary"
else
  echo "iperf3 loopback: skipped (apt-get install iperf3)" | tee -a "$summary"
fi

echo "== memcpy and shared memory vs gRPC (sonic-shm-bench)"
"$shm_bench" --repeats 3 --max-mib 64 | tee "$results/shm_vs_grpc.txt"
{ echo; echo "grpc vs grpc+shm vs memcpy (sonic-shm-bench):"; cat "$results/shm_vs_grpc.txt"; echo; } >>"$summary"

"$server" --host 127.0.0.1 --port 0 >"$log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  grpc_port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
  [[ -n $grpc_port ]] && break
  sleep 0.1
done
server_cpu() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
ticks=$(getconf CLK_TCK)

printf "%-9s %-6s %10s %9s %9s %12s %12s %11s\n" payload inflight "infer/s" "p50 us" "p99 us" \
  "client us" "server us" "MB/s" | tee -a "$summary"
for payload in 64:16 65536:16384 1048576:262144 4194304:1048576 67108864:16777216; do
  bytes=${payload%%:*} elements=${payload##*:}
  for inflight in 1 4 16; do
    out=$results/perf-${bytes}B-c${inflight}.json
    before=$(server_cpu)
    "$perf" --url "grpc://127.0.0.1:$grpc_port" --model identity_fp32 \
      --input "INPUT0:FP32:1,$elements:random" --concurrency "$inflight" --warmup 0.5 \
      --window 1 --max-windows 4 --json "$out" >/dev/null 2>&1
    after=$(server_cpu)
    python3 - "$out" "$before" "$after" "$ticks" "$bytes" "$inflight" <<'PY' | tee -a "$summary"
import json, sys
path, before, after, ticks, size, inflight = sys.argv[1:]
point = json.load(open(path))["points"][0]
# The server's CPU over the whole point, per request it served (warm-up included).
requests = max(1, point.get("all_requests", point["requests"]))
server_us = (float(after) - float(before)) / float(ticks) / requests * 1e6
label = {"64": "64 B", "65536": "64 KiB", "1048576": "1 MiB", "4194304": "4 MiB",
         "67108864": "64 MiB"}[size]
print("%-9s %-6s %10.1f %9.0f %9.0f %12.1f %12.1f %11.1f" % (
    label, inflight, point["throughput"], point["p50_us"], point["p99_us"],
    point["client_cpu_us"], server_us, point["throughput"] * int(size) / 1e6))
PY
  done
done
echo "results in $results/"
