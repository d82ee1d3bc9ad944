#!/usr/bin/env bash
# No memory held per request: sonic-memory-bench sends 200,000 requests through a real
# sonic-server (callbacks on the network thread, the default, then on callback threads) and fails when the client's resident
# memory grows by more than 1 MiB after its first checkpoint; the server's resident memory may
# not grow by more than 1 MiB over the second run either (the first warms it up).
#   test_memory_growth.sh SONIC_SERVER SONIC_MEMORY_BENCH
set -euo pipefail
server=$1 bench=$2
source "$(dirname "$0")/serve.sh"
serve "$server"
server_rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

"$bench" --url "grpc://127.0.0.1:$port" --requests 200000 >"$work/first" ||
  fail "network-thread callbacks: $(cat "$work/first")"
cat "$work/first"
warm=$(server_rss)
"$bench" --url "grpc://127.0.0.1:$port" --requests 200000 --callbacks pool >"$work/second" ||
  fail "callback threads: $(cat "$work/second")"
tail -n 1 "$work/second"
growth=$(($(server_rss) - warm))
echo "sonic-server resident memory over the second 200000 requests: +$growth KiB"
[ "$growth" -le 1024 ] || fail "sonic-server grew by $growth KiB"
echo "PASS"
