#!/usr/bin/env bash
# Runs sonic-transport-bench (grpc:// vs tcp:// vs tcp+zstd://) twice: against a sonic-server
# on loopback, then against one behind a 1 Gbit link (veth + tc tbf) between this network
# namespace and one the script creates (addresses 10.231.0.1/2, private to this machine). The
# limited link needs root, ip and tc; without them it is skipped with a message.
#
#   bench/transports.sh BUILD_DIR [extra sonic-transport-bench options]
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [options]}
shift
server=$build/tools/sonic-server
bench=$build/bench/sonic-transport-bench
for program in "$server" "$bench"; do
  [[ -x $program ]] || { echo "transports: $program is not built" >&2; exit 2; }
done

log=$(mktemp)
cleanup() {
  [[ -n ${server_pid:-} ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -f "$log"
}
trap cleanup EXIT
source "$(dirname "$0")/limited_link.sh"

# Starts sonic-server (prefix: a command to run it in, e.g. ip netns exec) and reads its ports.
start_server() {
  local host=$1
  shift
  "$@" "$server" --host "$host" --port 0 --tcp-port 0 >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    grpc_port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
    tcp_port=$(sed -n 's/^sonic-server tcp listening on .*:\([0-9]*\)$/\1/p' "$log")
    [[ -n $grpc_port && -n $tcp_port ]] && return 0
    sleep 0.1
  done
  echo "transports: sonic-server did not start:" >&2
  cat "$log" >&2
  exit 1
}

stop_server() {
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

echo "== loopback (127.0.0.1), $(nproc) cores"
start_server 127.0.0.1
"$bench" --grpc "127.0.0.1:$grpc_port" --tcp "127.0.0.1:$tcp_port" --server-pid "$server_pid" \
  --interface lo "$@"
stop_server

echo
echo "== 1 Gbit link (veth + tc tbf rate 1gbit) to a server in a network namespace"
if ! make_limited_link 1gbit; then
  echo "skipped: creating a network namespace needs root with ip and tc (iproute2)"
  exit 0
fi
start_server 10.231.0.2 "${in_netns[@]}"
"$bench" --grpc "10.231.0.2:$grpc_port" --tcp "10.231.0.2:$tcp_port" --server-pid "$server_pid" \
  --interface "$veth" "$@"
