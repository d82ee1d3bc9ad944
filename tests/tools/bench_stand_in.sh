# shellcheck shell=bash
# Sourced by the tests of the benchmark scripts (test_bench_suite.sh, test_bench_scale.sh): a
# scratch folder $tmp removed on exit, check/has/lacks to count failures and go on, program to
# write a stand-in executable, tree_sum to compare a source tree before and after, and
# stand_in_server PATH: a sonic-server that says where it listens and waits to be stopped;
# finish SRC TREE_BEFORE ends a test: the source tree unchanged, and every check passed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
check() {  # check DESCRIPTION COMMAND...: counts a failure and goes on, to report every one
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failed=$((failed + 1)); fi
}
has() { grep -qs -- "$2" "$1"; }  # has FILE REGEX
lacks() { [[ -f $1 ]] && ! grep -qs -- "$2" "$1"; }
tree_sum() { (cd "$1" && find . -type f -exec sha256sum {} + | sort); }  # tree_sum DIR
program() {  # program PATH: the script on stdin becomes an executable
  { echo '#!/usr/bin/env bash'; cat; } >"$1"
  chmod +x "$1"
}
stand_in_server() {
  program "$1" <<'SERVER'
# Says where it listens, as sonic-server does, and waits to be stopped (at most a minute):
# SIGTERM or SIGINT ends it with exit status 0, as they end sonic-server.
trap 'kill "$sleeper"; exit 0' TERM INT
echo "sonic-server listening on 127.0.0.1:50051"
sleep 60 &
sleeper=$!
wait "$sleeper"
SERVER
}
finish() {  # finish SRC TREE_BEFORE: checks the source tree is unchanged, then PASS or FAIL
  echo "== the source tree"
  check "bench/results/ and the rest of the source tree are unchanged after every run" \
    test "$(tree_sum "$1")" = "$2"
  if ((failed)); then
    echo "FAIL: $failed checks failed"
    exit 1
  fi
  echo "PASS"
}
