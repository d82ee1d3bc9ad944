# Sourced by the benchmark scripts: a temporary directory $work, and on exit the server stopped
# and $work removed. start_server PROGRAM LOG [OPTIONS...] starts a sonic-server on 127.0.0.1
# (or $server_host, run by the command in the array $server_prefix if set) with a free port, in the background, and sets server_pid and port once it listens (exits 1
# if it does not within 10 s).
work=$(mktemp -d)
server_pid=
cleanup() {
  # A server that died of a signal must not stop the clean-up (set -e in the scripts).
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

start_server() {
  local program=$1 log=$2
  shift 2
  : >"$log"  # exists before the server starts: it is read while the server starts
  ${server_prefix+"${server_prefix[@]}"} "$program" --host "${server_host:-127.0.0.1}" --port 0 "$@" \
    >"$log" 2>&1 &
  server_pid=$!
  port=
  for _ in $(seq 100); do
    port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
    [[ -n $port ]] && return
    sleep 0.1
  done
  echo "$(basename "$0"): sonic-server did not start: $(cat "$log")" >&2
  exit 1
}
