#!/usr/bin/env bash
# What TLS costs: sonic-perf against two sonic-servers of the same build, one plaintext and one
# with --tls-cert (certificates made here with the openssl command), over grpc:// against
# grpcs:// and tcp:// against tcp+tls://, with 64 B and 4 MiB requests (identity_fp32), in
# interleaved rounds. Prints the medians and TLS's ratio to plaintext for each.
#
#   bench/tls_cost.sh BUILD_DIR [ROUNDS=3]
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS=3]}
rounds=${2:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, $python, start_server, perf_summary, the cleanup
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
require_built "$server" "$perf"
"$repo/tests/support/make_test_certificates.sh" "$work/tls" >/dev/null
start_server "$server" "$work/plain.log" --tcp-port 0
plain_grpc=$port plain_tcp=$tcp_port
start_server "$server" "$work/tls.log" --tcp-port 0 \
  --tls-cert "$work/tls/server.pem" --tls-key "$work/tls/server.key"
tls_grpc=$port tls_tcp=$tcp_port

sonic_perf() {  # URL ELEMENTS CONCURRENCY REQUESTS
  "$perf" --url "$1" --tls-ca "$work/tls/ca.pem" --model identity_fp32 \
    --input "INPUT0=FP32:1,$2:random" --concurrency "$3" --warmup 0.5 --window-requests "$4" \
    --max-windows 1 --json "$work/perf.json" >/dev/null 2>&1
  perf_summary "$work/perf.json"
}

for round in $(seq "$rounds"); do
  for size in small large; do
    if [[ $size == small ]]; then args=(16 16 20000); else args=(1048576 2 300); fi
    sonic_perf "grpc://127.0.0.1:$plain_grpc" "${args[@]}" | sed "s/^/grpc $size /" >>"$work/rows"
    sonic_perf "grpcs://127.0.0.1:$tls_grpc" "${args[@]}" | sed "s/^/grpcs $size /" >>"$work/rows"
    sonic_perf "tcp://127.0.0.1:$plain_tcp" "${args[@]}" | sed "s/^/tcp $size /" >>"$work/rows"
    sonic_perf "tcp+tls://127.0.0.1:$tls_tcp" "${args[@]}" | sed "s/^/tcp+tls $size /" >>"$work/rows"
  done
done

PYTHONPATH="$repo/bench" "$python" - "$work/rows" "$rounds" <<'PY'
import sys
from rows import medians
med, rows = medians(sys.argv[1])
rounds = sys.argv[2]
print(f"identity_fp32; small: 64 B at 16 in flight; large: 4 MiB at 2 in flight; "
      f"medians of {rounds} interleaved rounds")
print(f"{'scheme':>8} {'size':>6} {'CPU us':>9} {'infer/s':>9} {'MB/s':>8} {'p50 us':>9}")
for (scheme, size) in rows:
    mb = 4 << 20 if size == "large" else 64
    print(f"{scheme:>8} {size:>6} {med(scheme, size, 'client_cpu_us'):>9.1f} "
          f"{med(scheme, size, 'throughput'):>9.0f} "
          f"{med(scheme, size, 'throughput') * mb / 1e6:>8.0f} {med(scheme, size, 'p50_us'):>9.1f}")
print()
for plain, secure in (("grpc", "grpcs"), ("tcp", "tcp+tls")):
    for size in ("small", "large"):
        ratio = med(secure, size, "throughput") / med(plain, size, "throughput")
        extra = med(secure, size, "client_cpu_us") - med(plain, size, "client_cpu_us")
        print(f"{secure} / {plain}, {size}: {ratio:.2f}x the throughput, "
              f"client CPU {extra:+.1f} us per request")
PY
