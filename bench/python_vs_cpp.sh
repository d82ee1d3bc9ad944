#!/usr/bin/env bash
# sonic's Python package against sonic's C++ client and against Google's grpcio (Debian's
# python3-grpcio, asyncio; bench/peer_grpcio.py), on one sonic-server, identity_fp32 at 64 B,
# in interleaved rounds:
#   - Python's cost per request over C++ at 1 in flight: client.infer() in a loop against the
#     same blocking call in C++ (sonic-perf --sync), latency p50 and client CPU per request
#     (sonic-perf's default, async with the next request sent from the callback, is shown too);
#   - throughput at 16 in flight: each of sonic's Python APIs (bench/peer_sonic_python.py) and
#     grpcio's two (bench/peer_grpcio.py: asyncio, and futures on its blocking channel), each
#     compared with the same style of grpcio and with grpcio's faster one.
# Prints the medians of ROUNDS rounds and the ratios.
#
#   bench/python_vs_cpp.sh BUILD_DIR [ROUNDS=5]      (PYTHON=... to choose the interpreter)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS=5]}
rounds=${2:-5}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, $python, start_server, perf_summary, the cleanup
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
require_built "$server" "$perf"
[[ -f $build/python/sonic/__init__.py ]] || { echo "python_vs_cpp: $build/python has no sonic package" >&2; exit 2; }
"$python" -c "import grpc, grpc_tools, numpy" 2>/dev/null ||
  { echo "python_vs_cpp: needs python3-grpcio, python3-grpc-tools, python3-numpy (scripts/install-deps.sh)" >&2; exit 2; }

start_server "$server" "$work/server.log"
url=grpc://127.0.0.1:$port
requests=20000

sonic_perf() {  # CONCURRENCY [OPTIONS...]
  local concurrency=$1
  shift
  "$perf" --url "$url" --model identity_fp32 --input "INPUT0=FP32:1,16:random" \
    --concurrency "$concurrency" "$@" --warmup 0.5 --window-requests "$requests" --max-windows 1 \
    --json "$work/perf.json" >/dev/null 2>&1
  perf_summary "$work/perf.json"
}
python_client() {  # API CONCURRENCY
  PYTHONPATH=$build/python "$python" "$repo/bench/peer_sonic_python.py" --url "$url" --api "$1" \
    --concurrency "$2" --requests "$requests"
}

for round in $(seq "$rounds"); do
  sonic_perf 1 --sync | sed "s/^/c++-sync 1 /" >>"$work/rows"
  python_client sync 1 | sed "s/^/python-sync 1 /" >>"$work/rows"
  sonic_perf 1 | sed "s/^/c++-async 1 /" >>"$work/rows"
  sonic_perf 16 | sed "s/^/c++-async 16 /" >>"$work/rows"
  for api in future asyncio sync; do
    python_client "$api" 16 | sed "s/^/python-$api 16 /" >>"$work/rows"
  done
  for api in asyncio future; do
    "$python" "$repo/bench/peer_grpcio.py" --target "127.0.0.1:$port" --proto-dir "$repo/proto" \
      --gen-dir "$work/gen" --elements 16 --concurrency 16 --requests "$requests" --api "$api" |
      sed "s/^/grpcio-$api 16 /" >>"$work/rows"
  done
done

PYTHONPATH="$repo/bench" "$python" - "$work/rows" "$rounds" <<'PY'
import sys
from rows import medians
med, rows = medians(sys.argv[1])
rounds = sys.argv[2]
print(f"identity_fp32, 64 B, one sonic-server; medians of {rounds} interleaved rounds")
print(f"{'client':>15} {'inflight':>8} {'CPU us':>8} {'infer/s':>9} {'p50 us':>8} {'p99 us':>8}")
for who, n in rows:
    print(f"{who:>15} {n:>8} {med(who, n, 'client_cpu_us'):>8.1f} {med(who, n, 'throughput'):>9.0f}"
          f" {med(who, n, 'p50_us'):>8.1f} {med(who, n, 'p99_us'):>8.1f}")
print()
print(f"Python infer() over C++ infer() at 1 in flight: "
      f"p50 +{med('python-sync', '1', 'p50_us') - med('c++-sync', '1', 'p50_us'):.1f} us, client CPU "
      f"+{med('python-sync', '1', 'client_cpu_us') - med('c++-sync', '1', 'client_cpu_us'):.1f} us per request")
grpcio = {api: med("grpcio-" + api, "16", "throughput") for api in ("asyncio", "future")}
best = max(grpcio, key=grpcio.get)
for api in ("future", "asyncio", "sync"):
    ours = med("python-" + api, "16", "throughput")
    same = f", {ours / grpcio[api]:.2f}x grpcio {api}" if api in grpcio else ""
    print(f"Python {api:>7} at 16 in flight: {ours / grpcio[best]:.2f}x grpcio's faster API "
          f"({best}){same}")
PY
