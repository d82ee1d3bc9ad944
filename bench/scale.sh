#!/usr/bin/env bash
# What scale costs (issue "lean by default", item 3): one client with up to 20,000 requests in
# flight (its memory per request), and sonic-server with up to 1,500 client connections (its
# memory per connection, and p99 against the 10-connection figure), both as sweeps with their
# plots. Writes scale-in-flight.{txt,svg} and scale-connections.{txt,svg} to OUT_DIR: by default
# a new directory under BUILD_DIR/bench-results/, never the committed bench/results/ unless it
# is named.
#
#   bench/scale.sh BUILD_DIR [OUT_DIR]
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/out_dir.sh"  # $build and $results
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
server=$build/tools/sonic-server
bench=$build/bench/sonic-scale-bench
for program in "$server" "$bench"; do
  [[ -x $program ]] || { echo "scale: $program is not built" >&2; exit 2; }
done
mkdir -p "$results"
results=$(cd "$results" && pwd)
ulimit -n "$(ulimit -Hn)"  # 1,500 connections are 1,500 descriptors on each side

source "$repo/bench/start_server.sh"  # $work, start_server, the cleanup
machine="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"

echo "== one client, requests in flight"
start_server "$server" "$work/server.log"
{
  echo "sonic-scale-bench in-flight, $(date -u +%Y-%m-%d), $machine"
  "$bench" in-flight --url "grpc://127.0.0.1:$port" --server-pid "$server_pid" \
    --plot "$results/scale-in-flight.svg"
} | tee "$results/scale-in-flight.txt"
kill "$server_pid" && wait "$server_pid" 2>/dev/null || true

echo "== sonic-server, client connections"
start_server "$server" "$work/server.log"
{
  echo "sonic-scale-bench connections, $(date -u +%Y-%m-%d), $machine"
  "$bench" connections --url "grpc://127.0.0.1:$port" --server-pid "$server_pid" \
    --plot "$results/scale-connections.svg"
} | tee "$results/scale-connections.txt"
echo "results in $results/"
