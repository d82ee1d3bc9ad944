#!/usr/bin/env bash
# The mini-workflow: a ProtoDUNE-like job (examples/workflow/protodune_job.cpp) with its CNN
#   1. on the job's own CPU (the model file loaded in the job),
#   2. as a service: sonic-server on a free loopback port, serving the generated models with
#      one model thread, standing in for a remote GPU server (the job keeps the other core),
#   3. as a service with the server killed halfway: the job goes on with the same model file
#      on its CPU (the fallback), losing no event,
#   4. a scaling study: 1, 2, 4, ... jobs against the one server, each standing for a job on
#      another node (its CPU stage waits instead of computing), until adding jobs no longer
#      adds events/s: the ratio of jobs to one server at which the server saturates.
# It prints events/s and each event's time split; the study goes to OUT/scaling.csv and
# OUT/scaling.svg.
#
#   examples/workflow/run.sh BUILD_DIR [EVENTS (24)] [OUT (BUILD_DIR/workflow)]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [EVENTS] [OUT]}
events=${2:-24}
out=${3:-$build/workflow}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
job=$build/examples/workflow/protodune_job
models=$build/models/repository
[[ -x $job ]] || { echo "workflow: $job is not built (it needs the ONNX backend)" >&2; exit 2; }
[[ -d $models/emtrk_cnn_onnx ]] || { echo "workflow: $models is missing (the build generates it)" >&2; exit 2; }
mkdir -p "$out"
source "$repo/bench/start_server.sh"

job_options=(--repository "$models" --patches 1000 --cpu-ms 30)
# "events/s (preprocess send wait infer)" of a RESULT line.
summary() {
  sed -n 's/^RESULT .*events_per_s=\([^ ]*\) preprocess_ms=\([^ ]*\) send_ms=\([^ ]*\) wait_ms=\([^ ]*\) infer_ms=\([^ ]*\) remote=\([^ ]*\) local=\([^ ]*\)$/\1 \2 \3 \4 \5 \6 \7/p'
}
row() {  # NAME, then the fields of summary
  printf '%-34s %8s %11s %8s %8s %9s %7s %6s\n' "$@"
}

echo "ProtoDUNE-like job: $events events of 1000 48x48 patches through the EmTrkMichelId-shaped CNN,"
echo "30 ms of CPU work per event; $(nproc) cores here"
row "" "events/s" "preprocess" "send" "wait" "infer" "remote" "local"
row "" "" "ms/event" "ms" "ms" "ms" "events" "events"
# shellcheck disable=SC2046
row "1. CNN on the job's CPU" $("$job" --mode local --events "$events" "${job_options[@]}" | summary)

start_server "$build/tools/sonic-server" "$work/server.log" --threads 1 --model-repository "$models"
url="grpc://127.0.0.1:$port"
# shellcheck disable=SC2046
row "2. CNN as a service" $("$job" --mode service --url "$url" --events "$events" "${job_options[@]}" | summary)

# 3: the server is killed once half the events are done.
"$job" --mode service --url "$url" --events "$events" --fallback --progress "$work/progress" \
  "${job_options[@]}" >"$work/fallback.out" &
job_pid=$!
until [[ $(cat "$work/progress" 2>/dev/null || echo 0) -ge $((events / 2)) ]]; do
  kill -0 "$job_pid" 2>/dev/null || break
  sleep 0.05
done
kill -9 "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
wait "$job_pid"
# shellcheck disable=SC2046
row "3. service, server killed halfway" $(summary <"$work/fallback.out")
echo "   (infer: the server's compute per event, summed over its chunks, or the local run's)"

# 4: the scaling study.
echo
echo "Scaling: jobs on other nodes (CPU stage 100 ms, not computed here) against one server"
echo "(one model thread), 500 patches per event; events/s of all jobs together"
start_server "$build/tools/sonic-server" "$work/server.log" --threads 1 --model-repository "$models"
url="grpc://127.0.0.1:$port"
echo "jobs,events_per_s" >"$out/scaling.csv"
previous=0
saturated=
for jobs in 1 2 4 8 16; do
  pids=()
  for j in $(seq "$jobs"); do
    "$job" --mode service --url "$url" --events 12 --patches 500 --cpu-ms 100 --cpu-stage sleep \
      >"$work/job$j.out" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  total=$(cat "$work"/job*.out | summary | awk '{ sum += $1 } END { printf "%.1f", sum }')
  rm -f "$work"/job*.out
  echo "$jobs,$total" >>"$out/scaling.csv"
  printf '  %2d jobs: %6.1f events/s\n' "$jobs" "$total"
  if [[ -z $saturated ]] && awk -v now="$total" -v before="$previous" 'BEGIN { exit !(before > 0 && now < 1.15 * before) }'; then
    saturated=$jobs
  fi
  previous=$total
  [[ -n $saturated ]] && break
done
"$job" --plot "$out/scaling.csv" "$out/scaling.svg"
if [[ -n $saturated ]]; then
  echo "The server saturates at about $((saturated / 2)) to $saturated jobs per server (more jobs add under 15 %)."
else
  echo "The server did not saturate with 16 jobs."
fi
echo "Plot: $out/scaling.svg"
