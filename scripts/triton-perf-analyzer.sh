#!/usr/bin/env bash
# NVIDIA's perf_analyzer, built from source with Debian's packages, driving a bare sonic-server
# as the issue of Triton users asks: -b 2 on simple, --sequence-length 10 on simple_sequence,
# over gRPC and HTTP. Not part of CI (it needs NVIDIA's repositories, which CI cannot fetch).
#
#   scripts/triton-perf-analyzer.sh BUILD PERF_ANALYZER_GIT CPP_OUT
#
# BUILD: sonic's build directory (tools/sonic-server); PERF_ANALYZER_GIT: the git directory of
# triton-inference-server/perf_analyzer (a bare mirror does); CPP_OUT: the folder
# scripts/triton-cpp-examples-build.sh built NVIDIA's C++ client libraries in. Needs what that
# script needs, and libb64-dev; ports 8000-8002 free on 127.0.0.1.
set -eu
build=$(realpath "$1") pa_git=$2 cpp=$(realpath "$3")
work=$(mktemp -d)
trap 'kill "${server_pid:-}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

# perf_analyzer links the client libraries' static archives from an install prefix, Triton's
# way; `cmake --install` of the client build stops at the third-party layout it expects, so the
# archives and headers are staged by hand. triton-common-json is header-only here.
ninja -C "$cpp/build" grpcclient_static httpclient_static json_utils_static shm_utils_static
prefix=$work/prefix
mkdir -p "$prefix/lib" "$prefix/include"
cp "$cpp"/build/library/*.a "$prefix/lib/"
cp "$cpp"/client/src/c++/library/*.h "$prefix/include/"
cp "$cpp"/build/_deps/repo-common-build/protobuf/*.pb.h "$prefix/include/"
ar rcs "$prefix/lib/libtriton-common-json.a"
# libb64 comes by FetchContent as sources; Debian's libb64-dev has its headers and library: a
# stand-in of empty sources, the functions linked from -lb64.
b64=$work/b64
mkdir -p "$b64/src" "$b64/include/b64"
cp /usr/include/b64/*.h "$b64/include/b64/"
: >"$b64/src/cdecode.c"
: >"$b64/src/cencode.c"
# perf_analyzer's sources, file by file (the mirror may lack genai-perf's large files, which
# `git archive` stops at); it asks for CMake 3.31.8, Debian 12's 3.25 builds it.
src=$work/src
for f in $(git -C "$pa_git" ls-tree -r --name-only HEAD src); do
  mkdir -p "$src/$(dirname "$f")"
  git -C "$pa_git" show "HEAD:$f" >"$src/$f"
done
grep -rl cmake_minimum_required "$src" |
  xargs sed -i -E 's/cmake_minimum_required ?\(VERSION 3\.31\.8\)/cmake_minimum_required(VERSION 3.25)/'
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -G Ninja -S "$src/src" -B "$work/build" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DTRITON_MIN_CXX_STANDARD=20 -DTRITON_ENABLE_GPU=OFF \
  -DTRITON_ENABLE_PERF_ANALYZER_OPENAI=OFF -DTRITON_ENABLE_PERF_ANALYZER_DGRPC=OFF \
  -DTRITON_ENABLE_PERF_ANALYZER_C_API=OFF -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
  -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/usr/src/googletest -DFETCHCONTENT_SOURCE_DIR_LIBB64="$b64" \
  -DProtobuf_DIR="$cpp/shim" -DCMAKE_EXE_LINKER_FLAGS="-Wl,--no-as-needed -lb64" >/dev/null
cmake --build "$work/build" -j"${JOBS:-2}" --target perf_analyzer
pa=$work/build/perf_analyzer

# A bare sonic-server: its built-in simple and simple_sequence, configured as Triton publishes.
: >"$work/server.log"
"$build/tools/sonic-server" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -qs listening "$work/server.log" && break; sleep 0.1; done
fail=0
for run in "-m simple -b 2" "-m simple -b 2 -i http -u localhost:8000" \
           "-m simple_sequence --sequence-length 10" \
           "-m simple_sequence --sequence-length 10 -i http -u localhost:8000"; do
  # shellcheck disable=SC2086 # the run's words are perf_analyzer's arguments
  if timeout 120 "$pa" $run --measurement-interval 1000 >"$work/out" 2>&1; then
    echo "PASS perf_analyzer $run: $(grep -m1 Throughput "$work/out" | tr -s ' ')"
  else
    fail=$((fail + 1))
    echo "FAIL perf_analyzer $run: $(tail -3 "$work/out" | tr '\n' ' ')"
  fi
done
[ "$fail" -eq 0 ]
