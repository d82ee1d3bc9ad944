# Sourced by the benchmark scripts: make_limited_link RATE puts a network namespace behind a
# veth pair shaped to RATE (tc tbf, both directions): this side is 10.231.0.1, the namespace
# 10.231.0.2 (private to this machine), run commands there with "${in_netns[@]}". Needs root
# with ip and tc; returns 1 (creating nothing) without them. Removed when the script exits,
# after the script's own `cleanup`, which it chains.
make_limited_link() {
  local rate=$1
  netns=sonic-bench-$$
  veth=sonic-b0-$$
  if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || ! command -v tc >/dev/null ||
     ! ip netns add "$netns" 2>/dev/null; then
    return 1
  fi
  trap 'cleanup_link' EXIT
  ip link add "$veth" type veth peer name sonic-b1-$$
  ip link set sonic-b1-$$ netns "$netns"
  ip addr add 10.231.0.1/30 dev "$veth"
  ip link set "$veth" up
  ip netns exec "$netns" ip addr add 10.231.0.2/30 dev sonic-b1-$$
  ip netns exec "$netns" ip link set sonic-b1-$$ up
  ip netns exec "$netns" ip link set lo up
  tc qdisc add dev "$veth" root tbf rate "$rate" burst 256kb latency 50ms
  ip netns exec "$netns" tc qdisc add dev sonic-b1-$$ root tbf rate "$rate" burst 256kb latency 50ms
  in_netns=(ip netns exec "$netns")
}

cleanup_link() {
  if declare -F cleanup >/dev/null; then cleanup; fi
  ip netns del "$netns" 2>/dev/null || true
  ip link del "$veth" 2>/dev/null || true
}

# loopback_then_link TITLE COMMAND [SERVER OPTIONS...]: starts sonic-server ($server, with
# start_server from start_server.sh) on loopback and runs COMMAND URL under "== TITLE", then
# the same with the server behind a 1 Gbit link in a network namespace (skipped, saying so,
# without root).
loopback_then_link() {
  local title=$1 command=$2
  shift 2
  echo "== $title"
  start_server "$server" "$work/server.log" "$@"
  "$command" "grpc://127.0.0.1:$port"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=

  echo
  echo "== 1 Gbit link (veth + tc tbf) to a server in a network namespace"
  if ! make_limited_link 1gbit; then
    echo "skipped: creating a network namespace needs root with ip and tc (iproute2)"
    return 0
  fi
  server_host=10.231.0.2
  server_prefix=("${in_netns[@]}")
  start_server "$server" "$work/server.log" "$@"
  "$command" "grpc://10.231.0.2:$port"
}
