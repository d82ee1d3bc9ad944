#!/usr/bin/env bash
# The benchmark suite: sonic against the loopback's raw TCP rate and CPU cost (iperf3, same run)
# and memcpy for the data path, payloads from 64 B to 64 MiB at 1, 4 and 16 requests in flight,
# with the client's and sonic-server's CPU per request; the client's instructions per request
# (callgrind) and resident memory over a million requests; small requests again with inline
# callbacks and --inline-models, with callbacks on a callback thread, and on one stream
# (--streaming). Results (JSON per point, and summary.txt) go to OUT_DIR: by default a new
# directory under BUILD_DIR/bench-results/, never the committed bench/results/ unless it is
# named. About four minutes on 2 cores.
#
#   bench/suite.sh BUILD_DIR [OUT_DIR]
#
# iperf3 and valgrind (Debian packages) are optional: without them those parts are not
# measured, and the summary says so instead of giving their figures.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/out_dir.sh"  # $build and $results
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
shm_bench=$build/bench/sonic-shm-bench
memory_bench=$build/bench/sonic-memory-bench
for program in "$server" "$perf" "$shm_bench" "$memory_bench"; do
  [[ -x $program ]] || { echo "suite: $program is not built" >&2; exit 2; }
done
mkdir -p "$results"
results=$(cd "$results" && pwd)
# A reused OUT_DIR keeps no link measurement of an earlier run: only this run's may be used.
rm -f "$results/iperf3.json"
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

# Sets link_unmeasured to why the loopback's rate and CPU cost were not measured (empty when
# they were, in $results/iperf3.json).
measure_link() {
  link_unmeasured=
  if ! command -v iperf3 >/dev/null; then
    link_unmeasured="iperf3 is not installed (apt-get install iperf3)"
    return
  fi
  local port=$((20000 + RANDOM % 20000)) measured=
  iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  iperf_pid=$!
  # The server listens a moment after it starts (longer on a busy machine): try a few times.
  for _ in $(seq 20); do
    sleep 0.2
    if iperf3 -c 127.0.0.1 -p "$port" -t 3 -J >"$results/iperf3.json" 2>/dev/null; then
      measured=1
      break
    fi
  done
  [[ -n $measured ]] || kill "$iperf_pid" 2>/dev/null || true  # -1: it ends after one test
  wait "$iperf_pid" 2>/dev/null || true
  iperf_pid=
  if [[ -z $measured ]]; then
    rm -f "$results/iperf3.json"
    link_unmeasured="iperf3 failed 20 times against its own server on 127.0.0.1:$port"
  fi
}

echo "== loopback TCP (iperf3, 3 s)"
measure_link
if [[ -z $link_unmeasured ]]; then
  gbps=$(python3 -c "import json; d=json.load(open('$results/iperf3.json')); print('%.2f' % (d['end']['sum_received']['bits_per_second']/1e9))")
  echo "iperf3 loopback: $gbps Gbit/s" | tee -a "$summary"
else
  echo "iperf3 loopback: not measured: $link_unmeasured" | tee -a "$summary"
fi

echo "== memcpy and shared memory vs gRPC (sonic-shm-bench)"
"$shm_bench" --repeats 3 --max-mib 64 | tee "$results/shm_vs_grpc.txt"
{ echo; echo "grpc vs grpc+shm vs memcpy (sonic-shm-bench):"; cat "$results/shm_vs_grpc.txt"; echo; } >>"$summary"

