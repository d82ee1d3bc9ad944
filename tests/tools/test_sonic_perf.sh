#!/usr/bin/env bash
# sonic-perf against a real sonic-server over every transport: a short concurrency sweep with
# CSV, JSON and SVG output, the fixed-rate mode, inputs from the metadata, and usage errors.
#   test_sonic_perf.sh SONIC_SERVER SONIC_PERF
set -euo pipefail
server=$1 perf=$2
source "$(dirname "$0")/serve.sh"
serve "$server" --tcp-port 0
quick=(--warmup 0.1 --window 0.2 --max-windows 2 --stable-windows 2)

"$perf" --url "grpc://127.0.0.1:$port" --model identity_fp32 --input INPUT0=FP32:1,256:sparse \
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

for url in "grpc+shm://127.0.0.1:$port" "tcp://127.0.0.1:$tcp" "tcp+zstd://127.0.0.1:$tcp" \
  "http://127.0.0.1:$http"; do
  "$perf" --url "$url" --model simple "${quick[@]}" >"$work/table" 2>"$work/progress" ||
    fail "$url: $(cat "$work/progress")"
  grep -q "^concurrency 1 " "$work/table" || fail "$url: $(cat "$work/table")"
done

"$perf" --url "grpc://127.0.0.1:$port" --model simple --rate 200 --poisson "${quick[@]}" \
  >"$work/table" 2>"$work/progress" || fail "rate mode: $(cat "$work/progress")"
grep -q "^rate 200/s" "$work/table" || fail "rate mode table: $(cat "$work/table")"
# A rate beyond what the server answers is not a stable measurement.
"$perf" --url "grpc://127.0.0.1:$port" --model simple --rate 1000000 "${quick[@]}" \
  >"$work/table" 2>"$work/progress" || fail "rate 1000000: $(cat "$work/progress")"
grep -q "overloaded" "$work/progress" && grep -q "^rate 1000000/s .* no$" "$work/table" ||
  fail "an overloaded rate called stable: $(cat "$work/table" "$work/progress")"

# Blocking calls, a thread per request in flight (perf_analyzer's sync mode).
"$perf" --url "grpc://127.0.0.1:$port" --model simple --sync --concurrency 1,4 "${quick[@]}" \
  >"$work/table" 2>"$work/progress" || fail "--sync: $(cat "$work/progress")"
[ "$(grep -c '^concurrency [14] ' "$work/table")" -eq 2 ] || fail "--sync table: $(cat "$work/table")"
set +e
"$perf" --url "grpc://127.0.0.1:$port" --model simple --sync --rate 100 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "not with --streaming or --rate" "$work/err" || fail "--sync --rate: rc=$rc"

set +e
"$perf" --url "grpc://127.0.0.1:$port" --concurrency 1 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "model is required" "$work/err" || fail "missing --model: rc=$rc"
set +e
"$perf" --url "grpc://127.0.0.1:$port" --model simple --concurrency 4:1:x2 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "FROM is above TO" "$work/err" || fail "bad sweep: rc=$rc"

# Numbers are read whole or refused (2abc is not 2, 0 is not 1), a list is a sweep, and an output
# file that cannot be written is refused before measuring, not after.
for bad in "--concurrency 2abc" "--concurrency 0" "--window -1" "--rate 1e999" "--max-windows 1.5"; do
  set +e
  # shellcheck disable=SC2086
  "$perf" --url "grpc://127.0.0.1:$port" --model simple $bad 2>"$work/err"; rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q -- "${bad%% *} takes" "$work/err" || fail "$bad: rc=$rc $(cat "$work/err")"
done
"$perf" --url "grpc://127.0.0.1:$port" --model simple --concurrency 1,2,4 "${quick[@]}" \
  >"$work/table" 2>"$work/progress" || fail "list: $(cat "$work/progress")"
[ "$(grep -c '^concurrency' "$work/table")" -eq 3 ] || fail "1,2,4 is 3 points: $(cat "$work/table")"
started=$SECONDS
set +e
"$perf" --url "grpc://127.0.0.1:$port" --model simple --concurrency 1:64:x2 \
  --csv "$work/missing/c.csv" 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "does not exist" "$work/err" && (( SECONDS - started < 3 )) ||
  fail "an unwritable --csv: rc=$rc $(cat "$work/err")"

# The server dies 1 s into a sweep that would take 20 s: the sweep stops, the failures are in
# the table's "failed" column, the first error is named, and the exit status is 1.
stop_server
serve "$server"
"$perf" --url "grpc://127.0.0.1:$port" --model simple --concurrency 1:8:x2 --warmup 0.1 \
  --window 0.5 --max-windows 10 --stable-windows 10 >"$work/table" 2>"$work/progress" &
perf_pid=$!
sleep 1
kill "$pid"
started=$SECONDS
set +e
wait "$perf_pid"; rc=$?
set -e
[ $rc -eq 1 ] || fail "a dead server: exit status $rc, not 1: $(cat "$work/progress")"
# Whether the sweep went on is read from its table, not the clock: a request waits for the
# client's next connection attempt, which backs off up to reconnect_backoff_max (5 s), and under
# the sanitizers with another test beside it the stop took past 15 s. Each point lasts 5 s (10
# windows of 0.5 s), so the server died during the first of the four.
points=$(grep -c '^concurrency' "$work/table" || true)
[ "$points" -eq 1 ] || fail "the sweep went on after the server died: $(cat "$work/table")"
(( SECONDS - started < 60 )) || fail "the sweep took $((SECONDS - started)) s to stop"
grep -q "failed" "$work/table" || fail "no failed column: $(cat "$work/table")"
awk 'NR > 1 && $4 > 0 { found = 1 } END { exit !found }' "$work/table" ||
  fail "no failures counted: $(cat "$work/table")"
grep -q "stopping the sweep" "$work/progress" && grep -q "UNAVAILABLE" "$work/progress" ||
  fail "the error is not named: $(cat "$work/progress")"
echo "sonic-perf: 12 passed, 0 failed"
