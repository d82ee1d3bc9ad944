#!/usr/bin/env bash
# sonic-infer against a real sonic-server: inline values, .npy round trip through --save-dir,
# --list, and the errors a user would make.  test_sonic_infer.sh SONIC_SERVER SONIC_INFER
set -euo pipefail
server=$1 infer=$2
source "$(dirname "$0")/serve.sh"
serve "$server"
url=grpc://127.0.0.1:$port

out=$("$infer" --url "$url" simple INPUT0=INT32:1x16:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 INPUT1=INT32:1x16:*1)
grep -q "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16" <<<"$out" || fail "simple sum: $out"
grep -q "\-1, 0, 1, 2" <<<"$out" || fail "simple difference: $out"
grep -q "^latency: [0-9.]* ms" <<<"$out" || fail "no latency line: $out"

"$infer" --url "$url" --save-dir "$work/out" identity_fp32 INPUT0=FP32:2x3:0.5,-2,3,4,5,6 >/dev/null
"$infer" --url "$url" identity_fp32 INPUT0=@"$work/out/OUTPUT0.npy" | grep -q "0.5, -2, 3, 4, 5, 6" ||
  fail ".npy round trip"

out=$("$infer" --url "$url" --list)
grep -q "^  simple v1  READY$" <<<"$out" || fail "--list names the models and their states: $out"

set +e
"$infer" --url "$url" simple INPUT0=FP32:1x16:*1 INPUT1=INT32:1x16:*1 2>"$work/err"; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "INVALID_ARGUMENT" "$work/err" || fail "wrong dtype: rc=$rc $(cat "$work/err")"
set +e
"$infer" --url "$url" nope INPUT0=FP32:1:1 2>"$work/err"; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "NOT_FOUND" "$work/err" || fail "unknown model: rc=$rc $(cat "$work/err")"
set +e
"$infer" --url "$url" simple INPUT0=INT32:1x16:1,2 2>"$work/err"; rc=$?
set -e
[ $rc -eq 2 ] || fail "wrong value count must be a usage error: rc=$rc"

# A server that requires a bearer token: refused without --token-file, served with it.
stop_server
tokens=$(mktemp -d)
echo "tool-s3cret" >"$tokens/token"
serve "$server" --auth-token-file "$tokens/token"
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work" "$tokens"' EXIT
url=grpc://127.0.0.1:$port
set +e
"$infer" --url "$url" simple INPUT0=INT32:1x16:*1 INPUT1=INT32:1x16:*1 2>"$work/err"; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "UNAUTHENTICATED" "$work/err" || fail "no token: rc=$rc $(cat "$work/err")"
"$infer" --url "$url" --token-file "$tokens/token" simple INPUT0=INT32:1x16:*1 INPUT1=INT32:1x16:*1 |
  grep -q "2, 2, 2" || fail "--token-file: the token was not sent"
echo "sonic-infer: 8 passed, 0 failed"
