#!/usr/bin/env bash
# Checks an installed sonic the ways a user meets it without CMake:
#   1. every client library is free of libprotobuf, down to its dependencies (ldd);
#   2. `g++ app.cpp -lsonic_grpc` links and runs (Debian's default --as-needed toolchain), and
#      so does `g++ app.cpp $(pkg-config --cflags --libs sonic-grpc)`;
#   3. the installed sonic-server starts with no LD_LIBRARY_PATH (it finds its libraries) and
#      serves those programs;
#   4. with MODELS (a generated repository, when the ONNX backend is built): a fallback program
#      built with `pkg-config sonic-onnx` runs a model of it in-process.
#   tests/package/check_install.sh PREFIX CXX WORK_DIR [MODELS]
set -euo pipefail
prefix=$(cd "$1" && pwd)
cxx=$2
work=$3
models=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
libdir=$(dirname "$(find "$prefix" -name 'libsonic_grpc.so' | head -n 1)")
[[ -d $libdir ]] || { echo "check_install: no libsonic_grpc.so under $prefix" >&2; exit 1; }

echo "== client libraries need no libprotobuf"
# The repository library too (a client's fallback links it), and the ONNX backend: ONNX Runtime,
# which carries its own protobuf, is loaded with its symbols kept to itself (RTLD_LOCAL).
for lib in "$libdir"/libsonic_client.so.* "$libdir"/libsonic_grpc.so.* "$libdir"/libsonic_shm.so.* \
  "$libdir"/libsonic_tcp.so.* "$libdir"/libsonic_http.so.* \
  "$libdir"/libsonic_repository.so.* "$libdir"/libsonic_onnx.so.*; do
  [[ -e $lib && ! -L $lib ]] || continue
  needed=$(LD_LIBRARY_PATH=$libdir ldd "$lib")
  if grep -q protobuf <<<"$needed"; then
    echo "check_install: $lib needs libprotobuf:" >&2
    echo "$needed" >&2
    exit 1
  fi
  grep -q "not found" <<<"$needed" && { echo "$needed" >&2; exit 1; }
  echo "$(basename "$lib"): $(awk '{print $1}' <<<"$needed" | grep -c .) libraries, no libprotobuf"
done

echo "== g++ plain_client.cpp -lsonic_grpc"
"$cxx" -std=c++17 "$here/plain_client.cpp" -I"$prefix/include" -L"$libdir" -lsonic_grpc \
  -o "$work/plain_client"
echo "== g++ plain_client.cpp \$(pkg-config --cflags --libs sonic-grpc)"
flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs sonic-grpc)
"$cxx" -std=c++17 "$here/plain_client.cpp" $flags -o "$work/pkg_config_client"

echo "== the installed sonic-server, run as installed"
log=$work/server.log
: >"$log"  # exists before the server starts: it is read while the server starts
env -u LD_LIBRARY_PATH "$prefix/bin/sonic-server" --port 0 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
port=
for _ in $(seq 100); do
  port=$(sed -n 's/^sonic-server listening on .*:\([0-9]*\)$/\1/p' "$log")
  [[ -n $port ]] && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done
[[ -n $port ]] || { echo "check_install: sonic-server did not start" >&2; cat "$log" >&2; exit 1; }
for client in plain_client pkg_config_client; do
  LD_LIBRARY_PATH=$libdir "$work/$client" "grpc://127.0.0.1:$port"
done

if [[ -n $models && -d $models/repository ]]; then
  echo "== g++ fallback_app.cpp \$(pkg-config --cflags --libs sonic-onnx)"
  flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs sonic-onnx)
  "$cxx" -std=c++17 "$here/fallback_app.cpp" $flags -o "$work/fallback_app"
  LD_LIBRARY_PATH=$libdir "$work/fallback_app" "$models/repository"
fi
echo "check_install: ok"
