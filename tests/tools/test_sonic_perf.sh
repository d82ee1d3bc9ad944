#!/usr/bin/env bash
# sonic-perf against a real sonic-server over every transport: a short concurrency sweep with
# CSV, JSON and SVG output, the fixed-rate mode, inputs from the metadata, and usage errors.
#   test_sonic_perf.sh SONIC_SERVER SONIC_PERF
set -euo pipefail
server=$1 perf=$2
source "$(dirname "$0")/serve.sh"
serve "$server" --tcp-port 0
quick=(--warmup 0.1 --window 0.2 --max-windows 2 --stable-windows 2)

"$perf" --url "grpc://127.0.0.1:$port" --model identity_fp32 --input INPUT0:FP32:1,256:sparse \
  --concurrency 1:4:x2 "${quick[@]}" --csv "$work/p.csv" --json "$work/p.json" \
  --plot "$work/p.svg" >"$work/table" 2>"$work/progress" || fail "sweep: $(cat "$work/progress")"
[ "$(grep -c '^concurrency' "$work/table")" -eq 3 ] || fail "3 points expected: $(cat "$work/table")"
grep -q "window 1:" "$work/progress" || fail "no progress on stderr"
[ "$(wc -l <"$work/p.csv")" -eq 4 ] || fail "CSV: header + 3 rows"
python3 -c "
import json, sys
d = json.load(open('$work/p.json'))
assert len(d['points']) == 3, d
for p in d['points']:
    assert p['throughput'] > 0 and p['p99_us'] >= p['p50_us'] > 0 and p['failures'] == 0, p
    assert p['client_cpu_us'] > 0 and p['wire_bytes'] > 1024, p  # 1 KiB each way at least
    assert p['server_compute_us'] > 0, p
    assert p['all_requests'] > p['requests'], p  # the warm-up counts for the server's CPU
" || fail "JSON"
python3 -c "import xml.dom.minidom as m; m.parse('$work/p.svg')" || fail "SVG does not parse"
grep -q "<circle" "$work/p.svg" || fail "SVG has no points"

for url in "grpc+shm://127.0.0.1:$port" "tcp://127.0.0.1:$tcp" "tcp+zstd://127.0.0.1:$tcp"; do
  "$perf" --url "$url" --model simple "${quick[@]}" >"$work/table" 2>"$work/progress" ||
    fail "$url: $(cat "$work/progress")"
  grep -q "^concurrency 1 " "$work/table" || fail "$url: $(cat "$work/table")"
done

"$perf" --url "grpc://127.0.0.1:$port" --model simple --rate 200 --poisson "${quick[@]}" \
  >"$work/table" 2>"$work/progress" || fail "rate mode: $(cat "$work/progress")"
grep -q "^rate 200/s" "$work/table" || fail "rate mode table: $(cat "$work/table")"

set +e
"$perf" --url "grpc://127.0.0.1:$port" --concurrency 1 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "model is required" "$work/err" || fail "missing --model: rc=$rc"
set +e
"$perf" --url "grpc://127.0.0.1:$port" --model simple --concurrency 4:1:x2 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "bad sweep" "$work/err" || fail "bad sweep: rc=$rc"
echo "sonic-perf: 6 passed, 0 failed"
