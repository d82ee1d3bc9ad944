#!/usr/bin/env bash
# The three programs read their command lines one way, as a new user tries them: -h and --help,
# --version, "--opt value" and "--opt=value", short options, the same exit statuses (0 ok,
# 1 a failure while running, 2 a mistake on the command line) with a one-line message, the
# same tensor syntax (1x16 and 1,16, NAME=@FILE.npy), and every transport from sonic-infer.
#   test_command_lines.sh SONIC_SERVER SONIC_INFER SONIC_PERF
set -euo pipefail
server=$1 infer=$2 perf=$3
source "$(dirname "$0")/serve.sh"
serve "$server" --tcp-port 0
url=grpc://127.0.0.1:$port
passed=0
pass() { passed=$((passed + 1)); }

# status COMMAND...: runs it with stdout and stderr in $work/out and $work/err, sets $rc.
status() {
  set +e
  "$@" >"$work/out" 2>"$work/err"
  rc=$?
  set -e
}

version=$(sed -n 's/^#define SONIC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$(dirname "$0")/../../include/sonic/version.hpp" | paste -sd.)
for tool in "$server" "$infer" "$perf"; do
  name=$(basename "$tool")
  for help in -h --help; do
    status "$tool" "$help"
    [ $rc -eq 0 ] && grep -q "^usage: $name" "$work/out" && grep -q -- "--version" "$work/out" &&
      grep -q "Exit status: 0" "$work/out" || fail "$name $help: rc=$rc $(cat "$work/out")"
  done
  status "$tool" --version
  [ $rc -eq 0 ] && [ "$(cat "$work/out")" = "$name $version" ] ||
    fail "$name --version: rc=$rc '$(cat "$work/out")', not '$name $version'"
  # A typo: status 2, one line naming the option and the likely one, not the whole help.
  status "$tool" --verison
  [ $rc -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && [ ! -s "$work/out" ] &&
    grep -q "unknown option '--verison' (did you mean --version?)" "$work/err" &&
    grep -q "see $name --help" "$work/err" || fail "$name --verison: rc=$rc $(cat "$work/err")"
  pass
done

# A missing value and a value given to a flag are usage errors in every program.
status "$server" --port
[ $rc -eq 2 ] && grep -q "^sonic-server: --port needs a value" "$work/err" || fail "server --port"
status "$infer" --list=yes
[ $rc -eq 2 ] && grep -q "^sonic-infer: --list takes no value" "$work/err" || fail "infer --list=yes"
status "$perf" -m simple --window=-1
[ $rc -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
  grep -q "^sonic-perf: --window takes a number above 0, not '-1'" "$work/err" ||
  fail "perf --window=-1: $(cat "$work/err")"
status "$server" --port=70000
[ $rc -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
  grep -q "^sonic-server: --port needs a number from 0 to 65535, got '70000'" "$work/err" ||
  fail "server --port=70000: $(cat "$work/err")"
pass

# --opt=value and short options mean what the long ones do.
status "$infer" --url="$url" -x 1 simple INPUT0=INT32:1x16:*1 INPUT1=INT32:1x16:*2
[ $rc -eq 0 ] && grep -q "model: simple (version 1)" "$work/out" || fail "infer --url=: $(cat "$work/err")"
status "$infer" -u "$url" --model-version=1 -o OUTPUT1 simple INPUT0=INT32:1x16:*1 INPUT1=INT32:1x16:*2
[ $rc -eq 0 ] && grep -q "^OUTPUT1 " "$work/out" && ! grep -q "^OUTPUT0 " "$work/out" ||
  fail "infer -u -o: $(cat "$work/out" "$work/err")"
quick=(--warmup=0.1 --window=0.2 --max-windows=1 --stable-windows=1)
status "$perf" -u "$url" -msimple "${quick[@]}"
[ $rc -eq 0 ] && grep -q "^concurrency 1 " "$work/out" || fail "perf -msimple: $(cat "$work/err")"
"$server" --host=127.0.0.1 --port=0 --threads=1 >"$work/second.log" 2>&1 &
second=$!
for _ in $(seq 100); do grep -q "listening on" "$work/second.log" && break; sleep 0.05; done
kill "$second"
wait "$second" || true
grep -q "^sonic-server listening on 127.0.0.1:" "$work/second.log" ||
  fail "server --port=0: $(cat "$work/second.log")"
pass

# One tensor syntax: 1x16 and 1,16 are the same shape in both clients, datatypes in any case,
# and a .npy file is NAME=@FILE in both.
status "$infer" -u "$url" --save-dir "$work/npy" simple INPUT0=int32:1,16:*1 INPUT1=INT32:1x16:*2
[ $rc -eq 0 ] && grep -q "3, 3, 3" "$work/out" || fail "infer 1,16: $(cat "$work/err")"
status "$perf" -u "$url" -m simple --input "INPUT0=@$work/npy/OUTPUT0.npy" \
  --input INPUT1=int32:1,16:zero "${quick[@]}"
[ $rc -eq 0 ] || fail "perf NAME=@FILE and 1,16: $(cat "$work/err")"
status "$perf" -u "$url" -m simple --input INPUT0=INT32:1x16 --input INPUT1=INT32:1x16 "${quick[@]}"
[ $rc -eq 0 ] || fail "perf 1x16: $(cat "$work/err")"
status "$infer" -u "$url" simple INPUT0=INT32:1x16y:*1 INPUT1=INT32:1x16:*2
[ $rc -eq 2 ] && grep -q "bad dimension '16y' in shape '1x16y'" "$work/err" ||
  fail "infer bad shape: $(cat "$work/err")"
status "$perf" -u "$url" -m simple --input INPUT0=INT32:1x16y
[ $rc -eq 2 ] && grep -q "bad dimension '16y' in shape '1x16y'" "$work/err" ||
  fail "perf bad shape: $(cat "$work/err")"
pass

# sonic-infer reaches every transport linked, and tries each endpoint of a list in turn.
for each in "grpc+shm://127.0.0.1:$port" "tcp://127.0.0.1:$tcp" "tcp+zstd://127.0.0.1:$tcp" \
  "http://127.0.0.1:$http" "grpc://127.0.0.1:1,$url"; do
  status "$infer" -u "$each" simple INPUT0=INT32:1x16:*1 INPUT1=INT32:1x16:*2
  [ $rc -eq 0 ] && grep -q "3, 3, 3" "$work/out" || fail "infer over $each: $(cat "$work/err")"
done
pass

# A failure while running is status 1 in every program, with the endpoint named.
status "$infer" -u grpc://127.0.0.1:1 simple INPUT0=INT32:1x16:*1 INPUT1=INT32:1x16:*2
[ $rc -eq 1 ] && grep -q "grpc://127.0.0.1:1" "$work/err" || fail "infer at a dead port: rc=$rc"
status "$perf" -u grpc://127.0.0.1:1 -m simple "${quick[@]}"
[ $rc -eq 1 ] && grep -q "grpc://127.0.0.1:1" "$work/err" || fail "perf at a dead port: rc=$rc"
status "$server" --host 127.0.0.1 --port "$port"
[ $rc -eq 1 ] && grep -q "cannot listen on 127.0.0.1:$port" "$work/err" || fail "server: port taken"
pass

echo "command lines: $passed passed, 0 failed"
