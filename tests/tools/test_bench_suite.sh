#!/usr/bin/env bash
# bench/suite.sh run as a user would, against a stand-in build directory whose sonic-server,
# sonic-perf, sonic-shm-bench and sonic-memory-bench are small scripts printing what the real
# programs print (nothing listens, nothing is measured; a run takes seconds). The suite is copied
# into a scratch source tree whose bench/results/ holds a "committed run" with its own
# iperf3.json, so a suite that wrote there, or read the link's figures from there, is caught
# without touching the real tree.
#   - iperf3 and valgrind absent from PATH: the summary says the loopback link and the
#     instruction counts were not measured, and why, and gives no link figure;
#   - an OUT_DIR reused from an earlier run: its iperf3.json is neither used nor left behind;
#   - iperf3 that fails every time: not measured either, and said why;
#   - a working iperf3 (a stand-in): this run's figures are printed, the earlier run's are not;
#   - results land in OUT_DIR, by default a new BUILD_DIR/bench-results/<UTC time>/, and the
#     source tree's bench/results/ is unchanged;
#   - usage errors are exit status 2, -h prints the usage.
#   test_bench_suite.sh SUITE_SH
set -euo pipefail
[[ $# -eq 1 && -f $1 ]] || { echo "usage: $0 SUITE_SH" >&2; exit 2; }
command -v python3 >/dev/null || { echo "FAIL: bench/suite.sh needs python3"; exit 1; }
source "$(dirname "$0")/bench_stand_in.sh"  # $tmp, check, has, lacks, program, finish, ...

# The scratch source tree: the suite under test, and a committed run in bench/results/.
src=$tmp/src
mkdir -p "$src/bench/results"
cp "$1" "$src/bench/suite.sh"
cp "$(dirname "$1")/out_dir.sh" "$src/bench/out_dir.sh"
chmod +x "$src/bench/suite.sh"
suite=$src/bench/suite.sh
# An earlier run's link figures, 12.34 Gbit/s, none of which this test's runs may print.
stale_iperf3() {
  cat >"$1" <<'EOF'
{"end": {"sum_sent": {"seconds": 3.0, "bytes": 4627500000, "bits_per_second": 12340000000.0},
 "sum_received": {"seconds": 3.0, "bytes": 4627500000, "bits_per_second": 12340000000.0},
 "cpu_utilization_percent": {"host_total": 90.0, "remote_total": 60.0}}}
EOF
}
stale_iperf3 "$src/bench/results/iperf3.json"
echo "the committed run" >"$src/bench/results/summary.txt"
tree_before=$(tree_sum "$src")

# The stand-in build directory.
build=$tmp/build
mkdir -p "$build/tools" "$build/bench"
stand_in_server "$build/tools/sonic-server"
program "$build/tools/sonic-perf" <<'EOF'
# One point in the form of sonic-perf --json.
json=
while (($#)); do
  [[ $1 == --json ]] && json=$2
  shift
done
[[ -n $json ]] || { echo "sonic-perf: no --json" >&2; exit 2; }
cat >"$json" <<'JSON'
{"points": [{"concurrency": 1, "requests": 4000, "all_requests": 5000, "throughput": 4321.0,
  "p50_us": 200.0, "p99_us": 400.0, "client_cpu_us": 25.0}]}
JSON
EOF
program "$build/bench/sonic-shm-bench" <<'EOF'
echo "     size    grpc ms grpc GB/s     shm ms  shm GB/s  speedup  memcpy GB/s  shm/memcpy"
echo "   64 KiB      0.063      2.08      0.051      2.59     1.2x        47.07          6%"
EOF
program "$build/bench/sonic-memory-bench" <<'EOF'
printf 'requests        RSS KiB\n0                  4560\n1000000            5200\n'
EOF

# PATH without iperf3 and valgrind: every other command of the caller's PATH, linked into one
# folder, earlier PATH entries first.
bare=$tmp/bare-bin
mkdir "$bare"
IFS=: read -ra dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
  [[ $dir == /* && -d $dir ]] || continue
  entries=("$dir"/*)
  [[ -e ${entries[0]} ]] || continue
  ln -s -- "${entries[@]}" "$bare" 2>/dev/null || true  # names already linked stay
done
rm -f "$bare/iperf3" "$bare/valgrind"
# The interpreter python3 runs, itself: a wrapper (pyenv's shim) costs more than the suite's
# scripts, about 20 a run.
ln -sf "$(python3 -c 'import sys; print(sys.executable)')" "$bare/python3"
if PATH=$bare command -v iperf3 >/dev/null || PATH=$bare command -v valgrind >/dev/null; then
  echo "FAIL: iperf3 or valgrind still on the bare PATH"
  exit 1
fi
# Stand-in iperf3s: one that fails every time, one that reports 43.21 Gbit/s.
mkdir "$tmp/failing-iperf3" "$tmp/working-iperf3"
program "$tmp/failing-iperf3/iperf3" <<<'exit 1'
program "$tmp/working-iperf3/iperf3" <<'EOF'
[[ " $* " == *" -c "* ]] || exit 0  # the server (-s -1): ends at once
cat <<'JSON'
{"end": {"sum_sent": {"seconds": 3.0, "bytes": 16203750000, "bits_per_second": 43210000000.0},
 "sum_received": {"seconds": 3.0, "bytes": 16203750000, "bits_per_second": 43210000000.0},
 "cpu_utilization_percent": {"host_total": 80.0, "remote_total": 50.0}}}
JSON
EOF

run=0
suite_run() {  # suite_run PATH ARGS...: the suite's output in $out, its exit status in $rc
  run=$((run + 1))
  out=$tmp/run$run.out
  set +e
  (cd "$tmp" && timeout 60 env PATH="$1" "$suite" "${@:2}" >"$out" 2>&1)
  rc=$?
  set -e
}
# No figure of the loopback link: no rate, no floor, nothing of the earlier run's 12.34 Gbit/s.
no_link_figures() {
  lacks "$1" "Gbit/s" && lacks "$1" "ms of wire time" && lacks "$1" "12\.34" &&
    lacks "$1" "iperf3 floor for a 4 MiB round trip: [0-9]"
}

echo "== iperf3 and valgrind not installed, OUT_DIR left to its default"
suite_run "$bare" "$build"
check "the run succeeds (exit status $rc)" test "$rc" -eq 0
runs=()
[[ -d $build/bench-results ]] && mapfile -t runs < <(ls "$build/bench-results")
check "one new directory under BUILD_DIR/bench-results/ (${runs[*]:-none})" test "${#runs[@]}" -eq 1
check "named after the UTC time of the run (${runs[0]:-})" \
  grep -Eqx '[0-9]{8}T[0-9]{6}Z' <<<"${runs[0]:-}"
results=$build/bench-results/${runs[0]:-none}
summary=$results/summary.txt
check "the summary and a JSON per point are in it" \
  ls "$summary" "$results/perf-64B-c1.json" "$results/perf-4194304B-c1-shm.json" >/dev/null 2>&1
check "the run says where its results are" has "$out" "^results in $results/\$"
check "the summary has the stand-in programs' rows" has "$summary" "^64 B .* 4321.0 "
check "the summary says the loopback was not measured because iperf3 is not installed" \
  has "$summary" "^iperf3 loopback: not measured: iperf3 is not installed"
check "the summary says the 4 MiB floor was not measured" \
  has "$summary" "^iperf3 floor for a 4 MiB round trip: not measured: iperf3 is not installed"
check "the summary gives no figure of the loopback link" no_link_figures "$summary"
check "the summary says the instructions were not measured because valgrind is not installed" \
  has "$summary" "^client instructions per request: not measured: valgrind is not installed"
check "no iperf3.json among the results" test ! -e "$results/iperf3.json"

echo "== an OUT_DIR reused from an earlier run, iperf3 not installed"
reused=$tmp/reused
mkdir "$reused"
stale_iperf3 "$reused/iperf3.json"
echo "the earlier run" >"$reused/summary.txt"
suite_run "$bare" "$build" "$reused"
check "the run succeeds (exit status $rc)" test "$rc" -eq 0
check "the summary is this run's" lacks "$reused/summary.txt" "the earlier run"
check "the summary says the loopback was not measured" \
  has "$reused/summary.txt" "^iperf3 loopback: not measured: iperf3 is not installed"
check "the earlier run's link figures are not used" no_link_figures "$reused/summary.txt"
check "the earlier run's iperf3.json is not left among this run's results" \
  test ! -e "$reused/iperf3.json"

echo "== iperf3 that fails every time"
suite_run "$tmp/failing-iperf3:$bare" "$build" "$tmp/failing"
check "the run succeeds (exit status $rc)" test "$rc" -eq 0
check "the summary says the loopback was not measured because iperf3 failed" \
  has "$tmp/failing/summary.txt" "^iperf3 loopback: not measured: iperf3 failed 20 times"
check "the summary gives no figure of the loopback link" \
  no_link_figures "$tmp/failing/summary.txt"
check "no iperf3.json among the results" test ! -e "$tmp/failing/iperf3.json"

echo "== iperf3 that works, in an OUT_DIR holding an earlier run's iperf3.json"
mkdir "$tmp/measured"
stale_iperf3 "$tmp/measured/iperf3.json"
suite_run "$tmp/working-iperf3:$bare" "$build" "$tmp/measured"
check "the run succeeds (exit status $rc)" test "$rc" -eq 0
check "the summary gives this run's loopback rate" \
  has "$tmp/measured/summary.txt" "^iperf3 loopback: 43.21 Gbit/s$"
# 2 x 4 MiB at 43.21 Gbit/s
check "the summary gives this run's 4 MiB floor" \
  has "$tmp/measured/summary.txt" "^iperf3 floor for a 4 MiB round trip: 1.55 ms of wire time"
check "nothing of the earlier run's" lacks "$tmp/measured/summary.txt" "12\.34"
check "iperf3.json is this run's" has "$tmp/measured/iperf3.json" "43210000000"

echo "== usage"
suite_run "$bare"
check "no arguments: exit status 2 (got $rc)" test "$rc" -eq 2
check "no arguments: the usage" has "$out" "^usage: .* BUILD_DIR \[OUT_DIR\]"
suite_run "$bare" "$build" "$tmp/three" extra
check "three arguments: exit status 2 (got $rc)" test "$rc" -eq 2
check "three arguments: nothing written" test ! -e "$tmp/three"
suite_run "$bare" -h
check "-h: exit status 0 (got $rc)" test "$rc" -eq 0
check "-h: the usage" has "$out" "^usage: .* BUILD_DIR \[OUT_DIR\]"
suite_run "$bare" "$tmp/no-build" "$tmp/nothing"
check "a build directory without the programs: exit status 2 (got $rc)" test "$rc" -eq 2
check "a build directory without the programs: says which is not built" has "$out" "is not built"

finish "$src" "$tree_before"
