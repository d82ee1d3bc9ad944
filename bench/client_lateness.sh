#!/usr/bin/env bash
# A client's deadlines under its own overload (issue 58, item 6): two sonic-servers on loopback
# serve identity_fp32, and one client with both as endpoints is sent RATE requests per second,
# open loop, each with a DEADLINE_MS deadline, for SECONDS per round: past what this machine can
# complete, requests pile up in the client (sonic-client-lateness-bench, whose header says what
# each figure is). Four scenarios: grpc:// and tcp://, each with the servers left alone and with
# a server SIGKILLed and restarted on its ports every KILL_EVERY seconds (the two in turn). Each
# prints its ROUNDS rounds and their medians. Writes client_lateness.txt into OUT_DIR: by default
# a new directory under BUILD_DIR/bench-results/.
#
#   bench/client_lateness.sh BUILD_DIR [OUT_DIR]
#   (environment: ROUNDS=3, SECONDS=8, RATE=40000, DEADLINE_MS=400, KILL_EVERY=0.8,
#    SCENARIOS="grpc tcp grpc-kill tcp-kill", BENCH_OPTIONS: more options for the bench)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/out_dir.sh"  # $build and $results
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/start_server.sh"  # $work, start_server, require_built, the cleanup
server=$build/tools/sonic-server
bench=$build/bench/sonic-client-lateness-bench
require_built "$server" "$bench"
rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_ROUND:-8}
rate=${RATE:-40000}
deadline_ms=${DEADLINE_MS:-400}
kill_every=${KILL_EVERY:-0.8}
scenarios=${SCENARIOS:-grpc tcp grpc-kill tcp-kill}
mkdir -p "$results"
results=$(cd "$results" && pwd)
machine="$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
quiet=(--allow-metrics false --allow-http false)

# Two servers on free ports; a restart keeps them (the client reconnects to the same URLs).
# Their process ids live in $work/pidI: the killer, a subshell, restarts them.
declare -a grpc_ports tcp_ports
for i in 0 1; do
  start_server "$server" "$work/server$i.log" --tcp-port 0 "${quiet[@]}"
  echo "$server_pid" >"$work/pid$i"
  grpc_ports[i]=$port
  tcp_ports[i]=$tcp_port
done
stop_servers() {
  local i
  for i in 0 1; do kill "$(cat "$work/pid$i")" 2>/dev/null || true; done
  cleanup
}
trap stop_servers EXIT

restart() {  # I: SIGKILL server I and start it again on its ports
  local i=$1
  kill -KILL "$(cat "$work/pid$i")" 2>/dev/null || true
  # Started from a subshell that exits at once: no shell waits for it to report its death.
  (
    "$server" --host 127.0.0.1 --port "${grpc_ports[i]}" --tcp-port "${tcp_ports[i]}" \
      "${quiet[@]}" >>"$work/server$i.log" 2>&1 &
    echo "$!" >"$work/pid$i"
  )
}

killer() {  # kills a server every $kill_every seconds, the two in turn, until killed itself
  local i=0
  trap 'exit 0' TERM
  while :; do
    sleep "$kill_every"
    restart "$i"
    i=$((1 - i))
  done
}

scenario() {  # NAME
  local name=$1 scheme=${1%-kill} killer_pid=
  local prefix=$scheme ports=("${grpc_ports[@]}")
  [[ $scheme == tcp ]] && ports=("${tcp_ports[@]}")
  if [[ $name == *-kill ]]; then
    killer &
    killer_pid=$!
  fi
  # shellcheck disable=SC2086  # BENCH_OPTIONS are words
  "$bench" --url "$prefix://127.0.0.1:${ports[0]}" --url "$prefix://127.0.0.1:${ports[1]}" \
    --rate "$rate" --seconds "$seconds" --deadline-ms "$deadline_ms" --rounds "$rounds" \
    --label "$name" ${BENCH_OPTIONS:-}
  if [[ -n $killer_pid ]]; then
    kill "$killer_pid" && wait "$killer_pid" 2>/dev/null || true
    # Both servers up again for the next scenario (the killer may have left one starting).
    for i in 0 1; do kill -0 "$(cat "$work/pid$i")" 2>/dev/null || restart "$i"; done
    sleep 1
  fi
  echo
}

{
  echo "sonic-client-lateness-bench, $(date -u +%Y-%m-%dT%H:%MZ), $machine, $(git -C "$repo" \
    rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  for name in $scenarios; do scenario "$name"; done
} | tee "$results/client_lateness.txt"
echo "results in $results/"
