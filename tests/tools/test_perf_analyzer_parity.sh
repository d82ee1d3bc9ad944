#!/usr/bin/env bash
# What Triton users reach for in perf_analyzer, in sonic-perf against a real sonic-server:
# --input-data files with validation_data (an answer that differs is a failure), --shape for
# variable dimensions (refused when missing, not silently 1), --percentile and the p95 column,
# --latency-threshold with and without --binary-search, --concurrency-range, sequence models
# (--sequence-length, --sequence-id-range, ...) and -i; with a model repository, -b on a batching
# model (the server sees the rows: past max_batch_size it refuses).
#   test_perf_analyzer_parity.sh SONIC_SERVER SONIC_PERF            (built-in models)
#   test_perf_analyzer_parity.sh SONIC_SERVER SONIC_PERF MODELS_DIR (-b, generated models)
set -euo pipefail
server=$1 perf=$2 models=${3:-}
source "$(dirname "$0")/serve.sh"
passed=0
pass() { passed=$((passed + 1)); }
quick=(--warmup 0.1 --window 0.2 --max-windows 2 --stable-windows 2)

# status COMMAND...: runs it with stdout and stderr in $work/out and $work/err, sets $rc.
status() {
  set +e
  "$@" >"$work/out" 2>"$work/err"
  rc=$?
  set -e
}

if [ -n "$models" ]; then
  serve "$server" --model-repository "$models/repository" --model-control-mode explicit \
    --load-model jet_mlp_onnx
  url=grpc://127.0.0.1:$port
  # jet_mlp_onnx: max_batch_size 64, FP32 features [16]. -b makes the rows of each request.
  status "$perf" -u "$url" -m jet_mlp_onnx -b 64 "${quick[@]}"
  [ $rc -eq 0 ] || fail "-b 64: $(cat "$work/err")"
  status "$perf" -u "$url" -m jet_mlp_onnx -b 65 "${quick[@]}"
  [ $rc -eq 1 ] && grep -q "INVALID_ARGUMENT: inference request batch-size must be <= 64" "$work/err" ||
    fail "-b 65 must reach the server and be refused there: rc=$rc $(cat "$work/err")"
  status "$perf" -u "$url" -m jet_mlp_onnx -b 2 --shape features:16 "${quick[@]}"
  [ $rc -eq 0 ] || fail "--shape of fixed dimensions: $(cat "$work/err")"
  status "$perf" -u "$url" -m jet_mlp_onnx --shape features:4,4 "${quick[@]}"
  [ $rc -eq 2 ] && grep -q "does not fit (give it without the batch dimension)" "$work/err" ||
    fail "--shape that does not fit: rc=$rc $(cat "$work/err")"
  # One row of input data, sent as 3 rows.
  python3 -c "import json; print(json.dumps({'data': [{'features': [0.5] * 16}]}))" >"$work/rows.json"
  status "$perf" -u "$url" -m jet_mlp_onnx -b 3 --input-data "$work/rows.json" "${quick[@]}"
  [ $rc -eq 0 ] || fail "-b with --input-data: $(cat "$work/err")"
  echo "perf_analyzer parity (batching): 5 passed, 0 failed"
  exit 0
fi

serve "$server"
url=grpc://127.0.0.1:$port

# simple: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, INT32 [-1,16]. Two steps, one as
# arrays, one as b64 (sixteen little-endian INT32 ones); the answers are checked.
python3 - "$work" <<'PY'
import base64, json, struct, sys
work = sys.argv[1]
counting = list(range(16))
ones_b64 = base64.b64encode(struct.pack("<16i", *[1] * 16)).decode()
data = [{"INPUT0": counting, "INPUT1": [1] * 16},
        {"INPUT0": {"b64": ones_b64}, "INPUT1": {"content": [2] * 16, "shape": [16]}}]
good = [{"OUTPUT0": [v + 1 for v in counting], "OUTPUT1": [v - 1 for v in counting]},
        {"OUTPUT0": [3] * 16, "OUTPUT1": [-1] * 16}]
bad = json.loads(json.dumps(good))
bad[1]["OUTPUT1"][5] = 7
json.dump({"data": data, "validation_data": good}, open(work + "/good.json", "w"))
json.dump({"data": data, "validation_data": bad}, open(work + "/bad.json", "w"))
identity = {"data": [{"INPUT0": {"content": [0.25] * 6, "shape": [2, 3]}}],
            "validation_data": [{"OUTPUT0": [0.25] * 6}]}
json.dump(identity, open(work + "/identity.json", "w"))
PY
status "$perf" -u "$url" -m simple --input-data "$work/good.json" --concurrency 1,4 "${quick[@]}" \
  --json "$work/good-result.json"
