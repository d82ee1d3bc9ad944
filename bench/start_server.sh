# Sourced by the benchmark scripts: a temporary directory $work, and on exit every server started
# here stopped and $work removed. start_server PROGRAM LOG [OPTIONS...] starts a sonic-server on
# 127.0.0.1 (or $server_host, run by the command in the array $server_prefix if set) with a free
# port, in the background, and sets server_pid and port once it listens, tcp_port when
# OPTIONS give --tcp-port, and http_port (its HTTP/REST port) when they give --http-port (exits
# 1 if it does not within 10 s). Several may run at once.
# perf_summary JSON prints the first point of a sonic-perf --json file as the JSON object of the
# figures the scripts compare (throughput, p50_us, p99_us, client_cpu_us). require_built
# PROGRAM... exits 2 naming the first that is not built. $python is Debian's interpreter, where
# python3-grpcio lives (the one on PATH may be another: pyenv, a venv), unless PYTHON says.
work=$(mktemp -d)
python=${PYTHON:-/usr/bin/python3}
[[ -x $python ]] || python=python3
server_pid=
server_pids=()
cleanup() {
  # A server that died of a signal must not stop the clean-up (set -e in the scripts).
  local pid
  for pid in "${server_pids[@]}"; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

start_server() {
  local program=$1 log=$2
  shift 2
  local wants_tcp= wants_http=
  [[ " $* " == *" --tcp-port "* ]] && wants_tcp=1
  [[ " $* " == *" --http-port "* ]] && wants_http=1
  : >"$log"  # exists before the server starts: it is read while the server starts
  ${server_prefix+"${server_prefix[@]}"} "$program" --host "${server_host:-127.0.0.1}" --port 0 "$@" \
    >"$log" 2>&1 &
  server_pid=$!
  server_pids+=("$server_pid")
  port=
  tcp_port=
  http_port=
  for _ in $(seq 100); do
    port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
    tcp_port=$(sed -n 's/^sonic-server tcp listening on .*:\([0-9]*\)$/\1/p' "$log")
    http_port=$(sed -n 's/^sonic-server http listening on .*:\([0-9]*\)$/\1/p' "$log")
    [[ -n $port && ( -z $wants_tcp || -n $tcp_port ) && ( -z $wants_http || -n $http_port ) ]] &&
      return
    sleep 0.1
  done
  echo "$(basename "$0"): sonic-server did not start: $(cat "$log")" >&2
  exit 1
}

require_built() {
  local program
  for program in "$@"; do
    [[ -x $program ]] || { echo "$(basename "$0"): $program is not built" >&2; exit 2; }
  done
}

perf_summary() {
  "$python" -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]
print(json.dumps({k: p[k] for k in ("throughput", "p50_us", "p99_us", "client_cpu_us")}))' "$1"
}