# Starts sonic-server with the given options; sets server_pid and grpc_port.
start_server() {
  "$server" --host 127.0.0.1 --port 0 "$@" >"$log" 2>&1 &
  server_pid=$!
  grpc_port=
  for _ in $(seq 100); do
    grpc_port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
    [[ -n $grpc_port ]] && break
    sleep 0.1
  done
  [[ -n $grpc_port ]] || { echo "suite: sonic-server did not start: $(cat "$log")" >&2; exit 1; }
}
stop_server() {
  kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
server_cpu() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
ticks=$(getconf CLK_TCK)

# One point of identity_fp32: BYTES ELEMENTS INFLIGHT JSON [sonic-perf options]; prints a row.
point() {
  local bytes=$1 elements=$2 inflight=$3 out=$4
  shift 4
  local before after
  before=$(server_cpu)
  "$perf" --url "${scheme:-grpc}://127.0.0.1:$grpc_port" --model identity_fp32 \
    --input "INPUT0=FP32:1,$elements:random" --concurrency "$inflight" --warmup 0.5 \
    --window 1 --max-windows 4 --json "$out" "$@" >/dev/null 2>&1
  after=$(server_cpu)
  python3 - "$out" "$before" "$after" "$ticks" "$bytes" "$inflight" <<'PY'
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
}
header() {
  printf "%-9s %-6s %10s %9s %9s %12s %12s %11s\n" payload inflight "infer/s" "p50 us" \
    "p99 us" "client us" "server us" "MB/s"
}

echo "== identity_fp32 over grpc://, default options"
start_server
header | tee -a "$summary"
for payload in 64:16 65536:16384 1048576:262144 4194304:1048576 67108864:16777216; do
  bytes=${payload%%:*} elements=${payload##*:}
  for inflight in 1 4 16; do
    point "$bytes" "$elements" "$inflight" "$results/perf-${bytes}B-c${inflight}.json" |
      tee -a "$summary"
  done
done

echo "== client instructions per small request (callgrind: 6000 minus 2000 requests)"
if command -v valgrind >/dev/null; then
  instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$memory_bench" \
      --url "grpc://127.0.0.1:$grpc_port" --requests "$1" --max-growth-kib 1000000 "${@:2}" 2>&1 |
      sed -n 's/.*Collected : //p'
  }
  for where in network pool inline; do
    few=$(instructions 2000 --callbacks "$where")
    many=$(instructions 6000 --callbacks "$where")
    echo "client instructions per 64 B request at 16 in flight (callbacks: $where):" \
      "$(((many - few) / 4000))" | tee -a "$summary"
  done
else
  echo "client instructions per request: not measured: valgrind is not installed" \
    "(apt-get install valgrind)" | tee -a "$summary"
fi

echo "== client memory over 1,000,000 requests (sonic-memory-bench)"
"$memory_bench" --url "grpc://127.0.0.1:$grpc_port" --requests 1000000 \
  >"$results/memory_growth.txt" || true
echo "client resident memory, 64 B requests at 16 in flight: $(tail -n 1 "$results/memory_growth.txt")" |
  tee -a "$summary"
stop_server

# 64 B at 1 and 16 in flight, sonic-perf given the extra options, under TITLE in the summary;
# one JSON per point as perf-64B-cN-NAME.json.
small_requests() {
  local title=$1 name=$2
  shift 2
  { echo; echo "$title:"; } >>"$summary"
  header | tee -a "$summary"
  for inflight in 1 16; do
    point 64 16 "$inflight" "$results/perf-64B-c${inflight}-$name.json" "$@" | tee -a "$summary"
  done
}

echo "== the lean configuration: inline callbacks, server --inline-models"
start_server --inline-models
small_requests "lean: client --callbacks inline, sonic-server --inline-models" lean \
  --callbacks inline
stop_server

echo "== small requests, callbacks on a callback thread (--callbacks pool, the former default)"
start_server
small_requests "client --callbacks pool" pool --callbacks pool
stop_server

echo "== small requests on one stream (sonic-perf --streaming, ModelStreamInfer)"
start_server
small_requests "one stream (ModelStreamInfer), default options" stream --streaming
stop_server

echo "== 4 MiB through shared memory (grpc+shm://): no payload through the kernel"
start_server
{ echo; echo "grpc+shm://, default options:"; } >>"$summary"
header | tee -a "$summary"
scheme=grpc+shm point 4194304 1048576 1 "$results/perf-4194304B-c1-shm.json" | tee -a "$summary"
stop_server

if [[ -z $link_unmeasured ]]; then
  # The kernel's CPU for moving bytes through loopback TCP, from iperf3's own accounting: what
  # any client pays to send 4 MiB and receive 4 MiB back, whatever it does in user space.
  python3 - "$results/iperf3.json" <<'PY' | tee -a "$summary"
import json, sys
end = json.load(open(sys.argv[1]))["end"]
cpu = end["cpu_utilization_percent"]
sent, received = end["sum_sent"], end["sum_received"]
send_s_per_byte = cpu["host_total"] / 100 * sent["seconds"] / sent["bytes"]
receive_s_per_byte = cpu["remote_total"] / 100 * received["seconds"] / received["bytes"]
size = 4 << 20
print()
print("iperf3 floor for a 4 MiB round trip: %.2f ms of wire time (2 x 4 MiB at its rate), "
      "%.2f ms of CPU (sending %.2f + receiving %.2f)" % (
          2 * size * 8 / received["bits_per_second"] * 1e3,
          size * (send_s_per_byte + receive_s_per_byte) * 1e3,
          size * send_s_per_byte * 1e3, size * receive_s_per_byte * 1e3))
PY
else
  { echo; echo "iperf3 floor for a 4 MiB round trip: not measured: $link_unmeasured;" \
      "nothing in this run compares sonic with the loopback's own rate and CPU cost"; } |
    tee -a "$summary"
fi
echo "results in $results/"
