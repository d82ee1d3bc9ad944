#!/usr/bin/env bash
# Installs the Debian 12 packages sonic needs to build and test, skipping those already present,
# then ONNX Runtime's official library (scripts/install-onnxruntime.sh: Debian has no package).
# Runs apt as root (directly, or through sudo when available).
set -euo pipefail

packages=(
  g++ cmake make ninja-build pkg-config git
  libasio-dev libnghttp2-dev libssl-dev openssl libprotobuf-dev protobuf-compiler libzstd-dev zlib1g-dev
  nlohmann-json3-dev
  doctest-dev libtbb-dev
  python3 python3-grpcio python3-grpc-tools python3-protobuf python3-numpy
  python3-dev pybind11-dev python3-pytest python3-pip python3-venv python3-setuptools python3-wheel
  python3-uvloop python3-prometheus-client
  libtorch-dev python3-torch python3-onnx libonnx-testdata
  libopenblas0-pthread curl ca-certificates
  nginx-light haproxy prometheus
  librsvg2-bin
)
# ninja-build: CMake's Makefiles compile a target only once the libraries it links are built;
# Ninja starts each file as soon as what it includes exists (README, Dependencies).
# libopenblas0-pthread: libtorch computes its matrix products through the libblas.so.3
# alternative, which is Debian's reference BLAS unless an optimized one is installed; OpenBLAS
# made the field-shaped TorchScript networks 1.1 to 6.0x faster (docs/performance.md).
# libonnx-testdata: ONNX's own conformance suite, run through the ONNX backend by
# tests/onnx_conformance. curl: to fetch ONNX Runtime.
# python3-prometheus-client: its text parser reads the metrics port in tests/python/test_metrics.py.
# prometheus: tests/python/test_prometheus.py starts its own on loopback to scrape sonic-server.
# librsvg2-bin: rsvg-convert turns the plots the benchmarks draw as SVG into PNG
# (bench/overload.sh).
# nginx and haproxy are for the proxy tests (tests/python/test_proxies.py), which start their
# own on loopback: their system services are not started, or left enabled, by installing them.
daemons=(nginx haproxy prometheus)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exec "$here/install-onnxruntime.sh"
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# Debian's policy-rc.d: exit status 101 tells the packages' scripts not to start services.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
  "${as_root[@]}" chmod +x "$policy"
  trap '"${as_root[@]}" rm -f "$policy"' EXIT
fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  for d in "${daemons[@]}"; do
    if [[ " ${missing[*]} " == *" $d"* ]]; then "${as_root[@]}" systemctl disable --now "$d" 2>/dev/null || true; fi
  done
fi
"$here/install-onnxruntime.sh"
