#!/usr/bin/env bash
# Fuzz smoke run for CI: configures BUILD_DIR with clang, ASan+UBSan and the fuzz targets, builds
# only those, and runs each for SECONDS_PER_TARGET from a copy of its seed corpus (the repository
# is never modified). The targets run side by side. Exits non-zero when a target crashes, leaks,
# hangs or trips a sanitizer; the input that did it is kept under BUILD_DIR/fuzz-artifacts/.
#
#   tests/fuzz/run_smoke.sh BUILD_DIR [SECONDS_PER_TARGET=30 [CMAKE_ARGUMENT...]]
#
# CMake arguments after the seconds are added to the configuration: a build that goes on in the
# same directory (CI's suite) passes its own here, so that the libraries the fuzz targets share
# with it are compiled once, not again with other flags.
#
# Environment: JOBS (build parallelism, default 2).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [SECONDS_PER_TARGET=30 [CMAKE_ARGUMENT...]]" >&2
  exit 2
fi
build=$1
seconds=${2:-30}
shift $(($# < 2 ? $# : 2))
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$repo/tests/fuzz
targets=(fuzz_response_decoder fuzz_request_decoder fuzz_h2_client fuzz_tcp_frame)

echo "== fuzz: configure $build"
CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -DSONIC_BUILD_FUZZERS=ON \
  -DSONIC_SANITIZE=address,undefined -DSONIC_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" "$@" >/dev/null
if ! grep -qs 'CMAKE_CXX_COMPILER_ID "Clang"' "$build"/CMakeFiles/*/CMakeCXXCompiler.cmake; then
  echo "fuzz: $build was configured with another compiler; use a fresh build directory" >&2
  exit 2
fi
echo "== fuzz: build ${targets[*]}"
cmake --build "$build" --target "${targets[@]}" -j"${JOBS:-2}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "== fuzz: run each target for ${seconds}s"
declare -A pids
for target in "${targets[@]}"; do
  corpus=$work/$target/corpus
  mkdir -p "$corpus"
  cp "$here/corpus/${target#fuzz_}"/* "$corpus"/
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$target-" "$corpus" \
    >"$work/$target.log" 2>&1 &
  pids[$target]=$!
done

passed=0
failed=0
summary=()
for target in "${targets[@]}"; do
  rc=0
  wait "${pids[$target]}" || rc=$?
  log=$work/$target.log
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [[ $rc -eq 0 ]]; then
    passed=$((passed + 1))
    summary+=("$target: passed, ${runs:-?} executions in ${seconds}s")
  else
    failed=$((failed + 1))
    summary+=("$target: FAILED (exit $rc), ${runs:-?} executions; inputs in $artifacts/")
    cp "$log" "$artifacts/$target.log"
    echo "---- $target (exit $rc), end of its log (all of it in $artifacts/$target.log):"
    grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)' "$log" | tail -n 60
  fi
done

for line in "${summary[@]}"; do echo "$line"; done
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
