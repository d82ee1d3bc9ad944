#!/usr/bin/env bash
# Triton's C++ example clients (client/src/c++/examples), built unmodified against NVIDIA's C++
# client libraries, run against sonic-server the way scripts/triton-examples.sh runs the Python
# ones. Not part of CI (it needs NVIDIA's repositories, which CI cannot fetch).
#
#   scripts/triton-cpp-examples.sh BUILD EXAMPLES SERVER
#
# BUILD: sonic's build directory (tools/sonic-server); EXAMPLES: the folder holding the built C++
# examples (scripts/triton-cpp-examples-build.sh's OUT/build/examples); SERVER: a checkout of
# triton-inference-server/server. Needs Debian's python3 with -numpy and -pil
# (for the repository's models and a test image); ports 8000-8002, 8100-8102, 8200-8202 and
# 8300-8302 free on 127.0.0.1. SONIC_SRC: sonic's source tree (default: this script's folder's
# parent, as in scripts/).
set -u
python=${PYTHON:-/usr/bin/python3}
build=$(realpath "$1") bin=$(realpath "$2") server_src=$(realpath "$3")
SRC=${SONIC_SRC:-$(cd "$(dirname "$0")/.." && pwd)}  # sonic's source tree
server=$build/tools/sonic-server
work=$(mktemp -d)
pids=()
cleanup() {  # KEEP=1 keeps the logs
  kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
  if [ -n "${KEEP:-}" ]; then echo "logs: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

pass=0 fail=0 skip=0
run() {  # run NAME PROGRAM [ARGS...]
  local name=$1 prog=$bin/$2
  shift 2
  if [ ! -x "$prog" ]; then
    skip=$((skip + 1)) && echo "SKIP $name: not built"
    return
  fi
  if (cd "$work" && timeout 120 "$prog" "$@" >"$work/$name.log" 2>&1); then
    pass=$((pass + 1)) && echo "PASS $name"
  else
    fail=$((fail + 1)) && echo "FAIL $name: $(tail -3 "$work/$name.log" | tr '\n' ' ' | cut -c1-300)"
  fi
}

source "$SRC/scripts/triton-examples-servers.sh"

run simple_grpc_infer_client simple_grpc_infer_client
run simple_grpc_async_infer_client simple_grpc_async_infer_client
run simple_grpc_string_infer_client simple_grpc_string_infer_client
run simple_grpc_sequence_sync_infer_client simple_grpc_sequence_sync_infer_client
run simple_grpc_sequence_stream_infer_client simple_grpc_sequence_stream_infer_client
run simple_grpc_shm_client simple_grpc_shm_client
run simple_grpc_health_metadata simple_grpc_health_metadata
run simple_grpc_keepalive_client simple_grpc_keepalive_client
run simple_grpc_custom_args_client simple_grpc_custom_args_client
run simple_grpc_custom_repeat simple_grpc_custom_repeat -u localhost:8201
run simple_grpc_model_control simple_grpc_model_control -u localhost:8101
run simple_http_infer_client simple_http_infer_client
# Variants Triton's QA runs (qa/L0_http, qa/L0_grpc): compressed bodies, JSON tensors, headers.
run simple_http_infer_client_gzip simple_http_infer_client -i gzip -o gzip
run simple_http_infer_client_deflate simple_http_infer_client -i deflate -o deflate
run simple_http_infer_client_header simple_http_infer_client -H test:1
run simple_grpc_infer_client_gzip simple_grpc_infer_client -C gzip
run simple_grpc_infer_client_deflate simple_grpc_infer_client -C deflate
run simple_grpc_infer_client_uncached simple_grpc_infer_client -c false
run simple_http_async_infer_client simple_http_async_infer_client
run simple_http_string_infer_client simple_http_string_infer_client
run simple_http_string_infer_client_json simple_http_string_infer_client --json-input-data \
  --json-output-data
run simple_http_sequence_sync_infer_client simple_http_sequence_sync_infer_client
run simple_http_shm_client simple_http_shm_client
run simple_http_health_metadata simple_http_health_metadata
run simple_http_model_control simple_http_model_control -u localhost:8300
run reuse_infer_objects_client_http reuse_infer_objects_client
run reuse_infer_objects_client_grpc reuse_infer_objects_client -i grpc -u localhost:8001
run image_client_http image_client -m inception_onnx -s INCEPTION "$image"
run image_client_http_async image_client -a -m inception_onnx -s INCEPTION "$image"
run image_client_grpc image_client -i grpc -u localhost:8001 -m inception_onnx -s INCEPTION \
  "$image"
run image_client_grpc_async image_client -a -i grpc -u localhost:8001 -m inception_onnx \
  -s INCEPTION "$image"
# The C++ image_client streams only asynchronously (-a), unlike image_client.py.
run image_client_grpc_streaming image_client -a --streaming -i grpc -u localhost:8001 \
  -m inception_onnx -s INCEPTION "$image"
run image_client_densenet image_client -m densenet_onnx -c 3 -s INCEPTION "$image"
run image_client_densenet_grpc image_client -i grpc -u localhost:8001 -m densenet_onnx -c 3 \
  -s INCEPTION "$image"
# ensemble_image_client: its ensemble (preprocess_inception_ensemble, a DALI pipeline) is not
# in the example repository.
echo "passed $pass, failed $fail, skipped $skip"
[ "$fail" -eq 0 ]
