#!/usr/bin/env bash
# bench/scale.sh run as a user would, against a stand-in build directory whose sonic-server and
# sonic-scale-bench are small scripts printing what the real programs print (nothing listens,
# nothing is measured; a run takes a second or two). The script is copied, with the
# start_server.sh beside it, into a scratch source tree whose bench/results/ holds a "committed
# run", so a script that wrote there is caught without touching the real tree.
#   - results land in OUT_DIR, by default a new BUILD_DIR/bench-results/<UTC time>/, or the
#     directory named (a relative one included), and the run says where;
#   - the source tree's bench/results/ is unchanged;
#   - usage errors are exit status 2, -h prints the usage.
#   test_bench_scale.sh SCALE_SH
set -euo pipefail
[[ $# -eq 1 && -f $1 ]] || { echo "usage: $0 SCALE_SH" >&2; exit 2; }
source "$(dirname "$0")/bench_stand_in.sh"  # $tmp, check, has, lacks, program, finish, ...

# The scratch source tree: the script under test, what it sources, and a committed run.
src=$tmp/src
mkdir -p "$src/bench/results"
cp "$1" "$src/bench/scale.sh"
cp "$(dirname "$1")/start_server.sh" "$src/bench/start_server.sh"
cp "$(dirname "$1")/out_dir.sh" "$src/bench/out_dir.sh"
chmod +x "$src/bench/scale.sh"
scale=$src/bench/scale.sh
for name in scale-in-flight scale-connections; do
  echo "the committed run" >"$src/bench/results/$name.txt"
  echo "<svg/>" >"$src/bench/results/$name.svg"
done
tree_before=$(tree_sum "$src")

# The stand-in build directory.
build=$tmp/build
mkdir -p "$build/tools" "$build/bench"
stand_in_server "$build/tools/sonic-server"
program "$build/bench/sonic-scale-bench" <<'EOF'
# A sweep's table, and its plot where --plot says.
plot=
for ((i = 2; i <= $#; i++)); do
  [[ ${!i} == --plot ]] && { i=$((i + 1)); plot=${!i}; }
done
[[ -n $plot ]] || { echo "sonic-scale-bench: no --plot" >&2; exit 2; }
echo "<svg>$1</svg>" >"$plot"
echo "   $1 sweep"
echo "      1000           2500           2436           2769        all"
EOF

run=0
scale_run() {  # scale_run ARGS...: the script's output in $out, its exit status in $rc
  run=$((run + 1))
  out=$tmp/run$run.out
  set +e
  (cd "$tmp" && timeout 60 "$scale" "$@" >"$out" 2>&1)
  rc=$?
  set -e
}
# sweep_results DIR: both sweeps' tables and plots are in DIR, this run's.
sweep_results() {
  has "$1/scale-in-flight.txt" "in-flight sweep" && has "$1/scale-in-flight.svg" "in-flight" &&
    has "$1/scale-connections.txt" "connections sweep" &&
    has "$1/scale-connections.svg" "connections"
}

echo "== OUT_DIR left to its default"
scale_run "$build"
check "the run succeeds (exit status $rc)" test "$rc" -eq 0
runs=()
[[ -d $build/bench-results ]] && mapfile -t runs < <(ls "$build/bench-results")
check "one new directory under BUILD_DIR/bench-results/ (${runs[*]:-none})" test "${#runs[@]}" -eq 1
check "named after the UTC time of the run (${runs[0]:-})" \
  grep -Eqx '[0-9]{8}T[0-9]{6}Z' <<<"${runs[0]:-}"
results=$build/bench-results/${runs[0]:-none}
check "both sweeps' tables and plots are in it" sweep_results "$results"
check "the run says where its results are" has "$out" "^results in $results/\$"

echo "== OUT_DIR named, relative to the working directory"
scale_run "$build" named/run
check "the run succeeds (exit status $rc)" test "$rc" -eq 0
check "both sweeps' tables and plots are in it" sweep_results "$tmp/named/run"
check "the run says where its results are" has "$out" "^results in $tmp/named/run/\$"

echo "== usage"
scale_run
check "no arguments: exit status 2 (got $rc)" test "$rc" -eq 2
check "no arguments: the usage" has "$out" "^usage: .* BUILD_DIR \[OUT_DIR\]"
scale_run "$build" "$tmp/three" extra
check "three arguments: exit status 2 (got $rc)" test "$rc" -eq 2
check "three arguments: nothing written" test ! -e "$tmp/three"
scale_run -h
check "-h: exit status 0 (got $rc)" test "$rc" -eq 0
check "-h: the usage" has "$out" "^usage: .* BUILD_DIR \[OUT_DIR\]"
scale_run "$tmp/no-build" "$tmp/nothing"
check "a build directory without the programs: exit status 2 (got $rc)" test "$rc" -eq 2
check "a build directory without the programs: says which is not built" has "$out" "is not built"

finish "$src" "$tree_before"
