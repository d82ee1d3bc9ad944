#!/usr/bin/env bash
# sonic's client against an independent one on the same sonic-server, in one interleaved run:
# Google's grpcio (Debian's python3-grpcio, its asyncio client; bench/peer_grpcio.py) and
# sonic-perf with default options, identity_fp32 at 64 B (1, 16, 64 in flight) and 4 MiB (1, 4
# in flight), and the kernel's floor for the same bytes (sonic-tcp-floor: a raw TCP ping-pong,
# one in flight). Prints the medians of ROUNDS rounds: client CPU per request, throughput, p50
# and p99, and sonic's ratios to grpcio and to the floor.
#
# With SYNC=1, the blocking call instead: sonic's Client::infer (sonic-perf --sync, the default:
# the calling thread drives a connection of its own) against grpcio's synchronous stub call
# (gRPC core drives the call on the calling thread, as Triton's C++ client does), one call at a
# time, 64 B and 4 MiB; and, as "shared", sonic's blocking call through the shared connection
# and its network thread (--sync-shared: drive_blocking_calls off).
#
#   bench/vs_grpcio.sh BUILD_DIR [ROUNDS=3]        (PYTHON=... to choose the interpreter)
#   SYNC=1 bench/vs_grpcio.sh BUILD_DIR [ROUNDS=3]
#
# grpcio is a Python client: its CPU per request includes the interpreter. It is the
# independent gRPC client every machine can install; Triton's C++ client is not a Debian package.
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS=3]}
rounds=${2:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, $python, start_server, the cleanup
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
floor=$build/bench/sonic-tcp-floor
require_built "$server" "$perf" "$floor"
"$python" -c "import grpc, grpc_tools" 2>/dev/null ||
  { echo "vs_grpcio: needs python3-grpcio and python3-grpc-tools (scripts/install-deps.sh)" >&2; exit 2; }

start_server "$server" "$work/server.log"

# POINT: elements:concurrency:requests. The floor moves the request's wire bytes each way.
points=(16:1:20000 16:16:20000 16:64:20000 1048576:1:200 1048576:4:200)
sonic_api=() grpcio_api=(--api asyncio) style="asynchronous"
if [[ ${SYNC:-0} == 1 ]]; then
  points=(16:1:20000 1048576:1:200)
  sonic_api=(--sync) grpcio_api=(--api sync) style="blocking"
fi
for round in $(seq "$rounds"); do
  for point in "${points[@]}"; do
    IFS=: read -r elements inflight requests <<<"$point"
    "$perf" --url "grpc://127.0.0.1:$port" --model identity_fp32 \
      --input "INPUT0=FP32:1,$elements:random" --concurrency "$inflight" --warmup 0.5 \
      --window-requests "$requests" --max-windows 1 --json "$work/sonic.json" "${sonic_api[@]}" \
      >/dev/null 2>&1
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; print(json.dumps(
      {k: p[k] for k in ("throughput", "p50_us", "p99_us", "client_cpu_us")}))' \
      "$work/sonic.json" | sed "s/^/sonic $point /" >>"$work/rows"
    if [[ ${SYNC:-0} == 1 ]]; then
      "$perf" --url "grpc://127.0.0.1:$port" --model identity_fp32 \
        --input "INPUT0=FP32:1,$elements:random" --concurrency "$inflight" --warmup 0.5 \
        --window-requests "$requests" --max-windows 1 --json "$work/shared.json" --sync-shared \
        >/dev/null 2>&1
      python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; print(json.dumps(
        {k: p[k] for k in ("throughput", "p50_us", "p99_us", "client_cpu_us")}))' \
        "$work/shared.json" | sed "s/^/shared $point /" >>"$work/rows"
    fi
    "$python" "$repo/bench/peer_grpcio.py" --target "127.0.0.1:$port" --proto-dir "$repo/proto" \
      --gen-dir "$work/gen" --elements "$elements" --concurrency "$inflight" \
      --requests "$requests" "${grpcio_api[@]}" | sed "s/^/grpcio $point /" >>"$work/rows"
    if [[ $inflight == 1 ]]; then
      # A request of N floats is about 4N + 150 bytes on the wire, and so is its answer.
      # Into a file, not a pipe: a process started beside it (the pipe's reader) moves the
      # ping-pong's threads onto one core and the floor drops four-fold.
      "$floor" --bytes $((4 * elements + 150)) --round-trips "$requests" >"$work/floor.json"
      sed "s/^/floor $point /" "$work/floor.json" >>"$work/rows"
    fi
  done
done

python3 - "$work/rows" "$rounds" "$style" <<'PY'
import json, statistics, sys
path, rounds, style = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for line in open(path):
    who, point, data = line.split(" ", 2)
    rows.setdefault((who, point), []).append(json.loads(data))
def med(who, point, key):
    values = [r[key] for r in rows.get((who, point), [])]
    return statistics.median(values) if values else None
print(f"identity_fp32 against one sonic-server, {style} calls, medians of {rounds} interleaved "
      "rounds")
print(f"{'payload':>8} {'inflight':>8} {'client':>7} {'CPU us':>9} {'infer/s':>9} {'p50 us':>9} "
      f"{'p99 us':>9}   sonic/grpcio: CPU, infer/s   sonic/floor: CPU")
for point in dict.fromkeys(p for _, p in rows):
    elements, inflight, _ = point.split(":")
    size = "64 B" if elements == "16" else f"{4 * int(elements) >> 20} MiB"
    for who in ("sonic", "shared", "grpcio", "floor"):
        if (who, point) not in rows:
            continue
        print(f"{size:>8} {inflight:>8} {who:>7} {med(who, point, 'client_cpu_us'):>9.1f} "
              f"{med(who, point, 'throughput'):>9.0f} {med(who, point, 'p50_us'):>9.0f} "
              f"{med(who, point, 'p99_us'):>9.0f}", end="")
        if who in ("sonic", "shared"):
            cpu = med(who, point, "client_cpu_us")
            ratio = f"   {cpu / med('grpcio', point, 'client_cpu_us'):>12.2f}, " \
                    f"{med(who, point, 'throughput') / med('grpcio', point, 'throughput'):.2f}"
            floor = med("floor", point, "client_cpu_us")
            ratio += f"   {cpu / floor:>14.2f}" if floor else ""
            print(ratio, end="")
        print()
PY
