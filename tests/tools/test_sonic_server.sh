#!/usr/bin/env bash
# sonic-server's command line: help, bad options, a taken port, and serving with explicit
# thread counts.  test_sonic_server.sh SONIC_SERVER SIMPLE_CLIENT
set -euo pipefail
server=$1 client=$2
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
passed=0

# Read whole first: grep -q stops reading at its match, and the server's write would then fail.
help=$("$server" --help)
grep -q -- "--threads" <<<"$help" || fail "--help lists the options"
grep -q -- "--quick-model-us" <<<"$help" || fail "--help lists --quick-model-us"
passed=$((passed + 1))

set +e
"$server" --bogus 1 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "unknown option '--bogus'" "$work/err" || fail "unknown option: rc=$rc"
set +e
"$server" --port 99999 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "port" "$work/err" || fail "bad port value: rc=$rc"
passed=$((passed + 1))

start() {  # start LOG ARGS...: runs the server in the background and sets $port
  local log=$1; shift
  : >"$log"  # exists before the server starts: it is read while the server starts
  "$server" "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
    [ -n "$port" ] && return
    sleep 0.05
  done
  cat "$log" >&2
  fail "sonic-server did not start"
}

start "$work/a.log" --host 127.0.0.1 --port 0 --threads 2 --io-threads 2
"$client" "grpc://127.0.0.1:$port" | grep -q "OUTPUT0: 1 2 3" || fail "serving with 2+2 threads"
passed=$((passed + 1))

set +e
"$server" --host 127.0.0.1 --port "$port" 2>"$work/err"; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "cannot listen on 127.0.0.1:$port" "$work/err" || fail "taken port: rc=$rc $(cat "$work/err")"
passed=$((passed + 1))

kill -TERM "${pids[0]}"
wait "${pids[0]}" && grep -q "stopping" "$work/a.log" || fail "SIGTERM stops it cleanly"
passed=$((passed + 1))
echo "sonic-server: $passed passed, 0 failed"
