#!/usr/bin/env bash
# sonic-perf against python_server.py, which behaves as Triton does: a short sweep over grpc://
# and grpc+shm:// (Triton's shared memory answers), no request may fail.
#   test_perf_python_server.sh PYTHON SERVER_SCRIPT PROTO_DIR GEN_DIR SONIC_PERF
set -euo pipefail
python=$1 script=$2 proto=$3 gen=$4 perf=$5
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
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
for url in "grpc://127.0.0.1:$port" "grpc+shm://127.0.0.1:$port"; do
  for model in "simple" "identity_fp32 --input INPUT0:FP32:1,4096:sparse"; do
    # shellcheck disable=SC2086  # the model and its input options split on purpose
    "$perf" --url "$url" --model $model --concurrency 1:4:x4 "${quick[@]}" \
      --json "$work/p.json" >"$work/table" 2>"$work/progress" ||
      fail "$url $model: $(cat "$work/progress")"
    "$python" -c "
import json
d = json.load(open('$work/p.json'))
assert len(d['points']) == 2, d
for p in d['points']:
    assert p['requests'] > 0 and p['failures'] == 0, p
" || fail "$url $model: $(cat "$work/table")"
  done
done
echo "sonic-perf against python_server.py: 4 passed, 0 failed"
