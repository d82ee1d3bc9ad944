# Sourced by the tool tests. `serve SONIC_SERVER [OPTIONS...]` starts sonic-server on loopback
# ports it picks, logging into a fresh $work folder, and waits until it says where it listens:
# sets $pid, $port, $http (its HTTP/REST port, unless --allow-http false), and $tcp when started
# with --tcp-port. Each server serve started, and its $work, go away when the test exits
# (stop_server ends the last one sooner); a server that does not start fails the test. A test
# may start several.
fail() { echo "FAIL: $*"; exit 1; }

served_pids=() served_works=()
stop_every_server() {
  local each
  for each in "${served_pids[@]}"; do
    kill "$each" 2>/dev/null || true
    wait "$each" 2>/dev/null || true
  done
  rm -rf "${served_works[@]}"
}

serve() {
  local server=$1
  shift
  work=$(mktemp -d)
  : >"$work/server.log"  # exists before the server starts: it is read while the server starts
  "$server" --host 127.0.0.1 --port 0 "$@" >"$work/server.log" 2>&1 &
  pid=$!
  served_pids+=("$pid") served_works+=("$work")
  trap stop_every_server EXIT
  local want_tcp=
  [[ " $* " == *" --tcp-port "* ]] && want_tcp=1
  port= tcp=
  for _ in $(seq 100); do
    port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$work/server.log")
    tcp=$(sed -n 's/^sonic-server tcp listening on .*:\([0-9]*\)$/\1/p' "$work/server.log")
    http=$(sed -n 's/^sonic-server http listening on .*:\([0-9]*\)$/\1/p' "$work/server.log")
    [ -n "$port" ] && { [ -z "$want_tcp" ] || [ -n "$tcp" ]; } &&
      { [ -n "$http" ] || [[ " $* " == *" --allow-http false "* ]]; } && return 0
    sleep 0.05
  done
  fail "sonic-server did not start: $(cat "$work/server.log")"
}

# Stops the server `serve` started last and removes its $work folder.
stop_server() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
