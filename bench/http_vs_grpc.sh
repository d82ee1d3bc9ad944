#!/usr/bin/env bash
# http:// beside grpc://: sonic-perf against one sonic-server's gRPC and HTTP/REST ports, with
# 64 B and 4 MiB requests (identity_fp32), in interleaved rounds; and, one request at a time,
# Python's http.client (bench/http_client_peer.py) as an HTTP client sonic did not write. Prints
# the medians and http://'s ratios to grpc://.
#
#   bench/http_vs_grpc.sh BUILD_DIR [ROUNDS=3]
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS=3]}
rounds=${2:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, $python, start_server, perf_summary, the cleanup
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
require_built "$server" "$perf"
start_server "$server" "$work/server.log" --http-port 0
grpc_port=$port

sonic_perf() {  # URL ELEMENTS CONCURRENCY REQUESTS
  "$perf" --url "$1" --model identity_fp32 --input "INPUT0=FP32:1,$2:random" \
    --concurrency "$3" --warmup 0.5 --window-requests "$4" --max-windows 1 \
    --json "$work/perf.json" >/dev/null 2>&1
  perf_summary "$work/perf.json"
}

for round in $(seq "$rounds"); do
  for size in one small large; do
    case $size in
      one) args=(16 1 5000) ;;
      small) args=(16 16 20000) ;;
      large) args=(1048576 2 300) ;;
    esac
    sonic_perf "grpc://127.0.0.1:$grpc_port" "${args[@]}" | sed "s/^/grpc $size /" >>"$work/rows"
    sonic_perf "http://127.0.0.1:$http_port" "${args[@]}" | sed "s/^/http $size /" >>"$work/rows"
    if [[ $size == one ]]; then
      "$python" "$repo/bench/http_client_peer.py" "$http_port" 16 5000 |
        sed "s/^/http.client $size /" >>"$work/rows"
    fi
  done
done

PYTHONPATH="$repo/bench" "$python" - "$work/rows" "$rounds" <<'PY'
import sys
from rows import medians
med, rows = medians(sys.argv[1])
rounds = sys.argv[2]
print(f"identity_fp32 on sonic-server; one: 64 B, 1 in flight; small: 64 B at 16 in flight; "
      f"large: 4 MiB at 2 in flight; medians of {rounds} interleaved rounds")
print(f"{'client':>12} {'size':>6} {'CPU us':>9} {'infer/s':>9} {'MB/s':>8} {'p50 us':>9}")
for (client, size) in rows:
    mb = 4 << 20 if size == "large" else 64
    print(f"{client:>12} {size:>6} {med(client, size, 'client_cpu_us'):>9.1f} "
          f"{med(client, size, 'throughput'):>9.0f} "
          f"{med(client, size, 'throughput') * mb / 1e6:>8.0f} {med(client, size, 'p50_us'):>9.1f}")
print()
for size in ("one", "small", "large"):
    ratio = med("http", size, "throughput") / med("grpc", size, "throughput")
    cpu = med("http", size, "client_cpu_us") / med("grpc", size, "client_cpu_us")
    print(f"http / grpc, {size}: {ratio:.2f}x the throughput, {cpu:.2f}x the client CPU")
ratio = med("http", "one", "throughput") / med("http.client", "one", "throughput")
cpu = med("http", "one", "client_cpu_us") / med("http.client", "one", "client_cpu_us")
print(f"sonic http:// / Python http.client, one: {ratio:.2f}x the throughput, {cpu:.2f}x the "
      f"client CPU")
PY
