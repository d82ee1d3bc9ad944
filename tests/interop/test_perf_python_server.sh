#!/usr/bin/env bash
# sonic-perf against python_server.py, which behaves as Triton does: a short sweep over grpc://
# and grpc+shm:// (Triton's shared memory answers), and over one stream (--streaming, Triton's
# ModelStreamInfer, its decoupled repeat_int32 too); no request may fail.
#   test_perf_python_server.sh PYTHON SERVER_SCRIPT PROTO_DIR GEN_DIR SONIC_PERF
set -euo pipefail
python=$1 script=$2 proto=$3 gen=$4 perf=$5
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
: >"$work/server.log"  # exists before the server starts: it is read while the server starts
"$python" "$script" --proto-dir "$proto" --gen-dir "$gen" --host 127.0.0.1 --port 0 \
  --max-seconds 100 >"$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
port=
for _ in $(seq 200); do
  port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/server.log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || fail "python_server.py did not start: $(cat "$work/server.log")"

quick=(--warmup 0.1 --window 0.3 --max-windows 2 --stable-windows 2)
passed=0
# run URL [sonic-perf options...]: a short sweep of 1 and 4 in flight, none may fail.
run() {
  local url=$1
  shift
  "$perf" --url "$url" "$@" --concurrency 1:4:x4 "${quick[@]}" --json "$work/p.json" \
    >"$work/table" 2>"$work/progress" || fail "$url $*: $(cat "$work/progress")"
  "$python" -c "
import json
d = json.load(open('$work/p.json'))
assert len(d['points']) == 2, d
for p in d['points']:
    assert p['requests'] > 0 and p['failures'] == 0, p
" || fail "$url $*: $(cat "$work/table")"
  passed=$((passed + 1))
}
for url in "grpc://127.0.0.1:$port" "grpc+shm://127.0.0.1:$port"; do
  run "$url" --model simple
  run "$url" --model identity_fp32 --input INPUT0=FP32:1,4096:sparse
done
run "grpc://127.0.0.1:$port" --model simple --streaming
run "grpc://127.0.0.1:$port" --model repeat_int32 --input IN=INT32:4:zero \
  --input DELAY=UINT32:4:zero --input WAIT=UINT32:1:zero --streaming
echo "sonic-perf against python_server.py: $passed passed, 0 failed"
