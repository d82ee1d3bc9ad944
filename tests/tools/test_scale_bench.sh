#!/usr/bin/env bash
# A client with 4,000 requests in flight (sonic-scale-bench in-flight, the server paused while
# they are sent): every request is answered once the server resumes, and the client's heap per
# request in flight stays under 3 KiB beyond its payload (2.7 KiB measured; 3.6 KiB before the
# rare parts of a call moved behind pointers). Under sanitizers, whose allocators glibc's
# counters do not see, only the answers are checked.
#   test_scale_bench.sh SONIC_SERVER SONIC_SCALE_BENCH
set -euo pipefail
server=$1 bench=$2
source "$(dirname "$0")/serve.sh"
serve "$server"
"$bench" in-flight --url "grpc://127.0.0.1:$port" --server-pid "$pid" --sweep 4000 \
  >"$work/out" || fail "$(cat "$work/out")"
cat "$work/out"
read -r count heap beyond rss answered < <(tail -n 1 "$work/out")
[ "$count" = 4000 ] && [ "$answered" = all ] || fail "not every request was answered"
[ "$beyond" -le 3072 ] || fail "$beyond B per request in flight beyond its payload (limit 3072)"
echo "PASS"
