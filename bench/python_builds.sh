#!/usr/bin/env bash
# Two builds of sonic's Python package against each other, on one sonic-server (the first
# build's), in interleaved rounds of bench/peer_sonic_python.py: what a change to the bindings
# gained, with the machine's drift shared by both. Prints the medians of ROUNDS rounds per
# build: throughput, client CPU, the calling thread's CPU (the event loop's with asyncio), p50.
#
#   bench/python_builds.sh BUILD_A BUILD_B [ROUNDS=5] [API=asyncio] [CONCURRENCY=16]
#
# A build of another commit: git worktree add /tmp/old COMMIT && cmake -S /tmp/old -B /tmp/bold
# && cmake --build /tmp/bold --target sonic_python.
set -euo pipefail

build_a=${1:?usage: $0 BUILD_A BUILD_B [ROUNDS=5] [API=asyncio] [CONCURRENCY=16]}
build_b=${2:?usage: $0 BUILD_A BUILD_B [ROUNDS=5] [API=asyncio] [CONCURRENCY=16]}
rounds=${3:-5}
api=${4:-asyncio}
concurrency=${5:-16}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, $python, start_server, require_built, the cleanup
require_built "$build_a/tools/sonic-server"
for build in "$build_a" "$build_b"; do
  [[ -f $build/python/sonic/__init__.py ]] ||
    { echo "python_builds: $build/python has no sonic package" >&2; exit 2; }
done

start_server "$build_a/tools/sonic-server" "$work/server.log"
for round in $(seq "$rounds"); do
  for build in "$build_a" "$build_b"; do
    PYTHONPATH=$build/python:$repo/bench "$python" "$repo/bench/peer_sonic_python.py" \
      --url "grpc://127.0.0.1:$port" --api "$api" --concurrency "$concurrency" \
      --requests 20000 | sed "s|^|$build $api-$concurrency |" >>"$work/rows"
  done
done

PYTHONPATH="$repo/bench" "$python" - "$work/rows" "$rounds" <<'PY'
import sys
from rows import medians
med, rows = medians(sys.argv[1])
print(f"bench/peer_sonic_python.py, identity_fp32 at 64 B; medians of {sys.argv[2]} interleaved rounds")
print(f"{'build':>24} {'run':>12} {'infer/s':>9} {'CPU us':>8} {'caller us':>9} {'p50 us':>8}")
for build, run in rows:
    print(f"{build:>24} {run:>12} {med(build, run, 'throughput'):>9.0f} "
          f"{med(build, run, 'client_cpu_us'):>8.1f} {med(build, run, 'caller_cpu_us'):>9.1f} "
          f"{med(build, run, 'p50_us'):>8.1f}")
PY
