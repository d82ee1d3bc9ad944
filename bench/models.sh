#!/usr/bin/env bash
# Real models through sonic-server, in one interleaved run (medians of ROUNDS rounds):
#   1. the jet-tagging MLP and the EmTrkMichelId-shaped CNN (ONNX, batch 1 per request) at 1 to
#      64 requests in flight, against a server without and with dynamic_batching (both with two
#      instances, one per core): throughput, p50 and p99, and the batched/plain throughput ratio;
#   2. the EmTrkMichelId-shaped CNN (ONNX) at batch 1, one request at a time: its backend
#      called directly (the floor), the executor, a client's fallback (sonic-model-overhead,
#      in-process), sonic-perf through sonic-server (models on its executor threads, and with
#      --inline-models); p50s and their overheads over the backend.
#
#   bench/models.sh BUILD_DIR [ROUNDS=3]     (BATCH_DELAY_US=N: the batcher's queue delay, 0)
#
# The models are those the build generates (BUILD_DIR/models, examples/models/generate_models.py).
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS=3]}
rounds=${2:-3}
delay=${BATCH_DELAY_US:-0}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
server=$build/tools/sonic-server
perf=$build/tools/sonic-perf
overhead=$build/bench/sonic-model-overhead
models=$build/models/repository
for program in "$server" "$perf" "$overhead"; do
  [[ -x $program ]] || { echo "models.sh: $program is not built" >&2; exit 2; }
done
[[ -d $models ]] || { echo "models.sh: $models is missing (build the tests' models)" >&2; exit 2; }

source "$repo/bench/start_server.sh"  # $work, start_server, the cleanup

# Two repositories with the same models, two instances each: as generated, and with the
# dynamic batcher on.
for variant in plain batched; do
  for model in jet_mlp_onnx emtrk_cnn_onnx; do
    mkdir -p "$work/$variant/$model/1"
    cp "$models/$model/1/model.onnx" "$work/$variant/$model/1/"
    { cat "$models/$model/config.pbtxt"; echo 'instance_group { count: 2 kind: KIND_CPU }'
      [[ $variant == batched ]] && echo "dynamic_batching { max_queue_delay_microseconds: $delay }"
    } >"$work/$variant/$model/config.pbtxt"
  done
done

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

: >"$work/rows"
for round in $(seq "$rounds"); do
  for variant in plain batched; do
    start_server "$server" "$work/server.log" --model-repository "$work/$variant"
    for sweep in mlp:jet_mlp_onnx:features:16:4000 cnn:emtrk_cnn_onnx:patch:1,48,48:1000; do
      IFS=: read -r short model input dims requests <<<"$sweep"
      "$perf" --url "grpc://127.0.0.1:$port" --model "$model" \
        --input "$input=FP32:1,$dims:random" --concurrency 1:64:x2 --warmup 0.5 \
        --window-requests "$requests" --max-windows 1 --json "$work/perf.json" >/dev/null 2>&1
      python3 -c 'import json,sys
for p in json.load(open(sys.argv[1]))["points"]:
    print(sys.argv[2], p["concurrency"], json.dumps({k: p[k] for k in ("throughput", "p50_us", "p99_us")}))' \
        "$work/perf.json" "${short}_$variant" >>"$work/rows"
    done
    stop_server
  done
  # One CNN request at a time through the server: models on the executor's threads (the
  # default), and on the network thread (--inline-models).
  for mode in server server_inline; do
    extra=()
    [[ $mode == server_inline ]] && extra=(--inline-models)
    start_server "$server" "$work/server.log" --model-repository "$work/plain" "${extra[@]}"
    "$perf" --url "grpc://127.0.0.1:$port" --model emtrk_cnn_onnx \
      --input "patch=FP32:1,1,48,48:random" --concurrency 1 --warmup 0.5 \
      --window-requests 2000 --max-windows 1 --json "$work/perf.json" >/dev/null 2>&1
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]
print("cnn", sys.argv[2], json.dumps({"p50_us": p["p50_us"]}))' "$work/perf.json" "$mode" \
      >>"$work/rows"
    stop_server
  done
  "$overhead" "$work/plain" emtrk_cnn_onnx 2000 |
    python3 -c 'import json,sys
for line in sys.stdin:
    r = json.loads(line); print("cnn", r["path"], json.dumps({"p50_us": r["p50_us"]}))' >>"$work/rows"
done

python3 - "$work/rows" "$rounds" "$delay" <<'PY'
import json, statistics, sys
path, rounds, delay = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for line in open(path):
    who, point, data = line.split(" ", 2)
    rows.setdefault((who, point), []).append(json.loads(data))
def med(who, point, key):
    return statistics.median(r[key] for r in rows[(who, point)])
for short, model in (("mlp", "jet_mlp_onnx"), ("cnn", "emtrk_cnn_onnx")):
    print(f"{model}, batch 1 per request, 2 instances; medians of {rounds} interleaved rounds")
    print(f"{'inflight':>8} {'plain/s':>9} {'p50 us':>8} {'p99 us':>8} {'batched/s':>10} "
          f"{'p50 us':>8} {'p99 us':>8} {'ratio':>6}   (batcher delay {delay} us)")
    for inflight in sorted({int(p) for w, p in rows if w == f"{short}_plain"}):
        p, a, b = str(inflight), f"{short}_plain", f"{short}_batched"
        plain, batched = med(a, p, "throughput"), med(b, p, "throughput")
        print(f"{inflight:>8} {plain:>9.0f} {med(a, p, 'p50_us'):>8.0f} {med(a, p, 'p99_us'):>8.0f} "
              f"{batched:>10.0f} {med(b, p, 'p50_us'):>8.0f} {med(b, p, 'p99_us'):>8.0f} "
              f"{batched / plain:>6.2f}")
    print()
backend = med("cnn", "backend", "p50_us")
print(f"emtrk_cnn_onnx at batch 1, one at a time: p50 us (and over the backend's own call)")
for who, point, label in (("cnn", "backend", "backend, called directly"),
                          ("cnn", "executor", "CpuExecutor::infer"),
                          ("cnn", "client_fallback", "Client, server gone: fallback"),
                          ("cnn", "server", "sonic-perf -> sonic-server (gRPC)"),
                          ("cnn", "server_inline", "... with --inline-models")):
    value = med(who, point, "p50_us")
    print(f"  {label:<36} {value:>8.1f}  {100 * (value - backend) / backend:>+6.1f} %")

PY
