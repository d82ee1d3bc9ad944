#!/usr/bin/env bash
# Installs ONNX Runtime's official Linux library, which sonic's ONNX backend loads at run time.
#
# Debian 12 does not package ONNX Runtime. Its official build reaches this machine through the npm
# registry: the onnxruntime-node package carries libonnxruntime.so.1 for linux/x64 and
# linux/arm64 (needing only glibc >= 2.28 and libstdc++). Node itself is not needed: the package
# is a tarball at a fixed address, fetched here with curl and checked against the SHA-256 below,
# and only the library is kept. ONNX Runtime is MIT-licensed (the package's package.json).
#
#   scripts/install-onnxruntime.sh [PREFIX=/usr/local]
#
# Puts PREFIX/lib/libonnxruntime.so.1 in place (and runs ldconfig), unless that file already is
# this version. Runs as root (directly, or through sudo when available) for a system prefix.
set -euo pipefail

version=1.30.0
sha256=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
url=https://registry.npmjs.org/onnxruntime-node/-/onnxruntime-node-$version.tgz
prefix=${1:-/usr/local}
target=$prefix/lib/libonnxruntime.so.1
stamp=$prefix/lib/libonnxruntime.so.1.version

if [[ -f $target && -f $stamp && $(cat "$stamp") == "$version" ]]; then
  echo "install-onnxruntime: ONNX Runtime $version present ($target)"
  exit 0
fi

case $(uname -m) in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "install-onnxruntime: no official ONNX Runtime build for $(uname -m)" >&2; exit 1 ;;
esac

as_root=()
if [[ ! -w $prefix/lib && ! -w $prefix && $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-onnxruntime: run as root or install sudo" >&2; exit 1; }
  as_root=(sudo)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "install-onnxruntime: fetching $url"
curl -sSfL --retry 3 -o "$work/package.tgz" "$url"
echo "$sha256  $work/package.tgz" | sha256sum -c --quiet - ||
  { echo "install-onnxruntime: checksum mismatch for $url" >&2; exit 1; }
library=package/bin/napi-v6/linux/$arch/libonnxruntime.so.1
tar -xzf "$work/package.tgz" -C "$work" "$library"
"${as_root[@]}" install -D -m 0644 "$work/$library" "$target"
echo "$version" | "${as_root[@]}" tee "$stamp" >/dev/null
if [[ $prefix == /usr/local || $prefix == /usr ]]; then "${as_root[@]}" ldconfig; fi
echo "install-onnxruntime: ONNX Runtime $version installed at $target"
