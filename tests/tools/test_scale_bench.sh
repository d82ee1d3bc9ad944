#!/usr/bin/env bash
# A client with 10,000 requests in flight (sonic-scale-bench in-flight, the server paused while
# they are sent): every request is answered once the server resumes, and the client's heap per
# request in flight stays within 2 KiB + 64 B beyond its payload (1.99 to 2.01 KiB measured since
# every transport's calls share one call life, src/net/call_life.hpp, whose parked-answer pointer
# each call carries; 1.96 KiB before it, 2.02 KiB before a request's retry state moved behind
# one pointer; 2.7 KiB while
# calls over the server's stream limit waited inside nghttp2, 3.6 KiB before the rare parts of
# a call moved behind pointers). Under sanitizers, whose allocators glibc's counters do not
# see, only the answers are checked.
#   test_scale_bench.sh SONIC_SERVER SONIC_SCALE_BENCH
set -euo pipefail
server=$1 bench=$2
source "$(dirname "$0")/serve.sh"
serve "$server"
"$bench" in-flight --url "grpc://127.0.0.1:$port" --server-pid "$pid" --sweep 10000 \
  >"$work/out" || fail "$(cat "$work/out")"
cat "$work/out"
read -r count heap beyond rss answered < <(tail -n 1 "$work/out")
[ "$count" = 10000 ] && [ "$answered" = all ] || fail "not every request was answered"
[ "$beyond" -le 2112 ] || fail "$beyond B per request in flight beyond its payload (limit 2112)"
echo "PASS"