[ $rc -eq 0 ] && [ "$(grep -c '^concurrency' "$work/out")" -eq 2 ] ||
  fail "validated input data: rc=$rc $(cat "$work/out" "$work/err")"
python3 -c "
import json
for p in json.load(open('$work/good-result.json'))['points']:
    assert p['failures'] == 0 and p['requests'] > 0 and p['p95_us'] >= p['p50_us'] > 0, p
" || fail "input data: every request answered as the file says"
pass

status "$perf" -u "$url" -m simple --input-data "$work/bad.json" "${quick[@]}"
[ $rc -eq 1 ] && grep -q "output 'OUTPUT1' differs from validation_data at element 5" "$work/err" &&
  awk 'NR > 1 && $3 > 0 { found = 1 } END { exit !found }' "$work/out" ||
  fail "an answer that differs must fail, counted: rc=$rc $(cat "$work/out" "$work/err")"
pass

# identity_fp32 has INPUT0 [-1,-1]: no --shape is a usage error naming the input, not a [1,1]
# tensor sent silently; the file's "shape" and --shape both fill it.
status "$perf" -u "$url" -m identity_fp32 "${quick[@]}"
[ $rc -eq 2 ] && grep -q "input 'INPUT0' of shape \[-1,-1\] has variable dimensions: give them with --shape INPUT0:DIMS" "$work/err" ||
  fail "variable dimensions without --shape: rc=$rc $(cat "$work/err")"
status "$perf" -u "$url" -m identity_fp32 --shape INPUT0:2,3 "${quick[@]}" --json "$work/shape.json"
[ $rc -eq 0 ] || fail "--shape: $(cat "$work/err")"
status "$perf" -u "$url" -m identity_fp32 --input-data "$work/identity.json" "${quick[@]}"
[ $rc -eq 0 ] || fail "the file's shape: $(cat "$work/err")"
status "$perf" -u "$url" -m identity_fp32 --shape INPUT0:2,3 -b 2 "${quick[@]}"
[ $rc -eq 2 ] && grep -q "the model does not batch" "$work/err" || fail "-b on a model that does not batch"
# Triton's published simple batches (max_batch_size 8): perf_analyzer -b 2 on it.
status "$perf" -u "$url" -m simple -b 2 "${quick[@]}"
[ $rc -eq 0 ] || fail "-b 2 on simple: $(cat "$work/err")"
pass

# --percentile: p95 is a column of its own; another percentile adds one, and stability uses it.
status "$perf" -u "$url" -m simple --percentile 97 "${quick[@]}" --csv "$work/p97.csv"
[ $rc -eq 0 ] && head -1 "$work/out" | grep -q "p95 us .* p99 us .* p97 us" &&
  grep -q "window 1: .* p97 " "$work/err" && head -1 "$work/p97.csv" | grep -q "p95_us,percentile,percentile_us$" ||
  fail "--percentile 97: $(cat "$work/out" "$work/err")"
status "$perf" -u "$url" -m simple --percentile 100
[ $rc -eq 2 ] || fail "--percentile 100 must be refused"
pass

# --latency-threshold: a threshold every load meets needs the two ends of the range only; one
# nothing meets fails with status 1.
status "$perf" -u "$url" -m simple --concurrency-range 1:8 --latency-threshold 100000 \
  --binary-search "${quick[@]}"
[ $rc -eq 0 ] && [ "$(grep -c '^concurrency' "$work/out")" -eq 2 ] &&
  grep -q "the highest load with p99 under 100000.000 ms: concurrency 8" "$work/err" ||
  fail "--binary-search: rc=$rc $(cat "$work/out" "$work/err")"
status "$perf" -u "$url" -m simple --concurrency 1:8:x2 --latency-threshold 0.000001 "${quick[@]}"
[ $rc -eq 1 ] && [ "$(grep -c '^concurrency' "$work/out")" -eq 1 ] &&
  grep -q "no load kept p99 under 0.000 ms" "$work/err" ||
  fail "an unmet threshold: rc=$rc $(cat "$work/out" "$work/err")"
status "$perf" -u "$url" -m simple --binary-search
[ $rc -eq 2 ] && grep -q "needs --latency-threshold" "$work/err" || fail "--binary-search alone"
pass

# simple_sequence has sequence_batching: OUTPUT = INPUT + 1 on a sequence's first request (START),
# INPUT after, and a request of a sequence that was not started fails. Sequences of 10 at
# concurrency 4 over gRPC and HTTP: none fails. The file's validation_data (step 0 answers
# INPUT + 1, the others INPUT) holds only when START is on each sequence's first request alone
# (its ten steps make a sequence, as perf_analyzer reads one stream of steps).
python3 - "$work" <<'PY'
import json, sys
steps = [{"INPUT": [10 * i + 3]} for i in range(10)]
expect = [{"OUTPUT": [s["INPUT"][0] + (1 if i == 0 else 0)]} for i, s in enumerate(steps)]
json.dump({"data": steps, "validation_data": expect}, open(sys.argv[1] + "/sequence.json", "w"))
PY
for u in "$url" "http://127.0.0.1:$http"; do
  status "$perf" -u "$u" -m simple_sequence --sequence-length 10 --concurrency 4 "${quick[@]}" \
    --json "$work/sequence-result.json"
  [ $rc -eq 0 ] || fail "sequences of 10 at $u: rc=$rc $(cat "$work/err")"
  python3 -c "
import json
p = json.load(open('$work/sequence-result.json'))['points'][0]
assert p['failures'] == 0 and p['requests'] > 20, p
" || fail "sequences at $u: every request answered"
  status "$perf" -u "$u" -m simple_sequence --input-data "$work/sequence.json" --concurrency 1,4 \
    "${quick[@]}"
  [ $rc -eq 0 ] || fail "validated sequences at $u: rc=$rc $(cat "$work/err")"
done
# The same through a stream, blocking calls, and a fixed rate over perf_analyzer's 4 sequences.
status "$perf" -u "$url" -m simple_sequence --input-data "$work/sequence.json" --sequence-length 10 \
  --sequence-length-variation 0 --streaming --concurrency 4 "${quick[@]}"
[ $rc -eq 0 ] || fail "sequences on a stream: rc=$rc $(cat "$work/err")"
status "$perf" -u "$url" -m simple_sequence --input-data "$work/sequence.json" --sync \
  --concurrency 4 "${quick[@]}"
[ $rc -eq 0 ] || fail "sequences with --sync: rc=$rc $(cat "$work/err")"
status "$perf" -u "$url" -m simple_sequence --input-data "$work/sequence.json" --rate 200 \
  --num-of-sequences 3 --serial-sequences "${quick[@]}"
[ $rc -eq 0 ] && grep -q "^rate 200/s" "$work/out" || fail "sequences at a rate: rc=$rc $(cat "$work/err")"
# Ids 1 to 4 (END excluded) for 4 sequences at once; once sonic-perf is done each has its END:
# a request of any of them without START then fails (one in progress would answer).
status "$perf" -u "$url" -m simple_sequence --sequence-id-range 1:5 --sequence-length 3 \
  --concurrency 4 "${quick[@]}"
[ $rc -eq 0 ] || fail "--sequence-id-range 1:5: rc=$rc $(cat "$work/err")"
python3 - "$http" <<'PY' || fail "a sequence left without its END"
import json, sys, urllib.error, urllib.request
for sequence_id in range(1, 5):
    body = {"parameters": {"sequence_id": sequence_id},
            "inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 1], "data": [5]}]}
    request = urllib.request.Request(
        "http://127.0.0.1:%s/v2/models/simple_sequence/infer" % sys.argv[1],
        json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=5)
        sys.exit("sequence %d is still in progress" % sequence_id)
    except urllib.error.HTTPError as e:
        assert "START" in e.read().decode(), sequence_id
PY
status "$perf" -u "$url" -m simple_sequence --sequence-id-range 1:4 --concurrency 4 "${quick[@]}"
[ $rc -eq 2 ] && grep -q "sequence ids would collide" "$work/err" ||
  fail "a sequence id range under the concurrency: rc=$rc $(cat "$work/err")"
pass

# -i (perf_analyzer's --protocol) gives a -u without a scheme its scheme.
status "$perf" -u "127.0.0.1:$http" -i http -m simple "${quick[@]}"
[ $rc -eq 0 ] || fail "-i http: rc=$rc $(cat "$work/err")"
status "$perf" -u "127.0.0.1:$port" -i grpc -m simple "${quick[@]}"
[ $rc -eq 0 ] || fail "-i grpc: rc=$rc $(cat "$work/err")"
status "$perf" -u "127.0.0.1:$port" -i tcp -m simple
[ $rc -eq 2 ] && grep -q "\-i takes grpc or http" "$work/err" || fail "-i tcp: rc=$rc $(cat "$work/err")"
status "$perf" -u "grpc://127.0.0.1:$port" -i http -m simple
[ $rc -eq 2 ] || fail "-i http with a grpc:// URL: rc=$rc $(cat "$work/err")"
pass

echo "perf_analyzer parity: $passed passed, 0 failed"
